// sort on cuda (sort_kernels.cu): CUB's segmented radix sort of packed rows.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "core/dtype.h"

namespace aotishim {
namespace cuda {

using SortScratch = std::function<void*(size_t bytes)>;

// Each of `rows` packed rows of `n` elements of `data` sorted (stably) into
// values_out, with idx_out[r, i] the position in row r that values_out[r, i]
// came from. A NaN with the sign bit clear sorts above every number and one
// with it set below every number, and -0.0 equals 0.0 (their order is the
// input's), as torch cuda's sort orders them.
void launch_sort(DType dtype, const void* data, void* values_out, int64_t* idx_out, int64_t rows,
                 int64_t n, bool descending, const SortScratch& scratch, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
