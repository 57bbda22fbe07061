// Validation of the random ops, as torch checks their arguments: the
// factories' dtype (float32 for rand/randn, int64 for randint/randperm),
// layout (strided), device and pinning; the *_like ops' memory format
// (preserve: self's layout, as empty_like gives it); each distribution's
// parameters and the ranges a dtype can hold. Every draw comes from the one
// process-wide generator (core/generator.h): an explicit generator is refused.
#include "ops/random.h"

#include <cmath>
#include <limits>

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "core/strided.h"
#include "ops/factory.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(const RandomArgs&)> random_kernel("random");

namespace {

// c10::MemoryFormat numbers.
constexpr int32_t kContiguousFormat = 0, kPreserveFormat = 1, kChannelsLast = 2,
                  kChannelsLast3d = 3;

void check_generator(const OpCall& call, AtenGeneratorHandle* generator) {
  AOTISHIM_CHECK(generator == nullptr || *generator == nullptr, call.op,
                 ": explicit generators are not supported; the random ops draw from the "
                 "process-wide generator (aotishim.manual_seed seeds it)");
}

// A *_like op's device: self's (a named device must be it).
void check_like_device(const OpCall& call, const Tensor& self, const int32_t* device,
                       int32_t device_index) {
  if (device == nullptr) return;
  const DeviceType named = device_type_from_int(*device);
  const Device& own = self.device();
  AOTISHIM_CHECK(named == own.type() &&
                     (device_index < 0 || own.type() == DeviceType::CPU || device_index == own.index()),
                 call.op, ": the result must be on self's device (", own.name(), ")");
}

std::vector<int64_t> strides_like(const OpCall& call, const Tensor& self, const int32_t* format) {
  const int32_t f = format == nullptr ? kPreserveFormat : *format;
  const std::vector<int64_t>& s = self.sizes;
  switch (f) {
    case kPreserveFormat:
      return self.is_non_overlapping_and_dense() ? self.strides
                                                 : dense_strides_like(self.sizes, self.strides);
    case kContiguousFormat: return contiguous_strides(s);
    case kChannelsLast:
      AOTISHIM_CHECK(s.size() == 4, call.op, ": channels_last needs a 4-d tensor");
      return {s[2] * s[3] * s[1], 1, s[3] * s[1], s[1]};
    case kChannelsLast3d:
      AOTISHIM_CHECK(s.size() == 5, call.op, ": channels_last_3d needs a 5-d tensor");
      return {s[2] * s[3] * s[4] * s[1], 1, s[3] * s[4] * s[1], s[4] * s[1], s[1]};
    default: fail(str(call.op, ": unknown memory format ", f));
  }
}

// A fresh tensor laid out like self (empty_like).
Tensor empty_like(const OpCall& call, const Tensor& self, DType dtype, const int32_t* format) {
  return make_empty(self.device(), dtype, self.sizes, strides_like(call, self, format));
}

DType optional_dtype(const int32_t* dtype, DType fallback) {
  return dtype == nullptr ? fallback : dtype_from_int(*dtype);
}

void check_floating(const OpCall& call, DType t, bool complex_ok) {
  AOTISHIM_CHECK(is_floating(t) || (complex_ok && is_complex(t)), call.op, ": dtype ",
                 dtype_name(t), " is not supported (",
                 complex_ok ? "floating point and complex" : "floating point", " dtypes are)");
}

// Significant bits of a floating dtype's values (what randint may draw exactly).
int digits(DType t) {
  switch (t) {
    case DType::Float16: return 11;
    case DType::BFloat16: return 8;
    case DType::Float32: return 24;
    default: return 53;
  }
}

// randint's [low, high) must be non-empty and within what `t` holds exactly.
uint64_t integer_range(const OpCall& call, int64_t low, int64_t high, DType t) {
  AOTISHIM_CHECK(low < high, call.op, ": expects 'from' to be less than 'to', but got from=",
                 low, " >= to=", high);
  AOTISHIM_CHECK(!is_complex(t), call.op, ": dtype ", dtype_name(t), " is not supported");
  double lo = 0, hi = 0;  // what the dtype holds
  switch (t) {
    case DType::Bool: lo = 0; hi = 1; break;
    case DType::UInt8: lo = 0; hi = 255; break;
    case DType::Int8: lo = -128; hi = 127; break;
    case DType::Int16: lo = -32768; hi = 32767; break;
    case DType::Int32: lo = -2147483648.0; hi = 2147483647.0; break;
    case DType::UInt16: lo = 0; hi = 65535; break;
    case DType::UInt32: lo = 0; hi = 4294967295.0; break;
    case DType::Int64: case DType::UInt64: lo = -1e300; hi = 1e300; break;
    default: hi = std::ldexp(1.0, digits(t)); lo = -hi; break;
  }
  AOTISHIM_CHECK(static_cast<double>(low) >= lo, call.op, ": 'from' ", low,
                 " is out of bounds for ", dtype_name(t));
  AOTISHIM_CHECK(static_cast<double>(high - 1) <= hi, call.op, ": 'to' - 1 (", high - 1,
                 ") is out of bounds for ", dtype_name(t));
  AOTISHIM_CHECK(t != DType::UInt64 || low >= 0, call.op, ": 'from' ", low,
                 " is out of bounds for uint64");
  // high - low fits in 64 unsigned bits (2^64 - 1 at most: never all of them).
  return static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
}

void fill(Tensor out, RandomArgs args) {
  args.out = std::move(out);
  if (args.out.numel() > 0) random_kernel.run(args.out.device(), args);
}

Tensor factory(const OpCall& call, const int64_t* size, int64_t size_len, const int32_t* dtype,
               DType default_dtype, const int32_t* layout, const int32_t* device,
               int32_t device_index, const int32_t* pin_memory) {
  check_sizes(call, size, size_len);
  check_layout_and_pinning(call, layout, pin_memory);
  Device& d = factory_device(call, device, device_index);
  return make_empty(d, optional_dtype(dtype, default_dtype),
                    std::vector<int64_t>(size, size + size_len));
}

Tensor like(const OpCall& call, const Tensor& self, const int32_t* dtype, const int32_t* layout,
            const int32_t* device, int32_t device_index, const int32_t* pin_memory,
            const int32_t* memory_format) {
  check_layout_and_pinning(call, layout, pin_memory);
  check_like_device(call, self, device, device_index);
  return empty_like(call, self, optional_dtype(dtype, self.dtype), memory_format);
}

RandomArgs kind_args(RandomKind kind, double a = 0.0, double b = 1.0) {
  RandomArgs args;
  args.kind = kind;
  args.a = a;
  args.b = b;
  return args;
}

void unit_fill(const OpCall& call, Tensor out, RandomKind kind, AtenTensorHandle* ret0) {
  check_floating(call, out.dtype, /*complex_ok=*/true);
  fill(out, kind_args(kind));
  *ret0 = register_tensor(std::move(out));
}

void integer_fill(const OpCall& call, Tensor out, int64_t low, int64_t high) {
  RandomArgs args = kind_args(RandomKind::Integer);
  args.low = low;
  args.range = integer_range(call, low, high, out.dtype);
  fill(std::move(out), args);
}

}  // namespace

// ---- rand / randn ----
void rand(const OpCall& call, const int64_t* size, int64_t size_len_, int32_t* dtype,
          int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory,
          AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  unit_fill(call, factory(call, size, size_len_, dtype, DType::Float32, layout, device,
                          device_index_, pin_memory),
            RandomKind::Uniform, ret0);
}

void rand_generator(const OpCall& call, const int64_t* size, int64_t size_len_,
                    AtenGeneratorHandle* generator, int32_t* dtype, int32_t* layout,
                    int32_t* device, int32_t device_index_, int32_t* pin_memory,
                    AtenTensorHandle* ret0) {
  check_generator(call, generator);
  rand(call, size, size_len_, dtype, layout, device, device_index_, pin_memory, ret0);
}

void rand_like(const OpCall& call, AtenTensorHandle self, int32_t* dtype, int32_t* layout,
               int32_t* device, int32_t device_index_, int32_t* pin_memory,
               int32_t* memory_format, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto s = call.tensor(self, "self");
  unit_fill(call, like(call, *s, dtype, layout, device, device_index_, pin_memory, memory_format),
            RandomKind::Uniform, ret0);
}

void rand_like_generator(const OpCall& call, AtenTensorHandle self, AtenGeneratorHandle* generator,
                         int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
                         int32_t* pin_memory, int32_t* memory_format, AtenTensorHandle* ret0) {
  check_generator(call, generator);
  rand_like(call, self, dtype, layout, device, device_index_, pin_memory, memory_format, ret0);
}

void randn(const OpCall& call, const int64_t* size, int64_t size_len_, int32_t* dtype,
           int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory,
           AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  unit_fill(call, factory(call, size, size_len_, dtype, DType::Float32, layout, device,
                          device_index_, pin_memory),
            RandomKind::Normal, ret0);
}

void randn_generator(const OpCall& call, const int64_t* size, int64_t size_len_,
                     AtenGeneratorHandle* generator, int32_t* dtype, int32_t* layout,
                     int32_t* device, int32_t device_index_, int32_t* pin_memory,
                     AtenTensorHandle* ret0) {
  check_generator(call, generator);
  randn(call, size, size_len_, dtype, layout, device, device_index_, pin_memory, ret0);
}

void randn_like(const OpCall& call, AtenTensorHandle self, int32_t* dtype, int32_t* layout,
                int32_t* device, int32_t device_index_, int32_t* pin_memory,
                int32_t* memory_format, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto s = call.tensor(self, "self");
  unit_fill(call, like(call, *s, dtype, layout, device, device_index_, pin_memory, memory_format),
            RandomKind::Normal, ret0);
}

void randn_like_generator(const OpCall& call, AtenTensorHandle self,
                          AtenGeneratorHandle* generator, int32_t* dtype, int32_t* layout,
                          int32_t* device, int32_t device_index_, int32_t* pin_memory,
                          int32_t* memory_format, AtenTensorHandle* ret0) {
  check_generator(call, generator);
  randn_like(call, self, dtype, layout, device, device_index_, pin_memory, memory_format, ret0);
}

// ---- randint ----
void randint_low(const OpCall& call, int64_t low, int64_t high, const int64_t* size,
                 int64_t size_len_, int32_t* dtype, int32_t* layout, int32_t* device,
                 int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  Tensor out = factory(call, size, size_len_, dtype, DType::Int64, layout, device, device_index_,
                       pin_memory);
  integer_fill(call, out, low, high);
  *ret0 = register_tensor(std::move(out));
}

void randint(const OpCall& call, int64_t high, const int64_t* size, int64_t size_len_,
             int32_t* dtype, int32_t* layout, int32_t* device, int32_t device_index_,
             int32_t* pin_memory, AtenTensorHandle* ret0) {
  randint_low(call, 0, high, size, size_len_, dtype, layout, device, device_index_, pin_memory,
              ret0);
}

void randint_generator(const OpCall& call, int64_t high, const int64_t* size, int64_t size_len_,
                       AtenGeneratorHandle* generator, int32_t* dtype, int32_t* layout,
                       int32_t* device, int32_t device_index_, int32_t* pin_memory,
                       AtenTensorHandle* ret0) {
  check_generator(call, generator);
  randint_low(call, 0, high, size, size_len_, dtype, layout, device, device_index_, pin_memory,
              ret0);
}

// Generated code seeds its own kernels' generator with this (one int64 per
// random kernel, over the whole int64 range).
void randint_low_out(const OpCall& call, AtenTensorHandle out, int64_t low, int64_t high,
                     const int64_t* size, int64_t size_len_) {
  auto o = call.tensor(out, "out");
  check_sizes(call, size, size_len_);
  const std::vector<int64_t> want(size, size + size_len_);
  AOTISHIM_CHECK(o->sizes == want, call.op, ": out has sizes ", shape_string(o->sizes),
                 ", but size is ", shape_string(want), " (out is not resized)");
  check_writable_without_overlap(*o, "out");
  integer_fill(call, *o, low, high);
}

void randint_like(const OpCall& call, AtenTensorHandle self, int64_t high, int32_t* dtype,
                  int32_t* layout, int32_t* device, int32_t device_index_, int32_t* pin_memory,
                  int32_t* memory_format, AtenTensorHandle* ret0) {
  randint_like_low_dtype(call, self, 0, high, dtype, layout, device, device_index_, pin_memory,
                         memory_format, ret0);
}

void randint_like_low_dtype(const OpCall& call, AtenTensorHandle self, int64_t low, int64_t high,
                            int32_t* dtype, int32_t* layout, int32_t* device,
                            int32_t device_index_, int32_t* pin_memory, int32_t* memory_format,
                            AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto s = call.tensor(self, "self");
  Tensor out = like(call, *s, dtype, layout, device, device_index_, pin_memory, memory_format);
  integer_fill(call, out, low, high);
  *ret0 = register_tensor(std::move(out));
}

// ---- randperm ----
void randperm(const OpCall& call, int64_t n, int32_t* dtype, int32_t* layout, int32_t* device,
              int32_t device_index_, int32_t* pin_memory, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  AOTISHIM_CHECK(n >= 0, call.op, ": n must be non-negative, got ", n);
  Tensor out = factory(call, &n, 1, dtype, DType::Int64, layout, device, device_index_,
                       pin_memory);
  AOTISHIM_CHECK(out.dtype != DType::Bool && !is_complex(out.dtype), call.op, ": dtype ",
                 dtype_name(out.dtype), " is not supported");
  if (n > 0) integer_range(call, 0, n, out.dtype);  // n - 1 must fit the dtype
  fill(out, kind_args(RandomKind::Permutation));
  *ret0 = register_tensor(std::move(out));
}

// ---- distributions over a tensor like self ----
void normal_functional(const OpCall& call, AtenTensorHandle self, double mean, double std,
                       AtenGeneratorHandle* generator, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  check_generator(call, generator);
  auto s = call.tensor(self, "self");
  check_floating(call, s->dtype, /*complex_ok=*/false);
  AOTISHIM_CHECK(std >= 0.0, call.op, ": normal expects std >= 0.0, but found std ", std);
  Tensor out = empty_like(call, *s, s->dtype, nullptr);
  fill(out, kind_args(RandomKind::Normal, mean, std));
  *ret0 = register_tensor(std::move(out));
}

void uniform(const OpCall& call, AtenTensorHandle self, double from, double to,
             AtenGeneratorHandle* generator, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  check_generator(call, generator);
  auto s = call.tensor(self, "self");
  check_floating(call, s->dtype, /*complex_ok=*/false);
  AOTISHIM_CHECK(from <= to, call.op, ": uniform expects to return a [from, to) range, but "
                 "found from=", from, " > to=", to);
  AOTISHIM_CHECK(std::isfinite(to - from), call.op, ": uniform expects to-from to be finite, "
                 "but found to-from=", to - from);
  Tensor out = empty_like(call, *s, s->dtype, nullptr);
  fill(out, kind_args(RandomKind::Uniform, from, to));
  *ret0 = register_tensor(std::move(out));
}

void exponential(const OpCall& call, AtenTensorHandle self, double lambd,
                 AtenGeneratorHandle* generator, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  check_generator(call, generator);
  auto s = call.tensor(self, "self");
  check_floating(call, s->dtype, /*complex_ok=*/false);
  AOTISHIM_CHECK(lambd > 0.0, call.op, ": exponential expects lambda > 0.0, but found lambda=",
                 lambd);
  Tensor out = empty_like(call, *s, s->dtype, nullptr);
  fill(out, kind_args(RandomKind::Exponential, lambd));
  *ret0 = register_tensor(std::move(out));
}

// ---- bernoulli (in place) ----
void bernoulli__float(const OpCall& call, AtenTensorHandle self, double p,
                      AtenGeneratorHandle* generator) {
  check_generator(call, generator);
  auto s = call.tensor(self, "self");
  AOTISHIM_CHECK(!is_complex(s->dtype), call.op, ": dtype ", dtype_name(s->dtype),
                 " is not supported");
  AOTISHIM_CHECK(p >= 0.0 && p <= 1.0, call.op, ": bernoulli_ expects p to be in [0, 1], but "
                 "got p=", p);
  check_writable_without_overlap(*s, "self");
  fill(*s, kind_args(RandomKind::Bernoulli, p));
}

void bernoulli__Tensor(const OpCall& call, AtenTensorHandle self, AtenTensorHandle p,
                       AtenGeneratorHandle* generator) {
  check_generator(call, generator);
  auto s = call.tensor(self, "self");
  auto prob = call.tensor(p, "p");
  AOTISHIM_CHECK(!is_complex(s->dtype), call.op, ": dtype ", dtype_name(s->dtype),
                 " is not supported");
  check_floating(call, prob->dtype, /*complex_ok=*/false);
  check_writable_without_overlap(*s, "self");
  RandomArgs args = kind_args(RandomKind::Bernoulli);
  args.has_p = true;
  // p as packed float64 at self's sizes, read in full before self is
  // written (the two may share memory).
  args.p = make_empty(prob->device(), DType::Float64, s->sizes);
  if (args.p.numel() > 0) copy_tensor(args.p, broadcast_to(*prob, s->sizes));
  fill(*s, args);
}

// ---- dropout ----
void native_dropout(const OpCall& call, AtenTensorHandle input, double p, int32_t* train,
                    AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  require_out(ret1, "ret1");
  auto in = call.tensor(input, "input");
  check_floating(call, in->dtype, /*complex_ok=*/false);
  AOTISHIM_CHECK(p >= 0.0 && p <= 1.0, call.op, ": dropout probability has to be between 0 "
                 "and 1, but got ", p);
  Tensor out = empty_like(call, *in, in->dtype, nullptr);
  Tensor mask = empty_like(call, *in, DType::Bool, nullptr);
  if (train == nullptr || *train != 0) {
    RandomArgs args = kind_args(RandomKind::Dropout, p, p == 1.0 ? 0.0 : 1.0 / (1.0 - p));
    args.input = *in;
    args.mask = mask;
    fill(out, args);
  } else {  // evaluation: the input unchanged, every element kept
    if (out.numel() > 0) copy_tensor(out, *in);
    if (mask.numel() > 0) fill(mask, kind_args(RandomKind::Bernoulli, 1.0));
  }
  AtenTensorHandle h0 = register_tensor(std::move(out));
  *ret1 = register_tensor(std::move(mask));
  *ret0 = h0;
}

}  // namespace ops
}  // namespace aotishim
