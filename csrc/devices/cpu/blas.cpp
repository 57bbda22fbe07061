// blas::gemm: one BLAS call, or several on the OpenMP team (see blas.h).
#include "devices/cpu/blas.h"

#include <algorithm>
#include <cstdint>
#include <mutex>

#include "devices/cpu/few_row_gemm.h"
#include "devices/cpu/onednn_gemm.h"
#include "devices/cpu/parallel.h"

#if defined(AOTISHIM_BLAS_ACCELERATE)
#include <Accelerate/Accelerate.h>
#define AOTISHIM_CBLAS_FN(name) cblas_##name
#elif defined(AOTISHIM_BLAS_SCIPY_OPENBLAS)
#include <cblas.h>
#define AOTISHIM_CBLAS_FN(name) scipy_cblas_##name
#else
#error "no BLAS configured: expected AOTISHIM_BLAS_ACCELERATE or AOTISHIM_BLAS_SCIPY_OPENBLAS"
#endif

namespace aotishim::blas {
namespace {

#if defined(AOTISHIM_BLAS_SCIPY_OPENBLAS)
// OpenBLAS reads OPENBLAS_NUM_THREADS when it loads and starts that many
// threads; from the first GEMM on it runs every call on the caller's thread.
void keep_blas_on_caller_thread() {
  static std::once_flag once;
  std::call_once(once, [] { scipy_openblas_set_num_threads(1); });
}
constexpr bool kSplitOnOpenMP = true;
#else
void keep_blas_on_caller_thread() {}
constexpr bool kSplitOnOpenMP = false;
#endif

// Below this many multiply-adds a GEMM is not worth waking other threads for
// (a few microseconds of work).
constexpr int64_t kMinSplitWork = int64_t{1} << 18;
// Column chunks stay multiples of a BLAS kernel's width, row chunks of its height.
constexpr int64_t kColumnAlign = 16, kRowAlign = 8;

void call(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  // The library choice first: AOTISHIM_CPU_GEMM=onednn without oneDNN fails
  // the first GEMM, whatever its shape.
  const cpu::onednn::Sgemm sgemm = cpu::onednn::chosen_sgemm();
  // A few rows of C: straight from the operands, no packing (few_row_gemm.h).
  if (cpu::few_row_gemm_applies(ta, tb, m, n, k)) {
    cpu::few_row_sgemm(tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  // oneDNN where chosen and faster for this shape (onednn_gemm.h), on this
  // thread alone, as the BLAS runs: gemm_split does the splitting.
  if (sgemm != nullptr && cpu::onednn::prefers_onednn(m, n, k)) {
    [[maybe_unused]] cpu::OneThread alone;
    if (sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc) == 0)
      return;
  }
  AOTISHIM_CBLAS_FN(sgemm)(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                           tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta,
                           c, ldc);
}
void call(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda,
          const double* b, int ldb, double beta, double* c, int ldc) {
  AOTISHIM_CBLAS_FN(dgemm)(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                           tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta,
                           c, ldc);
}

#if defined(AOTISHIM_BLAS_SCIPY_OPENBLAS)
// (OpenBLAS only: its sgemm packs all of B even for one row of C; Accelerate
// chooses its own path for m == 1.)
void gemv(bool trans, int rows, int cols, float alpha, const float* a, int lda, const float* x,
          int incx, float* y) {
  AOTISHIM_CBLAS_FN(sgemv)(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, rows, cols, alpha,
                           a, lda, x, incx, 0.0f, y, 1);
}
void gemv(bool trans, int rows, int cols, double alpha, const double* a, int lda, const double* x,
          int incx, double* y) {
  AOTISHIM_CBLAS_FN(dgemv)(CblasRowMajor, trans ? CblasTrans : CblasNoTrans, rows, cols, alpha,
                           a, lda, x, incx, 0.0, y, 1);
}

// One row of C (a decoder's token, a batch of one): c = alpha * op(B)^T a +
// beta * c as a matrix-vector product. sgemm with m = 1 packs all of B on
// every call, as much memory traffic as the product itself; gemv streams B
// once. Columns are split over the OpenMP team like gemm_split's.
template <typename T>
void row_product(bool ta, bool tb, int n, int k, T alpha, const T* a, int lda, const T* b,
                 int ldb, T beta, T* c) {
  const int incx = ta ? lda : 1;  // op(A)'s one row: A's row, or A's column
  // c[lo, lo + len) = alpha * op(B)[:, lo, lo + len)^T a, into zeroed
  // memory: gemv's beta == 0 may scale what is there (NaN must not survive).
  auto product = [&](int64_t lo, int len, T* out) {
    std::fill(out, out + len, T(0));
    if (tb) {  // op(B) is k x n: B stored n x k, or B itself (k x n) read transposed
      gemv(false, len, k, alpha, b + lo * ldb, ldb, a, incx, out);
    } else {
      gemv(true, k, len, alpha, b + lo, ldb, a, incx, out);
    }
  };
  auto columns = [&](int64_t lo, int64_t hi) {
    if (beta == T(0)) {  // C's old values are never read
      product(lo, static_cast<int>(hi - lo), c + lo);
      return;
    }
    T scratch[256];
    for (int64_t at = lo; at < hi; at += 256) {
      const int len = static_cast<int>(std::min<int64_t>(256, hi - at));
      product(at, len, scratch);
      for (int j = 0; j < len; ++j) c[at + j] = beta * c[at + j] + scratch[j];
    }
  };
  const int64_t work = int64_t{n} * k;
  if (!kSplitOnOpenMP || work < kMinSplitWork || cpu::in_parallel_region()) {
    columns(0, n);
    return;
  }
  const int64_t blocks = (n + kColumnAlign - 1) / kColumnAlign;
  const int64_t grain = std::max<int64_t>(1, kMinSplitWork / 2 / (int64_t{k} * kColumnAlign));
  cpu::parallel_for(blocks, grain, [&](int64_t begin, int64_t end) {
    columns(begin * kColumnAlign, std::min<int64_t>(n, end * kColumnAlign));
  });
}

#endif  // AOTISHIM_BLAS_SCIPY_OPENBLAS

// Splits C into column blocks (each thread reads all of A and its columns of
// B) or row blocks (all of B, its rows of A), whichever dimension is longer,
// and runs one single-threaded GEMM per block.
template <typename T>
void gemm_split(bool ta, bool tb, int m, int n, int k, T alpha, const T* a, int lda, const T* b,
                int ldb, T beta, T* c, int ldc) {
  keep_blas_on_caller_thread();
#if defined(AOTISHIM_BLAS_SCIPY_OPENBLAS)
  if (m == 1 && k > 0) {
    row_product(ta, tb, n, k, alpha, a, lda, b, ldb, beta, c);
    return;
  }
#endif
  const int64_t work = int64_t{m} * n * k;
  if (!kSplitOnOpenMP || work < kMinSplitWork || cpu::in_parallel_region()) {
    call(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  const bool by_columns = n >= m;
  const int64_t len = by_columns ? n : m, align = by_columns ? kColumnAlign : kRowAlign;
  const int64_t blocks = (len + align - 1) / align;
  // Enough blocks per chunk that each chunk has kMinSplitWork / 2 or more.
  const int64_t per_block = std::max<int64_t>(1, work / blocks);
  const int64_t grain = std::max<int64_t>(1, kMinSplitWork / 2 / per_block);
  cpu::parallel_for(blocks, grain, [&](int64_t begin, int64_t end) {
    const int64_t lo = begin * align, hi = std::min(len, end * align);
    const int size = static_cast<int>(hi - lo);
    if (by_columns) {  // columns lo..hi of op(B) and C
      const T* bj = tb ? b + lo * ldb : b + lo;
      call(ta, tb, m, size, k, alpha, a, lda, bj, ldb, beta, c + lo, ldc);
    } else {  // rows lo..hi of op(A) and C
      const T* ai = ta ? a + lo : a + lo * lda;
      call(ta, tb, size, n, k, alpha, ai, lda, b, ldb, beta, c + lo * ldc, ldc);
    }
  });
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  gemm_split(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha, const double* a,
          int lda, const double* b, int ldb, double beta, double* c, int ldc) {
  gemm_split(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace aotishim::blas
