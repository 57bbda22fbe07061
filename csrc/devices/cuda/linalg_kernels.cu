// The linalg ops' own kernels: one thread per output element (one per batch
// for the pivots' swaps, which run in order) over grid-stride loops. Values
// are only moved or set to 0 and 1, so each dtype is its element type: a
// complex one is a (real, imaginary) pair of its part type, aligned as the
// part is.
#include <cuda_runtime.h>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/launch_grid.h"
#include "devices/cuda/linalg_kernels.h"

namespace aotishim {
namespace cuda {

namespace {

template <typename P>
struct Pair {
  P re, im;
};

template <typename T>
__device__ __forceinline__ T real_value(int v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ Pair<float> real_value<Pair<float>>(int v) {
  return {static_cast<float>(v), 0.0f};
}
template <>
__device__ __forceinline__ Pair<double> real_value<Pair<double>>(int v) {
  return {static_cast<double>(v), 0.0};
}

__device__ __forceinline__ int64_t batch_offset(int64_t b, const BatchLayout& layout) {
  int64_t off = 0;
  for (int d = layout.ndim - 1; d >= 0; --d) {
    off += (b % layout.sizes[d]) * layout.strides[d];
    b /= layout.sizes[d];
  }
  return off;
}

__device__ __forceinline__ int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_step() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

template <typename T>
__global__ void identity_kernel(T* data, int64_t n, int64_t total) {
  for (int64_t i = first_index(); i < total; i += grid_step()) {
    const int64_t r = i % n, c = (i / n) % n;
    data[i] = real_value<T>(r == c ? 1 : 0);
  }
}

__global__ void pointer_array_kernel(void** ptrs, char* base, int64_t step_bytes, int64_t count) {
  for (int64_t i = first_index(); i < count; i += grid_step()) ptrs[i] = base + i * step_bytes;
}

template <typename T>
__global__ void lu_triangle_kernel(const T* lu, BatchLayout batch, int64_t row_stride,
                                   int64_t col_stride, int64_t rows, int64_t cols, bool lower,
                                   T* out, int64_t total) {
  for (int64_t i = first_index(); i < total; i += grid_step()) {
    const int64_t c = i % cols, r = (i / cols) % rows, b = i / (cols * rows);
    const bool kept = lower ? r > c : r <= c;
    if (kept) {
      out[i] = lu[batch_offset(b, batch) + r * row_stride + c * col_stride];
    } else {
      out[i] = real_value<T>(lower && r == c ? 1 : 0);
    }
  }
}

__global__ void lu_permutation_kernel(const int32_t* pivots, BatchLayout pivot_batch,
                                      int64_t pivot_stride, int64_t pivot_count, int64_t m,
                                      int64_t count, int32_t* perm, int32_t* bad) {
  for (int64_t b = first_index(); b < count; b += grid_step()) {
    int32_t* p = perm + b * m;
    for (int64_t i = 0; i < m; ++i) p[i] = static_cast<int32_t>(i);
    const int32_t* pv = pivots + batch_offset(b, pivot_batch);
    for (int64_t i = 0; i < pivot_count; ++i) {
      const int64_t to = pv[i * pivot_stride];
      if (to < 1 || to > m) {
        *bad = 1;
        break;
      }
      const int32_t t = p[i];
      p[i] = p[to - 1];
      p[to - 1] = t;
    }
  }
}

template <typename T>
__global__ void permutation_matrix_kernel(const int32_t* perm, int64_t m, T* p, int64_t total) {
  for (int64_t i = first_index(); i < total; i += grid_step()) {
    const int64_t c = i % m, r = (i / m) % m, b = i / (m * m);
    p[i] = real_value<T>(perm[b * m + c] == r ? 1 : 0);
  }
}

// Calls f(T{}) with the element type of a linalg dtype.
template <typename F>
void visit(DType dtype, const char* what, F&& f) {
  switch (dtype) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Complex64: return f(Pair<float>{});
    case DType::Complex128: return f(Pair<double>{});
    default: break;
  }
  fail(str("cuda ", what, ": unsupported dtype ", dtype_name(dtype),
           " (float32, float64, complex64 and complex128)"));
}

}  // namespace

void launch_identity(void* data, DType dtype, int64_t n, int64_t count, cudaStream_t stream) {
  const int64_t total = n * n * count;
  if (total == 0) return;
  discard_earlier_error();
  visit(dtype, "identity", [&](auto zero) {
    using T = decltype(zero);
    identity_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(static_cast<T*>(data), n,
                                                                   total);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_pointer_array(void** ptrs, void* base, int64_t step_bytes, int64_t count,
                          cudaStream_t stream) {
  if (count == 0) return;
  discard_earlier_error();
  pointer_array_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
      ptrs, static_cast<char*>(base), step_bytes, count);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_lu_triangle(const LuSource& lu, int64_t count, int64_t rows, int64_t cols,
                        bool lower, void* out, cudaStream_t stream) {
  const int64_t total = count * rows * cols;
  if (total == 0) return;
  discard_earlier_error();
  visit(lu.dtype, "lu_unpack", [&](auto zero) {
    using T = decltype(zero);
    lu_triangle_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        static_cast<const T*>(lu.data), lu.batch, lu.row_stride, lu.col_stride, rows, cols,
        lower, static_cast<T*>(out), total);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_lu_permutation(const int32_t* pivots, const BatchLayout& pivot_batch,
                           int64_t pivot_stride, int64_t pivot_count, int64_t m, int64_t count,
                           int32_t* perm, int32_t* bad, cudaStream_t stream) {
  if (count == 0 || m == 0) return;
  discard_earlier_error();
  lu_permutation_kernel<<<blocks_for(count), kThreads, 0, stream>>>(
      pivots, pivot_batch, pivot_stride, pivot_count, m, count, perm, bad);
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_permutation_matrix(const int32_t* perm, int64_t m, int64_t count, void* p,
                               DType dtype, cudaStream_t stream) {
  const int64_t total = count * m * m;
  if (total == 0) return;
  discard_earlier_error();
  visit(dtype, "lu_unpack", [&](auto zero) {
    using T = decltype(zero);
    permutation_matrix_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
        perm, m, static_cast<T*>(p), total);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
