// Winograd's F(2x2, 3x3) path called directly (the Python tests go through
// the conv op, where the direct path would give the same values): which
// convolutions it takes, its values against a float64 direct sum over
// half-filled edge tiles and channel counts off the vector width, in both
// layouts, and its refusal of non-finite operands.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"
#include "devices/cpu/winograd_conv.h"

using namespace aotishim;

namespace {

std::vector<int64_t> strides_of(const std::vector<int64_t>& s, bool channels_last) {
  if (!channels_last) return contiguous_strides(s);
  return {s[1] * s[2] * s[3], 1, s[3] * s[1], s[1]};
}

Tensor tensor(std::vector<int64_t> sizes, bool channels_last = false) {
  std::vector<int64_t> strides =
      sizes.size() == 4 ? strides_of(sizes, channels_last) : contiguous_strides(sizes);
  return make_empty(get_device(DeviceType::CPU, 0), DType::Float32, std::move(sizes),
                    std::move(strides));
}

float& at(const Tensor& t, int64_t a, int64_t b, int64_t c, int64_t d) {
  float* p = reinterpret_cast<float*>(t.data());
  return p[a * t.strides[0] + b * t.strides[1] + c * t.strides[2] + d * t.strides[3]];
}

struct Conv {
  ConvArgs args;
  int64_t pad_h, pad_w;
};

// A 3x3, stride-1 convolution of N x C x H x W into K channels, random
// operands, output allocated as the conv op would.
Conv make(int64_t N, int64_t C, int64_t H, int64_t W, int64_t K, int64_t pad_h, int64_t pad_w,
          bool channels_last, std::mt19937& rng) {
  Conv c{{}, pad_h, pad_w};
  ConvArgs& a = c.args;
  a.input = tensor({N, C, H, W}, channels_last);
  a.weight = tensor({K, C, 3, 3}, channels_last);
  a.has_bias = true;
  a.bias = tensor({K});
  a.out = tensor({N, K, H + 2 * pad_h - 2, W + 2 * pad_w - 2}, channels_last);
  a.stride = {1, 1};
  a.padding = {pad_h, pad_w};
  a.dilation = {1, 1};
  a.output_padding = {0, 0};
  std::normal_distribution<float> normal;
  for (const Tensor* t : {&a.input, &a.weight, &a.bias}) {
    float* p = reinterpret_cast<float*>(t->data());
    for (int64_t i = 0; i < t->numel(); ++i) p[i] = normal(rng);
  }
  return c;
}

// The largest error of the output against a float64 direct sum, relative
// to that element's sum of |products| + |bias|.
double worst_error(const Conv& c) {
  const ConvArgs& a = c.args;
  const int64_t N = a.input.sizes[0], C = a.input.sizes[1], H = a.input.sizes[2],
                W = a.input.sizes[3], K = a.out.sizes[1], OH = a.out.sizes[2],
                OW = a.out.sizes[3];
  double worst = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          const double bias = reinterpret_cast<const float*>(a.bias.data())[k];
          double sum = bias, scale = std::fabs(bias);
          for (int64_t ch = 0; ch < C; ++ch)
            for (int64_t r = 0; r < 3; ++r)
              for (int64_t q = 0; q < 3; ++q) {
                const int64_t ih = oh - c.pad_h + r, iw = ow - c.pad_w + q;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const double p = double(at(a.input, n, ch, ih, iw)) * at(a.weight, k, ch, r, q);
                sum += p;
                scale += std::fabs(p);
              }
          const double err = std::fabs(at(a.out, n, k, oh, ow) - sum) / scale;
          worst = std::isnan(err) ? std::numeric_limits<double>::infinity() : std::max(worst, err);
        }
  return worst;
}

}  // namespace

TEST_CASE("Winograd takes wide float32 3x3 layers with many tiles, and nothing else") {
  std::mt19937 rng(1);
  CHECK(cpu::winograd_applies(make(1, 64, 28, 28, 64, 1, 1, true, rng).args));  // 196 tiles
  CHECK(cpu::winograd_applies(make(2, 32, 16, 16, 32, 1, 1, false, rng).args));  // 2 x 64
  CHECK_FALSE(cpu::winograd_applies(make(1, 64, 14, 14, 64, 1, 1, true, rng).args));  // 49
  CHECK_FALSE(cpu::winograd_applies(make(1, 16, 32, 32, 64, 1, 1, true, rng).args));  // Cin 16
  CHECK_FALSE(cpu::winograd_applies(make(1, 64, 32, 32, 16, 1, 1, true, rng).args));  // Cout 16
  Conv strided = make(1, 64, 56, 56, 64, 1, 1, true, rng);
  strided.args.stride = {2, 2};
  CHECK_FALSE(cpu::winograd_applies(strided.args));
  Conv dilated = make(1, 64, 56, 56, 64, 1, 1, true, rng);
  dilated.args.dilation = {1, 2};
  CHECK_FALSE(cpu::winograd_applies(dilated.args));
  Conv grouped = make(1, 64, 28, 28, 64, 1, 1, true, rng);
  grouped.args.groups = 2;
  CHECK_FALSE(cpu::winograd_applies(grouped.args));
  Conv wide = make(1, 64, 28, 28, 64, 1, 1, true, rng);
  wide.args.weight.sizes = {64, 64, 3, 5};
  CHECK_FALSE(cpu::winograd_applies(wide.args));
  Conv bf16 = make(1, 64, 28, 28, 64, 1, 1, true, rng);
  bf16.args.out.dtype = DType::BFloat16;
  CHECK_FALSE(cpu::winograd_applies(bf16.args));
}

TEST_CASE("Winograd's values match a float64 direct sum") {
  std::mt19937 rng(2);
  struct Shape {
    int64_t N, C, H, W, K, pad_h, pad_w;
  };
  // Odd outputs leave half-filled edge tiles; 35 and 37 channels leave
  // scalar tails after the 4-lane vectors.
  for (const Shape& s : {Shape{2, 35, 15, 17, 37, 1, 1}, Shape{1, 33, 26, 30, 34, 0, 0},
                         Shape{1, 32, 21, 23, 40, 2, 0}})
    for (bool channels_last : {false, true}) {
      CAPTURE(s.C);
      CAPTURE(channels_last);
      Conv c = make(s.N, s.C, s.H, s.W, s.K, s.pad_h, s.pad_w, channels_last, rng);
      REQUIRE(cpu::winograd_applies(c.args));
      REQUIRE(cpu::winograd_conv(c.args));
      CHECK(worst_error(c) < 1e-5);
    }
}

TEST_CASE("Winograd refuses an infinity or NaN in the input or the weight") {
  std::mt19937 rng(3);
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()})
    for (bool in_weight : {false, true}) {
      Conv c = make(1, 32, 24, 24, 32, 1, 1, true, rng);
      if (in_weight) {
        at(c.args.weight, 7, 3, 1, 1) = bad;
      } else {
        at(c.args.input, 0, 5, 23, 11) = bad;  // in the last blocks of tiles
      }
      CHECK_FALSE(cpu::winograd_conv(c.args));
    }
}
