// The softmax steps of softmax_rows.h. The scalar loops are the attention
// kernel's own, compiled for the baseline ISA; they are serial chains (a
// float maximum or sum does not vectorise without reassociation, and expf is
// a call per element), which made them over half of the time spent in the
// kernel's own code.
//
// On x86-64 the same steps are compiled again for AVX2+FMA and for AVX-512
// (intrinsics under __attribute__((target)); the loop bodies are inlined
// into each target's entry point) and the widest the CPU has is picked once.
// Their exponential: n = round(x / ln 2) and r = x - n ln 2 (ln 2 in two
// parts; the first step is exact through FMA), exp(r) = 1 + r + r^2 P(r)
// with P a degree-4 fit of (exp(r) - 1 - r) / r^2 on |r| <= ln(2) / 2
// (relative error 3e-9; the rest is rounding: within 1.01 ulp of the
// correctly rounded result for every float x <= 0, checked exhaustively),
// and 2^n applied in two halves (AVX2) or by vscalefps (AVX-512) so that
// results below 2^-126 round once to a subnormal, as std::exp's do. x is
// first clamped to [-104, 89], beyond which exp is 0 or +inf in float (so
// -inf gives 0), in an order of operands that keeps NaN.
#include "devices/cpu/softmax_rows.h"
#include "devices/cpu/vector_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// GCC 12 before 12.3 warns inside its own AVX-512 intrinsics (the
// "undefined" vector of the unmasked forms, its PR 105593); the warnings
// point into the header, so they are silenced for the header alone.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop
#define AOTISHIM_SM_X86 1
#define AOTISHIM_SM_AVX2 __attribute__((target("avx2,fma")))
#define AOTISHIM_SM_AVX512 __attribute__((target("avx512f,avx2,fma")))
#define AOTISHIM_SM_INLINE inline __attribute__((always_inline))
#endif

#include <algorithm>
#include <cmath>
#include <limits>

namespace aotishim::cpu {
namespace {

float max_scalar(const float* x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) m = std::max(m, x[i]);
  return m;
}

float exp_sum_scalar(float* x, int64_t n, float max) {
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  return sum;
}

#if defined(AOTISHIM_SM_X86)

constexpr float kLowest = -104.0f;  // exp below rounds to 0 in float (2^-150 is 7e-46)
constexpr float kHighest = 89.0f;   // exp above is +inf in float (e^88.73 > FLT_MAX)
constexpr float kLog2e = 0x1.715476p+0f;
constexpr float kLn2Hi = 0x1.62e430p-1f;  // ln 2 = kLn2Hi + kLn2Lo + O(1e-16)
constexpr float kLn2Lo = -0x1.05c610p-29f;
// 1.5 * 2^23: adding it rounds |y| < 2^22 to an integer, which then sits in
// the low bits of the sum's representation.
constexpr float kRound = 0x1.8p23f;
constexpr float kP0 = 0x1.fffffcp-2f, kP1 = 0x1.555492p-3f, kP2 = 0x1.5558f2p-5f,
                kP3 = 0x1.1239e2p-7f, kP4 = 0x1.6a2434p-10f;

// ---------------------------------------------------------------- AVX2 + FMA

// exp of 8 lanes. Vectors pass by value only between inlined functions.
AOTISHIM_SM_AVX2 AOTISHIM_SM_INLINE __m256 exp8(__m256 x) {
  // vmaxps/vminps return their second operand where either is NaN.
  x = _mm256_min_ps(_mm256_set1_ps(kHighest), _mm256_max_ps(_mm256_set1_ps(kLowest), x));
  const __m256 round = _mm256_set1_ps(kRound);
  const __m256 t = _mm256_fmadd_ps(x, _mm256_set1_ps(kLog2e), round);
  const __m256 n = _mm256_sub_ps(t, round);  // in [-150, 129]
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kP4), r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP0));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
  p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
  // 2^n as 2^(n >> 1) * 2^(n - (n >> 1)): both factors normal floats, and
  // p * the first exact, so the one rounding is the last product's.
  const __m256i ni = _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(round));
  const __m256i n1 = _mm256_srai_epi32(ni, 1), n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  return _mm256_mul_ps(_mm256_mul_ps(p, s1), s2);
}

// All ones in the first k < 8 lanes.
AOTISHIM_SM_AVX2 AOTISHIM_SM_INLINE __m256i first_lanes8(int64_t k) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(k)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

AOTISHIM_SM_AVX2 AOTISHIM_SM_INLINE float hmax8(__m256 m) {
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}

AOTISHIM_SM_AVX2 AOTISHIM_SM_INLINE float hsum8(__m256 s) {
  __m128 h = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
  h = _mm_add_ps(h, _mm_movehl_ps(h, h));
  h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 1));
  return _mm_cvtss_f32(h);
}

AOTISHIM_SM_AVX2 float max_avx2(const float* x, int64_t n) {
  const __m256 lowest = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  // Four chains; each lane skips NaN as std::max does (x first: a NaN x
  // gives the second operand, the running maximum).
  __m256 m0 = lowest, m1 = lowest, m2 = lowest, m3 = lowest;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(x + i + 8), m1);
    m2 = _mm256_max_ps(_mm256_loadu_ps(x + i + 16), m2);
    m3 = _mm256_max_ps(_mm256_loadu_ps(x + i + 24), m3);
  }
  for (; i + 8 <= n; i += 8) m0 = _mm256_max_ps(_mm256_loadu_ps(x + i), m0);
  if (i < n) {
    const __m256i keep = first_lanes8(n - i);
    const __m256 v = _mm256_blendv_ps(lowest, _mm256_maskload_ps(x + i, keep),
                                      _mm256_castsi256_ps(keep));
    m1 = _mm256_max_ps(v, m1);
  }
  return hmax8(_mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
}

AOTISHIM_SM_AVX2 float exp_sum_avx2(float* x, int64_t n, float max) {
  const __m256 mx = _mm256_set1_ps(max);
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 e0 = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), mx));
    const __m256 e1 = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), mx));
    _mm256_storeu_ps(x + i, e0);
    _mm256_storeu_ps(x + i + 8, e1);
    s0 = _mm256_add_ps(s0, e0);
    s1 = _mm256_add_ps(s1, e1);
  }
  if (i + 8 <= n) {
    const __m256 e = exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), mx));
    _mm256_storeu_ps(x + i, e);
    s0 = _mm256_add_ps(s0, e);
    i += 8;
  }
  if (i < n) {
    const __m256i keep = first_lanes8(n - i);
    const __m256 e = exp8(_mm256_sub_ps(_mm256_maskload_ps(x + i, keep), mx));
    _mm256_maskstore_ps(x + i, keep, e);
    s1 = _mm256_add_ps(s1, _mm256_and_ps(e, _mm256_castsi256_ps(keep)));
  }
  return hsum8(_mm256_add_ps(s0, s1));
}

// ---------------------------------------------------------------- AVX-512

AOTISHIM_SM_AVX512 AOTISHIM_SM_INLINE __m512 exp16(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(kHighest), _mm512_max_ps(_mm512_set1_ps(kLowest), x));
  const __m512 round = _mm512_set1_ps(kRound);
  const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(kLog2e), round), round);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(kP4), r, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP0));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
  p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);  // p * 2^n, rounded once
}

AOTISHIM_SM_AVX512 float max_avx512(const float* x, int64_t n) {
  const __m512 lowest = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 m0 = lowest, m1 = lowest;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
    m1 = _mm512_max_ps(_mm512_loadu_ps(x + i + 16), m1);
  }
  if (i + 16 <= n) {
    m0 = _mm512_max_ps(_mm512_loadu_ps(x + i), m0);
    i += 16;
  }
  if (i < n) {
    const __mmask16 keep = static_cast<__mmask16>((1u << (n - i)) - 1);
    m1 = _mm512_max_ps(_mm512_mask_loadu_ps(lowest, keep, x + i), m1);
  }
  const __m512 m = _mm512_max_ps(m0, m1);
  return hmax8(_mm256_max_ps(_mm512_castps512_ps256(m),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(m), 1))));
}

AOTISHIM_SM_AVX512 float exp_sum_avx512(float* x, int64_t n, float max) {
  const __m512 mx = _mm512_set1_ps(max);
  __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512 e0 = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), mx));
    const __m512 e1 = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i + 16), mx));
    _mm512_storeu_ps(x + i, e0);
    _mm512_storeu_ps(x + i + 16, e1);
    s0 = _mm512_add_ps(s0, e0);
    s1 = _mm512_add_ps(s1, e1);
  }
  if (i + 16 <= n) {
    const __m512 e = exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), mx));
    _mm512_storeu_ps(x + i, e);
    s0 = _mm512_add_ps(s0, e);
    i += 16;
  }
  if (i < n) {
    const __mmask16 keep = static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 e = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(keep, x + i), mx));
    _mm512_mask_storeu_ps(x + i, keep, e);
    s1 = _mm512_mask_add_ps(s1, keep, s1, e);
  }
  const __m512 s = _mm512_add_ps(s0, s1);
  return hsum8(_mm256_add_ps(_mm512_castps512_ps256(s),
                             _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s), 1))));
}

#endif  // AOTISHIM_SM_X86

struct Kernels {
  float (*max)(const float*, int64_t);
  float (*exp_sum)(float*, int64_t, float);
};

const Kernels& kernels() {
  static const Kernels k = [] {
#if defined(AOTISHIM_SM_X86)
    switch (host_vector_isa()) {
      case VectorIsa::kAvx512: return Kernels{&max_avx512, &exp_sum_avx512};
      case VectorIsa::kAvx2: return Kernels{&max_avx2, &exp_sum_avx2};
      case VectorIsa::kBaseline: break;
    }
#endif
    return Kernels{&max_scalar, &exp_sum_scalar};
  }();
  return k;
}

}  // namespace

float row_max(const float* x, int64_t n) {
  const float m = kernels().max(x, n);
  // Lanes see the row out of order; only zeros' signs can tell the
  // difference, so the scalar loop settles which zero came first.
  return m == 0.0f ? max_scalar(x, n) : m;
}

float exp_sum(float* x, int64_t n, float max) { return kernels().exp_sum(x, n, max); }

}  // namespace aotishim::cpu
