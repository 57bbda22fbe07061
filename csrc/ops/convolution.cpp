// aten::convolution for every device: argument checks with torch's rules,
// the output's shape and layout, then the device's conv kernel.
//
// The output layout matters beyond looks: AOTInductor plans the code after a
// convolution from the strides torch's CPU convolution returns (channels-last
// output for channels-last input or weight) and runs its own kernels on the
// returned buffer by those strides, without asking for them again.
#include "ops/convolution.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu_features.h"
#include "core/device.h"
#include "core/error.h"
#include "core/strided.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace {

// Is either operand channels-last, as torch's backends see them? torch runs a
// 1-D convolution as 2-D: the input made contiguous, the weight viewed as
// (O, I, 1, K), so only the weight's layout can make it channels-last.
bool operands_channels_last(const ConvArgs& a) {
  if (a.input.dim() != 3) {
    return strides_like_channels_last(a.input.sizes, a.input.strides) ||
           strides_like_channels_last(a.weight.sizes, a.weight.strides);
  }
  const auto &ws = a.weight.sizes, &wt = a.weight.strides;
  return strides_like_channels_last({ws[0], ws[1], 1, ws[2]},
                                    {wt[0], wt[1], ws[2] * wt[2], wt[2]});
}

// torch turns oneDNN (and cuDNN) down for a transposed convolution whose
// output padding reaches its stride (allowed while below the dilation).
bool output_padding_big(const ConvArgs& a) {
  if (!a.transposed) return false;
  for (size_t d = 0; d < a.stride.size(); ++d) {
    if (a.output_padding[d] >= a.stride[d]) return true;
  }
  return false;
}

// Does torch 2.13 run this 3-D convolution on the CPU through oneDNN?
// bfloat16 and float16 where oneDNN takes the type on this CPU; float32 by a
// size heuristic (native code is faster on some small problems), assuming
// torch runs more than one thread, as on any multi-core machine. Elsewhere
// it runs its own 3-D kernels, whose output is contiguous.
bool torch_uses_onednn_3d(const ConvArgs& a) {
  if (output_padding_big(a)) return false;
  if (a.input.dtype == DType::BFloat16) return onednn_takes_bfloat16();
  if (a.input.dtype == DType::Float16) return onednn_takes_float16();
  if (a.input.dtype != DType::Float32) return false;
  const auto& in = a.input.sizes;
  const auto& k = a.weight.sizes;
  const int64_t kw = k[k.size() - 1], kh = k[k.size() - 2];
  return a.groups > 1 || (kw > 3 && kh > 3) || in[0] > 1 || in[0] * in[1] * in[2] * in[3] > 20480;
}

// Is the output channels-last? The layout torch's convolution backend for
// the device gives (torch's _determine_backend_memory_format), which the
// compiled code assumes. Channels-last operands give channels-last output:
//  - cpu (and sim, which follows it): always for 1-D and 2-D, where every
//    backend torch picks agrees; for 3-D only where torch runs oneDNN;
//  - cuda (cuDNN): except float64, and except the transposed convolutions
//    cuDNN turns down, which run torch's own contiguous kernels;
//  - mps: always.
bool output_channels_last(const ConvArgs& a) {
  if (!operands_channels_last(a)) return false;
  switch (a.input.device().type()) {
    case DeviceType::CUDA:
      return a.input.dtype != DType::Float64 && !output_padding_big(a);
    case DeviceType::MPS:
      return true;
    default:
      return a.input.dim() != 5 || torch_uses_onednn_3d(a);
  }
}

// A list argument: one value for every spatial dim, or a single value for all
// (as torch expands it).
std::vector<int64_t> expand_list(const int64_t* values, int64_t len, const char* name,
                                 int64_t spatial) {
  AOTISHIM_CHECK(len >= 0 && (len == 0 || values != nullptr), name, " has ", len,
                 " values but no array");
  AOTISHIM_CHECK(len == 1 || len == spatial, "expected ", name,
                 " to be a single integer value or a list of ", spatial,
                 " values to match the convolution dimensions, but got ", name, "=",
                 shape_string(std::vector<int64_t>(values, values + len)));
  std::vector<int64_t> out(static_cast<size_t>(spatial));
  for (int64_t d = 0; d < spatial; ++d) out[d] = values[len == 1 ? 0 : d];
  return out;
}

// The dtypes each device type's kernel runs, so that a refusal names what
// this device takes (the kernels still refuse anything else themselves).
std::vector<DType> conv_dtypes(DeviceType type) {
  switch (type) {
    case DeviceType::CUDA:  // cuDNN
      return {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
    case DeviceType::MPS:  // Metal has no float64
      return {DType::Float32, DType::Float16, DType::BFloat16};
    default:  // the host kernel (sim runs it too)
      return {DType::Float32, DType::Float64, DType::BFloat16};
  }
}

void check_conv_dtype(const Device& device, DType dtype) {
  const std::vector<DType> takes = conv_dtypes(device.type());
  if (std::find(takes.begin(), takes.end(), dtype) != takes.end()) return;
  std::string names;
  for (size_t i = 0; i < takes.size(); ++i)
    names += std::string(i == 0 ? "" : i + 1 == takes.size() ? " and " : ", ") +
             dtype_name(takes[i]);
  fail(str("unsupported dtype ", dtype_name(dtype), " for convolution on ",
           device_type_name(device.type()), " (its kernel supports ", names, ")"));
}

}  // namespace

namespace ops {

Op<void(const ConvArgs&)> conv("convolution");

void convolution(const OpCall& call, AtenTensorHandle input_h, AtenTensorHandle weight_h,
                 AtenTensorHandle* bias_h, const int64_t* stride, int64_t stride_len,
                 const int64_t* padding, int64_t padding_len, const int64_t* dilation,
                 int64_t dilation_len, int32_t transposed, const int64_t* output_padding,
                 int64_t output_padding_len, int64_t groups, AtenTensorHandle* ret0) {
  AOTISHIM_CHECK(ret0 != nullptr, "ret0 is null: convolution needs somewhere to put its result");
  auto input_p = call.tensor(input_h, "input"), weight_p = call.tensor(weight_h, "weight");
  auto bias_p = call.optional_tensor(bias_h == nullptr ? nullptr : *bias_h, "bias");
  ConvArgs a;
  a.input = *input_p;
  a.weight = *weight_p;
  a.transposed = transposed != 0;
  a.groups = groups;
  const Tensor &input = a.input, &weight = a.weight;

  const int64_t nd = input.dim();
  AOTISHIM_CHECK(nd >= 3 && nd <= 5, "convolution supports 1-D, 2-D and 3-D convolutions of "
                 "batched input (3-D to 5-D tensors), got a ", nd, "-D input of sizes ",
                 shape_string(input.sizes));
  AOTISHIM_CHECK(weight.dim() == nd, "expected ", nd, "-dimensional weight for ", nd,
                 "-dimensional input ", shape_string(input.sizes), ", but got weight of sizes ",
                 shape_string(weight.sizes));
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"weight", &weight},
                                {"bias", bias_p.get()}}) {
    if (t == nullptr) continue;
    AOTISHIM_CHECK(&t->device() == &input.device(), "tensors are on different devices: input is on ",
                   input.device().name(), " but ", name, " is on ", t->device().name());
    AOTISHIM_CHECK(t->dtype == input.dtype, "dtype mismatch: input is ", dtype_name(input.dtype),
                   " but ", name, " is ", dtype_name(t->dtype));
  }
  check_conv_dtype(input.device(), input.dtype);

  const int64_t spatial = nd - 2;
  a.stride = expand_list(stride, stride_len, "stride", spatial);
  a.padding = expand_list(padding, padding_len, "padding", spatial);
  a.dilation = expand_list(dilation, dilation_len, "dilation", spatial);
  a.output_padding = expand_list(output_padding, output_padding_len, "output_padding", spatial);
  for (int64_t d = 0; d < spatial; ++d) {
    AOTISHIM_CHECK(a.stride[d] > 0, "non-positive stride is not supported (stride=",
                   shape_string(a.stride), ")");
    AOTISHIM_CHECK(a.padding[d] >= 0, "negative padding is not supported (padding=",
                   shape_string(a.padding), ")");
    AOTISHIM_CHECK(a.dilation[d] > 0, "dilation should be greater than zero (dilation=",
                   shape_string(a.dilation), ")");
    AOTISHIM_CHECK(a.output_padding[d] >= 0, "negative output_padding is not supported (output_padding=",
                   shape_string(a.output_padding), ")");
    if (a.transposed) {
      AOTISHIM_CHECK(a.output_padding[d] < a.stride[d] || a.output_padding[d] < a.dilation[d],
                     "output padding must be smaller than either stride or dilation, but got "
                     "output_padding=", shape_string(a.output_padding), ", stride=",
                     shape_string(a.stride), ", dilation=", shape_string(a.dilation));
    }  // a forward convolution ignores output_padding, as aten::convolution does
  }
  AOTISHIM_CHECK(groups > 0, "non-positive groups is not supported (groups=", groups, ")");

  const int64_t N = input.sizes[0], Cin = input.sizes[1];
  // torch returns an empty tensor of another shape here (no channels, not the
  // bias): refuse rather than guess.
  AOTISHIM_CHECK(Cin > 0, "input ", shape_string(input.sizes),
                 " has no channels; convolution needs at least one");
  int64_t Cout;
  if (!a.transposed) {
    Cout = weight.sizes[0];
    AOTISHIM_CHECK(Cout % groups == 0, "given groups=", groups, ", expected weight to be divisible by ",
                   groups, " at dimension 0, but got weight of sizes ", shape_string(weight.sizes));
    AOTISHIM_CHECK(Cin == weight.sizes[1] * groups, "given groups=", groups, ", weight of sizes ",
                   shape_string(weight.sizes), ", expected input ", shape_string(input.sizes),
                   " to have ", weight.sizes[1] * groups, " channels, but got ", Cin, " channels");
  } else {
    AOTISHIM_CHECK(Cin == weight.sizes[0], "given transposed=1, weight of sizes ",
                   shape_string(weight.sizes), ", expected input ", shape_string(input.sizes),
                   " to have ", weight.sizes[0], " channels, but got ", Cin, " channels");
    AOTISHIM_CHECK(Cin % groups == 0, "given groups=", groups, ", expected weight to be divisible by ",
                   groups, " at dimension 0, but got weight of sizes ", shape_string(weight.sizes));
    Cout = weight.sizes[1] * groups;
  }
  if (bias_p) {
    AOTISHIM_CHECK(bias_p->dim() == 1 && bias_p->sizes[0] == Cout, "given weight of sizes ",
                   shape_string(weight.sizes), ", expected bias to be 1-dimensional with ", Cout,
                   " elements, but got bias of sizes ", shape_string(bias_p->sizes));
    a.has_bias = true;
    a.bias = *bias_p;
  }

  std::vector<int64_t> out_sizes = {N, Cout};
  for (int64_t d = 0; d < spatial; ++d) {
    const int64_t in = input.sizes[2 + d], k = weight.sizes[2 + d];
    AOTISHIM_CHECK(k > 0, "weight of sizes ", shape_string(weight.sizes),
                   " has an empty kernel dimension");
    const int64_t span = a.dilation[d] * (k - 1) + 1;  // the kernel's reach
    int64_t o;
    if (!a.transposed) {
      const int64_t padded = in + 2 * a.padding[d];
      AOTISHIM_CHECK(padded >= span, "calculated padded input size per channel: ", padded,
                     " (input ", shape_string(input.sizes), ", padding ", shape_string(a.padding),
                     "); kernel size (with dilation): ", span,
                     "; the kernel size can't be greater than the actual input size");
      o = (padded - span) / a.stride[d] + 1;
    } else {
      o = (in - 1) * a.stride[d] - 2 * a.padding[d] + span + a.output_padding[d];
    }
    AOTISHIM_CHECK(o > 0, "given input of sizes ", shape_string(input.sizes),
                   ", the calculated output size along spatial dim ", d, " is ", o,
                   ", which is too small");
    out_sizes.push_back(o);
  }

  Device& device = input.device();
  a.out = make_empty(device, input.dtype, out_sizes,
                     output_channels_last(a) ? channels_last_strides(out_sizes)
                                             : std::vector<int64_t>{});
  if (a.out.numel() > 0) ops::conv.run(device, a);
  *ret0 = register_tensor(a.out);
}

}  // namespace ops
}  // namespace aotishim
