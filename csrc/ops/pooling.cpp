// avg_pool2d/3d and max_pool2d/3d_with_indices: torch's argument checks and
// messages, the output size (floor or ceil mode) and the output layout torch's
// CPU kernels give: channels-last for a channels-last batched input, except
// avg_pool3d, whose output is always contiguous; max_pool3d of an unbatched
// input with its channels innermost is channels-last too (cpu and cuda).
#include "ops/pooling.h"

#include <initializer_list>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"
#include "ops/pool_geometry.h"

namespace aotishim {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

// torch's pooling_output_shape, with its checks.
int64_t pooled_size(const char* op, int64_t in, int64_t k, int64_t pad, int64_t stride,
                    int64_t dilation, bool ceil_mode) {
  AOTISHIM_CHECK(stride != 0, op, ": stride should not be zero");
  AOTISHIM_CHECK(pad >= 0, op, ": pad must be non-negative, but got pad: ", pad);
  AOTISHIM_CHECK(pad <= ((k - 1) * dilation + 1) / 2, op,
                 ": pad should be at most half of effective kernel size, but got pad=", pad,
                 ", kernel_size=", k, " and dilation=", dilation);
  int64_t out = floor_div(in + 2 * pad - dilation * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0),
                          stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) --out;
  return out;
}

// Whether t's dims, taken from the fastest in `order`, are packed (size-1
// dims skipped, as torch's contiguity checks skip them).
bool packed_in_order(const Tensor& t, std::initializer_list<int64_t> order) {
  int64_t expected = 1;
  for (int64_t d : order) {
    if (t.sizes[d] == 1) continue;
    if (t.strides[d] != expected) return false;
    expected *= t.sizes[d];
  }
  return true;
}

// torch's max_pool3d reads an unbatched (C, T, H, W) input whose channels
// are innermost as channels-last-3d with a batch of one, and lays its output
// out so.
bool unbatched_channels_last_3d(const Tensor& self) {
  return self.dim() == 4 && packed_in_order(self, {0, 3, 2, 1}) &&
         !packed_in_order(self, {3, 2, 1, 0});
}

std::string joined(const std::vector<int64_t>& v, const char* sep) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + std::to_string(v[i]);
  return s;
}

struct PoolSpec {
  const char* name;     // "max_pool2d", in torch's messages
  int64_t spatial;      // 2 or 3
  bool max;
  bool follows_layout;  // output channels-last for channels-last input
};

void windowed_pool(const ops::OpCall& call, const PoolSpec& spec, AtenTensorHandle self_h,
                   const int64_t* kernel_size, int64_t kernel_len, const int64_t* stride_p,
                   int64_t stride_len, const int64_t* padding_p, int64_t padding_len,
                   const int64_t* dilation_p, int64_t dilation_len, bool ceil_mode,
                   bool count_include_pad, const int64_t* divisor_override, AtenTensorHandle* ret0,
                   AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  if (spec.max) require_out(ret1, "ret1");
  const int64_t n = spec.spatial;
  const char* op = spec.name;
  const bool two = n == 2;
  std::vector<int64_t> k, s, p, d;
  AOTISHIM_CHECK(expand_pool_param(kernel_size, kernel_len, n, nullptr, k), op,
                 two ? ": kernel_size must either be a single int, or a tuple of two ints"
                     : (spec.max ? ": kernel_size must either be a single int, or a tuple of three ints"
                                 : ": kernel_size must be a single int, or a tuple of three ints"));
  AOTISHIM_CHECK(expand_pool_param(stride_p, stride_len, n, &k, s), op,
                 two ? ": stride must either be omitted, a single int, or a tuple of two ints"
                     : (spec.max ? ": stride must either be omitted, a single int, or a tuple of three ints"
                                 : ": stride must be omitted, a single int, or a tuple of three ints"));
  AOTISHIM_CHECK(expand_pool_param(padding_p, padding_len, n, nullptr, p), op,
                 two ? ": padding must either be a single int, or a tuple of two ints"
                     : (spec.max ? ": padding must either be a single int, or a tuple of three ints"
                                 : ": padding must be a single int, or a tuple of three ints"));
  if (spec.max) {
    AOTISHIM_CHECK(expand_pool_param(dilation_p, dilation_len, n, nullptr, d), op,
                   two ? ": dilation must be either a single int, or a tuple of two ints"
                       : ": dilation must be either a single int, or a tuple of three ints");
  } else {
    d.assign(static_cast<size_t>(n), 1);
    AOTISHIM_CHECK(divisor_override == nullptr || *divisor_override != 0, op,
                   ": divisor must be not zero");
  }
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  const int64_t nd = self.dim();
  AOTISHIM_CHECK(nd == n + 1 || nd == n + 2, op, ": non-empty ", n + 1, "D or ", n + 2,
                 "D (batch mode) tensor expected for input");
  AOTISHIM_CHECK(is_floating(self.dtype), op, ": ", dtype_name(self.dtype),
                 " is not supported (the floating types are)");
  std::vector<int64_t> in(self.sizes.end() - n, self.sizes.end()), out_spatial(n);
  for (int64_t i = 0; i < n; ++i)
    out_spatial[i] = pooled_size(op, in[i], k[i], p[i], s[i], d[i], ceil_mode);
  if (two) {
    AOTISHIM_CHECK(k[0] > 0 && k[1] > 0, op, ": kernel size should be greater than zero, but got kH: ",
                   k[0], " kW: ", k[1]);
    AOTISHIM_CHECK(s[0] > 0 && s[1] > 0, op, ": stride should be greater than zero, but got dH: ",
                   s[0], " dW: ", s[1]);
    AOTISHIM_CHECK(d[0] > 0 && d[1] > 0, op,
                   ": dilation should be greater than zero, but got dilationH: ", d[0],
                   " dilationW: ", d[1]);
    bool valid = self.sizes[nd - 3] != 0 && self.sizes[nd - 2] != 0 && self.sizes[nd - 1] != 0;
    AOTISHIM_CHECK(valid, op, ": Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                   "size for input, but got:", shape_string(self.sizes));
  } else {
    for (int64_t i = nd - 4; i < nd; ++i)
      AOTISHIM_CHECK(self.sizes[i] > 0, op, ": Expected input's non-batch dimensions to have "
                     "positive length, but input has a shape of ", shape_string(self.sizes),
                     " and non-batch dimension ", i - (nd - 4), " has length zero!");
    AOTISHIM_CHECK(k[0] > 0 && k[1] > 0 && k[2] > 0, op, ": kernel size should be greater than "
                   "zero, but got kT: ", k[0], " kH: ", k[1], " kW: ", k[2]);
    AOTISHIM_CHECK(s[0] > 0 && s[1] > 0 && s[2] > 0, op, ": stride should be greater than zero, "
                   "but got dT: ", s[0], " dH: ", s[1], " dW: ", s[2]);
    AOTISHIM_CHECK(d[0] > 0 && d[1] > 0 && d[2] > 0, op, ": dilation should be greater than "
                   "zero, but got dilationT: ", d[0], " dilationH: ", d[1], " dilationW: ", d[2]);
    if (!spec.max)
      AOTISHIM_CHECK(in[0] >= k[0] && in[1] >= k[1] && in[2] >= k[2], op,
                     ": input image (T: ", in[0], " H: ", in[1], " W: ", in[2],
                     ") smaller than kernel size (kT: ", k[0], " kH: ", k[1], " kW: ", k[2], ")");
  }
  for (int64_t i = 0; i < n; ++i)
    AOTISHIM_CHECK(k[i] / 2 >= p[i], op, ": pad should be smaller than or equal to half of kernel "
                   "size, but got kernel_size=(", joined(k, ", "), ") and padding=(",
                   joined(p, ", "), ")");
  bool positive = true;
  for (int64_t v : out_spatial) positive = positive && v >= 1;
  AOTISHIM_CHECK(positive, op, ": Given input size: (", self.sizes[nd - n - 1], "x",
                 joined(in, "x"), "). Calculated output size: (", self.sizes[nd - n - 1], "x",
                 joined(out_spatial, "x"), "). Output size is too small");

  std::vector<int64_t> out_sizes(self.sizes.begin(), self.sizes.end() - n);
  out_sizes.insert(out_sizes.end(), out_spatial.begin(), out_spatial.end());
  std::vector<int64_t> strides = spec.follows_layout ? pool_output_strides(self, n, out_sizes)
                                                     : contiguous_strides(out_sizes);
  if (spec.max && n == 3 && unbatched_channels_last_3d(self)) {
    std::vector<int64_t> batched = out_sizes;
    batched.insert(batched.begin(), 1);
    strides = channels_last_strides(batched);
    strides.erase(strides.begin());
  }
  Device& device = self.device();
  Tensor out = make_empty(device, self.dtype, out_sizes, strides);
  Tensor indices = spec.max ? make_empty(device, DType::Int64, out_sizes, strides) : Tensor{};
  if (out.numel() > 0) {
    PoolArgs a;
    a.self = pool_view_5d(self, n);
    a.out = pool_view_5d(out, n);
    if (spec.max) a.indices = pool_view_5d(indices, n);
    const int64_t lead = 3 - n;  // 2-D pools: D is the inserted size-1 dim
    for (int64_t i = 0; i < 3; ++i) {
      const bool real = i >= lead;
      a.kernel[i] = real ? k[i - lead] : 1;
      a.stride[i] = real ? s[i - lead] : 1;
      a.padding[i] = real ? p[i - lead] : 0;
      a.dilation[i] = real ? d[i - lead] : 1;
    }
    a.max = spec.max;
    a.count_include_pad = count_include_pad;
    a.divisor_override = divisor_override ? *divisor_override : 0;
    ops::pool_kernel.run(device, a);
  }
  *ret0 = register_tensor(out);
  if (spec.max) *ret1 = register_tensor(indices);
}

}  // namespace

namespace ops {

Op<void(const PoolArgs&)> pool_kernel("pooling");

void avg_pool2d(const OpCall& call, AtenTensorHandle self, const int64_t* kernel_size,
                int64_t kernel_size_len_, const int64_t* stride, int64_t stride_len_,
                const int64_t* padding, int64_t padding_len_, int32_t ceil_mode,
                int32_t count_include_pad, int64_t* divisor_override, AtenTensorHandle* ret0) {
  windowed_pool(call, {"avg_pool2d", 2, false, true}, self, kernel_size, kernel_size_len_, stride,
                stride_len_, padding, padding_len_, nullptr, 0, ceil_mode != 0,
                count_include_pad != 0, divisor_override, ret0, nullptr);
}

void avg_pool3d(const OpCall& call, AtenTensorHandle self, const int64_t* kernel_size,
                int64_t kernel_size_len_, const int64_t* stride, int64_t stride_len_,
                const int64_t* padding, int64_t padding_len_, int32_t ceil_mode,
                int32_t count_include_pad, int64_t* divisor_override, AtenTensorHandle* ret0) {
  windowed_pool(call, {"avg_pool3d", 3, false, false}, self, kernel_size, kernel_size_len_, stride,
                stride_len_, padding, padding_len_, nullptr, 0, ceil_mode != 0,
                count_include_pad != 0, divisor_override, ret0, nullptr);
}

void max_pool2d_with_indices(const OpCall& call, AtenTensorHandle self, const int64_t* kernel_size,
                             int64_t kernel_size_len_, const int64_t* stride, int64_t stride_len_,
                             const int64_t* padding, int64_t padding_len_, const int64_t* dilation,
                             int64_t dilation_len_, int32_t ceil_mode, AtenTensorHandle* ret0,
                             AtenTensorHandle* ret1) {
  windowed_pool(call, {"max_pool2d", 2, true, true}, self, kernel_size, kernel_size_len_, stride,
                stride_len_, padding, padding_len_, dilation, dilation_len_, ceil_mode != 0, true,
                nullptr, ret0, ret1);
}

void max_pool3d_with_indices(const OpCall& call, AtenTensorHandle self, const int64_t* kernel_size,
                             int64_t kernel_size_len_, const int64_t* stride, int64_t stride_len_,
                             const int64_t* padding, int64_t padding_len_, const int64_t* dilation,
                             int64_t dilation_len_, int32_t ceil_mode, AtenTensorHandle* ret0,
                             AtenTensorHandle* ret1) {
  windowed_pool(call, {"max_pool3d", 3, true, true}, self, kernel_size, kernel_size_len_, stride,
                stride_len_, padding, padding_len_, dilation, dilation_len_, ceil_mode != 0, true,
                nullptr, ret0, ret1);
}

}  // namespace ops
}  // namespace aotishim
