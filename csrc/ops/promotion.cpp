#include "ops/promotion.h"

#include <optional>

#include "core/error.h"

namespace aotishim {
namespace ops {
namespace {

int int_rank(DType t) {  // signed integers by width; uint8 apart
  switch (t) {
    case DType::Int8: return 1;
    case DType::Int16: return 2;
    case DType::Int32: return 3;
    case DType::Int64: return 4;
    default: return 0;
  }
}

// One class of operands (dimensioned, 0-d or scalar) promoted together.
struct ClassResult {
  std::optional<DType> t;
  void add(DType d) { t = t ? promote(*t, d) : d; }
};

// torch's combine_categories(higher, lower).
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (is_complex(*higher)) return higher;
  if (is_complex(*lower)) {
    if (is_floating(*higher)) return *higher == DType::Float64 ? DType::Complex128 : DType::Complex64;
    return lower;
  }
  if (is_floating(*higher)) return higher;
  if (*higher == DType::Bool || is_floating(*lower)) return promote(*higher, *lower);
  return higher;
}

}  // namespace

Category category(DType t) {
  if (t == DType::Bool) return Category::Bool;
  if (is_complex(t)) return Category::Complex;
  if (is_floating(t)) return Category::Floating;
  return Category::Integral;
}

bool is_wide_unsigned(DType t) {
  return t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
}

const char* c10_name(DType t) {  // as torch's messages spell dtypes
  switch (t) {
    case DType::UInt8: return "Byte";
    case DType::Int8: return "Char";
    case DType::Int16: return "Short";
    case DType::Int32: return "Int";
    case DType::Int64: return "Long";
    case DType::Float16: return "Half";
    case DType::Float32: return "Float";
    case DType::Float64: return "Double";
    case DType::Complex64: return "ComplexFloat";
    case DType::Complex128: return "ComplexDouble";
    case DType::Bool: return "Bool";
    case DType::BFloat16: return "BFloat16";
    case DType::UInt16: return "UInt16";
    case DType::UInt32: return "UInt32";
    case DType::UInt64: return "UInt64";
  }
  return "?";
}

// torch.promote_types.
DType promote(DType a, DType b) {
  if (a == b) return a;
  if (is_wide_unsigned(a) || is_wide_unsigned(b)) {
    const DType other = is_wide_unsigned(a) ? b : a;
    AOTISHIM_CHECK(is_floating(other) || is_complex(other),
                   "Promotion for uint16, uint32, uint64 types is not supported, attempted to "
                   "promote ", c10_name(a), " and ", c10_name(b));
    return other;
  }
  const Category ca = category(a), cb = category(b);
  if (ca != cb) {
    const DType hi = ca > cb ? a : b, lo = ca > cb ? b : a;
    // complex64 with float64 is complex128; otherwise the higher category wins
    if (is_complex(hi) && lo == DType::Float64) return DType::Complex128;
    return hi;
  }
  switch (ca) {
    case Category::Bool: return a;
    case Category::Integral:
      if (a == DType::UInt8 || b == DType::UInt8) {
        const DType s = a == DType::UInt8 ? b : a;
        return s == DType::Int8 ? DType::Int16 : s;
      }
      return int_rank(a) > int_rank(b) ? a : b;
    case Category::Floating: {
      if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
      return DType::Float32;  // float32 with a half type, or float16 with bfloat16
    }
    case Category::Complex: return DType::Complex128;
  }
  return a;
}

// The result dtype of tensors and (at most one) double scalar, as torch's
// result_type: a double scalar is a float32-typed wrapped number.
DType result_type(const std::vector<const Tensor*>& tensors, bool with_scalar) {
  ClassResult dim, zero, wrapped;
  for (const Tensor* t : tensors) (t->dim() > 0 ? dim : zero).add(t->dtype);
  if (with_scalar) wrapped.add(DType::Float32);
  return *combine(dim.t, combine(zero.t, wrapped.t));
}


}  // namespace ops
}  // namespace aotishim
