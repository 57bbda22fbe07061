// mkldnn_rnn_layer (ops/rnn_layer.cpp): one direction of one layer of an
// LSTM, as torch's CPU LSTM calls it (and AOTInductor's generated code, once
// per layer and direction). Devices register the kernel.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// For each time step t (from the last to the first when `reverse`):
//   gates = input[t] @ w_ih^T + b_ih + h @ w_hh^T + b_hh, split in four
//   blocks of hidden_size in torch's order i, f, g, o;
//   c = sigmoid(f) * c + sigmoid(i) * tanh(g);  h = sigmoid(o) * tanh(c);
//   output[t] = h.
// h and c start from hx and cx; hy and cy receive the final ones.
struct LstmLayerArgs {
  Tensor input;             // (T, B, I)
  Tensor w_ih, w_hh;        // (4H, I), (4H, H)
  bool has_biases = true;
  Tensor b_ih, b_hh;        // (4H) when has_biases
  Tensor hx, cx;            // B*H elements, (.., B, H)
  bool reverse = false;
  Tensor output, hy, cy;    // (T, B, H); hx's sizes; cx's sizes
};

namespace ops {
AOTISHIM_API extern Op<void(const LstmLayerArgs&)> lstm_layer_kernel;
}  // namespace ops

}  // namespace aotishim
