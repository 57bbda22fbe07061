// mkldnn_rnn_layer validation. Only what inference of an unpacked LSTM
// needs: mode 2 (LSTM), no packed-sequence batch sizes, time-major input
// (torch's LSTM and AOTInductor transpose a batch_first input before the
// call and always pass batch_first = 0). The fourth output is torch's
// training workspace; nothing reads it at inference, so it is a one-element
// placeholder of the input's dtype, the size AOTInductor's code declares.
#include "ops/rnn_layer.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace {

constexpr int64_t kModeLstm = 2;  // torch's rnn mode numbering: RNN_RELU, RNN_TANH, LSTM, GRU

void check_sizes(const Tensor& t, const char* name, const std::vector<int64_t>& expected) {
  AOTISHIM_CHECK(t.sizes == expected, "mkldnn_rnn_layer: ", name, " has sizes ",
                 shape_string(t.sizes), ", expected ", shape_string(expected));
}

}  // namespace

namespace ops {

Op<void(const LstmLayerArgs&)> lstm_layer_kernel("lstm_layer");

void mkldnn_rnn_layer(const OpCall& call, AtenTensorHandle input_h, AtenTensorHandle weight0_h,
                      AtenTensorHandle weight1_h, AtenTensorHandle weight2_h,
                      AtenTensorHandle weight3_h, AtenTensorHandle hx_h, AtenTensorHandle cx_h,
                      int32_t reverse, const int64_t* batch_sizes, int64_t batch_sizes_len_,
                      int64_t mode, int64_t hidden_size, int64_t num_layers, int32_t has_biases,
                      int32_t bidirectional, int32_t batch_first, int32_t train,
                      AtenTensorHandle* ret0, AtenTensorHandle* ret1, AtenTensorHandle* ret2,
                      AtenTensorHandle* ret3) {
  for (auto [ret, name] : {std::pair{ret0, "ret0"}, {ret1, "ret1"}, {ret2, "ret2"}, {ret3, "ret3"}})
    require_out(ret, name);
  AOTISHIM_CHECK(mode == kModeLstm, "mkldnn_rnn_layer: only LSTM layers (mode 2) are supported, got mode ",
                 mode);
  AOTISHIM_CHECK(batch_sizes_len_ == 0,
                 "mkldnn_rnn_layer: packed sequences (batch_sizes) are not supported");
  AOTISHIM_CHECK(batch_first == 0,
                 "mkldnn_rnn_layer: batch_first = 1 is not supported (pass a time-major input, "
                 "as torch's LSTM does)");
  AOTISHIM_CHECK(hidden_size > 0, "mkldnn_rnn_layer: hidden_size must be positive, got ",
                 hidden_size);

  auto input_p = call.tensor(input_h, "input");
  auto w0 = call.tensor(weight0_h, "weight0"), w1 = call.tensor(weight1_h, "weight1");
  auto hx_p = call.tensor(hx_h, "hx_"), cx_p = call.tensor(cx_h, "cx_");
  std::shared_ptr<Tensor> w2, w3;
  if (has_biases) {
    w2 = call.tensor(weight2_h, "weight2");
    w3 = call.tensor(weight3_h, "weight3");
  }
  const Tensor& input = *input_p;
  AOTISHIM_CHECK(input.dim() == 3, "mkldnn_rnn_layer: input must be 3-D (time, batch, features), got sizes ",
                 shape_string(input.sizes));
  AOTISHIM_CHECK(input.dtype == DType::Float32 || input.dtype == DType::BFloat16,
                 "mkldnn_rnn_layer: unsupported dtype ", dtype_name(input.dtype),
                 " (supported: float32, bfloat16)");
  const int64_t T = input.sizes[0], B = input.sizes[1], I = input.sizes[2], H = hidden_size;
  check_sizes(*w0, "weight0 (w_ih)", {4 * H, I});
  check_sizes(*w1, "weight1 (w_hh)", {4 * H, H});
  if (has_biases) {
    check_sizes(*w2, "weight2 (b_ih)", {4 * H});
    check_sizes(*w3, "weight3 (b_hh)", {4 * H});
  }
  for (const auto& [t, name] : {std::pair{hx_p.get(), "hx_"}, {cx_p.get(), "cx_"}}) {
    AOTISHIM_CHECK(t->dim() >= 2 && t->numel() == B * H && t->sizes.back() == H &&
                       t->sizes[t->dim() - 2] == B,
                   "mkldnn_rnn_layer: ", name, " has sizes ", shape_string(t->sizes),
                   ", expected (1, ", B, ", ", H, ")");
  }
  std::vector<const Tensor*> all = {&input, w0.get(), w1.get(), hx_p.get(), cx_p.get()};
  if (has_biases) all.insert(all.end(), {w2.get(), w3.get()});
  for (const Tensor* t : all) {
    AOTISHIM_CHECK(&t->device() == &input.device(), "mkldnn_rnn_layer: tensors are on different devices (",
                   input.device().name(), " and ", t->device().name(), ")");
    AOTISHIM_CHECK(t->dtype == input.dtype, "mkldnn_rnn_layer: dtype mismatch (input is ",
                   dtype_name(input.dtype), ", another argument is ", dtype_name(t->dtype), ")");
  }

  Device& device = input.device();
  LstmLayerArgs args;
  args.input = input;
  args.w_ih = *w0;
  args.w_hh = *w1;
  args.has_biases = has_biases != 0;
  if (has_biases) {
    args.b_ih = *w2;
    args.b_hh = *w3;
  }
  args.hx = *hx_p;
  args.cx = *cx_p;
  args.reverse = reverse != 0;
  args.output = make_empty(device, input.dtype, {T, B, H});
  args.hy = make_empty(device, input.dtype, hx_p->sizes);
  args.cy = make_empty(device, input.dtype, cx_p->sizes);
  Tensor workspace = make_empty(device, input.dtype, {1});
  const uint32_t zero_bits = 0;  // 0.0 in float32 and bfloat16 alike
  device.upload(workspace, &zero_bits);
  lstm_layer_kernel.run(device, args);
  *ret0 = register_tensor(args.output);
  *ret1 = register_tensor(args.hy);
  *ret2 = register_tensor(args.cy);
  *ret3 = register_tensor(workspace);
}

}  // namespace ops
}  // namespace aotishim
