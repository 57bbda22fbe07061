// The cpu cumulative kernel: one serial scan per line along the dimension,
// lines split across threads. Each input element is first converted to the
// result dtype (rounded as torch's input conversion rounds it), then
// accumulated in the result's CPU accumulation type, and every partial
// result rounded back: the same sequence of roundings as torch's CPU kernel.
#include <cstdint>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/half.h"
#include "devices/cpu/parallel.h"
#include "ops/cumulative.h"

namespace aotishim {
namespace {

// Element i of a typed buffer as a double / an int64 (any supported dtype).
double load_double(const char* p, DType t) {
  switch (t) {
    case DType::Float32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::Float64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::BFloat16: { uint16_t v; std::memcpy(&v, p, 2); return bf16_to_float(v); }
    case DType::Float16: { uint16_t v; std::memcpy(&v, p, 2); return f16_to_float(v); }
    case DType::UInt8: return static_cast<double>(*reinterpret_cast<const uint8_t*>(p));
    case DType::Int8: return static_cast<double>(*reinterpret_cast<const int8_t*>(p));
    case DType::Int16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::Int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::Int64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case DType::Bool: return *reinterpret_cast<const uint8_t*>(p) != 0 ? 1.0 : 0.0;
    default: return 0.0;  // refused by the op
  }
}

int64_t load_int(const char* p, DType t) {
  switch (t) {
    case DType::UInt8: return *reinterpret_cast<const uint8_t*>(p);
    case DType::Int8: return *reinterpret_cast<const int8_t*>(p);
    case DType::Int16: { int16_t v; std::memcpy(&v, p, 2); return v; }
    case DType::Int32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::Int64: { int64_t v; std::memcpy(&v, p, 8); return v; }
    case DType::Bool: return *reinterpret_cast<const uint8_t*>(p) != 0;
    default: return static_cast<int64_t>(load_double(p, t));  // float -> int truncates, as torch
  }
}

// Stores an accumulated value in the result dtype.
void store_float(char* p, DType t, double v) {
  switch (t) {
    case DType::Float32: { float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
    case DType::Float64: std::memcpy(p, &v, 8); break;
    case DType::BFloat16: { uint16_t h = float_to_bf16(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
    case DType::Float16: { uint16_t h = float_to_f16(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
    default: break;
  }
}

void store_int(char* p, DType t, int64_t v) {
  switch (t) {
    case DType::UInt8: *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(v); break;
    case DType::Int8: *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(v); break;
    case DType::Int16: { int16_t x = static_cast<int16_t>(v); std::memcpy(p, &x, 2); break; }
    case DType::Int32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
    case DType::Int64: std::memcpy(p, &v, 8); break;
    default: break;
  }
}

// log(exp(acc) + exp(v)) without overflow: NaN propagates, and two equal
// infinities (where the difference would be NaN) stay that infinity.
template <typename T>
T log_add_exp(T acc, T v) {
  if (std::isnan(acc) || std::isnan(v)) return std::numeric_limits<T>::quiet_NaN();
  const T hi = std::max(acc, v), lo = std::min(acc, v);
  if (std::isinf(hi) && hi == lo) return hi;
  return hi + std::log1p(std::exp(lo - hi));
}

// Wrapping integer arithmetic (torch's int64 overflow wraps; signed overflow
// is undefined in C++).
int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// A value converted to the result dtype and back: the input conversion.
double as_result_float(double v, DType t) {
  switch (t) {
    case DType::Float32: return static_cast<float>(v);
    case DType::BFloat16: return bf16_to_float(float_to_bf16(static_cast<float>(v)));
    case DType::Float16: return f16_to_float(float_to_f16(static_cast<float>(v)));
    default: return v;
  }
}
int64_t as_result_int(int64_t v, DType t) {
  switch (t) {
    case DType::UInt8: return static_cast<uint8_t>(v);
    case DType::Int8: return static_cast<int8_t>(v);
    case DType::Int16: return static_cast<int16_t>(v);
    case DType::Int32: return static_cast<int32_t>(v);
    default: return v;
  }
}

// The common case typed: a float32 or float64 sum or product of a tensor of
// the result's dtype, accumulated in double as the generic loop does (the
// same roundings), without converting each element through a dtype switch.
template <typename T>
void scan_line(const T* src, int64_t in_step, T* dst, int64_t out_step, int64_t len, bool sum) {
  double acc = sum ? 0.0 : 1.0;
  if (sum) {
    for (int64_t k = 0; k < len; ++k) {
      acc += static_cast<double>(src[k * in_step]);
      dst[k * out_step] = static_cast<T>(acc);
    }
  } else {
    for (int64_t k = 0; k < len; ++k) {
      acc *= static_cast<double>(src[k * in_step]);
      dst[k * out_step] = static_cast<T>(acc);
    }
  }
}

void cpu_cumulative(const CumulativeArgs& args) {
  const Tensor &out = args.out, &self = args.self;
  const int64_t dim = args.dim, rank = out.dim();
  const int64_t len = out.sizes[dim];
  const int64_t lines = len == 0 ? 0 : out.numel() / len;
  const DType in_t = self.dtype, out_t = out.dtype;
  const size_t in_size = self.itemsize(), out_size = out.itemsize();
  const bool is_float = is_floating(out_t);
  // bfloat16/float16 accumulate in float (torch's acc_type on the CPU).
  const bool float_acc = out_t == DType::BFloat16 || out_t == DType::Float16;
  const bool sum = args.kind == CumulativeKind::Sum;
  const bool lse = args.kind == CumulativeKind::LogSumExp;
  const char* in_base = self.data();
  char* out_base = out.data();
  // A float32/float64 sum or product of its own dtype: scan_line's typed loop.
  const bool typed =
      in_t == out_t && !lse && (out_t == DType::Float32 || out_t == DType::Float64);

  cpu::parallel_for(lines, std::max<int64_t>(1, 16384 / std::max<int64_t>(len, 1)),
                    [&](int64_t begin, int64_t end) {
    for (int64_t line = begin; line < end; ++line) {
      // Unravel the line index over every dimension but `dim`, innermost last.
      int64_t rest = line, in_off = 0, out_off = 0, out_stride = 1;
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (d == dim) {
          out_stride *= out.sizes[d];
          continue;
        }
        const int64_t i = rest % out.sizes[d];
        rest /= out.sizes[d];
        in_off += i * self.strides[d];
        out_off += i * out_stride;
        out_stride *= out.sizes[d];
      }
      int64_t out_step = 1;
      for (int64_t d = dim + 1; d < rank; ++d) out_step *= out.sizes[d];
      const int64_t in_step = self.strides[dim];
      const char* src = in_base + in_off * static_cast<int64_t>(in_size);
      char* dst = out_base + out_off * static_cast<int64_t>(out_size);
      if (typed && out_t == DType::Float32) {
        scan_line(reinterpret_cast<const float*>(src), in_step, reinterpret_cast<float*>(dst),
                  out_step, len, sum);
      } else if (typed) {
        scan_line(reinterpret_cast<const double*>(src), in_step, reinterpret_cast<double*>(dst),
                  out_step, len, sum);
      } else if (is_float) {
        const double start = lse ? -std::numeric_limits<double>::infinity() : sum ? 0.0 : 1.0;
        double acc = start;
        float facc = static_cast<float>(start);
        for (int64_t k = 0; k < len; ++k) {
          const double v = as_result_float(load_double(src + k * in_step * static_cast<int64_t>(in_size), in_t), out_t);
          if (float_acc) {
            const float f = static_cast<float>(v);
            facc = lse ? log_add_exp(facc, f) : sum ? facc + f : facc * f;
            store_float(dst + k * out_step * static_cast<int64_t>(out_size), out_t, facc);
          } else {
            acc = lse ? log_add_exp(acc, v) : sum ? acc + v : acc * v;
            store_float(dst + k * out_step * static_cast<int64_t>(out_size), out_t, acc);
          }
        }
      } else {
        int64_t acc = sum ? 0 : 1;
        for (int64_t k = 0; k < len; ++k) {
          const int64_t v = as_result_int(load_int(src + k * in_step * static_cast<int64_t>(in_size), in_t), out_t);
          acc = sum ? wrap_add(acc, v) : wrap_mul(acc, v);
          store_int(dst + k * out_step * static_cast<int64_t>(out_size), out_t, acc);
        }
      }
    }
  });
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::cumulative, DeviceType::CPU, cpu_cumulative);

}  // namespace aotishim
