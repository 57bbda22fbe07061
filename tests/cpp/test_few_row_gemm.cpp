// The few-row float32 GEMM against a float64 product, over every block edge
// (rows 1-16 around the 3- and 6-row blocks, columns around the 4- and
// 16-column blocks, k around the 8-lane vectors and 0), both layouts of B,
// padded leading dimensions, alpha and beta; beta == 0 must not read C, and
// nothing outside C's m x n may be written.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "devices/cpu/few_row_gemm.h"

namespace {

struct Case {
  bool trans_b;
  int m, n, k;
  float alpha, beta;
};

// The largest error of C over every element, in units of the element's
// sum |alpha a b| + |beta c|; 0 when every element is within float32 rounding
// of a k-term sum, and infinity for a NaN or an element outside C written.
double worst_error(const Case& t, std::mt19937& rng) {
  const int pad = 3;  // padded rows: the kernels must honour every leading dimension
  const int lda = t.k + pad, ldb = (t.trans_b ? t.k : t.n) + pad, ldc = t.n + pad;
  std::normal_distribution<float> normal;
  std::vector<float> a(size_t(t.m) * lda), b(size_t(t.trans_b ? t.n : t.k) * ldb + 1),
      c(size_t(t.m) * ldc);
  for (float& v : a) v = normal(rng);
  for (float& v : b) v = normal(rng);
  const float sentinel = 12345.0f;
  for (int i = 0; i < t.m; ++i)
    for (int j = 0; j < ldc; ++j)
      c[size_t(i) * ldc + j] = j >= t.n ? sentinel
                               : t.beta == 0.0f ? std::numeric_limits<float>::quiet_NaN()
                                                : normal(rng);
  const std::vector<float> c0 = c;
  aotishim::cpu::few_row_sgemm(t.trans_b, t.m, t.n, t.k, t.alpha, a.data(), lda, b.data(), ldb,
                               t.beta, c.data(), ldc);
  double worst = 0;
  for (int i = 0; i < t.m; ++i) {
    for (int j = 0; j < ldc; ++j) {
      const float got = c[size_t(i) * ldc + j];
      if (j >= t.n) {
        if (got != sentinel) return std::numeric_limits<double>::infinity();
        continue;
      }
      double sum = 0, magnitude = 0;
      for (int kk = 0; kk < t.k; ++kk) {
        const double p = double(a[size_t(i) * lda + kk]) *
                         (t.trans_b ? b[size_t(j) * ldb + kk] : b[size_t(kk) * ldb + j]);
        sum += p;
        magnitude += std::fabs(p);
      }
      double want = t.alpha * sum;
      magnitude = std::fabs(t.alpha) * magnitude;
      if (t.beta != 0.0f) {
        want += double(t.beta) * c0[size_t(i) * ldc + j];
        magnitude += std::fabs(double(t.beta) * c0[size_t(i) * ldc + j]);
      }
      if (!std::isfinite(got)) return std::numeric_limits<double>::infinity();
      // float32 rounding of a k-term sum: at most about k eps of the magnitude.
      const double bound = (t.k + 4) * 1.2e-7 * magnitude + 1e-30;
      worst = std::max(worst, std::fabs(got - want) / bound);
    }
  }
  return worst;
}

}  // namespace

TEST_CASE("few-row sgemm matches a float64 product over every block edge") {
  std::mt19937 rng(7);
  int checked = 0;
  for (const bool trans_b : {true, false}) {
    for (int m = 1; m <= 16; ++m) {
      for (const int n : {1, 3, 4, 5, 15, 16, 17, 33}) {
        for (const int k : {0, 1, 7, 8, 9, 64, 70}) {
          for (const auto& [alpha, beta] :
               {std::pair{1.0f, 0.0f}, std::pair{0.5f, 1.0f}, std::pair{-2.0f, 0.25f}}) {
            const Case t{trans_b, m, n, k, alpha, beta};
            const double err = worst_error(t, rng);
            INFO("trans_b=", trans_b, " m=", m, " n=", n, " k=", k, " alpha=", alpha,
                 " beta=", beta);
            CHECK(err <= 1.0);
            ++checked;
          }
        }
      }
    }
  }
  CHECK(checked == 2 * 16 * 8 * 7 * 3);
}

TEST_CASE("few-row sgemm is chosen only for few rows, A untransposed, on AVX2") {
  // The policy never takes a transposed A, one row, or more than 16 rows,
  // whatever the CPU.
  CHECK_FALSE(aotishim::cpu::few_row_gemm_applies(true, true, 4, 64, 64));
  CHECK_FALSE(aotishim::cpu::few_row_gemm_applies(false, true, 1, 64, 64));
  CHECK_FALSE(aotishim::cpu::few_row_gemm_applies(false, true, 17, 64, 256));
  CHECK_FALSE(aotishim::cpu::few_row_gemm_applies(false, false, 4, 4096, 1024));
}
