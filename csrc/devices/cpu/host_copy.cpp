#include "devices/cpu/host_copy.h"

#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/half.h"

namespace aotishim {

namespace {

bool is_integral(DType d) { return !is_floating(d) && !is_complex(d); }

// double -> int64 without undefined behaviour: NaN and values outside int64
// give INT64_MIN, what x86's conversion instruction produces for them.
int64_t to_int64(double x) {
  constexpr double kLimit = 9223372036854775808.0;  // 2^63
  if (!(x >= -kLimit && x < kLimit)) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

double load_double(const char* p, DType d) {
  switch (d) {
    case DType::Float32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::Float64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::BFloat16: { uint16_t v; std::memcpy(&v, p, 2); return bf16_to_float(v); }
    case DType::Float16: { uint16_t v; std::memcpy(&v, p, 2); return f16_to_float(v); }
    case DType::UInt8: return static_cast<uint8_t>(*p);
    case DType::Bool: return *p != 0;
    case DType::Int8: return static_cast<int8_t>(*p);
    case DType::Int16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::Int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::Int64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case DType::UInt16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::UInt32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::UInt64: { uint64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    // A complex value read as a real one keeps its real part, as torch's copy_ does.
    case DType::Complex64: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::Complex128: { double v; std::memcpy(&v, p, 8); return v; }
  }
  return 0;
}

int64_t load_int(const char* p, DType d) {
  switch (d) {
    case DType::UInt8: return static_cast<uint8_t>(*p);
    case DType::Bool: return *p != 0;
    case DType::Int8: return static_cast<int8_t>(*p);
    case DType::Int16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::Int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::Int64: { int64_t v; std::memcpy(&v, p, 8); return v; }
    case DType::UInt16: { uint16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::UInt32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    // uint64 travels as its bit pattern: stored back into uint64 it is exact,
    // into a narrower integer it keeps the low bits as torch's cast does.
    case DType::UInt64: { int64_t v; std::memcpy(&v, p, 8); return v; }
    default: return to_int64(load_double(p, d));
  }
}

// double -> uint64: in range it converts as unsigned; below zero it wraps
// through int64 as torch's cast does on x86.
uint64_t to_uint64(double x) {
  constexpr double kLimit = 18446744073709551616.0;  // 2^64
  if (x >= 0 && x < kLimit) return static_cast<uint64_t>(x);
  return static_cast<uint64_t>(to_int64(x));
}

void store_double(char* p, DType d, double x) {
  switch (d) {
    case DType::Float32: { float v = static_cast<float>(x); std::memcpy(p, &v, 4); return; }
    case DType::Float64: std::memcpy(p, &x, 8); return;
    case DType::BFloat16: { uint16_t v = float_to_bf16(static_cast<float>(x)); std::memcpy(p, &v, 2); return; }
    case DType::Float16: { uint16_t v = float_to_f16(static_cast<float>(x)); std::memcpy(p, &v, 2); return; }
    case DType::Bool: *p = x != 0; return;
    case DType::UInt64: { uint64_t v = to_uint64(x); std::memcpy(p, &v, 8); return; }
    case DType::Complex64: { float v[2] = {static_cast<float>(x), 0.0f}; std::memcpy(p, v, 8); return; }
    case DType::Complex128: { double v[2] = {x, 0.0}; std::memcpy(p, v, 16); return; }
    default: break;
  }
  int64_t i = to_int64(x);
  switch (d) {
    case DType::UInt8: *p = static_cast<char>(static_cast<uint8_t>(i)); return;
    case DType::Int8: *p = static_cast<char>(static_cast<int8_t>(i)); return;
    case DType::Int16: { int16_t v = static_cast<int16_t>(i); std::memcpy(p, &v, 2); return; }
    case DType::Int32: { int32_t v = static_cast<int32_t>(i); std::memcpy(p, &v, 4); return; }
    case DType::Int64: case DType::UInt64: std::memcpy(p, &i, 8); return;
    case DType::UInt16: { uint16_t v = static_cast<uint16_t>(i); std::memcpy(p, &v, 2); return; }
    case DType::UInt32: { uint32_t v = static_cast<uint32_t>(i); std::memcpy(p, &v, 4); return; }
    default: return;
  }
}

void store_int(char* p, DType d, int64_t i) {
  switch (d) {
    case DType::Bool: *p = i != 0; return;
    case DType::UInt8: *p = static_cast<char>(static_cast<uint8_t>(i)); return;
    case DType::Int8: *p = static_cast<char>(static_cast<int8_t>(i)); return;
    case DType::Int16: { int16_t v = static_cast<int16_t>(i); std::memcpy(p, &v, 2); return; }
    case DType::Int32: { int32_t v = static_cast<int32_t>(i); std::memcpy(p, &v, 4); return; }
    case DType::Int64: case DType::UInt64: std::memcpy(p, &i, 8); return;
    case DType::UInt16: { uint16_t v = static_cast<uint16_t>(i); std::memcpy(p, &v, 2); return; }
    case DType::UInt32: { uint32_t v = static_cast<uint32_t>(i); std::memcpy(p, &v, 4); return; }
    default: store_double(p, d, static_cast<double>(i));
  }
}

// Conversions with a complex side: both parts as doubles. A real source has
// imaginary part 0; a bool destination is true when either part is nonzero
// and a real one takes the real part (torch's copy_ semantics).
void convert_complex(char* dp, DType dd, const char* sp, DType sd) {
  double re, im = 0.0;
  if (sd == DType::Complex64) {
    float v[2];
    std::memcpy(v, sp, 8);
    re = v[0];
    im = v[1];
  } else if (sd == DType::Complex128) {
    double v[2];
    std::memcpy(v, sp, 16);
    re = v[0];
    im = v[1];
  } else {
    re = load_double(sp, sd);
  }
  if (dd == DType::Complex64) {
    float v[2] = {static_cast<float>(re), static_cast<float>(im)};
    std::memcpy(dp, v, 8);
  } else if (dd == DType::Complex128) {
    double v[2] = {re, im};
    std::memcpy(dp, v, 16);
  } else if (dd == DType::Bool) {
    *dp = re != 0 || im != 0;
  } else {
    store_double(dp, dd, re);
  }
}

// One row of `n` same-dtype elements at element strides ds and ss. A byte
// count the compiler knows turns each element into one load and one store
// (a memcpy of a runtime size per element was most of the cost of
// broadcasting addmm's bias); unit strides copy the row in one memcpy.
struct Bytes16 {
  uint64_t lo, hi;
};  // one complex128

template <typename Word>
void copy_words(char* d, int64_t ds, const char* s, int64_t ss, int64_t n) {
  for (int64_t j = 0; j < n; ++j)
    std::memcpy(d + j * ds * static_cast<int64_t>(sizeof(Word)),
                s + j * ss * static_cast<int64_t>(sizeof(Word)), sizeof(Word));
}

void copy_row(char* d, int64_t ds, const char* s, int64_t ss, int64_t n, size_t item) {
  if (ds == 1 && ss == 1) {
    std::memmove(d, s, static_cast<size_t>(n) * item);
    return;
  }
  switch (item) {
    case 1: copy_words<uint8_t>(d, ds, s, ss, n); return;
    case 2: copy_words<uint16_t>(d, ds, s, ss, n); return;
    case 4: copy_words<uint32_t>(d, ds, s, ss, n); return;
    case 8: copy_words<uint64_t>(d, ds, s, ss, n); return;
    case 16: copy_words<Bytes16>(d, ds, s, ss, n); return;
    default:
      for (int64_t j = 0; j < n; ++j)
        std::memmove(d + j * ds * static_cast<int64_t>(item), s + j * ss * static_cast<int64_t>(item),
                     item);
  }
}

}  // namespace

void host_copy_raw(void* dst, DType dst_dtype, const int64_t* dst_strides, const void* src,
                   DType src_dtype, const int64_t* src_strides, const int64_t* sizes, int ndim) {
  // Zero sizes first: the product of the others need not fit in int64.
  for (int i = 0; i < ndim; ++i)
    if (sizes[i] == 0) return;
  int64_t numel = 1;
  for (int i = 0; i < ndim; ++i) numel *= sizes[i];
  const size_t dsize = element_size(dst_dtype), ssize = element_size(src_dtype);
  const bool same = dst_dtype == src_dtype;
  const bool ints = is_integral(dst_dtype) && is_integral(src_dtype);
  const bool complex = is_complex(dst_dtype) || is_complex(src_dtype);

  // Whole-block memcpy when both are dense in the same order.
  if (same) {
    bool dense = true;
    int64_t expected = 1;
    for (int i = ndim - 1; i >= 0; --i) {
      if (sizes[i] == 1) continue;
      if (dst_strides[i] != expected || src_strides[i] != expected) { dense = false; break; }
      expected *= sizes[i];
    }
    if (dense) {
      std::memmove(dst, src, static_cast<size_t>(numel) * dsize);
      return;
    }
  }

  const int64_t inner = ndim ? sizes[ndim - 1] : 1;
  const int64_t ds = ndim ? dst_strides[ndim - 1] : 0, ss = ndim ? src_strides[ndim - 1] : 0;
  std::vector<int64_t> index(ndim > 0 ? ndim - 1 : 0, 0);
  const int64_t outer = numel / inner;
  for (int64_t o = 0; o < outer; ++o) {
    int64_t doff = 0, soff = 0;
    for (int i = 0; i + 1 < ndim; ++i) {
      doff += index[i] * dst_strides[i];
      soff += index[i] * src_strides[i];
    }
    char* d = static_cast<char*>(dst) + doff * static_cast<int64_t>(dsize);
    const char* s = static_cast<const char*>(src) + soff * static_cast<int64_t>(ssize);
    if (same) {
      copy_row(d, ds, s, ss, inner, dsize);
    } else {
      for (int64_t j = 0; j < inner; ++j) {
        char* dp = d + j * ds * static_cast<int64_t>(dsize);
        const char* sp = s + j * ss * static_cast<int64_t>(ssize);
        if (complex) convert_complex(dp, dst_dtype, sp, src_dtype);
        else if (ints) store_int(dp, dst_dtype, load_int(sp, src_dtype));
        else store_double(dp, dst_dtype, load_double(sp, src_dtype));
      }
    }
    for (int i = ndim - 2; i >= 0; --i) {
      if (++index[i] < sizes[i]) break;
      index[i] = 0;
    }
  }
}

void host_copy(const Tensor& dst, const Tensor& src) {
  AOTISHIM_CHECK(dst.sizes == src.sizes, "copy between tensors of different sizes");
  host_copy_raw(dst.data(), dst.dtype, dst.strides.data(), src.data(), src.dtype,
                src.strides.data(), dst.sizes.data(), static_cast<int>(dst.dim()));
}

}  // namespace aotishim
