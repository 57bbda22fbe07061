// Pointwise arithmetic as torch's cuda kernels compute it: float16 and
// bfloat16 in float32, a + alpha * b as one fused multiply-add (what nvcc
// makes of torch's expression), integers wrapping (unsigned arithmetic, so no
// undefined overflow), bool products a logical and, abs of complex its
// magnitude (hypot).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/pointwise_kernels.h"
#include "devices/cuda/launch_grid.h"

namespace aotishim {
namespace cuda {

namespace {


struct Geometry {
  int ndim;
  int64_t sizes[kMaxCopyDims];
  int64_t out[kMaxCopyDims], a[kMaxCopyDims], b[kMaxCopyDims];
};

struct Offsets {
  int64_t out, a, b;
};

__device__ __forceinline__ Offsets offsets_of(int64_t i, const Geometry& g) {
  Offsets o{0, 0, 0};
  for (int d = g.ndim - 1; d >= 0; --d) {
    const int64_t k = i % g.sizes[d];
    i /= g.sizes[d];
    o.out += k * g.out[d];
    o.a += k * g.a[d];
    o.b += k * g.b[d];
  }
  return o;
}

template <typename T> struct Ops {  // signed and unsigned integers: wrapping
  // unsigned and at least 32 bits: narrower types would promote to int
  using U = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;
  __device__ static T mul(T x, T y) { return static_cast<T>(static_cast<U>(x) * static_cast<U>(y)); }
  __device__ static T add(T x, T y, double) { return static_cast<T>(static_cast<U>(x) + static_cast<U>(y)); }
  __device__ static T abs(T x) {
    if constexpr (std::is_signed_v<T>) return x < 0 ? static_cast<T>(U(0) - static_cast<U>(x)) : x;
    else return x;
  }
};
template <> struct Ops<bool> {
  __device__ static bool mul(bool x, bool y) { return x && y; }
  __device__ static bool add(bool x, bool y, double) { return x || y; }
  __device__ static bool abs(bool x) { return x; }
};
template <> struct Ops<float> {
  __device__ static float mul(float x, float y) { return __fmul_rn(x, y); }
  __device__ static float add(float x, float y, double alpha) {
    return alpha == 1.0 ? __fadd_rn(x, y) : fmaf(static_cast<float>(alpha), y, x);
  }
  __device__ static float abs(float x) { return fabsf(x); }
};
template <> struct Ops<double> {
  __device__ static double mul(double x, double y) { return __dmul_rn(x, y); }
  __device__ static double add(double x, double y, double alpha) {
    return alpha == 1.0 ? __dadd_rn(x, y) : fma(alpha, y, x);
  }
  __device__ static double abs(double x) { return fabs(x); }
};
template <> struct Ops<__half> {
  __device__ static __half mul(__half x, __half y) {
    return __float2half_rn(Ops<float>::mul(__half2float(x), __half2float(y)));
  }
  __device__ static __half add(__half x, __half y, double alpha) {
    return __float2half_rn(Ops<float>::add(__half2float(x), __half2float(y), alpha));
  }
  __device__ static __half abs(__half x) { return __habs(x); }
};
template <> struct Ops<__nv_bfloat16> {
  __device__ static __nv_bfloat16 mul(__nv_bfloat16 x, __nv_bfloat16 y) {
    return __float2bfloat16_rn(Ops<float>::mul(__bfloat162float(x), __bfloat162float(y)));
  }
  __device__ static __nv_bfloat16 add(__nv_bfloat16 x, __nv_bfloat16 y, double alpha) {
    return __float2bfloat16_rn(Ops<float>::add(__bfloat162float(x), __bfloat162float(y), alpha));
  }
  __device__ static __nv_bfloat16 abs(__nv_bfloat16 x) { return __habs(x); }
};

template <typename T>
__global__ void real_kernel(DevicePointwise kind, T* out, const T* a, const T* b, double alpha,
                            Geometry g, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const Offsets o = offsets_of(i, g);
    T r;
    switch (kind) {
      case DevicePointwise::Add: r = Ops<T>::add(a[o.a], b[o.b], alpha); break;
      case DevicePointwise::Mul: r = Ops<T>::mul(a[o.a], b[o.b]); break;
      default: r = Ops<T>::abs(a[o.a]); break;
    }
    out[o.out] = r;
  }
}

// Complex: (re, im) pairs of P; abs writes one P per element.
template <typename P>
__global__ void complex_kernel(DevicePointwise kind, P* out, const P* a, const P* b, double alpha,
                               Geometry g, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const Offsets o = offsets_of(i, g);
    const P ar = a[2 * o.a], ai = a[2 * o.a + 1];
    if (kind == DevicePointwise::Abs) {
      out[o.out] = hypot(ar, ai);
      continue;
    }
    const P br = b[2 * o.b], bi = b[2 * o.b + 1];
    P re, im;
    if (kind == DevicePointwise::Mul) {
      re = ar * br - ai * bi;
      im = ar * bi + ai * br;
    } else {  // alpha is real: a + alpha * b, each part
      const P s = static_cast<P>(alpha);
      re = alpha == 1.0 ? ar + br : fma(s, br, ar);
      im = alpha == 1.0 ? ai + bi : fma(s, bi, ai);
    }
    out[2 * o.out] = re;
    out[2 * o.out + 1] = im;
  }
}

// polar: out (complex of P) = a * (cos b + i sin b), a and b of P.
template <typename P>
__global__ void polar_kernel(P* out, const P* a, const P* b, Geometry g, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const Offsets o = offsets_of(i, g);
    const P r = a[o.a], t = b[o.b];
    out[2 * o.out] = r * cos(t);
    out[2 * o.out + 1] = r * sin(t);
  }
}

template <typename T>
void run_real(DevicePointwise kind, const StridedView& out, const StridedView& a,
              const StridedView& b, double alpha, const Geometry& g, int64_t total,
              cudaStream_t stream) {
  real_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
      kind, static_cast<T*>(out.data), static_cast<const T*>(a.data),
      static_cast<const T*>(b.data), alpha, g, total);
}

}  // namespace

void launch_pointwise(DevicePointwise kind, const StridedView& out, const StridedView& a,
                      const StridedView& b, double alpha, const int64_t* sizes, int ndim,
                      cudaStream_t stream) {
  AOTISHIM_CHECK(ndim <= kMaxCopyDims, "cuda pointwise: up to ", kMaxCopyDims, " dimensions");
  Geometry g{ndim, {}, {}, {}, {}};
  int64_t total = 1;
  for (int d = 0; d < ndim; ++d) {
    g.sizes[d] = sizes[d];
    g.out[d] = out.strides[d];
    g.a[d] = a.strides[d];
    g.b[d] = b.strides[d];
    total *= sizes[d];
  }
  if (total == 0) return;
  discard_earlier_error();
  const int blocks = blocks_for(total);
  if (kind == DevicePointwise::Polar) {
    if (out.dtype == DType::Complex64)
      polar_kernel<float><<<blocks, kThreads, 0, stream>>>(static_cast<float*>(out.data),
          static_cast<const float*>(a.data), static_cast<const float*>(b.data), g, total);
    else if (out.dtype == DType::Complex128)
      polar_kernel<double><<<blocks, kThreads, 0, stream>>>(static_cast<double*>(out.data),
          static_cast<const double*>(a.data), static_cast<const double*>(b.data), g, total);
    else
      fail(str("cuda polar: unsupported result dtype ", dtype_name(out.dtype)));
    AOTISHIM_CUDA_CHECK(cudaGetLastError());
    return;
  }
  // abs of complex reads complex a into a real out
  const DType t = kind == DevicePointwise::Abs ? a.dtype : out.dtype;
  switch (t) {
    case DType::Bool: run_real<bool>(kind, out, a, b, alpha, g, total, stream); break;
    case DType::UInt8: run_real<uint8_t>(kind, out, a, b, alpha, g, total, stream); break;
    case DType::Int8: run_real<int8_t>(kind, out, a, b, alpha, g, total, stream); break;
    case DType::Int16: run_real<int16_t>(kind, out, a, b, alpha, g, total, stream); break;
    case DType::Int32: run_real<int32_t>(kind, out, a, b, alpha, g, total, stream); break;
    case DType::Int64: run_real<int64_t>(kind, out, a, b, alpha, g, total, stream); break;
    case DType::UInt16: run_real<uint16_t>(kind, out, a, b, alpha, g, total, stream); break;
    case DType::UInt32: run_real<uint32_t>(kind, out, a, b, alpha, g, total, stream); break;
    case DType::UInt64: run_real<uint64_t>(kind, out, a, b, alpha, g, total, stream); break;
    case DType::Float16: run_real<__half>(kind, out, a, b, alpha, g, total, stream); break;
    case DType::BFloat16: run_real<__nv_bfloat16>(kind, out, a, b, alpha, g, total, stream); break;
    case DType::Float32: run_real<float>(kind, out, a, b, alpha, g, total, stream); break;
    case DType::Float64: run_real<double>(kind, out, a, b, alpha, g, total, stream); break;
    case DType::Complex64:
      complex_kernel<float><<<blocks, kThreads, 0, stream>>>(kind, static_cast<float*>(out.data),
          static_cast<const float*>(a.data), static_cast<const float*>(b.data), alpha, g, total);
      break;
    case DType::Complex128:
      complex_kernel<double><<<blocks, kThreads, 0, stream>>>(kind, static_cast<double*>(out.data),
          static_cast<const double*>(a.data), static_cast<const double*>(b.data), alpha, g, total);
      break;
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
