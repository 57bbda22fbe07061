// float <-> bfloat16 / float16: round to nearest even, NaN and infinities kept.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/half.h"

using namespace aotishim;

namespace {
float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
}  // namespace

TEST_CASE("bfloat16 rounds to nearest even") {
  CHECK(float_to_bf16(1.0f) == 0x3f80);
  // 1 + 2^-8 is exactly halfway between 1 and 1 + 2^-7: ties go to even (1).
  CHECK(float_to_bf16(from_bits(0x3f808000u)) == 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: rounds up.
  CHECK(float_to_bf16(from_bits(0x3f818000u)) == 0x3f82);
  CHECK(float_to_bf16(from_bits(0x3f808001u)) == 0x3f81);  // just above half: up
  CHECK(bf16_to_float(0x3f80) == 1.0f);
  CHECK(bf16_to_float(0xc000) == -2.0f);
}

TEST_CASE("bfloat16 keeps NaN, infinities and signed zero") {
  CHECK(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  // A NaN whose payload lives only in the low bits must not become infinity.
  CHECK(std::isnan(bf16_to_float(float_to_bf16(from_bits(0x7f800001u)))));
  CHECK(bf16_to_float(float_to_bf16(INFINITY)) == INFINITY);
  CHECK(bf16_to_float(float_to_bf16(-INFINITY)) == -INFINITY);
  CHECK(float_to_bf16(-0.0f) == 0x8000);
  // The largest finite float rounds up to infinity, as torch does.
  CHECK(bf16_to_float(float_to_bf16(std::numeric_limits<float>::max())) == INFINITY);
}

TEST_CASE("float16 round trips, subnormals and overflow") {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint16_t v = static_cast<uint16_t>(h);
    const float f = f16_to_float(v);
    if (std::isnan(f)) {
      CHECK(std::isnan(f16_to_float(float_to_f16(f))));
    } else {
      REQUIRE(float_to_f16(f) == v);  // every finite half and infinity is exact
    }
  }
  CHECK(f16_to_float(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(f16_to_float(0x3c00) == 1.0f);
  CHECK(float_to_f16(65504.0f) == 0x7bff);  // largest finite
  CHECK(float_to_f16(65520.0f) == 0x7c00);  // halfway to the next: rounds to infinity
  CHECK(float_to_f16(std::ldexp(1.0f, -25)) == 0x0000);  // half the smallest subnormal: even (0)
  CHECK(float_to_f16(std::ldexp(3.0f, -26)) == 0x0001);  // above half: up
  // 1 + 2^-11 is halfway between 1 and the next half (1 + 2^-10): ties to even.
  CHECK(float_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
}
