// cuBLAS's linear algebra beyond GEMMs, as torch cuda uses it: triangular
// solves (cublas<t>trsm, cublas<t>trsmBatched) and batched Householder QR
// (cublas<t>geqrfBatched). They are resolved from the libcublas the GEMMs
// loaded (cublas_api.h), so one cuBLAS serves both and its handles fit both.
#pragma once

#include "devices/cuda/cublas_api.h"

namespace aotishim {
namespace cuda {
namespace cublas {

// cublasSideMode_t, cublasFillMode_t, cublasDiagType_t, and the conjugate
// transpose of cublasOperation_t (kOpN, kOpT: cublas_api.h).
constexpr int kSideLeft = 0;
constexpr int kFillLower = 0, kFillUpper = 1;
constexpr int kDiagNonUnit = 0, kDiagUnit = 1;
constexpr int kOpC = 2;

// Element types, in the order of the S, D, C, Z routines.
enum LinalgPrecision { kLinalgS = 0, kLinalgD = 1, kLinalgC = 2, kLinalgZ = 3, kLinalgPrecisions = 4 };

// Matrices and alpha (a host pointer: handles keep cuBLAS's default pointer
// mode) are all pointers, so one signature with void* serves every precision.
struct LinalgApi {
  // B := alpha op(A)^-1 B (side left), A triangular m x m, B m x n.
  Status (*trsm[kLinalgPrecisions])(Handle, int side, int uplo, int trans, int diag, int m, int n,
                                    const void* alpha, const void* a, int lda, void* b, int ldb);
  // The same for each pair of a device array of pointers to A and to B.
  Status (*trsm_batched[kLinalgPrecisions])(Handle, int side, int uplo, int trans, int diag,
                                            int m, int n, const void* alpha,
                                            const void* const* a, int lda, void* const* b,
                                            int ldb, int batch_count);
  // Householder QR of each m x n A in place, its scalars into each tau
  // (device arrays of pointers); *info (host) reports a bad argument.
  Status (*geqrf_batched[kLinalgPrecisions])(Handle, int m, int n, void* const* a, int lda,
                                             void* const* tau, int* info, int batch_count);
};

// Loads cuBLAS if needed (api()) and resolves these routines in it.
const LinalgApi& linalg_api();

}  // namespace cublas
}  // namespace cuda
}  // namespace aotishim
