// few_row_gemm.h's kernels. C is cut into blocks that stay in registers:
//
// - op(B) = B^T (x @ W^T, a Linear layer): both operands run along k, so a
//   block is 3 rows of A by 4 rows of B, 12 vector accumulators of 8 partial
//   dot products each, summed across lanes once at the end;
// - op(B) = B (x @ W, GPT-2's Conv1D): a block is 6 rows of A by 16
//   columns of B, each A element broadcast against B's row.
//
// Blocks walk B once (its blocks outer, A's rows inner): A, at most 16 rows,
// stays in cache while B streams past. Sums run in float32 in a fixed order,
// not the BLAS's; their rounding is of the same size.
#include "devices/cpu/few_row_gemm.h"

#include <cstdint>

#include "devices/cpu/vector_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define AOTISHIM_FRG_X86 1
#define AOTISHIM_FRG_AVX2 __attribute__((target("avx2,fma")))
#define AOTISHIM_FRG_INLINE inline __attribute__((always_inline))
#endif

namespace aotishim::cpu {

#if defined(AOTISHIM_FRG_X86)
namespace {

// Lanes [0, r) on (r <= 0: none; r >= 8: all).
AOTISHIM_FRG_AVX2 AOTISHIM_FRG_INLINE __m256i lanes_below(int r) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The lane sums of four accumulators, as one 4-lane vector.
AOTISHIM_FRG_AVX2 AOTISHIM_FRG_INLINE __m128 lane_sums(__m256 s0, __m256 s1, __m256 s2,
                                                        __m256 s3) {
  const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(s0, s1), _mm256_hadd_ps(s2, s3));
  return _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
}

// C[0, MR) x [0, NR) of x @ W^T: a's rows and b's rows both run along k.
template <int MR, int NR>
AOTISHIM_FRG_AVX2 void dot_block(int k, const float* a, int64_t lda, const float* b, int64_t ldb,
                                 float alpha, float beta, float* c, int64_t ldc) {
  __m256 acc[MR][4];
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) acc[i][j] = _mm256_setzero_ps();
  int kk = 0;
  for (; kk + 8 <= k; kk += 8) {
    __m256 bv[NR];
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) bv[j] = _mm256_loadu_ps(b + j * ldb + kk);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const __m256 av = _mm256_loadu_ps(a + i * lda + kk);
#pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
    }
  }
  if (kk < k) {  // the last k % 8 columns; masked-off lanes read nothing and add 0
    const __m256i mask = lanes_below(k - kk);
    __m256 bv[NR];
#pragma GCC unroll 4
    for (int j = 0; j < NR; ++j) bv[j] = _mm256_maskload_ps(b + j * ldb + kk, mask);
#pragma GCC unroll 4
    for (int i = 0; i < MR; ++i) {
      const __m256 av = _mm256_maskload_ps(a + i * lda + kk, mask);
#pragma GCC unroll 4
      for (int j = 0; j < NR; ++j) acc[i][j] = _mm256_fmadd_ps(av, bv[j], acc[i][j]);
    }
  }
  const __m128 va = _mm_set1_ps(alpha), vb = _mm_set1_ps(beta);
#pragma GCC unroll 4
  for (int i = 0; i < MR; ++i) {
    __m128 s = _mm_mul_ps(va, lane_sums(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));
    float* ci = c + i * ldc;
    if constexpr (NR == 4) {
      if (beta != 0.0f) s = _mm_fmadd_ps(vb, _mm_loadu_ps(ci), s);
      _mm_storeu_ps(ci, s);
    } else {
      float out[4];
      _mm_storeu_ps(out, s);
      for (int j = 0; j < NR; ++j) ci[j] = beta != 0.0f ? beta * ci[j] + out[j] : out[j];
    }
  }
}

// C[0, MR) x [0, nc) of x @ W, nc <= 16: a's element (i, kk) times b's row kk.
template <int MR>
AOTISHIM_FRG_AVX2 void broadcast_block(int k, const float* a, int64_t lda, const float* b,
                                       int64_t ldb, int nc, float alpha, float beta, float* c,
                                       int64_t ldc) {
  const __m256i m0 = lanes_below(nc), m1 = lanes_below(nc - 8);
  const bool full = nc == 16;
  __m256 acc[MR][2];
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (int kk = 0; kk < k; ++kk) {
    const float* bk = b + kk * ldb;
    const __m256 b0 = full ? _mm256_loadu_ps(bk) : _mm256_maskload_ps(bk, m0);
    const __m256 b1 = full ? _mm256_loadu_ps(bk + 8) : _mm256_maskload_ps(bk + 8, m1);
#pragma GCC unroll 6
    for (int i = 0; i < MR; ++i) {
      const __m256 av = _mm256_broadcast_ss(a + i * lda + kk);
      acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
    }
  }
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
  for (int i = 0; i < MR; ++i) {
    float* ci = c + i * ldc;
    __m256 r0 = _mm256_mul_ps(va, acc[i][0]), r1 = _mm256_mul_ps(va, acc[i][1]);
    if (full) {
      if (beta != 0.0f) {
        r0 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci), r0);
        r1 = _mm256_fmadd_ps(vb, _mm256_loadu_ps(ci + 8), r1);
      }
      _mm256_storeu_ps(ci, r0);
      _mm256_storeu_ps(ci + 8, r1);
    } else {
      if (beta != 0.0f) {
        r0 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(ci, m0), r0);
        r1 = _mm256_fmadd_ps(vb, _mm256_maskload_ps(ci + 8, m1), r1);
      }
      _mm256_maskstore_ps(ci, m0, r0);
      _mm256_maskstore_ps(ci + 8, m1, r1);
    }
  }
}

using DotBlock = void (*)(int, const float*, int64_t, const float*, int64_t, float, float, float*,
                          int64_t);
using BroadcastBlock = void (*)(int, const float*, int64_t, const float*, int64_t, int, float,
                                float, float*, int64_t);

constexpr int kDotRows = 3, kDotCols = 4, kBroadcastRows = 6, kBroadcastCols = 16;

template <int MR>
constexpr DotBlock dot_of(int nr) {
  return nr == 1 ? &dot_block<MR, 1> : nr == 2 ? &dot_block<MR, 2>
                                     : nr == 3 ? &dot_block<MR, 3> : &dot_block<MR, 4>;
}
constexpr DotBlock dot_for(int mr, int nr) {
  return mr == 1 ? dot_of<1>(nr) : mr == 2 ? dot_of<2>(nr) : dot_of<3>(nr);
}
constexpr BroadcastBlock broadcast_for(int mr) {
  constexpr BroadcastBlock table[] = {&broadcast_block<1>, &broadcast_block<2>,
                                      &broadcast_block<3>, &broadcast_block<4>,
                                      &broadcast_block<5>, &broadcast_block<6>};
  return table[mr - 1];
}

// The next block's rows: `left` rows split into as few blocks of at most
// `most` as possible, as evenly as possible (16 rows in blocks of 3: 3, 3, 3,
// 3, 2, 2, not five 3s and a 1, whose one row costs as many B loads as three).
int next_rows(int left, int most) {
  const int blocks = (left + most - 1) / most;
  return (left + blocks - 1) / blocks;
}

void vector_sgemm(bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                  const float* b, int ldb, float beta, float* c, int ldc) {
  if (trans_b) {
    for (int j = 0; j < n; j += kDotCols) {
      const int nr = n - j < kDotCols ? n - j : kDotCols;
      const float* bj = b + int64_t{j} * ldb;
      for (int i = 0, mr = 0; i < m; i += mr) {
        mr = next_rows(m - i, kDotRows);
        dot_for(mr, nr)(k, a + int64_t{i} * lda, lda, bj, ldb, alpha, beta,
                        c + int64_t{i} * ldc + j, ldc);
      }
    }
    return;
  }
  for (int j = 0; j < n; j += kBroadcastCols) {
    const int nc = n - j < kBroadcastCols ? n - j : kBroadcastCols;
    for (int i = 0, mr = 0; i < m; i += mr) {
      mr = next_rows(m - i, kBroadcastRows);
      broadcast_for(mr)(k, a + int64_t{i} * lda, lda, b + j, ldb, nc, alpha, beta,
                        c + int64_t{i} * ldc + j, ldc);
    }
  }
}

}  // namespace
#endif  // AOTISHIM_FRG_X86

namespace {

// Any CPU: one dot product per element of C.
void scalar_sgemm(bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                  const float* b, int ldb, float beta, float* c, int ldc) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      float s = 0.0f;
      for (int kk = 0; kk < k; ++kk)
        s += a[int64_t{i} * lda + kk] *
             (trans_b ? b[int64_t{j} * ldb + kk] : b[int64_t{kk} * ldb + j]);
      float& out = c[int64_t{i} * ldc + j];
      out = beta != 0.0f ? alpha * s + beta * out : alpha * s;
    }
  }
}

}  // namespace

bool few_row_gemm_applies(bool trans_a, bool trans_b, int m, int n, int k) {
  if (trans_a || m < 2 || m > 16 || n < 1 || k < 0) return false;
  if (host_vector_isa() != VectorIsa::kAvx2) return false;
  if (trans_b) return m <= 8 || k >= 128;
  return int64_t{k} * n <= (int64_t{1} << 18);
}

void few_row_sgemm(bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                   const float* b, int ldb, float beta, float* c, int ldc) {
#if defined(AOTISHIM_FRG_X86)
  if (host_vector_isa() != VectorIsa::kBaseline) {  // AVX-512 machines have AVX2+FMA too
    vector_sgemm(trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#endif
  scalar_sgemm(trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace aotishim::cpu
