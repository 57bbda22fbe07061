// blas::gemm: one BLAS call, or several on the OpenMP team (see blas.h).
#include "devices/cpu/blas.h"

#include <algorithm>
#include <cstdint>
#include <mutex>

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

// Splits C into column blocks (each thread reads all of A and its columns of
// B) or row blocks (all of B, its rows of A), whichever dimension is longer,
// and runs one single-threaded GEMM per block.
template <typename T>
void gemm_split(bool ta, bool tb, int m, int n, int k, T alpha, const T* a, int lda, const T* b,
                int ldb, T beta, T* c, int ldc) {
  keep_blas_on_caller_thread();
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
