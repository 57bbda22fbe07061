// Validation of the pointwise ops: the result dtype by torch's promotion
// rules (dimensioned tensors over 0-d ones over scalars, which the ABI
// passes as doubles, so they count as floating point), broadcasting, the
// inputs cast to the result dtype first (as torch's CPU TensorIterator casts
// them), and the output laid out as TensorIterator lays it out.
#include "ops/pointwise.h"
#include "ops/tensor_iterator.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {

namespace {

using ops::broadcast_strides;
using ops::output_strides;

enum class Category { Bool = 0, Integral = 1, Floating = 2, Complex = 3 };

Category category(DType t) {
  if (t == DType::Bool) return Category::Bool;
  if (is_complex(t)) return Category::Complex;
  if (is_floating(t)) return Category::Floating;
  return Category::Integral;
}

int int_rank(DType t) {  // signed integers by width; uint8 apart
  switch (t) {
    case DType::Int8: return 1;
    case DType::Int16: return 2;
    case DType::Int32: return 3;
    case DType::Int64: return 4;
    default: return 0;
  }
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

// The result dtype of tensors and (at most one) double scalar, as torch's
// result_type: a double scalar is a float32-typed wrapped number.
DType result_type(const std::vector<const Tensor*>& tensors, bool with_scalar) {
  ClassResult dim, zero, wrapped;
  for (const Tensor* t : tensors) (t->dim() > 0 ? dim : zero).add(t->dtype);
  if (with_scalar) wrapped.add(DType::Float32);
  return *combine(dim.t, combine(zero.t, wrapped.t));
}

std::vector<int64_t> broadcast_shape(const Tensor& a, const Tensor& b) {
  const size_t n = std::max(a.sizes.size(), b.sizes.size());
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t da = i < n - a.sizes.size() ? 1 : a.sizes[i - (n - a.sizes.size())];
    const int64_t db = i < n - b.sizes.size() ? 1 : b.sizes[i - (n - b.sizes.size())];
    AOTISHIM_CHECK(da == db || da == 1 || db == 1, "The size of tensor a (", da,
                   ") must match the size of tensor b (", db, ") at non-singleton dimension ", i);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// t's values in `dtype` (a converted copy, as torch's .to()), then seen at `shape`.
Tensor prepared(const Tensor& t, DType dtype, const std::vector<int64_t>& shape) {
  Tensor v = t;
  if (t.dtype != dtype) {
    v = make_empty(t.device(), dtype, t.sizes);
    copy_tensor(v, t);
  }
  v.strides = broadcast_strides(v, shape);
  v.sizes = shape;
  return v;
}

// A 0-d tensor holding `value` converted to `dtype` (torch's cast of a scalar).
Tensor scalar_tensor(Device& device, double value, DType dtype) {
  Tensor host = make_empty(get_device(DeviceType::CPU), DType::Float64, {});
  *reinterpret_cast<double*>(host.data()) = value;
  Tensor out = make_empty(device, dtype, {});
  copy_tensor(out, host);
  return out;
}

void check_supported(const char* kernel, DType t, bool add) {
  AOTISHIM_CHECK(!(add && is_wide_unsigned(t)), "\"", kernel, "\" not implemented for '",
                 c10_name(t), "'");
}

// The ABI's alpha is a double, a floating-point scalar in torch's terms.
void check_alpha(DType result) {
  AOTISHIM_CHECK(is_floating(result) || is_complex(result),
                 "For integral input tensors, argument alpha must not be a floating point number.");
}

AtenTensorHandle run_binary(const ops::OpCall& call, PointwiseKind kind, const Tensor& a,
                            const Tensor* b_tensor, std::optional<double> b_scalar, double alpha) {
  std::vector<const Tensor*> tensors{&a};
  if (b_tensor) tensors.push_back(b_tensor);
  if (b_tensor) {
    AOTISHIM_CHECK(&a.device() == &b_tensor->device() || b_tensor->dim() == 0 || a.dim() == 0,
                   call.op, ": expected all tensors to be on the same device, but found ",
                   a.device().name(), " and ", b_tensor->device().name());
  }
  const DType result = result_type(tensors, b_scalar.has_value());
  if (kind == PointwiseKind::Add) {
    check_alpha(result);
    check_supported("add_stub", result, true);
  }
  // A 0-d cpu tensor may join tensors of another device (torch's cpu scalars).
  Device& device = a.dim() > 0 || !b_tensor ? a.device() : b_tensor->device();
  auto on_device = [&](const Tensor& t) {
    if (&t.device() == &device) return t;
    Tensor moved = make_empty(device, t.dtype, t.sizes);
    copy_tensor(moved, t);
    return moved;
  };
  // torch cuda reads a scalar at the op's math type (float32 for float16 and
  // bfloat16), not rounded to the tensor's dtype first (torch's cpu rounds it
  // for add, not for mul); its kernels compute in float32 and round once into
  // the result, so computing in float32 and converting gives its answer.
  const bool scalar_at_float32 = b_scalar.has_value() && device.type() == DeviceType::CUDA &&
                                 (result == DType::Float16 || result == DType::BFloat16);
  const DType compute = scalar_at_float32 ? DType::Float32 : result;
  const Tensor a_here = on_device(a);
  const Tensor b = b_tensor ? on_device(*b_tensor) : scalar_tensor(device, *b_scalar, compute);
  // A scalar is a 0-d operand of TensorIterator's too (no opinion on the
  // order of dims, but it takes the inputs off the same-shape fast path).
  std::vector<const Tensor*> layout{&a_here, &b};
  const std::vector<int64_t> shape = broadcast_shape(a_here, b);
  const std::vector<int64_t> strides = output_strides(layout, shape);
  PointwiseArgs args;
  args.kind = kind;
  args.alpha = alpha;
  args.out = make_empty(device, compute, shape, strides);
  args.a = prepared(a_here, compute, shape);
  args.b = prepared(b, compute, shape);
  if (args.out.numel() > 0) ops::pointwise_kernel.run(device, args);
  if (compute == result) return register_tensor(args.out);
  Tensor out = make_empty(device, result, shape, strides);
  if (out.numel() > 0) copy_tensor(out, args.out);
  return register_tensor(out);
}

// torch's checked conversion of a scalar: integers take only values within
// their range (no NaN), real floats any value but finite ones beyond their
// largest; bool and complex take everything.
void check_fits(double v, DType t) {
  double lo = 0, hi = 0;
  const char* name = "";
  switch (t) {
    case DType::UInt8: lo = 0; hi = 255; name = "uint8_t"; break;
    case DType::Int8: lo = -128; hi = 127; name = "int8_t"; break;
    case DType::Int16: lo = -32768; hi = 32767; name = "int16_t"; break;
    case DType::Int32: lo = -2147483648.0; hi = 2147483647.0; name = "int"; break;
    case DType::Int64: lo = -9223372036854775808.0; hi = 9223372036854775807.0; name = "int64_t"; break;
    case DType::UInt16: lo = 0; hi = 65535; name = "uint16_t"; break;
    case DType::UInt32: lo = 0; hi = 4294967295.0; name = "uint32_t"; break;
    case DType::UInt64: lo = 0; hi = 18446744073709551615.0; name = "uint64_t"; break;
    case DType::Float16: lo = -65504; hi = 65504; name = "c10::Half"; break;
    case DType::BFloat16: lo = -3.3895313892515355e38; hi = 3.3895313892515355e38; name = "c10::BFloat16"; break;
    case DType::Float32: lo = -3.4028234663852886e38; hi = 3.4028234663852886e38; name = "float"; break;
    default: return;  // float64, bool, complex
  }
  const bool integral = !is_floating(t);
  const bool ok = integral ? (v >= lo && v <= hi) : (!std::isfinite(v) || (v >= lo && v <= hi));
  AOTISHIM_CHECK(ok, "value cannot be converted to type ", name, " without overflow");
}

}  // namespace

namespace ops {

Op<void(const PointwiseArgs&)> pointwise_kernel("pointwise");

void add_Tensor(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle other_h,
                double alpha, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self = call.tensor(self_h, "self");
  auto other = call.tensor(other_h, "other");
  *ret0 = run_binary(call, PointwiseKind::Add, *self, other.get(), std::nullopt, alpha);
}

void add_Scalar(const OpCall& call, AtenTensorHandle self_h, double other, double alpha,
                AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self = call.tensor(self_h, "self");
  *ret0 = run_binary(call, PointwiseKind::Add, *self, nullptr, other, alpha);
}

void mul_Tensor(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle other_h,
                AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self = call.tensor(self_h, "self");
  auto other = call.tensor(other_h, "other");
  *ret0 = run_binary(call, PointwiseKind::Mul, *self, other.get(), std::nullopt, 1.0);
}

void mul_Scalar(const OpCall& call, AtenTensorHandle self_h, double other, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self = call.tensor(self_h, "self");
  *ret0 = run_binary(call, PointwiseKind::Mul, *self, nullptr, other, 1.0);
}

void abs(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const Tensor& self = *call.tensor(self_h, "self");
  AOTISHIM_CHECK(self.dtype != DType::Bool && !is_wide_unsigned(self.dtype),
                 "\"abs_cpu\" not implemented for '", c10_name(self.dtype), "'");
  PointwiseArgs args;
  args.kind = PointwiseKind::Abs;
  args.out = make_empty(self.device(), complex_part(self.dtype), self.sizes,
                        output_strides({&self}, self.sizes));
  args.a = self;
  args.b = self;
  if (args.out.numel() > 0) pointwise_kernel.run(self.device(), args);
  *ret0 = register_tensor(args.out);
}

void polar(const OpCall& call, AtenTensorHandle abs_h, AtenTensorHandle angle_h,
           AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const Tensor& magnitude = *call.tensor(abs_h, "abs");
  const Tensor& angle = *call.tensor(angle_h, "angle");
  const auto real_float = [](DType t) { return t == DType::Float32 || t == DType::Float64; };
  AOTISHIM_CHECK(real_float(magnitude.dtype) && real_float(angle.dtype),
                 "Expected both inputs to be Float or Double tensors but got ",
                 c10_name(magnitude.dtype), " and ", c10_name(angle.dtype),
                 " (torch's Half needs complex32, which tensors here cannot have)");
  AOTISHIM_CHECK(magnitude.dtype == angle.dtype, "Expected object of scalar type ",
                 c10_name(magnitude.dtype), " but got scalar type ", c10_name(angle.dtype),
                 " for second argument");
  AOTISHIM_CHECK(&magnitude.device() == &angle.device(), "polar: expected both tensors on one device");
  const std::vector<int64_t> shape = broadcast_shape(magnitude, angle);
  PointwiseArgs args;
  args.kind = PointwiseKind::Polar;
  const DType result = magnitude.dtype == DType::Float32 ? DType::Complex64 : DType::Complex128;
  args.out = make_empty(magnitude.device(), result, shape, output_strides({&magnitude, &angle}, shape));
  args.a = prepared(magnitude, magnitude.dtype, shape);
  args.b = prepared(angle, angle.dtype, shape);
  if (args.out.numel() > 0) pointwise_kernel.run(magnitude.device(), args);
  *ret0 = register_tensor(args.out);
}

void fill__Scalar(const OpCall& call, AtenTensorHandle self_h, double value) {
  const Tensor& self = *call.tensor(self_h, "self");
  check_fits(value, self.dtype);
  if (self.numel() == 0) return;
  // The value in self's dtype (torch's cast), copied to every element through
  // a broadcast view; repeated elements all take the same value.
  Tensor scalar = scalar_tensor(self.device(), value, self.dtype);
  scalar.sizes = self.sizes;
  scalar.strides.assign(self.sizes.size(), 0);
  copy_tensor(self, scalar);
}

}  // namespace ops
}  // namespace aotishim
