// Convolution on mps: a direct Metal compute kernel, one thread per output
// element, over views as they lie (any strides, any offset), forward or
// transposed, groups (depthwise included), stride/padding/dilation, 1-3
// spatial dims, float32 accumulation.
//
// Why our own kernel rather than MPSGraph's convolution: MPSGraph takes
// dense tensors (strided views would need packing copies first), and its
// headers (MetalPerformanceShadersGraph) are not in the SDK kit this code is
// compile-checked against on Linux, so code using it could not be checked
// outside macOS. Plain Metal compute is checked by that kit; the shader is
// kernels/conv.metal.
#include "devices/mps/mps_device.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/error.h"
#include "devices/mps/mps_kernels.h"
#include "ops/convolution.h"

namespace aotishim {
namespace {

using mps::ConvParams;  // kernels/params.h, shared with the shader

const char* kernel_name(DType t) {
  switch (t) {
    case DType::Float32: return "aotishim_conv_float32";
    case DType::Float16: return "aotishim_conv_float16";
    case DType::BFloat16: return "aotishim_conv_bfloat16";
    default:
      fail(str("mps: convolution supports float32, float16 and bfloat16, not ", dtype_name(t),
               " (Metal has no float64)"));
  }
}

void mps_conv(const ConvArgs& a) {
  const char* name = kernel_name(a.out.dtype);
  MpsDevice& dev = static_cast<MpsDevice&>(a.out.device());
  const int64_t spatial = a.input.dim() - 2;
  const int64_t lead = 3 - spatial;
  ConvParams p{};
  p.n = a.input.sizes[0];
  p.cin = a.input.sizes[1];
  p.cout = a.out.sizes[1];
  p.groups = a.groups;
  for (int64_t d = 0; d < 3; ++d) {
    p.in_size[d] = p.out_size[d] = p.k_size[d] = p.stride[d] = p.dil[d] = 1;
    p.pad[d] = 0;
  }
  for (int i = 0; i < 2; ++i) {
    p.in_strides[i] = a.input.strides[i];
    p.w_strides[i] = a.weight.strides[i];
    p.out_strides[i] = a.out.strides[i];
  }
  for (int64_t d = 0; d < spatial; ++d) {
    const int64_t at = lead + d;
    p.in_size[at] = a.input.sizes[2 + d];
    p.out_size[at] = a.out.sizes[2 + d];
    p.k_size[at] = a.weight.sizes[2 + d];
    p.stride[at] = a.stride[d];
    p.pad[at] = a.padding[d];
    p.dil[at] = a.dilation[d];
    p.in_strides[2 + at] = a.input.strides[2 + d];
    p.w_strides[2 + at] = a.weight.strides[2 + d];
    p.out_strides[2 + at] = a.out.strides[2 + d];
  }
  p.transposed = a.transposed ? 1 : 0;
  p.has_bias = a.has_bias ? 1 : 0;
  p.bias_stride = a.has_bias ? a.bias.strides[0] : 0;

  const int64_t per_image = p.out_size[0] * p.out_size[1] * p.out_size[2];
  constexpr int64_t kMax = std::numeric_limits<uint32_t>::max();
  AOTISHIM_CHECK(per_image <= kMax && p.cout <= kMax && p.n <= kMax,
                 "mps: convolution output ", shape_string(a.out.sizes),
                 " is too large for one dispatch");
  dev.encode([&](MpsDevice::Encoder& e) {
    e.set_kernel(name);
    e.write(0, a.out, "convolution output");
    e.read(1, a.input, "convolution input");
    e.read(2, a.weight, "convolution weight");
    if (a.has_bias) e.read(3, a.bias, "convolution bias");
    else e.scratch(3);
    e.bytes(4, &p, sizeof(p));
    const uint64_t x = static_cast<uint64_t>(per_image);
    const uint64_t width = std::min<uint64_t>(e.pipeline().execution_width(), x);
    const uint64_t height = std::max<uint64_t>(
        1, std::min<uint64_t>(e.pipeline().max_threads_per_group() / width,
                              static_cast<uint64_t>(p.cout)));
    e.dispatch_threads({x, static_cast<uint64_t>(p.cout), static_cast<uint64_t>(p.n)},
                       {width, height, 1});
  });
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::conv, DeviceType::MPS, mps_conv);

}  // namespace aotishim
