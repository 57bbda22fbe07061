// Strided elementwise kernels: copies with dtype conversion (among the real
// floats, and from them to complex), in-place
// scaling and in-place addition of a (broadcast) tensor. One thread per output element over a grid-stride loop; adjacent
// dimensions that are contiguous in every operand are merged first so common
// views index with few divisions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/cuda_kernels.h"

namespace aotishim {
namespace cuda {

namespace {

struct Geometry {
  int ndim = 0;
  int64_t numel = 1;
  int64_t sizes[kMaxCopyDims];
  int64_t strides[2][kMaxCopyDims];  // [operand][dim]
};

// Drops size-1 dimensions and merges a dimension into the next inner one when
// that is contiguous with it for every operand.
Geometry collapse(const int64_t* sizes, int ndim, const int64_t* const* strides, int operands) {
  Geometry g;
  for (int d = 0; d < ndim; ++d) g.numel *= sizes[d];
  int n = 0;
  for (int d = 0; d < ndim; ++d) {
    if (sizes[d] == 1) continue;
    if (n > 0) {
      bool mergeable = true;
      for (int o = 0; o < operands; ++o)
        mergeable = mergeable && g.strides[o][n - 1] == strides[o][d] * sizes[d];
      if (mergeable) {
        g.sizes[n - 1] *= sizes[d];
        for (int o = 0; o < operands; ++o) g.strides[o][n - 1] = strides[o][d];
        continue;
      }
    }
    g.sizes[n] = sizes[d];
    for (int o = 0; o < operands; ++o) g.strides[o][n] = strides[o][d];
    ++n;
  }
  g.ndim = n;
  return g;
}

__device__ __forceinline__ void offsets(const Geometry& g, int64_t linear, int operands,
                                        int64_t* out) {
  out[0] = 0;
  out[1] = 0;
  for (int d = g.ndim - 1; d >= 0; --d) {
    int64_t size = g.sizes[d];
    int64_t i = linear % size;
    linear /= size;
    out[0] += i * g.strides[0][d];
    if (operands > 1) out[1] += i * g.strides[1][d];
  }
}

// Values pass through W (float, or double when either side is double).
template <typename W, typename T> struct Cvt;
template <typename W> struct Cvt<W, float> {
  __device__ static W load(float v) { return static_cast<W>(v); }
  __device__ static float store(W v) { return static_cast<float>(v); }
};
template <typename W> struct Cvt<W, double> {
  __device__ static W load(double v) { return static_cast<W>(v); }
  __device__ static double store(W v) { return static_cast<double>(v); }
};
template <> struct Cvt<float, __half> {
  __device__ static float load(__half v) { return __half2float(v); }
  __device__ static __half store(float v) { return __float2half_rn(v); }
};
template <> struct Cvt<double, __half> {
  __device__ static double load(__half v) { return static_cast<double>(__half2float(v)); }
  __device__ static __half store(double v) { return __double2half(v); }
};
template <> struct Cvt<float, __nv_bfloat16> {
  __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};
template <> struct Cvt<double, __nv_bfloat16> {
  __device__ static double load(__nv_bfloat16 v) { return static_cast<double>(__bfloat162float(v)); }
  __device__ static __nv_bfloat16 store(double v) { return __double2bfloat16(v); }
};

template <typename T> struct Wide { using type = float; };
template <> struct Wide<double> { using type = double; };

template <typename D, typename S>
__global__ void copy_kernel(D* dst, const S* src, Geometry g) {
  using W = typename std::conditional<std::is_same<typename Wide<D>::type, double>::value ||
                                          std::is_same<typename Wide<S>::type, double>::value,
                                      double, float>::type;
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel;
       i += step) {
    int64_t off[2];
    offsets(g, i, 2, off);
    dst[off[0]] = Cvt<W, D>::store(Cvt<W, S>::load(src[off[1]]));
  }
}

// A real float into a complex of parts P: (the value as P, 0), as torch
// converts a real to a complex. dst's offsets count complex elements.
template <typename P, typename S>
__global__ void real_to_complex_kernel(P* dst, const S* src, Geometry g) {
  using W = typename std::conditional<std::is_same<P, double>::value ||
                                          std::is_same<typename Wide<S>::type, double>::value,
                                      double, float>::type;
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel;
       i += step) {
    int64_t off[2];
    offsets(g, i, 2, off);
    dst[2 * off[0]] = Cvt<W, P>::store(Cvt<W, S>::load(src[off[1]]));
    dst[2 * off[0] + 1] = P(0);
  }
}

// Same-dtype copies move raw elements of the dtype's width.
// A complex128 element moved as two 8-byte words (no wider alignment is
// assumed: borrowed memory need only be aligned to 8).
struct Bytes16 {
  uint64_t lo, hi;
};

template <typename T>
__global__ void raw_copy_kernel(T* dst, const T* src, Geometry g) {
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel;
       i += step) {
    int64_t off[2];
    offsets(g, i, 2, off);
    dst[off[0]] = src[off[1]];
  }
}

template <typename T>
__global__ void scale_kernel(T* data, Geometry g, double beta) {
  using W = typename Wide<T>::type;
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel;
       i += step) {
    int64_t off[2];
    offsets(g, i, 1, off);
    W v = beta == 0.0 ? W(0) : Cvt<W, T>::load(data[off[0]]) * static_cast<W>(beta);
    data[off[0]] = Cvt<W, T>::store(v);
  }
}

template <typename T>
__global__ void add_kernel(T* dst, const T* src, Geometry g) {
  using W = typename Wide<T>::type;
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel;
       i += step) {
    int64_t off[2];
    offsets(g, i, 2, off);
    dst[off[0]] = Cvt<W, T>::store(Cvt<W, T>::load(dst[off[0]]) + Cvt<W, T>::load(src[off[1]]));
  }
}

// Keeps one thread busy for `cycles` clock ticks: holds a stream back while
// work is queued behind it.
__global__ void busy_wait_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

constexpr int kThreads = 256;

int blocks_for(int64_t numel) {
  // Enough blocks to fill the GPU; the grid-stride loop covers the rest.
  int64_t b = (numel + kThreads - 1) / kThreads;
  return static_cast<int>(std::min<int64_t>(std::max<int64_t>(b, 1), 65535));
}

template <typename D, typename S>
void launch_typed(const StridedView& dst, const StridedView& src, const Geometry& g,
                  cudaStream_t stream) {
  copy_kernel<D, S><<<blocks_for(g.numel), kThreads, 0, stream>>>(
      static_cast<D*>(dst.data), static_cast<const S*>(src.data), g);
}

template <typename D>
void launch_from(const StridedView& dst, const StridedView& src, const Geometry& g,
                 cudaStream_t stream) {
  switch (src.dtype) {
    case DType::Float32: return launch_typed<D, float>(dst, src, g, stream);
    case DType::Float64: return launch_typed<D, double>(dst, src, g, stream);
    case DType::Float16: return launch_typed<D, __half>(dst, src, g, stream);
    case DType::BFloat16: return launch_typed<D, __nv_bfloat16>(dst, src, g, stream);
    default: break;
  }
  fail(str("cuda copy cannot convert ", dtype_name(src.dtype), " to ", dtype_name(dst.dtype),
           " (conversions are among float32, float64, float16 and bfloat16, and from those to "
           "complex64 and complex128)"));
}

template <typename T>
void launch_raw(const StridedView& dst, const StridedView& src, const Geometry& g,
                cudaStream_t stream) {
  raw_copy_kernel<T><<<blocks_for(g.numel), kThreads, 0, stream>>>(
      static_cast<T*>(dst.data), static_cast<const T*>(src.data), g);
}

bool is_float(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 ||
         t == DType::BFloat16;
}

template <typename P>
void launch_real_to_complex(const StridedView& dst, const StridedView& src, const Geometry& g,
                            cudaStream_t stream) {
  P* out = static_cast<P*>(dst.data);
  const int blocks = blocks_for(g.numel);
  switch (src.dtype) {
    case DType::Float32:
      real_to_complex_kernel<P, float><<<blocks, kThreads, 0, stream>>>(
          out, static_cast<const float*>(src.data), g);
      break;
    case DType::Float64:
      real_to_complex_kernel<P, double><<<blocks, kThreads, 0, stream>>>(
          out, static_cast<const double*>(src.data), g);
      break;
    case DType::Float16:
      real_to_complex_kernel<P, __half><<<blocks, kThreads, 0, stream>>>(
          out, static_cast<const __half*>(src.data), g);
      break;
    default:
      real_to_complex_kernel<P, __nv_bfloat16><<<blocks, kThreads, 0, stream>>>(
          out, static_cast<const __nv_bfloat16*>(src.data), g);
      break;
  }
}

}  // namespace

void launch_copy(const StridedView& dst, const StridedView& src, const int64_t* sizes, int ndim,
                 cudaStream_t stream) {
  AOTISHIM_CHECK(ndim >= 0 && ndim <= kMaxCopyDims, "cuda copy supports up to ", kMaxCopyDims,
                 " dimensions, got ", ndim);
  const int64_t* strides[2] = {dst.strides, src.strides};
  Geometry g = collapse(sizes, ndim, strides, 2);
  if (g.numel == 0) return;
  if (dst.dtype == src.dtype) {
    size_t item = element_size(dst.dtype);
    // One dense run in both: a plain device-to-device copy.
    if (g.ndim == 0 || (g.ndim == 1 && g.strides[0][0] == 1 && g.strides[1][0] == 1)) {
      AOTISHIM_CUDA_CHECK(cudaMemcpyAsync(dst.data, src.data, static_cast<size_t>(g.numel) * item,
                                          cudaMemcpyDeviceToDevice, stream));
      return;
    }
    discard_earlier_error();
    switch (item) {
      case 1: launch_raw<uint8_t>(dst, src, g, stream); break;
      case 2: launch_raw<uint16_t>(dst, src, g, stream); break;
      case 4: launch_raw<uint32_t>(dst, src, g, stream); break;
      case 8: launch_raw<uint64_t>(dst, src, g, stream); break;
      case 16: launch_raw<Bytes16>(dst, src, g, stream); break;  // complex128
      default: fail(str("cuda copy: unsupported element size ", item));
    }
  } else if ((dst.dtype == DType::Complex64 || dst.dtype == DType::Complex128) &&
             is_float(src.dtype)) {
    discard_earlier_error();
    if (dst.dtype == DType::Complex64) launch_real_to_complex<float>(dst, src, g, stream);
    else launch_real_to_complex<double>(dst, src, g, stream);
  } else {
    AOTISHIM_CHECK(is_float(dst.dtype) && is_float(src.dtype), "cuda copy cannot convert ",
                   dtype_name(src.dtype), " to ", dtype_name(dst.dtype),
                   " (conversions are among float32, float64, float16 and bfloat16, and from "
                   "those to complex64 and complex128)");
    discard_earlier_error();
    switch (dst.dtype) {
      case DType::Float32: launch_from<float>(dst, src, g, stream); break;
      case DType::Float64: launch_from<double>(dst, src, g, stream); break;
      case DType::Float16: launch_from<__half>(dst, src, g, stream); break;
      case DType::BFloat16: launch_from<__nv_bfloat16>(dst, src, g, stream); break;
      default: break;
    }
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_scale(const StridedView& t, const int64_t* sizes, int ndim, double beta,
                  cudaStream_t stream) {
  AOTISHIM_CHECK(ndim >= 0 && ndim <= kMaxCopyDims, "too many dimensions: ", ndim);
  const int64_t* strides[1] = {t.strides};
  Geometry g = collapse(sizes, ndim, strides, 1);
  if (g.numel == 0) return;
  int blocks = blocks_for(g.numel);
  discard_earlier_error();
  switch (t.dtype) {
    case DType::Float32: scale_kernel<float><<<blocks, kThreads, 0, stream>>>(static_cast<float*>(t.data), g, beta); break;
    case DType::Float64: scale_kernel<double><<<blocks, kThreads, 0, stream>>>(static_cast<double*>(t.data), g, beta); break;
    case DType::Float16: scale_kernel<__half><<<blocks, kThreads, 0, stream>>>(static_cast<__half*>(t.data), g, beta); break;
    case DType::BFloat16: scale_kernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(t.data), g, beta); break;
    default: fail(str("cuda scale: unsupported dtype ", dtype_name(t.dtype)));
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_add(const StridedView& dst, const StridedView& src, const int64_t* sizes, int ndim,
                cudaStream_t stream) {
  AOTISHIM_CHECK(ndim >= 0 && ndim <= kMaxCopyDims, "too many dimensions: ", ndim);
  AOTISHIM_CHECK(dst.dtype == src.dtype, "cuda add: ", dtype_name(src.dtype), " into ",
                 dtype_name(dst.dtype));
  const int64_t* strides[2] = {dst.strides, src.strides};
  Geometry g = collapse(sizes, ndim, strides, 2);
  if (g.numel == 0) return;
  int blocks = blocks_for(g.numel);
  discard_earlier_error();
  switch (dst.dtype) {
    case DType::Float32: add_kernel<float><<<blocks, kThreads, 0, stream>>>(static_cast<float*>(dst.data), static_cast<const float*>(src.data), g); break;
    case DType::Float64: add_kernel<double><<<blocks, kThreads, 0, stream>>>(static_cast<double*>(dst.data), static_cast<const double*>(src.data), g); break;
    case DType::Float16: add_kernel<__half><<<blocks, kThreads, 0, stream>>>(static_cast<__half*>(dst.data), static_cast<const __half*>(src.data), g); break;
    case DType::BFloat16: add_kernel<__nv_bfloat16><<<blocks, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(dst.data), static_cast<const __nv_bfloat16*>(src.data), g); break;
    default: fail(str("cuda add: unsupported dtype ", dtype_name(dst.dtype)));
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

void launch_busy_wait(double microseconds, cudaStream_t stream) {
  int device = 0, khz = 0;
  AOTISHIM_CUDA_CHECK(cudaGetDevice(&device));
  AOTISHIM_CUDA_CHECK(cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, device));
  discard_earlier_error();
  busy_wait_kernel<<<1, 1, 0, stream>>>(static_cast<long long>(microseconds * khz / 1000.0));
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
