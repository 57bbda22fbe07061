// The GEMM every cpu op uses, over whichever BLAS the build found
// (cmake/Blas.cmake): OpenBLAS from the scipy-openblas32 wheel, or Accelerate
// on macOS. Both take 32-bit integer sizes.
//
// Threads: AOTInductor's generated CPU code runs its kernels on OpenMP
// threads, and OpenBLAS has a pool of its own. On a machine with few cores
// the two pools take turns spinning on the same cores, and a model made of
// many small kernels and GEMMs (a transformer) ran 20-70x slower than with
// one pool. So OpenBLAS runs on the calling thread only, and blas::gemm
// splits a large GEMM over the OpenMP team itself (devices/cpu/parallel.h):
// the one pool the model already uses. Accelerate schedules its own work.
#pragma once

#include <climits>

namespace aotishim::blas {

// Largest size or leading dimension the BLAS integer type can carry.
constexpr long long kMaxInt = INT_MAX;

// Row-major C(m x n) = alpha * op(A) @ op(B) + beta * C.
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);
void gemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha, const double* a,
          int lda, const double* b, int ldb, double beta, double* c, int ldc);

}  // namespace aotishim::blas
