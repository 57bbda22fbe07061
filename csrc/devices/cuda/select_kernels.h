// Sorting and selection kernels on CUB (select_kernels.cu), for topk and
// nonzero. Scratch memory comes from the caller (the device's allocator),
// through `scratch`, and must stay alive until the stream has run the work.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/dtype.h"

namespace aotishim {
namespace cuda {

using Scratch = std::function<void*(size_t bytes)>;

// Sorts each of `rows` contiguous rows of `n` keys (descending or
// ascending) into keys_out; idx_out[r, i] is the position in row r that
// keys_out[r, i] came from. NaN counts as the largest value, as in torch.
void launch_sort_rows(DType dtype, const void* keys_in, void* keys_out, int64_t* idx_out,
                      int64_t rows, int64_t n, bool descending, const Scratch& scratch,
                      cudaStream_t stream);

// The linear positions (ascending) of the nonzero elements of a contiguous
// array of `numel` elements into positions_out (room for numel), and their
// count into *count_out (device memory).
void launch_nonzero_positions(DType dtype, const void* data, int64_t numel,
                              int64_t* positions_out, int64_t* count_out,
                              const Scratch& scratch, cudaStream_t stream);

// out[d, i] = the d-th coordinate (over `sizes`, row-major) of positions[i],
// for i < count; out is (ndim, count) contiguous int64 (torch's nonzero
// result is its transpose).
void launch_unravel(const int64_t* positions, int64_t count, const int64_t* sizes, int ndim,
                    int64_t* out, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
