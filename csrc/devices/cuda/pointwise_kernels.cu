// Pointwise arithmetic as torch's cuda kernels compute it: float16 and
// bfloat16 in float32, a + alpha * b as one fused multiply-add (what nvcc
// makes of torch's expression), integers wrapping (unsigned arithmetic, so no
// undefined overflow), bool products a logical and, abs of complex its
// magnitude (hypot). pow follows torch cuda's kernels: a tensor exponent is
// pow in the math type (powf for float and the 16-bit floats), integer powers
// wrap; a number exponent of 0 or 1 fills ones or copies, 1/2, -1/2 and -1
// are sqrt, CUDA's approximate rsqrt and the reciprocal, and otherwise the
// exponent is first rounded to the dtype, then 2, 3 and -2 are products
// (each product of the 16-bit floats rounded, -2's reciprocal in double) and
// the rest pow. Complex pow is exp(log(a) * b), as thrust's; complex sqrt is
// the polar form and division Smith's algorithm.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/pointwise_kernels.h"
#include "devices/cuda/launch_grid.h"
#include "devices/cuda/typed_values.cuh"

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

// A number exponent's special forms, decided on the host from the double as
// torch's pow_Tensor_Scalar decides them (the rest on the device, per dtype).
enum ScalarPow : int { kFillOne, kCopy, kSqrt, kRsqrt, kReciprocal, kOther };

template <typename T>
constexpr bool kInteger = std::is_integral<T>::value && !std::is_same<T, bool>::value;
template <typename T>
constexpr bool kFloating = !std::is_integral<T>::value;  // float, double and the 16-bit floats

__device__ __forceinline__ float sqrt_of(float x) { return sqrtf(x); }
__device__ __forceinline__ double sqrt_of(double x) { return ::sqrt(x); }
__device__ __forceinline__ float rsqrt_of(float x) { return rsqrtf(x); }
__device__ __forceinline__ double rsqrt_of(double x) { return ::rsqrt(x); }
__device__ __forceinline__ float power(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double power(double x, double y) { return ::pow(x, y); }
__device__ __forceinline__ float exp_of(float x) { return expf(x); }
__device__ __forceinline__ double exp_of(double x) { return ::exp(x); }
__device__ __forceinline__ float log_of(float x) { return logf(x); }
__device__ __forceinline__ double log_of(double x) { return ::log(x); }
__device__ __forceinline__ float cos_of(float x) { return cosf(x); }
__device__ __forceinline__ double cos_of(double x) { return ::cos(x); }
__device__ __forceinline__ float sin_of(float x) { return sinf(x); }
__device__ __forceinline__ double sin_of(double x) { return ::sin(x); }
__device__ __forceinline__ float atan2_of(float y, float x) { return atan2f(y, x); }
__device__ __forceinline__ double atan2_of(double y, double x) { return ::atan2(y, x); }
__device__ __forceinline__ float hypot_of(float x, float y) { return hypotf(x, y); }
__device__ __forceinline__ double hypot_of(double x, double y) { return ::hypot(x, y); }
__device__ __forceinline__ float copysign_of(float x, float y) { return copysignf(x, y); }
__device__ __forceinline__ double copysign_of(double x, double y) { return ::copysign(x, y); }
template <typename P> __device__ __forceinline__ P infinity();
template <> __device__ __forceinline__ float infinity<float>() {
  return __int_as_float(0x7f800000);
}
template <> __device__ __forceinline__ double infinity<double>() {
  return __longlong_as_double(0x7ff0000000000000LL);
}
template <typename P> __device__ __forceinline__ P quiet_nan();
template <> __device__ __forceinline__ float quiet_nan<float>() {
  return __int_as_float(0x7fc00000);
}
template <> __device__ __forceinline__ double quiet_nan<double>() {
  return __longlong_as_double(0x7ff8000000000000LL);
}

template <typename T> struct Ops {  // signed and unsigned integers: wrapping
  // unsigned and at least 32 bits: narrower types would promote to int
  using U = std::conditional_t<(sizeof(T) <= 4), uint32_t, uint64_t>;
  __device__ static T mul(T x, T y) {
    return static_cast<T>(static_cast<U>(x) * static_cast<U>(y));
  }
  __device__ static T add(T x, T y, double) {
    return static_cast<T>(static_cast<U>(x) + static_cast<U>(y));
  }
  __device__ static T abs(T x) {
    if constexpr (std::is_signed_v<T>) return x < 0 ? static_cast<T>(U(0) - static_cast<U>(x)) : x;
    else return x;
  }
  // torch's calc_gcd: abs in the promoted type, narrowed back to T (so the
  // most negative value stays negative), then Euclid's loop in T.
  __device__ static T gcd(T x, T y) {
    T a = abs(x), b = abs(y);
    while (a != T(0)) {
      const T c = a;
      a = static_cast<T>(b % a);
      b = c;
    }
    return b;
  }
  // torch's powi: square-and-multiply with wrapping products; a negative
  // exponent gives 0 unless the base is 1 (1) or -1 (+-1 by its parity).
  __device__ static T pow(T base, T exp) {
    if constexpr (std::is_signed_v<T>) {
      if (exp < 0) {
        if (base == T(1)) return T(1);
        if (base == T(-1)) return exp % 2 != 0 ? T(-1) : T(1);
        return T(0);
      }
    }
    U result = 1, a = static_cast<U>(base);
    T b = exp;
    while (b != T(0)) {
      if (b & 1) result = static_cast<U>(result * a);
      b = static_cast<T>(b / 2);
      a = static_cast<U>(a * a);
    }
    return static_cast<T>(result);
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

// angle of a real float: pi below zero, 0 otherwise, NaN as it is.
template <typename T>
__device__ __forceinline__ T real_angle(T x) {
  using V = opmath_of<T>;
  const V v = load_value<T>(x);
  if (isnan(v)) return x;
  return store_value<T>(v < V(0) ? static_cast<V>(3.14159265358979323846) : V(0));
}

// x ** e for a real float x (see the file's comment for torch's forms).
template <typename T>
__device__ __forceinline__ T real_pow_scalar(T x, double e, int form) {
  using V = opmath_of<T>;
  const V v = load_value<T>(x);
  switch (form) {
    case kFillOne: return store_value<T>(V(1));
    case kCopy: return x;
    case kSqrt: return store_value<T>(sqrt_of(v));
    case kRsqrt: return store_value<T>(rsqrt_of(v));
    case kReciprocal: return store_value<T>(V(1) / v);
    default: break;
  }
  const V ev = rounded_as<T>(static_cast<V>(e));  // torch's exp_scalar.to<scalar_t>()
  if (ev == V(2)) return store_value<T>(v * v);
  if (ev == V(3)) return store_value<T>(rounded_as<T>(v * v) * v);
  if (ev == V(-2))  // 1.0 / (x * x): a double quotient, as torch's expression has it
    return store_value<T>(static_cast<V>(1.0 / static_cast<double>(rounded_as<T>(v * v))));
  return store_value<T>(power(v, ev));
}

template <typename T>
__global__ void real_kernel(DevicePointwise kind, T* out, const T* a, const T* b, double alpha,
                            double exponent, int form, Geometry g, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const Offsets o = offsets_of(i, g);
    const T x = a[o.a];
    T r = x;
    switch (kind) {
      case DevicePointwise::Add: r = Ops<T>::add(x, b[o.b], alpha); break;
      case DevicePointwise::Mul: r = Ops<T>::mul(x, b[o.b]); break;
      case DevicePointwise::Abs: r = Ops<T>::abs(x); break;
      case DevicePointwise::Angle:
        if constexpr (kFloating<T>) r = real_angle(x);
        break;
      case DevicePointwise::Gcd:
        if constexpr (kInteger<T>) r = Ops<T>::gcd(x, b[o.b]);
        break;
      case DevicePointwise::Pow:
        if constexpr (kInteger<T>) r = Ops<T>::pow(x, b[o.b]);
        else if constexpr (kFloating<T>)
          r = store_value<T>(power(load_value<T>(x), load_value<T>(b[o.b])));
        break;
      case DevicePointwise::PowScalar:
        if constexpr (kFloating<T>) r = real_pow_scalar(x, exponent, form);
        break;
      default: break;  // polar: its own kernel
    }
    out[o.out] = r;
  }
}

// ---------------------------------------------------------------- complex

template <typename P>
struct Complex {
  P re, im;
};

template <typename P>
__device__ __forceinline__ Complex<P> complex_mul(Complex<P> x, Complex<P> y) {
  return {x.re * y.re - x.im * y.im, x.re * y.im + x.im * y.re};
}

// Smith's algorithm (c10::complex's division); 0 / 0 gives inf or NaN parts.
template <typename P>
__device__ __forceinline__ Complex<P> complex_div(Complex<P> x, Complex<P> y) {
  const P a = x.re, b = x.im, c = y.re, d = y.im;
  const P abs_c = c < P(0) ? -c : c, abs_d = d < P(0) ? -d : d;
  if (abs_c >= abs_d) {
    if (abs_c == P(0) && abs_d == P(0)) return {a / abs_c, b / abs_d};
    const P rat = d / c;
    const P scl = P(1) / (c + d * rat);
    return {(a + b * rat) * scl, (b - a * rat) * scl};
  }
  const P rat = c / d;
  const P scl = P(1) / (d + c * rat);
  return {(a * rat + b) * scl, (b * rat - a) * scl};
}

// exp with C99's special values (exp(-inf + i inf) = 0, ...).
template <typename P>
__device__ __forceinline__ Complex<P> complex_exp(Complex<P> z) {
  const P x = z.re, y = z.im;
  if (y == P(0)) return {exp_of(x), y};
  if (x == P(0)) return {cos_of(y), sin_of(y)};
  if (!isfinite(y)) {
    if (isinf(x) && x < P(0)) return {P(0), P(0)};
    if (isinf(x)) return {x, y - y};
    return {y - y, y - y};
  }
  const P e = exp_of(x);
  return {e * cos_of(y), e * sin_of(y)};
}

template <typename P>
__device__ __forceinline__ Complex<P> complex_log(Complex<P> z) {
  return {log_of(hypot_of(z.re, z.im)), atan2_of(z.im, z.re)};
}

// x ** y = exp(log(x) * y), as thrust's pow.
template <typename P>
__device__ __forceinline__ Complex<P> complex_pow(Complex<P> x, Complex<P> y) {
  return complex_exp(complex_mul(complex_log(x), y));
}

// The principal square root in polar form (torch cuda's jitted std::sqrt),
// with its special values for infinite parts.
template <typename P>
__device__ __forceinline__ Complex<P> complex_sqrt(Complex<P> z) {
  const P inf = infinity<P>(), nan = quiet_nan<P>();
  if (isinf(z.im)) return {inf, z.im};
  if (isinf(z.re)) {
    if (z.re > P(0)) return {z.re, isnan(z.im) ? z.im : copysign_of(P(0), z.im)};
    return {isnan(z.im) ? z.im : P(0), copysign_of(z.re, z.im)};
  }
  const P rho = sqrt_of(hypot_of(z.re, z.im));
  const P theta = atan2_of(z.im, z.re) / P(2);
  if (isnan(rho) || signbit(rho)) return {nan, nan};
  if (isnan(theta)) return isinf(rho) ? Complex<P>{rho, theta} : Complex<P>{theta, theta};
  if (isinf(theta)) return isinf(rho) ? Complex<P>{rho, nan} : Complex<P>{nan, nan};
  P re = rho * cos_of(theta), im = rho * sin_of(theta);
  if (isnan(re)) re = P(0);
  if (isnan(im)) im = P(0);
  return {re, im};
}

// torch cuda's complex reciprocal: NaN for a NaN part or two infinite parts,
// 0 for one infinite part, else 1 / z.
template <typename P>
__device__ __forceinline__ Complex<P> complex_reciprocal(Complex<P> z) {
  const P nan = quiet_nan<P>();
  if (isnan(z.re) || isnan(z.im) || (isinf(z.re) && isinf(z.im))) return {nan, nan};
  if (isinf(z.re) || isinf(z.im)) return {P(0), P(0)};
  return complex_div(Complex<P>{P(1), P(0)}, z);
}

// z ** e for a number e: torch's forms for complex (2 a product, from the
// exponent as given; the rest of pow's integers through exp and log).
template <typename P>
__device__ __forceinline__ Complex<P> complex_pow_scalar(Complex<P> z, double e, int form) {
  switch (form) {
    case kFillOne: return {P(1), P(0)};
    case kCopy: return z;
    case kSqrt: return complex_sqrt(z);
    case kRsqrt: return complex_div(Complex<P>{P(1), P(0)}, complex_sqrt(z));
    case kReciprocal: return complex_reciprocal(z);
    default: break;
  }
  if (e == 2.0) return complex_mul(z, z);
  return complex_pow(z, Complex<P>{static_cast<P>(e), P(0)});
}

// Complex: (re, im) pairs of P; abs and angle write one P per element.
template <typename P>
__global__ void complex_kernel(DevicePointwise kind, P* out, const P* a, const P* b, double alpha,
                               double exponent, int form, Geometry g, int64_t total) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += step) {
    const Offsets o = offsets_of(i, g);
    const P ar = a[2 * o.a], ai = a[2 * o.a + 1];
    if (kind == DevicePointwise::Abs) {
      out[o.out] = hypot(ar, ai);
      continue;
    }
    if (kind == DevicePointwise::Angle) {
      out[o.out] = atan2_of(ai, ar);
      continue;
    }
    Complex<P> r;
    if (kind == DevicePointwise::PowScalar) {
      r = complex_pow_scalar(Complex<P>{ar, ai}, exponent, form);
    } else {
      const P br = b[2 * o.b], bi = b[2 * o.b + 1];
      if (kind == DevicePointwise::Mul) {
        r = {ar * br - ai * bi, ar * bi + ai * br};
      } else if (kind == DevicePointwise::Pow) {
        r = complex_pow(Complex<P>{ar, ai}, Complex<P>{br, bi});
      } else {  // alpha is real: a + alpha * b, each part
        const P s = static_cast<P>(alpha);
        r.re = alpha == 1.0 ? ar + br : fma(s, br, ar);
        r.im = alpha == 1.0 ? ai + bi : fma(s, bi, ai);
      }
    }
    out[2 * o.out] = r.re;
    out[2 * o.out + 1] = r.im;
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
              const StridedView& b, double alpha, double exponent, int form, const Geometry& g,
              int64_t total, cudaStream_t stream) {
  real_kernel<T><<<blocks_for(total), kThreads, 0, stream>>>(
      kind, static_cast<T*>(out.data), static_cast<const T*>(a.data),
      static_cast<const T*>(b.data), alpha, exponent, form, g, total);
}

template <typename P>
void run_complex(DevicePointwise kind, const StridedView& out, const StridedView& a,
                 const StridedView& b, double alpha, double exponent, int form, const Geometry& g,
                 int64_t total, cudaStream_t stream) {
  complex_kernel<P><<<blocks_for(total), kThreads, 0, stream>>>(
      kind, static_cast<P*>(out.data), static_cast<const P*>(a.data),
      static_cast<const P*>(b.data), alpha, exponent, form, g, total);
}

// torch's pow_Tensor_Scalar: 0 and 1 before anything else, then the
// reciprocal-and-root forms by the exponent as given.
int scalar_form(double e) {
  if (e == 0.0) return kFillOne;
  if (e == 1.0) return kCopy;
  if (e == 0.5) return kSqrt;
  if (e == -0.5) return kRsqrt;
  if (e == -1.0) return kReciprocal;
  return kOther;
}

bool integral(DType t) {
  switch (t) {
    case DType::UInt8: case DType::Int8: case DType::Int16: case DType::Int32: case DType::Int64:
    case DType::UInt16: case DType::UInt32: case DType::UInt64: return true;
    default: return false;
  }
}

bool floating_or_complex(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 ||
         t == DType::BFloat16 || t == DType::Complex64 || t == DType::Complex128;
}

// Kinds a dtype has no meaning for are refused before any launch (the
// validation promotes so that none arrives).
void check_kind(DevicePointwise kind, DType t) {
  switch (kind) {
    case DevicePointwise::Gcd:
      AOTISHIM_CHECK(integral(t), "cuda gcd: unsupported dtype ", dtype_name(t), " (integers are)");
      return;
    case DevicePointwise::Angle:
    case DevicePointwise::PowScalar:
      AOTISHIM_CHECK(floating_or_complex(t), "cuda ",
                     kind == DevicePointwise::Angle ? "angle" : "pow", ": unsupported dtype ",
                     dtype_name(t), " (floating and complex dtypes are)");
      return;
    case DevicePointwise::Pow:
      AOTISHIM_CHECK(t != DType::Bool, "cuda pow: unsupported dtype bool");
      return;
    default: return;
  }
}

}  // namespace

void launch_pointwise(DevicePointwise kind, const StridedView& out, const StridedView& a,
                      const StridedView& b, double alpha, double exponent, const int64_t* sizes,
                      int ndim, cudaStream_t stream) {
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
  // abs and angle of complex read complex a into a real out
  const DType t =
      kind == DevicePointwise::Abs || kind == DevicePointwise::Angle ? a.dtype : out.dtype;
  check_kind(kind, t);
  if (total == 0) return;
  const int form = kind == DevicePointwise::PowScalar ? scalar_form(exponent) : kOther;
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
  const auto real = [&](auto tag) {
    run_real<decltype(tag)>(kind, out, a, b, alpha, exponent, form, g, total, stream);
  };
  switch (t) {
    case DType::Bool: real(bool{}); break;
    case DType::UInt8: real(uint8_t{}); break;
    case DType::Int8: real(int8_t{}); break;
    case DType::Int16: real(int16_t{}); break;
    case DType::Int32: real(int32_t{}); break;
    case DType::Int64: real(int64_t{}); break;
    case DType::UInt16: real(uint16_t{}); break;
    case DType::UInt32: real(uint32_t{}); break;
    case DType::UInt64: real(uint64_t{}); break;
    case DType::Float16: real(__half{}); break;
    case DType::BFloat16: real(__nv_bfloat16{}); break;
    case DType::Float32: real(float{}); break;
    case DType::Float64: real(double{}); break;
    case DType::Complex64:
      run_complex<float>(kind, out, a, b, alpha, exponent, form, g, total, stream);
      break;
    case DType::Complex128:
      run_complex<double>(kind, out, a, b, alpha, exponent, form, g, total, stream);
      break;
  }
  AOTISHIM_CUDA_CHECK(cudaGetLastError());
}

}  // namespace cuda
}  // namespace aotishim
