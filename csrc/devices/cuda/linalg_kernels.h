// The linalg ops' own kernels on cuda (linalg_kernels.cu): identity
// matrices, pointer arrays for cuBLAS's batched solves, and lu_unpack's
// element shuffles. Element dtypes: float32, float64, complex64, complex128.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

// A tensor's batch dimensions: batch b (row-major over `sizes`) starts
// sum(index_d * strides[d]) elements into the tensor.
struct BatchLayout {
  int ndim = 0;
  int64_t sizes[kMaxCopyDims] = {};
  int64_t strides[kMaxCopyDims] = {};
};

// `count` n x n identity matrices packed one after another at `data`.
void launch_identity(void* data, DType dtype, int64_t n, int64_t count, cudaStream_t stream);

// ptrs[i] = base + i * step_bytes for i < count (device arrays of matrix
// pointers, as cuBLAS's batched routines take them).
void launch_pointer_array(void** ptrs, void* base, int64_t step_bytes, int64_t count,
                          cudaStream_t stream);

// lu_unpack's source: an LU matrix per batch, any strides.
struct LuSource {
  const void* data = nullptr;  // element 0
  DType dtype = DType::Float32;
  BatchLayout batch;
  int64_t row_stride = 0, col_stride = 0;
};

// out (count, rows, cols), packed, from each matrix's top-left rows x cols
// block: `lower` gives its strictly lower part with ones on the diagonal (L),
// else its upper part with the diagonal (U); zeros elsewhere.
void launch_lu_triangle(const LuSource& lu, int64_t count, int64_t rows, int64_t cols,
                        bool lower, void* out, cudaStream_t stream);

// perm (count, m), packed: 0..m-1 with the row swaps of the pivots applied in
// order (pivot i, 1-based, swaps entries i and pivot - 1). Each batch's
// `pivot_count` pivots lie `pivot_stride` apart from where `pivot_batch`
// puts it. A pivot outside [1, m] sets *bad to 1 (that batch's swaps stop).
void launch_lu_permutation(const int32_t* pivots, const BatchLayout& pivot_batch,
                           int64_t pivot_stride, int64_t pivot_count, int64_t m, int64_t count,
                           int32_t* perm, int32_t* bad, cudaStream_t stream);

// p (count, m, m), packed: p[b, perm[b, i], i] = 1, every other element 0.
void launch_permutation_matrix(const int32_t* perm, int64_t m, int64_t count, void* p,
                               DType dtype, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
