// The two CBLAS GEMMs the CPU ops use, behind one name whichever BLAS the
// build found (cmake/Blas.cmake): the scipy-openblas32 wheel exports its
// symbols with a `scipy_` prefix; Accelerate uses the plain CBLAS names.
// Both take 32-bit integer sizes.
#pragma once

#include <climits>

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

// Largest size or leading dimension the BLAS integer type can carry.
constexpr long long kMaxInt = INT_MAX;

// Row-major C(m x n) = alpha * op(A) @ op(B) + beta * C.
inline void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  AOTISHIM_CBLAS_FN(sgemm)(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                           trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
                           beta, c, ldc);
}

inline void gemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha, const double* a,
                 int lda, const double* b, int ldb, double beta, double* c, int ldc) {
  AOTISHIM_CBLAS_FN(dgemm)(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                           trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
                           beta, c, ldc);
}

}  // namespace aotishim::blas

#undef AOTISHIM_CBLAS_FN
