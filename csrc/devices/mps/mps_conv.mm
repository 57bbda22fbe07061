// Convolution on mps: a direct Metal compute kernel, one thread per output
// element, over views as they lie (any strides, any offset), forward or
// transposed, groups (depthwise included), stride/padding/dilation, 1-3
// spatial dims, float32 accumulation.
//
// Why our own kernel rather than MPSGraph's convolution: MPSGraph takes
// dense tensors (strided views would need packing copies first), and its
// headers (MetalPerformanceShadersGraph) are not in the SDK kit this code is
// compile-checked against on Linux, so code using it could not be checked
// outside macOS. Plain Metal compute is checked by that kit; only the shader
// source below is compiled on macOS alone (newLibraryWithSource).
#import "devices/mps/mps_device.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "core/error.h"
#include "devices/mps/mps_kernels.h"
#include "ops/convolution.h"

#if !__has_feature(objc_arc)
#error "the mps device is built with ARC (-fobjc-arc)"
#endif

namespace aotishim {
namespace {

// Mirrored field by field in the Metal source below. Spatial dims are
// right-aligned in 3 (a 1-D convolution is depth 1, height 1); strides are
// in elements, (n, c, d, h, w) for input and out, (dim0, dim1, kd, kh, kw)
// for weight, 0 for a missing dim.
struct ConvParams {
  int64_t n, cin, cout, groups;
  int64_t in_size[3], out_size[3], k_size[3];
  int64_t stride[3], pad[3], dil[3];
  int64_t in_strides[5], w_strides[5], out_strides[5];
  int64_t bias_stride;
  int32_t transposed, has_bias;
};
static_assert(sizeof(ConvParams) == 4 * 8 + 6 * 3 * 8 + 3 * 5 * 8 + 8 + 8, "ConvParams layout");

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
  std::vector<MpsDevice::BufferUse> buffers = {
      {dev.bind(a.out, "convolution output"), true},
      {dev.bind(a.input, "convolution input"), false},
      {dev.bind(a.weight, "convolution weight"), false},
      {a.has_bias ? dev.bind(a.bias, "convolution bias") : dev.scratch(), false},
  };
  dev.encode_kernel(name, buffers, &p, sizeof(p),
                    [&](id<MTLComputeCommandEncoder> encoder, id<MTLComputePipelineState> pso) {
                      const NSUInteger x = static_cast<NSUInteger>(per_image);
                      const NSUInteger width = std::min<NSUInteger>([pso threadExecutionWidth], x);
                      const NSUInteger height = std::max<NSUInteger>(
                          1, std::min<NSUInteger>([pso maxTotalThreadsPerThreadgroup] / width,
                                                  static_cast<NSUInteger>(p.cout)));
                      [encoder dispatchThreads:MTLSizeMake(x, static_cast<NSUInteger>(p.cout),
                                                           static_cast<NSUInteger>(p.n))
                          threadsPerThreadgroup:MTLSizeMake(width, height, 1)];
                    });
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::conv, DeviceType::MPS, mps_conv);

namespace mps {

// Uses bf16_t, load_value and store_value from kernel_source().
const char* conv_kernel_source() {
  return R"METAL(
struct ConvParams {
  long n;
  long cin;
  long cout;
  long groups;
  long in_size[3];
  long out_size[3];
  long k_size[3];
  long stride[3];
  long pad[3];
  long dil[3];
  long in_strides[5];
  long w_strides[5];
  long out_strides[5];
  long bias_stride;
  int transposed;
  int has_bias;
};

// out[n, co, o] = bias[co] + sum over the group's input channels ci and the
// taps k of input[n, ci, i] * weight, where forward i = o * stride - pad +
// k * dil, and transposed i * stride = o + pad - k * dil (taps that land
// between input positions contribute nothing).
template <typename T>
[[kernel]] void aotishim_conv(device T* out [[buffer(0)]],
                              device const T* in [[buffer(1)]],
                              device const T* w [[buffer(2)]],
                              device const T* bias [[buffer(3)]],
                              constant ConvParams& p [[buffer(4)]],
                              uint3 gid [[thread_position_in_grid]]) {
  const long plane = p.out_size[1] * p.out_size[2];
  const long pos = long(gid.x);
  const long co = long(gid.y);
  const long n = long(gid.z);
  if (pos >= p.out_size[0] * plane || co >= p.cout || n >= p.n) return;
  const long o0 = pos / plane;
  const long o1 = (pos / p.out_size[2]) % p.out_size[1];
  const long o2 = pos % p.out_size[2];
  const long cin_g = p.cin / p.groups;
  const long cout_g = p.cout / p.groups;
  const long g = co / cout_g;
  float acc = p.has_bias != 0 ? load_value(bias + co * p.bias_stride) : 0.0f;
  device const T* in_n = in + n * p.in_strides[0];
  for (long ci = 0; ci < cin_g; ++ci) {
    const long c = g * cin_g + ci;
    device const T* in_c = in_n + c * p.in_strides[1];
    device const T* w_c = p.transposed != 0
                              ? w + c * p.w_strides[0] + (co - g * cout_g) * p.w_strides[1]
                              : w + co * p.w_strides[0] + ci * p.w_strides[1];
    for (long k0 = 0; k0 < p.k_size[0]; ++k0) {
      long i0;
      if (p.transposed != 0) {
        const long t = o0 + p.pad[0] - k0 * p.dil[0];
        if (t < 0 || t % p.stride[0] != 0) continue;
        i0 = t / p.stride[0];
      } else {
        i0 = o0 * p.stride[0] - p.pad[0] + k0 * p.dil[0];
      }
      if (i0 < 0 || i0 >= p.in_size[0]) continue;
      for (long k1 = 0; k1 < p.k_size[1]; ++k1) {
        long i1;
        if (p.transposed != 0) {
          const long t = o1 + p.pad[1] - k1 * p.dil[1];
          if (t < 0 || t % p.stride[1] != 0) continue;
          i1 = t / p.stride[1];
        } else {
          i1 = o1 * p.stride[1] - p.pad[1] + k1 * p.dil[1];
        }
        if (i1 < 0 || i1 >= p.in_size[1]) continue;
        for (long k2 = 0; k2 < p.k_size[2]; ++k2) {
          long i2;
          if (p.transposed != 0) {
            const long t = o2 + p.pad[2] - k2 * p.dil[2];
            if (t < 0 || t % p.stride[2] != 0) continue;
            i2 = t / p.stride[2];
          } else {
            i2 = o2 * p.stride[2] - p.pad[2] + k2 * p.dil[2];
          }
          if (i2 < 0 || i2 >= p.in_size[2]) continue;
          acc += load_value(in_c + i0 * p.in_strides[2] + i1 * p.in_strides[3] +
                            i2 * p.in_strides[4]) *
                 load_value(w_c + k0 * p.w_strides[2] + k1 * p.w_strides[3] +
                            k2 * p.w_strides[4]);
        }
      }
    }
  }
  store_value(out + n * p.out_strides[0] + co * p.out_strides[1] + o0 * p.out_strides[2] +
                  o1 * p.out_strides[3] + o2 * p.out_strides[4],
              acc);
}

#define AOTISHIM_CONV(NAME, T)                                                   \
  template [[host_name(NAME)]] [[kernel]] void aotishim_conv<T>(                  \
      device T* out [[buffer(0)]], device const T* in [[buffer(1)]],             \
      device const T* w [[buffer(2)]], device const T* bias [[buffer(3)]],       \
      constant ConvParams& p [[buffer(4)]], uint3 gid [[thread_position_in_grid]]);

AOTISHIM_CONV("aotishim_conv_float32", float)
AOTISHIM_CONV("aotishim_conv_float16", half)
AOTISHIM_CONV("aotishim_conv_bfloat16", bf16_t)
)METAL";
}

}  // namespace mps
}  // namespace aotishim
