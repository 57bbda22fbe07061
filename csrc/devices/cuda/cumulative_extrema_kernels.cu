// cummax / cummin: each element becomes a (number, position) pair in a
// packed buffer (lines along the last dimension), CUB scans each line with
// an operator that picks the later of two pairs unless the earlier one wins
// (DeviceScan::InclusiveScanByKey, the key being the line), and a kernel
// writes the chosen positions and the elements found there. The choice is
// exact, so the order in which the scan combines pairs does not matter.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cub/device/device_scan.cuh>
#include <cuda/std/functional>
#include <type_traits>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/cumulative_extrema_kernels.h"
#include "devices/cuda/launch_grid.h"
#include "devices/cuda/typed_values.cuh"

namespace aotishim {
namespace cuda {

namespace {

// A line view's sizes and strides, passed to kernels by value.
StridedShape geometry(const LineView& v) {
  return strided_shape(v.sizes, v.strides, v.ndim, "cuda scan");
}


template <typename V> __device__ __forceinline__ bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>) return isnan(v);
  else return false;
}

template <typename V> struct Running {
  V value;
  int64_t position;
};

// Of two pairs the later one (larger position) wins when it is NaN, or when
// neither is NaN and it is >= the earlier one (<= for the minimum): ties go
// to the latest element and a NaN, once seen, to the latest NaN, as torch's
// scan (binary_op_update with greater_equal / less_equal) decides. Ordering
// the pair by position first makes the operator commutative as well as
// associative.
template <typename V, bool Maximum> struct LaterUnlessEarlierWins {
  __device__ Running<V> operator()(const Running<V>& a, const Running<V>& b) const {
    const Running<V>& earlier = a.position < b.position ? a : b;
    const Running<V>& later = a.position < b.position ? b : a;
    const bool take_later =
        is_nan(later.value) ||
        (!is_nan(earlier.value) &&
         (Maximum ? later.value >= earlier.value : later.value <= earlier.value));
    return take_later ? later : earlier;
  }
};

template <typename T>
__global__ void pairs_kernel(const T* self, StridedShape g, int64_t total, int64_t n,
                             Running<typename Compared<T>::type>* pairs) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += step)
    pairs[j] = {number(self[offset_in(j, g)]), j % n};
}

// values[j] = self's element at the chosen position of j's line, indices[j]
// that position.
template <typename T, typename V>
__global__ void store_kernel(const Running<V>* scanned, const T* self, StridedShape gs, T* values,
                             StridedShape gv, int64_t* indices, StridedShape gi, int64_t total,
                             int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < total;
       j += step) {
    const int64_t at = scanned[j].position;
    values[offset_in(j, gv)] = self[offset_in(j - j % n + at, gs)];
    indices[offset_in(j, gi)] = at;
  }
}

struct LineOf {
  int64_t n;
  __host__ __device__ int64_t operator()(int64_t j) const { return j / n; }
};

template <typename T, bool Maximum>
void run(const LineView& values, const LineView& indices, const LineView& self,
         const ScanScratch& scratch, cudaStream_t stream) {
  using V = typename Compared<T>::type;
  int64_t total = 1;
  for (int d = 0; d < self.ndim; ++d) total *= self.sizes[d];
  if (total == 0) return;
  const int64_t n = self.sizes[self.ndim - 1];
  auto* pairs = static_cast<Running<V>*>(scratch(static_cast<size_t>(total) * sizeof(Running<V>)));
  auto* scanned =
      static_cast<Running<V>*>(scratch(static_cast<size_t>(total) * sizeof(Running<V>)));
  const StridedShape gs = geometry(self);
  const T* in = static_cast<const T*>(self.data);
  pairs_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(in, gs, total, n, pairs);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
  auto keys = thrust::make_transform_iterator(thrust::counting_iterator<int64_t>(0), LineOf{n});
  const LaterUnlessEarlierWins<V, Maximum> op;
  size_t bytes = 0;
  AOTISHIM_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(
      nullptr, bytes, keys, pairs, scanned, op, total, ::cuda::std::equal_to<int64_t>(), stream));
  void* temp = scratch(bytes > 0 ? bytes : 1);
  AOTISHIM_CUDA_CHECK(cub::DeviceScan::InclusiveScanByKey(
      temp, bytes, keys, pairs, scanned, op, total, ::cuda::std::equal_to<int64_t>(), stream));
  store_kernel<T, V><<<blocks_for(total), kThreads, 0, stream>>>(
      scanned, in, gs, static_cast<T*>(values.data), geometry(values),
      static_cast<int64_t*>(indices.data), geometry(indices), total, n);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

template <typename T>
void run_kind(const LineView& values, const LineView& indices, const LineView& self,
              bool maximum, const ScanScratch& scratch, cudaStream_t stream) {
  if (maximum) run<T, true>(values, indices, self, scratch, stream);
  else run<T, false>(values, indices, self, scratch, stream);
}

}  // namespace

void launch_cumulative_extremum(const LineView& values, const LineView& indices,
                                const LineView& self, bool maximum, const ScanScratch& scratch,
                                cudaStream_t stream) {
  AOTISHIM_CHECK(self.ndim >= 1 && values.ndim == self.ndim && indices.ndim == self.ndim,
                 "cuda cummax/cummin: values, indices and self must have the same dimensions");
  AOTISHIM_CHECK(values.dtype == self.dtype && indices.dtype == DType::Int64,
                 "cuda cummax/cummin: values must have self's dtype and indices int64");
  discard_earlier_error();
  switch (self.dtype) {
#define AOTISHIM_EXTREMUM(dt, T) \
  case dt: return run_kind<T>(values, indices, self, maximum, scratch, stream);
    AOTISHIM_EXTREMUM(DType::Bool, uint8_t)
    AOTISHIM_EXTREMUM(DType::UInt8, uint8_t)
    AOTISHIM_EXTREMUM(DType::Int8, int8_t)
    AOTISHIM_EXTREMUM(DType::Int16, int16_t)
    AOTISHIM_EXTREMUM(DType::Int32, int32_t)
    AOTISHIM_EXTREMUM(DType::Int64, int64_t)
    AOTISHIM_EXTREMUM(DType::Float16, __half)
    AOTISHIM_EXTREMUM(DType::BFloat16, __nv_bfloat16)
    AOTISHIM_EXTREMUM(DType::Float32, float)
    AOTISHIM_EXTREMUM(DType::Float64, double)
#undef AOTISHIM_EXTREMUM
    default: break;
  }
  fail(str("cuda cummax/cummin support bool, uint8, int8..int64 and the real floating types, "
           "not ", dtype_name(self.dtype)));
}

}  // namespace cuda
}  // namespace aotishim
