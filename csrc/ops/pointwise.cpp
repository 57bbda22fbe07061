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
#include "ops/pointwise_scalar.h"
#include "ops/promotion.h"

namespace aotishim {

namespace {

using ops::broadcast_strides;
using ops::output_strides;
using ops::c10_name;
using ops::Category;
using ops::category;
using ops::is_wide_unsigned;
using ops::result_type;
using ops::check_scalar_fits;
using ops::scalar_in_dtype;

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
  const Tensor b = b_tensor ? on_device(*b_tensor) : scalar_in_dtype(device, *b_scalar, compute);
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
  check_scalar_fits(value, self.dtype);
  if (self.numel() == 0) return;
  // The value in self's dtype (torch's cast), copied to every element through
  // a broadcast view; repeated elements all take the same value.
  Tensor scalar = scalar_in_dtype(self.device(), value, self.dtype);
  scalar.sizes = self.sizes;
  scalar.strides.assign(self.sizes.size(), 0);
  copy_tensor(self, scalar);
}

void angle(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const Tensor& self = *call.tensor(self_h, "self");
  AOTISHIM_CHECK(!is_wide_unsigned(self.dtype), "\"angle_cpu\" not implemented for '",
                 c10_name(self.dtype), "'");
  // Integers and bool give float32 (torch's default dtype); complex its real part type.
  const DType result = is_complex(self.dtype) ? complex_part(self.dtype)
                       : is_floating(self.dtype) ? self.dtype
                                                 : DType::Float32;
  PointwiseArgs args;
  args.kind = PointwiseKind::Angle;
  // torch resizes an empty out for complex input: the result is contiguous then
  args.out = make_empty(self.device(), result, self.sizes,
                        is_complex(self.dtype) ? contiguous_strides(self.sizes)
                                               : output_strides({&self}, self.sizes));
  args.a = is_complex(self.dtype) ? self : prepared(self, result, self.sizes);
  args.b = args.a;
  if (args.out.numel() > 0) pointwise_kernel.run(self.device(), args);
  *ret0 = register_tensor(args.out);
}

void gcd(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle other_h,
         AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self = call.tensor(self_h, "self");
  auto other = call.tensor(other_h, "other");
  const DType result = result_type({self.get(), other.get()}, false);
  AOTISHIM_CHECK(category(result) == Category::Integral && !is_wide_unsigned(result),
                 "\"gcd_cpu\" not implemented for '", c10_name(result), "'");
  *ret0 = run_binary(call, PointwiseKind::Gcd, *self, other.get(), std::nullopt, 1.0);
}

void pow_Tensor_Tensor(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle exponent_h,
                       AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self = call.tensor(self_h, "self");
  auto exponent = call.tensor(exponent_h, "exponent");
  const DType result = result_type({self.get(), exponent.get()}, false);
  AOTISHIM_CHECK(result != DType::Bool && !is_wide_unsigned(result),
                 "\"pow\" not implemented for '", c10_name(result), "'");
  *ret0 = run_binary(call, PointwiseKind::Pow, *self, exponent.get(), std::nullopt, 1.0);
}

// The ABI passes the exponent as a double, a floating-point scalar in torch's
// terms: an integral tensor gives float32, and torch's refusal of integers to
// negative integer powers (an integral scalar) cannot arise.
void pow_Tensor_Scalar(const OpCall& call, AtenTensorHandle self_h, double exponent,
                       AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const Tensor& self = *call.tensor(self_h, "self");
  const DType result = result_type({&self}, true);
  AOTISHIM_CHECK(!is_wide_unsigned(result), "\"pow\" not implemented for '", c10_name(result),
                 "'");
  PointwiseArgs args;
  args.kind = PointwiseKind::PowScalar;
  args.exponent = exponent;
  args.out = make_empty(self.device(), result, self.sizes, output_strides({&self}, self.sizes));
  args.a = prepared(self, result, self.sizes);
  args.b = args.a;
  if (args.out.numel() > 0) pointwise_kernel.run(self.device(), args);
  *ret0 = register_tensor(args.out);
}

void pow_Scalar(const OpCall& call, double self, AtenTensorHandle exponent_h,
                AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const Tensor& exponent = *call.tensor(exponent_h, "exponent");
  const DType result = result_type({&exponent}, true);
  AOTISHIM_CHECK(!is_wide_unsigned(result), "\"pow\" not implemented for '", c10_name(result),
                 "'");
  if (self == 1.0) {  // torch fills ones, whatever the exponent (NaN included)
    Tensor out = make_empty(exponent.device(), result, exponent.sizes,
                            output_strides({&exponent}, exponent.sizes));
    if (out.numel() > 0) {
      Tensor one = scalar_in_dtype(exponent.device(), 1.0, result);
      copy_tensor(out, broadcast_to(one, out.sizes));
    }
    *ret0 = register_tensor(out);
    return;
  }
  const Tensor base = scalar_in_dtype(exponent.device(), self, result);
  PointwiseArgs args;
  args.kind = PointwiseKind::Pow;
  args.out = make_empty(exponent.device(), result, exponent.sizes,
                        output_strides({&exponent}, exponent.sizes));
  args.a = prepared(base, result, exponent.sizes);
  args.b = prepared(exponent, result, exponent.sizes);
  if (args.out.numel() > 0) pointwise_kernel.run(exponent.device(), args);
  *ret0 = register_tensor(args.out);
}

}  // namespace ops
}  // namespace aotishim
