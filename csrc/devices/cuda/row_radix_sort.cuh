// CUB's stable radix sort of `rows` rows of `n` keys, each with its int64
// value (a position). The segmented sort gives each row to one thread
// block, which leaves all but one block of the GPU idle on a single long
// row (a million keys took 78x torch's time), so one row takes the
// device-wide sort instead.
#pragma once

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include <cstdint>

namespace aotishim {
namespace cuda {

struct RowStartOf {
  int64_t n;
  __host__ __device__ int64_t operator()(int64_t r) const { return r * n; }
};

// CUB's two-phase call: with temp == nullptr it sets `bytes` to the scratch
// it needs; then it sorts. rows * n must fit an int (checked by callers).
template <typename T>
cudaError_t sort_rows_by_key(void* temp, size_t& bytes, const T* keys_in, T* keys_out,
                             const int64_t* values_in, int64_t* values_out, int64_t rows,
                             int64_t n, bool descending, cudaStream_t stream) {
  const int items = static_cast<int>(rows * n);
  const int bits = static_cast<int>(sizeof(T) * 8);
  if (rows == 1) {
    return descending
               ? cub::DeviceRadixSort::SortPairsDescending(temp, bytes, keys_in, keys_out,
                                                           values_in, values_out, items, 0, bits,
                                                           stream)
               : cub::DeviceRadixSort::SortPairs(temp, bytes, keys_in, keys_out, values_in,
                                                 values_out, items, 0, bits, stream);
  }
  auto begin =
      thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), RowStartOf{n});
  auto end = begin + 1;
  const int segments = static_cast<int>(rows);
  return descending ? cub::DeviceSegmentedRadixSort::SortPairsDescending(
                          temp, bytes, keys_in, keys_out, values_in, values_out, items, segments,
                          begin, end, 0, bits, stream)
                    : cub::DeviceSegmentedRadixSort::SortPairs(temp, bytes, keys_in, keys_out,
                                                               values_in, values_out, items,
                                                               segments, begin, end, 0, bits,
                                                               stream);
}

}  // namespace cuda
}  // namespace aotishim
