// Pointwise add, mul, abs, polar, angle, gcd and pow on the host. Inputs arrive in the computation
// dtype; half types compute in float and round once per result (torch's
// opmath), complex types in their own precision with torch's formulas, and
// integers wrap. add uses a fused multiply-add (a + alpha * b), as torch's
// vectorized CPU kernel does.
#include <cmath>
#include <complex>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/device.h"
#include "core/half.h"
#include "ops/op.h"
#include "ops/pointwise.h"

namespace aotishim {
namespace {

// Calls f(out, a, b) with byte offsets for every element, row-major over out.
template <typename F>
void for_each_offset(const PointwiseArgs& p, F&& f) {
  const int64_t nd = p.out.dim(), numel = p.out.numel();
  const int64_t so = static_cast<int64_t>(p.out.itemsize()), sa = static_cast<int64_t>(p.a.itemsize());
  std::vector<int64_t> index(static_cast<size_t>(nd), 0);
  int64_t oo = 0, oa = 0, ob = 0;
  char* out = p.out.data();
  const char* a = p.a.data();
  const char* b = p.b.data();
  for (int64_t i = 0; i < numel; ++i) {
    f(out + oo * so, a + oa * sa, b + ob * sa);
    for (int64_t d = nd - 1; d >= 0; --d) {
      oo += p.out.strides[d];
      oa += p.a.strides[d];
      ob += p.b.strides[d];
      if (++index[d] < p.out.sizes[d]) break;
      oo -= p.out.strides[d] * p.out.sizes[d];
      oa -= p.a.strides[d] * p.out.sizes[d];
      ob -= p.b.strides[d] * p.out.sizes[d];
      index[d] = 0;
    }
  }
}

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}
template <typename T>
void store(char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

// x ** e with torch's special cases: 0 and 1 fill ones and copy, 1/2, -1/2
// and -1 are sqrt, rsqrt and the reciprocal, 2, 3 and -2 products; other
// exponents call pow (float and double in double, as torch's kernel takes a
// double exponent; the half types in float).
template <typename C, typename Load, typename Store>
void pow_scalar_real(const PointwiseArgs& p, Load ld, Store st) {
  const double e = p.exponent;
  auto each = [&](auto f) {
    for_each_offset(p, [&](char* o, const char* a, const char*) { st(o, static_cast<C>(f(ld(a)))); });
  };
  if (e == 0.0) return each([](C) { return C(1); });
  if (e == 1.0) return each([](C x) { return x; });
  if (e == 0.5) return each([](C x) { return std::sqrt(x); });
  if (e == -0.5) return each([](C x) { return C(1) / std::sqrt(x); });
  if (e == -1.0) return each([](C x) { return C(1) / x; });
  if (e == 2.0) return each([](C x) { return x * x; });
  if (e == 3.0) return each([](C x) { return x * x * x; });
  if (e == -2.0) return each([](C x) { return C(1) / (x * x); });
  if constexpr (std::is_same_v<C, float>) {
    if (p.a.dtype == DType::Float32) return each([&](C x) { return std::pow(static_cast<double>(x), e); });
  }
  const C ec = static_cast<C>(e);
  each([&](C x) { return std::pow(x, ec); });
}

// Real floating types: S is the stored type, C the computation type.
template <typename C, typename Load, typename Store>
void real_kernel(const PointwiseArgs& p, Load ld, Store st) {
  const C alpha = static_cast<C>(p.alpha);
  switch (p.kind) {
    case PointwiseKind::Add:
      for_each_offset(p, [&](char* o, const char* a, const char* b) { st(o, std::fma(ld(b), alpha, ld(a))); });
      return;
    case PointwiseKind::Mul:
      for_each_offset(p, [&](char* o, const char* a, const char* b) { st(o, ld(a) * ld(b)); });
      return;
    case PointwiseKind::Abs:
      for_each_offset(p, [&](char* o, const char* a, const char*) { st(o, std::fabs(ld(a))); });
      return;
    case PointwiseKind::Angle:
      for_each_offset(p, [&](char* o, const char* a, const char*) {
        const C x = ld(a);
        st(o, x != x ? x : x < C(0) ? static_cast<C>(3.14159265358979323846) : C(0));
      });
      return;
    case PointwiseKind::Pow:
      for_each_offset(p, [&](char* o, const char* a, const char* b) { st(o, std::pow(ld(a), ld(b))); });
      return;
    case PointwiseKind::PowScalar:
      pow_scalar_real<C>(p, ld, st);
      return;
    case PointwiseKind::Polar:
    case PointwiseKind::Gcd:
      return;  // dispatched on its own (a complex result) / refused for floats
  }
}

template <typename R>
void polar_kernel(const PointwiseArgs& p) {
  for_each_offset(p, [&](char* o, const char* a, const char* b) {
    const R r = load<R>(a), theta = load<R>(b);
    R out[2] = {r * std::cos(theta), r * std::sin(theta)};
    std::memcpy(o, out, sizeof out);
  });
}

template <typename R>
void store_complex(char* o, std::complex<R> v) {
  R r[2] = {v.real(), v.imag()};
  std::memcpy(o, r, sizeof r);
}

template <typename R>
void complex_kernel(const PointwiseArgs& p) {
  const R alpha = static_cast<R>(p.alpha);
  for_each_offset(p, [&](char* o, const char* a, const char* b) {
    R x[2], y[2];
    std::memcpy(x, a, sizeof x);
    switch (p.kind) {
      case PointwiseKind::Add: {
        std::memcpy(y, b, sizeof y);
        R r[2] = {x[0] + alpha * y[0], x[1] + alpha * y[1]};
        std::memcpy(o, r, sizeof r);
        return;
      }
      case PointwiseKind::Mul: {
        std::memcpy(y, b, sizeof y);
        // (a + bi)(c + di) = (ac - bd) + (ad + bc)i, unfused as in c10::complex
        const R ac = x[0] * y[0], bd = x[1] * y[1], ad = x[0] * y[1], bc = x[1] * y[0];
        R r[2] = {ac - bd, ad + bc};
        std::memcpy(o, r, sizeof r);
        return;
      }
      case PointwiseKind::Abs:
        store<R>(o, std::hypot(x[0], x[1]));
        return;
      case PointwiseKind::Angle:
        store<R>(o, std::atan2(x[1], x[0]));
        return;
      case PointwiseKind::Pow: {
        std::memcpy(y, b, sizeof y);
        const std::complex<R> r = std::pow(std::complex<R>(x[0], x[1]), std::complex<R>(y[0], y[1]));
        store_complex(o, r);
        return;
      }
      case PointwiseKind::PowScalar: {
        const std::complex<R> z(x[0], x[1]);
        const double e = p.exponent;
        std::complex<R> r;
        if (e == 0.0) r = std::complex<R>(1, 0);
        else if (e == 1.0) r = z;
        else if (e == 0.5) r = std::sqrt(z);
        else if (e == -0.5) r = R(1) / std::sqrt(z);
        else if (e == -1.0) r = R(1) / z;
        else if (e == 2.0) r = z * z;
        else if (e == 3.0) r = z * z * z;
        else if (e == -2.0) r = R(1) / (z * z);
        else r = std::pow(z, std::complex<R>(static_cast<R>(e), 0));
        store_complex(o, r);
        return;
      }
      case PointwiseKind::Polar:
      case PointwiseKind::Gcd:
        return;  // take real inputs
    }
  });
}

// Euclid's algorithm on the absolute values, as torch's calc_gcd (whose abs
// works in int for the narrow types, so gcd(-128, 0) is -128 again in int8).
template <typename T>
T integer_gcd(T a_in, T b_in) {
  using W = std::conditional_t<(sizeof(T) < sizeof(int)), int, T>;
  W a = static_cast<W>(a_in), b = static_cast<W>(b_in);
  if constexpr (std::is_signed_v<W>) {
    // |INT64_MIN| wraps to itself, as std::abs does on torch's targets
    a = a < 0 ? static_cast<W>(0 - static_cast<std::make_unsigned_t<W>>(a)) : a;
    b = b < 0 ? static_cast<W>(0 - static_cast<std::make_unsigned_t<W>>(b)) : b;
  }
  while (a != 0) {
    const W c = a;
    a = b % a;
    b = c;
  }
  return static_cast<T>(b);
}

// Square-and-multiply with wrapping products; a negative exponent gives 0
// unless the base is 1 (1) or -1 (+-1 by the exponent's parity).
template <typename T>
T integer_pow(T base, T exp) {
  if constexpr (std::is_signed_v<T>) {
    if (exp < 0) {
      if (base == 1) return 1;
      if (base == -1) return (exp % 2) != 0 ? T(-1) : T(1);
      return 0;
    }
  }
  using U = std::make_unsigned_t<T>;
  U result = 1, a = static_cast<U>(base);
  T b = exp;
  while (b != 0) {
    if (b & 1) result = static_cast<U>(result * a);
    b = static_cast<T>(b / 2);
    a = static_cast<U>(a * a);
  }
  return static_cast<T>(result);
}

// Integers wrap (computed on the unsigned 64-bit pattern, then truncated).
template <typename T>
void integer_kernel(const PointwiseArgs& p) {
  for_each_offset(p, [&](char* o, const char* a, const char* b) {
    const uint64_t x = static_cast<uint64_t>(static_cast<int64_t>(load<T>(a)));
    switch (p.kind) {
      case PointwiseKind::Mul: {
        const uint64_t y = static_cast<uint64_t>(static_cast<int64_t>(load<T>(b)));
        store<T>(o, static_cast<T>(x * y));
        return;
      }
      case PointwiseKind::Abs: {
        if constexpr (std::is_signed_v<T>) {
          const T v = load<T>(a);
          store<T>(o, v < 0 ? static_cast<T>(0 - x) : v);
        } else {
          store<T>(o, load<T>(a));
        }
        return;
      }
      case PointwiseKind::Gcd:
        store<T>(o, integer_gcd(load<T>(a), load<T>(b)));
        return;
      case PointwiseKind::Pow:
        store<T>(o, integer_pow(load<T>(a), load<T>(b)));
        return;
      case PointwiseKind::Add:
      case PointwiseKind::Polar:
      case PointwiseKind::Angle:
      case PointwiseKind::PowScalar:
        return;  // refused by the op, or given floats (integral add needs an
                 // integral alpha; a double exponent and angle give floats)
    }
  });
}

void host_pointwise(const PointwiseArgs& p) {
  const auto f32 = [](const char* s) { return load<float>(s); };
  const auto f64 = [](const char* s) { return load<double>(s); };
  if (p.kind == PointwiseKind::Polar)
    return p.a.dtype == DType::Float32 ? polar_kernel<float>(p) : polar_kernel<double>(p);
  switch (p.a.dtype) {
    case DType::Float32:
      return real_kernel<float>(p, f32, [](char* o, float v) { store(o, v); });
    case DType::Float64:
      return real_kernel<double>(p, f64, [](char* o, double v) { store(o, v); });
    case DType::Float16:
      return real_kernel<float>(p, [](const char* s) { return f16_to_float(load<uint16_t>(s)); },
                                [](char* o, float v) { store(o, float_to_f16(v)); });
    case DType::BFloat16:
      return real_kernel<float>(p, [](const char* s) { return bf16_to_float(load<uint16_t>(s)); },
                                [](char* o, float v) { store(o, float_to_bf16(v)); });
    case DType::Complex64: return complex_kernel<float>(p);
    case DType::Complex128: return complex_kernel<double>(p);
    case DType::Bool:
      // bool * bool is logical and (add and abs are refused for bool results)
      return for_each_offset(p, [](char* o, const char* a, const char* b) { *o = (*a != 0) && (*b != 0); });
    case DType::UInt8: return integer_kernel<uint8_t>(p);
    case DType::Int8: return integer_kernel<int8_t>(p);
    case DType::Int16: return integer_kernel<int16_t>(p);
    case DType::Int32: return integer_kernel<int32_t>(p);
    case DType::Int64: return integer_kernel<int64_t>(p);
    case DType::UInt16: return integer_kernel<uint16_t>(p);
    case DType::UInt32: return integer_kernel<uint32_t>(p);
    case DType::UInt64: return integer_kernel<uint64_t>(p);
  }
}

AOTISHIM_REGISTER_KERNEL(ops::pointwise_kernel, DeviceType::CPU, host_pointwise);

}  // namespace
}  // namespace aotishim
