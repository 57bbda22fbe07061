// pad validation with torch's rules (aten::pad): pairs for the last dims
// (the last dim first), negative pads crop; constant mode takes a value (cast
// to self's dtype) and any number of dims; the others pad 1, 2 or 3 dims of
// a tensor with one or two more (a batch dim optional), take no value, and
// check what reflection (pads below the size), replication (a non-empty
// input) and wrapping (pads at most the size) need. The output is laid out
// as torch's: like self's suggested memory format, contiguous when circular.
#include "ops/pad.h"

#include <string>

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"
#include "ops/memory_format.h"
#include "ops/pointwise_scalar.h"

namespace aotishim {
namespace ops {

Op<void(const PadArgs&)> pad_kernel("pad");

namespace {

PadMode parse_mode(const char* mode) {
  const std::string m = mode == nullptr ? "constant" : mode;
  if (m == "constant") return PadMode::Constant;
  if (m == "reflect") return PadMode::Reflect;
  if (m == "replicate") return PadMode::Replicate;
  if (m == "circular") return PadMode::Circular;
  fail(str("Unrecognised padding mode ", m));
}

const char* mode_name(PadMode m) {
  switch (m) {
    case PadMode::Constant: return "constant";
    case PadMode::Reflect: return "reflect";
    case PadMode::Replicate: return "replicate";
    case PadMode::Circular: return "circular";
  }
  return "?";
}

}  // namespace

void pad(const OpCall& call, AtenTensorHandle self_h, const int64_t* pad, int64_t pad_len_,
         const char* mode, double* value, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  AOTISHIM_CHECK(pad_len_ >= 0 && (pad_len_ == 0 || pad != nullptr), "pad: pad is null");
  const int64_t dim = self.dim();
  AOTISHIM_CHECK(pad_len_ % 2 == 0, "Padding length must be divisible by 2");
  AOTISHIM_CHECK(pad_len_ <= dim * 2, "Padding length should be less than or equal to two "
                 "times the input dimension but got padding length ", pad_len_,
                 " and input of dimension ", dim);
  const PadMode m = parse_mode(mode);
  const int64_t padded = pad_len_ / 2;
  if (m != PadMode::Constant) {
    AOTISHIM_CHECK(value == nullptr || *value == 0.0, "Padding mode \"", mode_name(m),
                   "\" doesn't take in value argument");
    AOTISHIM_CHECK(padded >= 1 && padded <= 3 && (dim == padded + 1 || dim == padded + 2),
                   "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now");
  }
  PadArgs args;
  args.mode = m;
  args.self = self;
  args.before.assign(static_cast<size_t>(dim), 0);
  args.after.assign(static_cast<size_t>(dim), 0);
  std::vector<int64_t> sizes = self.sizes;
  for (int64_t k = 0; k < padded; ++k) {
    const int64_t d = dim - 1 - k;
    const int64_t lo = pad[2 * k], hi = pad[2 * k + 1], size = self.sizes[d];
    if (m == PadMode::Reflect) {
      AOTISHIM_CHECK(lo < size && hi < size, "Argument #4: Padding size should be less than "
                     "the corresponding input dimension, but got: padding (", lo, ", ", hi,
                     ") at dimension ", d, " of input ", shape_string(self.sizes));
    }
    if (m == PadMode::Circular) {
      AOTISHIM_CHECK(lo <= size && hi <= size,
                     "Padding value causes wrapping around more than once.");
      AOTISHIM_CHECK(size + (lo < 0 ? lo : 0) + (hi < 0 ? hi : 0) > 0,
                     "Negative padding value is resulting in an empty dimension.");
    }
    if (m != PadMode::Constant) {
      AOTISHIM_CHECK(size > 0, mode_name(m), " padding: input dimension ", d, " of ",
                     shape_string(self.sizes), " is empty");
    }
    sizes[d] = size + lo + hi;
    AOTISHIM_CHECK(sizes[d] >= (m == PadMode::Constant ? 0 : 1), "The input size ", size,
                   ", plus negative padding ", lo, " and ", hi, " resulted in a ",
                   m == PadMode::Constant ? "negative" : "non-positive",
                   " output size, which is invalid. Check dimension ", d, " of your input.");
    args.before[d] = lo;
    args.after[d] = hi;
  }
  // torch cuda's reflection and replication pads are contiguous whatever the
  // input's layout; its cpu kernels follow the input's memory format.
  const bool contiguous = m == PadMode::Circular ||
                          (m != PadMode::Constant && self.device().type() == DeviceType::CUDA);
  const MemoryFormat format =
      contiguous ? MemoryFormat::Contiguous : suggest_memory_format(self);
  args.out = make_empty(self.device(), self.dtype, sizes, strides_for(sizes, format));
  if (m == PadMode::Constant) {
    const double v = value == nullptr ? 0.0 : *value;
    check_scalar_fits(v, self.dtype);
    args.value = scalar_in_dtype(self.device(), v, self.dtype);
  }
  if (args.out.numel() > 0) pad_kernel.run(self.device(), args);
  *ret0 = register_tensor(args.out);
}

}  // namespace ops
}  // namespace aotishim
