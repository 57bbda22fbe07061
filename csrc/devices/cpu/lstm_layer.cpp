// One LSTM layer on the host over BLAS: the input projections of all time
// steps in one GEMM, then per step one GEMM of the hidden state against
// w_hh^T added in place, and the gate arithmetic. Computes in float32;
// bfloat16 operands are widened once and results rounded once per store.
#include <cmath>
#include <vector>

#include "core/error.h"
#include "devices/cpu/blas.h"
#include "devices/cpu/parallel.h"
#include "devices/cpu/typed_elements.h"
#include "ops/rnn_layer.h"

namespace aotishim {
namespace {

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

void check_blas(int64_t v, const char* what) {
  AOTISHIM_CHECK(v <= blas::kMaxInt, "mkldnn_rnn_layer: ", what, " = ", v,
                 " exceeds the BLAS integer limit");
}

void host_lstm_layer(const LstmLayerArgs& a) {
  const int64_t T = a.input.sizes[0], B = a.input.sizes[1], I = a.input.sizes[2];
  const int64_t H = a.w_hh.sizes[1], G = 4 * H;
  check_blas(T * B, "time * batch");
  check_blas(G, "4 * hidden_size");
  check_blas(I, "input_size");

  const std::vector<float> x = cpu::packed_floats(a.input);  // (T*B, I)
  const std::vector<float> w_ih = cpu::packed_floats(a.w_ih);  // (G, I)
  const std::vector<float> w_hh = cpu::packed_floats(a.w_hh);  // (G, H)
  std::vector<float> bias(static_cast<size_t>(G), 0.0f);
  if (a.has_biases) {
    const std::vector<float> b_ih = cpu::packed_floats(a.b_ih), b_hh = cpu::packed_floats(a.b_hh);
    for (int64_t g = 0; g < G; ++g) bias[g] = b_ih[g] + b_hh[g];
  }
  std::vector<float> h = cpu::packed_floats(a.hx), c = cpu::packed_floats(a.cx);  // (B, H)

  // gates(T*B, G) = x @ w_ih^T + bias, for all steps at once.
  std::vector<float> gates(static_cast<size_t>(T * B * G));
  for (int64_t r = 0; r < T * B; ++r)
    std::copy(bias.begin(), bias.end(), gates.begin() + r * G);
  if (T * B > 0 && I > 0) {
    blas::gemm(false, true, static_cast<int>(T * B), static_cast<int>(G), static_cast<int>(I),
               1.0f, x.data(), static_cast<int>(I), w_ih.data(), static_cast<int>(I), 1.0f,
               gates.data(), static_cast<int>(G));
  }

  std::vector<float> out(static_cast<size_t>(T * B * H));
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = a.reverse ? T - 1 - s : s;
    float* g = gates.data() + t * B * G;
    if (B > 0 && H > 0) {  // g(B, G) += h @ w_hh^T
      blas::gemm(false, true, static_cast<int>(B), static_cast<int>(G), static_cast<int>(H), 1.0f,
                 h.data(), static_cast<int>(H), w_hh.data(), static_cast<int>(H), 1.0f, g,
                 static_cast<int>(G));
    }
    float* o = out.data() + t * B * H;
    cpu::parallel_for(B, std::max<int64_t>(1, 4096 / std::max<int64_t>(H, 1)),
                      [&](int64_t begin, int64_t end) {
      for (int64_t b = begin; b < end; ++b) {
        const float* gb = g + b * G;
        for (int64_t j = 0; j < H; ++j) {
          const float in = sigmoid(gb[j]), forget = sigmoid(gb[H + j]);
          const float cell = std::tanh(gb[2 * H + j]), outg = sigmoid(gb[3 * H + j]);
          float& cj = c[b * H + j];
          cj = forget * cj + in * cell;
          const float hj = outg * std::tanh(cj);
          h[b * H + j] = hj;
          o[b * H + j] = hj;
        }
      }
    });
  }
  cpu::store_floats(a.output, out.data());
  cpu::store_floats(a.hy, h.data());
  cpu::store_floats(a.cy, c.data());
}

AOTISHIM_REGISTER_KERNEL(ops::lstm_layer_kernel, DeviceType::CPU, host_lstm_layer);

}  // namespace
}  // namespace aotishim
