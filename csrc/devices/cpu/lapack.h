// The LAPACK routines (and BLAS's triangular solve) the cpu linalg kernels
// use, over the library blas::gemm uses (cmake/Blas.cmake): OpenBLAS from the
// scipy-openblas32 wheel, which carries reference LAPACK under a `scipy_`
// prefix, or Accelerate's LAPACK on macOS. Both take 32-bit integers.
//
// Matrices are column-major (LAPACK's order), `ld` elements between columns.
// One overload per element type: float, double, std::complex<float>,
// std::complex<double>. Routines that can fail return LAPACK's info.
#pragma once

#include <complex>

namespace aotishim::lapack {

// Solves A X = B for B in place, A = U^H U (upper) or L L^H (the factor in
// `a`'s upper or lower triangle). n x n factor, n x nrhs B.
int potrs(bool upper, int n, int nrhs, const float* a, int lda, float* b, int ldb);
int potrs(bool upper, int n, int nrhs, const double* a, int lda, double* b, int ldb);
int potrs(bool upper, int n, int nrhs, const std::complex<float>* a, int lda,
          std::complex<float>* b, int ldb);
int potrs(bool upper, int n, int nrhs, const std::complex<double>* a, int lda,
          std::complex<double>* b, int ldb);

// The inverse of A = U^H U (or L L^H) from its factor, in place; only the
// factor's triangle is written. info > 0: diagonal element `info` is zero.
int potri(bool upper, int n, float* a, int lda);
int potri(bool upper, int n, double* a, int lda);
int potri(bool upper, int n, std::complex<float>* a, int lda);
int potri(bool upper, int n, std::complex<double>* a, int lda);

// B (m x n) := op(A)^-1 B for a triangular m x m A; op is the plain
// transpose when `transpose` (never the conjugate one). BLAS trsm: never
// fails (a zero on the diagonal gives inf/nan, as torch's CPU kernel).
void trsm_left(bool upper, bool transpose, bool unit_diagonal, int m, int n, const float* a,
               int lda, float* b, int ldb);
void trsm_left(bool upper, bool transpose, bool unit_diagonal, int m, int n, const double* a,
               int lda, double* b, int ldb);
void trsm_left(bool upper, bool transpose, bool unit_diagonal, int m, int n,
               const std::complex<float>* a, int lda, std::complex<float>* b, int ldb);
void trsm_left(bool upper, bool transpose, bool unit_diagonal, int m, int n,
               const std::complex<double>* a, int lda, std::complex<double>* b, int ldb);

// Householder QR of the m x n `a` in place (R above the diagonal, the
// reflectors below), min(m, n) scalars into tau.
int geqrf(int m, int n, float* a, int lda, float* tau);
int geqrf(int m, int n, double* a, int lda, double* tau);
int geqrf(int m, int n, std::complex<float>* a, int lda, std::complex<float>* tau);
int geqrf(int m, int n, std::complex<double>* a, int lda, std::complex<double>* tau);

// C (m x n) := op(Q) C (left) or C op(Q) (right), Q the product of the k
// reflectors geqrf left in `a` and `tau`; op is the conjugate transpose
// (the transpose for real types) when `transpose`.
int ormqr(bool left, bool transpose, int m, int n, int k, const float* a, int lda,
          const float* tau, float* c, int ldc);
int ormqr(bool left, bool transpose, int m, int n, int k, const double* a, int lda,
          const double* tau, double* c, int ldc);
int ormqr(bool left, bool transpose, int m, int n, int k, const std::complex<float>* a, int lda,
          const std::complex<float>* tau, std::complex<float>* c, int ldc);
int ormqr(bool left, bool transpose, int m, int n, int k, const std::complex<double>* a,
          int lda, const std::complex<double>* tau, std::complex<double>* c, int ldc);

}  // namespace aotishim::lapack
