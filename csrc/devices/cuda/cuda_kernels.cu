// Strided elementwise kernels: copies with dtype conversion (every pair of
// dtypes, as torch's copy_ converts), in-place scaling and in-place addition
// of a (broadcast) tensor. One thread per output element over a grid-stride
// loop; adjacent dimensions that are contiguous in every operand are merged
// first so common views index with few divisions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

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

// Values of scale and add pass through W (float, or double for double).
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
template <> struct Cvt<float, __nv_bfloat16> {
  __device__ static float load(__nv_bfloat16 v) { return __bfloat162float(v); }
  __device__ static __nv_bfloat16 store(float v) { return __float2bfloat16_rn(v); }
};

template <typename T> struct Wide { using type = float; };
template <> struct Wide<double> { using type = double; };

// A complex element, (real, imag) as c10::complex; aligned only as its part,
// since borrowed memory need not be aligned wider.
template <typename P> struct Complex {
  P re, im;
};

// c10::convert's rules (c10/util/TypeCast.h), element by element.
// A real source as torch reads it: the 16-bit floats widen to float.
template <typename S> __device__ __forceinline__ S real_value(S v) { return v; }
__device__ __forceinline__ float real_value(__half v) { return __half2float(v); }
__device__ __forceinline__ float real_value(__nv_bfloat16 v) { return __bfloat162float(v); }

// A real value into D: static_cast, except as below.
template <typename D> struct Store {
  template <typename R> __device__ static D from(R r) { return static_cast<D>(r); }
};
template <> struct Store<bool> {
  template <typename R> __device__ static bool from(R r) { return r != R(0); }
};
// torch goes through int64 so that negative floats wrap the same on every
// compiler (a direct float -> unsigned cast of them is undefined).
template <> struct Store<uint8_t> {
  template <typename R> __device__ static uint8_t from(R r) {
    return static_cast<uint8_t>(static_cast<int64_t>(r));
  }
};
// c10::Half and c10::BFloat16 are built from a float only: a double or a wide
// integer rounds to float first, as torch's does.
template <> struct Store<__half> {
  template <typename R> __device__ static __half from(R r) {
    return __float2half_rn(static_cast<float>(r));
  }
};
template <> struct Store<__nv_bfloat16> {
  template <typename R> __device__ static __nv_bfloat16 from(R r) {
    return __float2bfloat16_rn(static_cast<float>(r));
  }
};
template <typename P> struct Store<Complex<P>> {
  template <typename R> __device__ static Complex<P> from(R r) {
    return {static_cast<P>(r), P(0)};
  }
};

template <typename D, typename S> struct Convert {
  __device__ static D apply(S v) { return Store<D>::from(real_value(v)); }
};
// Complex into a real dtype: the real part, except that bool tests both.
template <typename D, typename P> struct Convert<D, Complex<P>> {
  __device__ static D apply(Complex<P> v) { return Store<D>::from(v.re); }
};
template <typename P> struct Convert<bool, Complex<P>> {
  __device__ static bool apply(Complex<P> v) { return v.re != P(0) || v.im != P(0); }
};
template <typename Q, typename P> struct Convert<Complex<Q>, Complex<P>> {
  __device__ static Complex<Q> apply(Complex<P> v) {
    return {static_cast<Q>(v.re), static_cast<Q>(v.im)};
  }
};

// A bool is read as its byte, nonzero true, as c10::load reads one.
template <typename S> __device__ __forceinline__ S load(const S* p) { return *p; }
__device__ __forceinline__ bool load(const bool* p) {
  return *reinterpret_cast<const unsigned char*>(p) != 0;
}

template <typename D, typename S>
__device__ __forceinline__ D read_as(const void* src, int64_t off) {
  return Convert<D, S>::apply(load(static_cast<const S*>(src) + off));
}

// src's element at `off`, converted to D. The switch takes one way for the
// whole grid: a branch per element instead of a kernel for each of the 210
// pairs of dtypes. It made a contiguous float32 -> bfloat16 copy 17% slower on
// an H100, so the pairs of real floats keep kernels of their own.
template <typename D>
__device__ __forceinline__ D convert_element(const void* src, DType t, int64_t off) {
  switch (t) {
    case DType::Bool: return read_as<D, bool>(src, off);
    case DType::UInt8: return read_as<D, uint8_t>(src, off);
    case DType::Int8: return read_as<D, int8_t>(src, off);
    case DType::Int16: return read_as<D, int16_t>(src, off);
    case DType::Int32: return read_as<D, int32_t>(src, off);
    case DType::Int64: return read_as<D, int64_t>(src, off);
    case DType::UInt16: return read_as<D, uint16_t>(src, off);
    case DType::UInt32: return read_as<D, uint32_t>(src, off);
    case DType::UInt64: return read_as<D, uint64_t>(src, off);
    case DType::Float16: return read_as<D, __half>(src, off);
    case DType::BFloat16: return read_as<D, __nv_bfloat16>(src, off);
    case DType::Float32: return read_as<D, float>(src, off);
    case DType::Float64: return read_as<D, double>(src, off);
    case DType::Complex64: return read_as<D, Complex<float>>(src, off);
    case DType::Complex128: return read_as<D, Complex<double>>(src, off);
  }
  return D{};  // not reached: the host dispatched on a known dtype
}

template <typename D>
__global__ void convert_kernel(D* dst, const void* src, DType src_dtype, Geometry g) {
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel;
       i += step) {
    int64_t off[2];
    offsets(g, i, 2, off);
    dst[off[0]] = convert_element<D>(src, src_dtype, off[1]);
  }
}

// One pair of real floats, typed: no switch.
template <typename D, typename S>
__global__ void convert_pair_kernel(D* dst, const S* src, Geometry g) {
  int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < g.numel;
       i += step) {
    int64_t off[2];
    offsets(g, i, 2, off);
    dst[off[0]] = read_as<D, S>(src, off[1]);
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

template <typename T>
void launch_raw(const StridedView& dst, const StridedView& src, const Geometry& g,
                cudaStream_t stream) {
  raw_copy_kernel<T><<<blocks_for(g.numel), kThreads, 0, stream>>>(
      static_cast<T*>(dst.data), static_cast<const T*>(src.data), g);
}

// Calls f(T{}) with T the element type the kernels hold dtype t in.
template <typename F>
void with_element_type(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f(bool{});
    case DType::UInt8: return f(uint8_t{});
    case DType::Int8: return f(int8_t{});
    case DType::Int16: return f(int16_t{});
    case DType::Int32: return f(int32_t{});
    case DType::Int64: return f(int64_t{});
    case DType::UInt16: return f(uint16_t{});
    case DType::UInt32: return f(uint32_t{});
    case DType::UInt64: return f(uint64_t{});
    case DType::Float16: return f(__half{});
    case DType::BFloat16: return f(__nv_bfloat16{});
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Complex64: return f(Complex<float>{});
    case DType::Complex128: return f(Complex<double>{});
  }
  fail(str("cuda copy: unsupported dtype ", static_cast<int>(t)));
}

// Calls f(T{}) with T the element type of a real floating dtype; returns
// false for any other dtype.
template <typename F>
bool with_real_float_type(DType t, F&& f) {
  switch (t) {
    case DType::Float16: f(__half{}); return true;
    case DType::BFloat16: f(__nv_bfloat16{}); return true;
    case DType::Float32: f(float{}); return true;
    case DType::Float64: f(double{}); return true;
    default: return false;
  }
}

void launch_convert(const StridedView& dst, const StridedView& src, const Geometry& g,
                    cudaStream_t stream) {
  bool launched = false;
  with_real_float_type(dst.dtype, [&](auto d) {
    launched = with_real_float_type(src.dtype, [&](auto s) {
      using D = decltype(d);
      using S = decltype(s);
      if constexpr (!std::is_same<D, S>::value) {  // same dtypes are raw moves
        convert_pair_kernel<D, S><<<blocks_for(g.numel), kThreads, 0, stream>>>(
            static_cast<D*>(dst.data), static_cast<const S*>(src.data), g);
      }
    });
  });
  if (launched) return;
  with_element_type(src.dtype, [](auto) {});  // refuses a dtype the kernel cannot read
  with_element_type(dst.dtype, [&](auto d) {
    using D = decltype(d);
    convert_kernel<D><<<blocks_for(g.numel), kThreads, 0, stream>>>(static_cast<D*>(dst.data),
                                                                   src.data, src.dtype, g);
  });
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
  } else {
    discard_earlier_error();
    launch_convert(dst, src, g, stream);
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
