// cdist and pdist on cuda as torch cuda's kernels compute them: one block of
// 256 threads per distance, each thread accumulating every 256th term of
// |a - b| (p = 0: the count of nonzero differences, 1: their sum, 2: the sum
// of squares, inf: the largest, other p: the sum of |d|^p) in the dtype, the
// partial results reduced by warp shuffles, then within the first warp (the
// order of torch's BlockReduce), and finished (sqrt, or the 1/p-th power).
// torch cuda's inf-norm keeps the larger by `>`, so a NaN difference is
// ignored (torch's cpu kernel propagates it). Also the two elementwise steps
// around the product of torch's matrix-product form for p = 2.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/distance_kernels.h"
#include "devices/cuda/launch_grid.h"

namespace aotishim {
namespace cuda {

namespace {

constexpr int kWarp = 32;

enum Norm : int { kZero, kOne, kTwo, kInf, kGeneral };

__device__ __forceinline__ float abs_of(float x) { return fabsf(x); }
__device__ __forceinline__ double abs_of(double x) { return ::fabs(x); }
__device__ __forceinline__ float sqrt_of(float x) { return sqrtf(x); }
__device__ __forceinline__ double sqrt_of(double x) { return ::sqrt(x); }
__device__ __forceinline__ float power(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double power(double x, double y) { return ::pow(x, y); }
// a product rounded on its own (torch's pow(2) before its sum)
__device__ __forceinline__ float square(float x) { return __fmul_rn(x, x); }
__device__ __forceinline__ double square(double x) { return ::__dmul_rn(x, x); }

template <int N, typename T>
__device__ __forceinline__ void accumulate(T& agg, T diff, T p) {
  if constexpr (N == kZero) agg += diff != T(0) ? T(1) : T(0);
  else if constexpr (N == kOne) agg += diff;
  else if constexpr (N == kTwo) agg += diff * diff;
  else if constexpr (N == kInf) { if (diff > agg) agg = diff; }
  else agg += power(diff, p);
}

template <int N, typename T>
__device__ __forceinline__ T combine(T a, T b) {
  if constexpr (N == kInf) return b > a ? b : a;
  else return a + b;
}

template <int N, typename T>
__device__ __forceinline__ T finish(T agg, T p) {
  if constexpr (N == kTwo) return sqrt_of(agg);
  else if constexpr (N == kGeneral) return power(agg, T(1) / p);
  else return agg;
}

// The block's values combined: within each warp by shuffles down, then the
// warps' results within the first warp; thread 0 holds the result. Every
// thread of the block must call it (it synchronizes).
template <int N, typename T>
__device__ T block_reduce(T val, T* shared) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    val = combine<N>(val, __shfl_down_sync(0xffffffffu, val, offset));
  __syncthreads();  // the previous use of `shared` is over
  if (lane == 0) shared[warp] = val;
  __syncthreads();
  val = static_cast<int>(threadIdx.x) < static_cast<int>(blockDim.x) / kWarp ? shared[lane] : T(0);
  if (warp == 0)
    for (int offset = kWarp / 2; offset > 0; offset /= 2)
      val = combine<N>(val, __shfl_down_sync(0xffffffffu, val, offset));
  return val;
}

// pdist's pair k = (i, j), i < j, in row order: row i's pairs start at
// i n - i (i + 1) / 2. torch's closed form, then corrected for rounding.
__device__ __forceinline__ void pair_of(int64_t k, int64_t n, int64_t& i, int64_t& j) {
  const double n2 = static_cast<double>(n) - 0.5;
  i = static_cast<int64_t>(n2 - sqrt(n2 * n2 - 1.0 - 2.0 * static_cast<double>(k)));
  auto start = [n](int64_t r) { return r * n - r * (r + 1) / 2; };
  if (i < 0) i = 0;
  while (i > 0 && start(i) > k) --i;
  while (i + 1 < n && start(i + 1) <= k) ++i;
  j = k - start(i) + i + 1;
}

// The rows output o compares, as element pointers with their column strides.
template <typename T>
__device__ __forceinline__ void rows_of(const DistanceLaunch& g, const T* x1, const T* x2,
                                        int64_t o, const T*& a, const T*& b) {
  if (g.pairwise) {
    int64_t i = 0, j = 0;
    pair_of(o, g.r1, i, j);
    a = x1 + i * g.row_stride1;
    b = x1 + j * g.row_stride1;
    return;
  }
  const int64_t j = o % g.r2, i = (o / g.r2) % g.r1;
  int64_t rest = o / (g.r1 * g.r2), off1 = 0, off2 = 0;
  for (int d = g.batch_dims - 1; d >= 0; --d) {
    const int64_t k = rest % g.batch_sizes[d];
    rest /= g.batch_sizes[d];
    off1 += k * g.batch_strides1[d];
    off2 += k * g.batch_strides2[d];
  }
  a = x1 + off1 + i * g.row_stride1;
  b = x2 + off2 + j * g.row_stride2;
}

template <typename T, int N>
__global__ void distance_kernel(DistanceLaunch g, const T* x1, const T* x2, T* out, int64_t total,
                                T p) {
  __shared__ T shared[kWarp];
  const int64_t cs1 = g.col_stride1, cs2 = g.pairwise ? g.col_stride1 : g.col_stride2;
  for (int64_t o = blockIdx.x; o < total; o += gridDim.x) {
    const T* a = nullptr;
    const T* b = nullptr;
    rows_of(g, x1, x2, o, a, b);
    T agg = 0;
    for (int64_t k = threadIdx.x; k < g.m; k += blockDim.x)
      accumulate<N>(agg, abs_of(a[k * cs1] - b[k * cs2]), p);
    agg = block_reduce<N>(agg, shared);
    if (threadIdx.x == 0) out[o] = finish<N>(agg, p);
  }
}

// One block per row of x1 (the first batch * r1) or of x2 (the rest): the
// row's part of a1 or a2 and its squared norm, summed over the block.
template <typename T>
__global__ void euclid_operands_kernel(DistanceLaunch g, const T* x1, const T* x2, T* a1, T* a2,
                                       int64_t batch) {
  __shared__ T shared[kWarp];
  const int64_t rows1 = batch * g.r1, rows = rows1 + batch * g.r2, width = g.m + 2;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const bool first = row < rows1;
    const int64_t r = first ? row : row - rows1;
    const int64_t per = first ? g.r1 : g.r2;
    int64_t rest = r / per, off = 0;
    for (int d = g.batch_dims - 1; d >= 0; --d) {
      const int64_t k = rest % g.batch_sizes[d];
      rest /= g.batch_sizes[d];
      off += k * (first ? g.batch_strides1[d] : g.batch_strides2[d]);
    }
    const T* src = first ? x1 + off + (r % per) * g.row_stride1
                         : x2 + off + (r % per) * g.row_stride2;
    const int64_t cs = first ? g.col_stride1 : g.col_stride2;
    T* dst = (first ? a1 : a2) + r * width;
    T sum = 0;
    for (int64_t k = threadIdx.x; k < g.m; k += blockDim.x) {
      const T v = src[k * cs];
      dst[k] = first ? T(-2) * v : v;
      sum += square(v);
    }
    sum = block_reduce<kOne>(sum, shared);
    if (threadIdx.x == 0) {
      dst[g.m] = first ? sum : T(1);
      dst[g.m + 1] = first ? T(1) : sum;
    }
  }
}

// clamp_min(0) (NaN kept), then sqrt.
template <typename T>
__global__ void euclid_finish_kernel(T* out, int64_t numel) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < numel;
       i += step) {
    const T v = out[i];
    out[i] = sqrt_of(isnan(v) ? v : (v > T(0) ? v : T(0)));
  }
}

int blocks_for_rows(int64_t rows) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(rows, 65535 * 4)));
}

template <typename F>
void dispatch_real(DType t, const char* what, F&& f) {
  switch (t) {
    case DType::Float32: f(float{}); return;
    case DType::Float64: f(double{}); return;
    default: break;
  }
  fail(str(what, ": unsupported dtype ", dtype_name(t), " (float32 and float64 are)"));
}

template <typename T, int N>
void run_distance(const DistanceLaunch& g, int64_t total, cudaStream_t stream) {
  distance_kernel<T, N><<<blocks_for_rows(total), kThreads, 0, stream>>>(
      g, static_cast<const T*>(g.x1), static_cast<const T*>(g.x2), static_cast<T*>(g.out), total,
      static_cast<T>(g.p));
}

int64_t batch_product(const DistanceLaunch& g) {
  int64_t b = 1;
  for (int d = 0; d < g.batch_dims; ++d) b *= g.batch_sizes[d];
  return b;
}

}  // namespace

void launch_distance(const DistanceLaunch& g, int64_t out_numel, cudaStream_t stream) {
  AOTISHIM_CHECK(g.batch_dims >= 0 && g.batch_dims <= kMaxCopyDims, "cuda cdist: up to ",
                 kMaxCopyDims, " batch dimensions");
  if (out_numel == 0) return;
  discard_earlier_error();
  // torch cuda's choice of norm, in its order
  dispatch_real(g.dtype, g.pairwise ? "cuda _pdist_forward" : "cuda _cdist_forward", [&](auto tag) {
    using T = decltype(tag);
    if (g.p == 0.0) run_distance<T, kZero>(g, out_numel, stream);
    else if (g.p == 1.0) run_distance<T, kOne>(g, out_numel, stream);
    else if (g.p == 2.0) run_distance<T, kTwo>(g, out_numel, stream);
    else if (std::isinf(g.p)) run_distance<T, kInf>(g, out_numel, stream);
    else run_distance<T, kGeneral>(g, out_numel, stream);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_euclid_operands(const DistanceLaunch& g, void* a1, void* a2, cudaStream_t stream) {
  const int64_t batch = batch_product(g);
  const int64_t rows = batch * (g.r1 + g.r2);
  if (rows == 0) return;
  discard_earlier_error();
  dispatch_real(g.dtype, "cuda _cdist_forward", [&](auto tag) {
    using T = decltype(tag);
    euclid_operands_kernel<T><<<blocks_for_rows(rows), kThreads, 0, stream>>>(
        g, static_cast<const T*>(g.x1), static_cast<const T*>(g.x2), static_cast<T*>(a1),
        static_cast<T*>(a2), batch);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_euclid_finish(void* out, DType dtype, int64_t numel, cudaStream_t stream) {
  if (numel == 0) return;
  discard_earlier_error();
  dispatch_real(dtype, "cuda _cdist_forward", [&](auto tag) {
    using T = decltype(tag);
    euclid_finish_kernel<T><<<blocks_for(numel), kThreads, 0, stream>>>(static_cast<T*>(out),
                                                                        numel);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
