// The pooling ops on cuda, as torch's cuda kernels compute them, one thread
// per output cell:
// - max pools (windowed, adaptive, fractional): the window's cells in d, h, w
//   order, a larger value or any NaN taking the lead (so the first of equal
//   maxima and the last NaN win); the index is d * H * W + h * W + w in the
//   input's plane.
// - averages: the cells inside the input summed in the accumulation type
//   (float32 for float32, float16 and bfloat16; float64 for float64), then
//   divided as the op's torch kernel divides (pooling_kernels.h).
// - adaptive windows: [floor(o * in / out), ceil((o + 1) * in / out)) in
//   exact integer arithmetic.
// - fractional windows: started from the samples in the accumulation type
//   (torch's cpu kernel rounds each step to the dtype instead; for float16
//   and bfloat16 the windows can differ, and these are torch cuda's).
// - max_unpool: each element of self claims its position (the largest
//   position in self's order wins, an integer atomicMax), then every output
//   cell gathers its winner, or zero.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/launch_grid.h"
#include "devices/cuda/pooling_kernels.h"

namespace aotishim {
namespace cuda {

namespace {

// A storage type's accumulation type and the conversions to it and back
// (rounding to nearest even).
template <typename T> struct Elem;
template <> struct Elem<float> {
  using Acc = float;
  __device__ static float load(float v) { return v; }
  __device__ static float store(float v) { return v; }
};
template <> struct Elem<double> {
  using Acc = double;
  __device__ static double load(double v) { return v; }
  __device__ static double store(double v) { return v; }
};
template <> struct Elem<__half> {
  using Acc = float;
  __device__ static float load(__half v) { return __half2float(v); }
  __device__ static __half store(float v) { return __float2half_rn(v); }
};
template <> struct Elem<__nv_bfloat16> {
  using Acc = float;
  __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

template <typename A> __device__ A negative_infinity();
template <> __device__ __forceinline__ float negative_infinity<float>() {
  return -__int_as_float(0x7f800000);
}
template <> __device__ __forceinline__ double negative_infinity<double>() {
  return -__longlong_as_double(0x7ff0000000000000LL);
}

__device__ __forceinline__ int64_t smaller(int64_t a, int64_t b) { return a < b ? a : b; }
__device__ __forceinline__ int64_t larger(int64_t a, int64_t b) { return a > b ? a : b; }

// An output cell: its plane (n, c) and its spatial coordinates (d, h, w).
struct Cell {
  int64_t n, c, o[3];
};

// The cell of flat index i over v's sizes, in (n, c, d, h, w) order.
__device__ __forceinline__ Cell cell_at(int64_t i, const Volume& v) {
  Cell cell;
  cell.o[2] = i % v.sizes[4];
  i /= v.sizes[4];
  cell.o[1] = i % v.sizes[3];
  i /= v.sizes[3];
  cell.o[0] = i % v.sizes[2];
  i /= v.sizes[2];
  cell.c = i % v.sizes[1];
  cell.n = i / v.sizes[1];
  return cell;
}

__device__ __forceinline__ int64_t offset_of(const Volume& v, const Cell& cell) {
  return cell.n * v.strides[0] + cell.c * v.strides[1] + cell.o[0] * v.strides[2] +
         cell.o[1] * v.strides[3] + cell.o[2] * v.strides[4];
}

// The max pools' step: a larger value, or any NaN, takes the lead.
template <typename A>
__device__ __forceinline__ void keep_max(A v, int64_t at, A& best, int64_t& best_at) {
  if (v > best || isnan(v)) {
    best = v;
    best_at = at;
  }
}

__device__ __forceinline__ int64_t grid_start() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_step() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

template <typename T>
__global__ void window_pool_kernel(WindowPoolLaunch L, int64_t total) {
  using E = Elem<T>;
  using A = typename E::Acc;
  const T* self = static_cast<const T*>(L.self.data);
  T* out = static_cast<T*>(L.out.data);
  const int64_t* in = L.self.sizes + 2;  // D, H, W
  const int64_t* s = L.self.strides;
  for (int64_t i = grid_start(); i < total; i += grid_step()) {
    const Cell cell = cell_at(i, L.out);
    const T* plane = self + cell.n * s[0] + cell.c * s[1];
    int64_t lo[3], hi[3];
    if (L.max) {
      for (int k = 0; k < 3; ++k) {
        lo[k] = cell.o[k] * L.stride[k] - L.padding[k];
        hi[k] = smaller(lo[k] + (L.kernel[k] - 1) * L.dilation[k] + 1, in[k]);
        if (lo[k] < 0)  // the window's first tap inside the input
          lo[k] += (-lo[k] + L.dilation[k] - 1) / L.dilation[k] * L.dilation[k];
      }
      A best = negative_infinity<A>();
      int64_t best_at = L.first_index_zero ? 0 : (lo[0] * in[1] + lo[1]) * in[2] + lo[2];
      for (int64_t d = lo[0]; d < hi[0]; d += L.dilation[0])
        for (int64_t h = lo[1]; h < hi[1]; h += L.dilation[1])
          for (int64_t w = lo[2]; w < hi[2]; w += L.dilation[2])
            keep_max(E::load(plane[d * s[2] + h * s[3] + w * s[4]]), (d * in[1] + h) * in[2] + w,
                     best, best_at);
      out[offset_of(L.out, cell)] = E::store(best);
      static_cast<int64_t*>(L.indices.data)[offset_of(L.indices, cell)] = best_at;
      continue;
    }
    // average: the window clipped to the padded input gives count_include_pad's
    // divisor, clipped to the input its cells and the other divisor
    int64_t padded = 1, inside = 1;
    for (int k = 0; k < 3; ++k) {
      lo[k] = cell.o[k] * L.stride[k] - L.padding[k];
      hi[k] = smaller(lo[k] + L.kernel[k], in[k] + L.padding[k]);
      padded *= hi[k] - lo[k];
      lo[k] = larger(lo[k], 0);
      hi[k] = smaller(hi[k], in[k]);
      inside *= larger(hi[k] - lo[k], 0);
    }
    if (inside == 0) {
      out[offset_of(L.out, cell)] = E::store(A(0));
      continue;
    }
    A sum = 0;
    for (int64_t d = lo[0]; d < hi[0]; ++d)
      for (int64_t h = lo[1]; h < hi[1]; ++h)
        for (int64_t w = lo[2]; w < hi[2]; ++w)
          sum += E::load(plane[d * s[2] + h * s[3] + w * s[4]]);
    const int64_t divisor = L.divisor_override != 0 ? L.divisor_override
                            : L.count_include_pad   ? padded
                                                    : inside;
    out[offset_of(L.out, cell)] = E::store(sum / static_cast<A>(divisor));
  }
}

template <typename T>
__global__ void adaptive_pool_kernel(AdaptivePoolLaunch L, int64_t total) {
  using E = Elem<T>;
  using A = typename E::Acc;
  const T* self = static_cast<const T*>(L.self.data);
  T* out = static_cast<T*>(L.out.data);
  const int64_t* in = L.self.sizes + 2;
  const int64_t* on = L.out.sizes + 2;
  const int64_t* s = L.self.strides;
  for (int64_t i = grid_start(); i < total; i += grid_step()) {
    const Cell cell = cell_at(i, L.out);
    const T* plane = self + cell.n * s[0] + cell.c * s[1];
    int64_t lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
      lo[k] = cell.o[k] * in[k] / on[k];
      hi[k] = ((cell.o[k] + 1) * in[k] + on[k] - 1) / on[k];
    }
    if (L.max) {
      A best = negative_infinity<A>();
      int64_t best_at = (lo[0] * in[1] + lo[1]) * in[2] + lo[2];
      for (int64_t d = lo[0]; d < hi[0]; ++d)
        for (int64_t h = lo[1]; h < hi[1]; ++h)
          for (int64_t w = lo[2]; w < hi[2]; ++w)
            keep_max(E::load(plane[d * s[2] + h * s[3] + w * s[4]]), (d * in[1] + h) * in[2] + w,
                     best, best_at);
      out[offset_of(L.out, cell)] = E::store(best);
      static_cast<int64_t*>(L.indices.data)[offset_of(L.indices, cell)] = best_at;
      continue;
    }
    A sum = 0;
    for (int64_t d = lo[0]; d < hi[0]; ++d)
      for (int64_t h = lo[1]; h < hi[1]; ++h)
        for (int64_t w = lo[2]; w < hi[2]; ++w)
          sum += E::load(plane[d * s[2] + h * s[3] + w * s[4]]);
    const int64_t kd = hi[0] - lo[0], kh = hi[1] - lo[1], kw = hi[2] - lo[2];
    A mean;
    switch (L.average) {
      case AdaptiveAverage::DivideInTurn:
        // (kd is 1: only 2-D pools divide in turn, torch by kh, then kw)
        mean = sum / static_cast<A>(kd) / static_cast<A>(kh) / static_cast<A>(kw);
        break;
      case AdaptiveAverage::DivideOnce:
        mean = sum / static_cast<A>(kd * kh * kw);
        break;
      default: {
        // T(1) / T(size) evaluated in the dtype: the size rounded to it, and
        // the quotient
        const A size = E::load(E::store(static_cast<A>(kd * kh * kw)));
        mean = sum * E::load(E::store(A(1) / size));
      }
    }
    out[offset_of(L.out, cell)] = E::store(mean);
  }
}

// A fractional window's first cell in a dim of `in` cells pooled to `on`,
// `k` wide, from sample u.
template <typename A>
__device__ __forceinline__ int64_t fractional_start(A u, int64_t o, int64_t in, int64_t on,
                                                    int64_t k) {
  if (o == on - 1) return in - k;
  const A alpha = static_cast<A>(in - k) / static_cast<A>(on - 1);
  return static_cast<int64_t>((static_cast<A>(o) + u) * alpha) - static_cast<int64_t>(u * alpha);
}

template <typename T>
__global__ void fractional_max_pool_kernel(FractionalPoolLaunch L, int64_t total) {
  using E = Elem<T>;
  using A = typename E::Acc;
  const T* self = static_cast<const T*>(L.self.data);
  const T* samples = static_cast<const T*>(L.samples);
  T* out = static_cast<T*>(L.out.data);
  const int64_t* in = L.self.sizes + 2;
  const int64_t* on = L.out.sizes + 2;
  const int64_t* s = L.self.strides;
  const int64_t* us = L.sample_strides;
  for (int64_t i = grid_start(); i < total; i += grid_step()) {
    const Cell cell = cell_at(i, L.out);
    const T* plane = self + cell.n * s[0] + cell.c * s[1];
    const T* row = samples + cell.n * us[0] + cell.c * us[1];
    int64_t lo[3];
    for (int k = 0; k < 3; ++k)
      lo[k] = L.sample_column[k] < 0
                  ? 0
                  : fractional_start(static_cast<A>(E::load(row[L.sample_column[k] * us[2]])),
                                     cell.o[k], in[k], on[k], L.pool[k]);
    A best = negative_infinity<A>();
    int64_t best_at = (lo[0] * in[1] + lo[1]) * in[2] + lo[2];
    for (int64_t d = lo[0]; d < lo[0] + L.pool[0]; ++d)
      for (int64_t h = lo[1]; h < lo[1] + L.pool[1]; ++h)
        for (int64_t w = lo[2]; w < lo[2] + L.pool[2]; ++w) {
          // (only samples outside [0, 1), which nobody checks, reach outside)
          if (d < 0 || d >= in[0] || h < 0 || h >= in[1] || w < 0 || w >= in[2]) continue;
          keep_max(E::load(plane[d * s[2] + h * s[3] + w * s[4]]), (d * in[1] + h) * in[2] + w,
                   best, best_at);
        }
    out[offset_of(L.out, cell)] = E::store(best);
    static_cast<int64_t*>(L.indices.data)[offset_of(L.indices, cell)] = best_at;
  }
}

// max_unpool, first pass: each element of self claims its target position
// (position + 1 in winners, the largest claim kept), or reports its own
// position when the target lies outside out's plane.
__global__ void unpool_claim_kernel(UnpoolLaunch L, int64_t total) {
  const int64_t* indices = static_cast<const int64_t*>(L.indices.data);
  const int64_t in_plane = L.self.sizes[2] * L.self.sizes[3] * L.self.sizes[4];
  const int64_t out_plane = L.out.sizes[2] * L.out.sizes[3] * L.out.sizes[4];
  for (int64_t i = grid_start(); i < total; i += grid_step()) {
    const Cell cell = cell_at(i, L.self);
    const int64_t target = indices[offset_of(L.indices, cell)];
    const int64_t plane = cell.n * L.self.sizes[1] + cell.c;
    const int64_t position = i - plane * in_plane;  // (d * H + h) * W + w
    if (target < 0 || target >= out_plane) {
      atomicMin(L.first_bad, static_cast<unsigned long long>(i));
      continue;
    }
    atomicMax(&L.winners[plane * out_plane + target],
              static_cast<unsigned long long>(position + 1));
  }
}

// max_unpool, second pass: every output cell takes its winner's value, or 0.
template <typename Word>
__global__ void unpool_gather_kernel(UnpoolLaunch L, int64_t total) {
  const Word* self = static_cast<const Word*>(L.self.data);
  Word* out = static_cast<Word*>(L.out.data);
  const int64_t H = L.self.sizes[3], W = L.self.sizes[4];
  const int64_t* s = L.self.strides;
  for (int64_t i = grid_start(); i < total; i += grid_step()) {
    const Cell cell = cell_at(i, L.out);  // i is plane * out_plane + position
    const unsigned long long claim = L.winners[i];
    Word value = 0;
    if (claim != 0) {
      const int64_t position = static_cast<int64_t>(claim - 1);
      const int64_t d = position / (H * W), h = position / W % H, w = position % W;
      value = self[cell.n * s[0] + cell.c * s[1] + d * s[2] + h * s[3] + w * s[4]];
    }
    out[offset_of(L.out, cell)] = value;
  }
}

int64_t cells(const Volume& v) {
  return v.sizes[0] * v.sizes[1] * v.sizes[2] * v.sizes[3] * v.sizes[4];
}

// body(T{}) for the storage type of a floating dtype.
template <typename Body>
void with_float_type(DType dtype, const char* op, Body&& body) {
  switch (dtype) {
    case DType::Float32: body(float{}); return;
    case DType::Float64: body(double{}); return;
    case DType::Float16: body(__half{}); return;
    case DType::BFloat16: body(__nv_bfloat16{}); return;
    default:
      fail(str("cuda ", op, ": ", dtype_name(dtype),
               " is not supported (float32, float64, float16 and bfloat16 are)"));
  }
}

}  // namespace

void launch_window_pool(const WindowPoolLaunch& L, cudaStream_t stream) {
  const int64_t total = cells(L.out);
  if (total == 0) return;
  discard_earlier_error();
  with_float_type(L.dtype, L.max ? "max pooling" : "average pooling", [&](auto tag) {
    using T = decltype(tag);
    window_pool_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(L, total);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_adaptive_pool(const AdaptivePoolLaunch& L, cudaStream_t stream) {
  const int64_t total = cells(L.out);
  if (total == 0) return;
  discard_earlier_error();
  with_float_type(L.dtype, "adaptive pooling", [&](auto tag) {
    using T = decltype(tag);
    adaptive_pool_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(L, total);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_fractional_max_pool(const FractionalPoolLaunch& L, cudaStream_t stream) {
  const int64_t total = cells(L.out);
  if (total == 0) return;
  discard_earlier_error();
  with_float_type(L.dtype, "fractional max pooling", [&](auto tag) {
    using T = decltype(tag);
    fractional_max_pool_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(L, total);
  });
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_max_unpool(const UnpoolLaunch& L, cudaStream_t stream) {
  const int64_t in_total = cells(L.self), out_total = cells(L.out);
  AOTISHIM_CHECK(L.item_size == 1 || L.item_size == 2 || L.item_size == 4 || L.item_size == 8,
                 "cuda max unpooling: elements of ", L.item_size, " bytes are not supported");
  discard_earlier_error();
  AOTISHIM_CUDA_CHECK(cudaMemsetAsync(L.first_bad, 0xff, sizeof(unsigned long long), stream));
  if (out_total == 0) return;
  AOTISHIM_CUDA_CHECK(
      cudaMemsetAsync(L.winners, 0, sizeof(unsigned long long) * out_total, stream));
  if (in_total > 0)
    unpool_claim_kernel<<<blocks_for(in_total), kThreads, 0, stream>>>(L, in_total);
  const int blocks = blocks_for(out_total);
  switch (L.item_size) {
    case 1: unpool_gather_kernel<uint8_t><<<blocks, kThreads, 0, stream>>>(L, out_total); break;
    case 2: unpool_gather_kernel<uint16_t><<<blocks, kThreads, 0, stream>>>(L, out_total); break;
    case 4: unpool_gather_kernel<uint32_t><<<blocks, kThreads, 0, stream>>>(L, out_total); break;
    default:
      unpool_gather_kernel<unsigned long long><<<blocks, kThreads, 0, stream>>>(L, out_total);
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
