// float32 GEMMs with few rows of C (a few tokens of a decoder, a small
// batch), computed from the operands where they lie, without packing.
//
// OpenBLAS copies both operands into its kernels' panel layout on every call;
// with a handful of rows that copy is as large as the product's own reads
// (all of W, every call) and its fixed cost is not amortised. With 2 to 8
// rows OpenBLAS took 1.2-4x the time of the kernels here (x @ W^T, one
// thread, AMD EPYC; benchmarks/few_row_gemm.cpp), which read each block of
// A and B once from L1/L2 into registers.
//
// Compiled for AVX2+FMA under __attribute__((target)) and chosen only on
// CPUs whose widest vector ISA is AVX2 (few_row_gemm_applies): on AVX-512
// machines OpenBLAS and oneDNN have small-matrix kernels of their own, and
// this path was not measured there.
#pragma once

namespace aotishim::cpu {

// Whether few_row_sgemm is the faster way to compute this product on this
// CPU: the host's widest vector ISA is AVX2, A is read along its rows (no
// transpose), and the shape is one where it beat OpenBLAS on an AMD EPYC
// (AVX2), one thread (benchmarks/few_row_gemm.cpp):
// - x @ W^T: 2 to 8 rows (0.24-0.86x OpenBLAS's time), or 9 to 16 rows with
//   k >= 128 (0.7-0.95x; at k = 64 the two were even);
// - x @ W: 2 to 16 rows with k * n <= 2^18 (0.33-0.95x); B's rows are read
//   16 columns at a time straight from memory, which lost to OpenBLAS's
//   packed panels (1.2-3.8x) once B outgrew the caches.
// One row stays on the BLAS's matrix-vector product (blas.cpp).
bool few_row_gemm_applies(bool trans_a, bool trans_b, int m, int n, int k);

// Row-major C(m x n) = alpha * A(m x k) @ op(B) + beta * C, where op(B) is
// B (k x n, ldb >= n) or B^T (B stored n x k, ldb >= k). beta == 0 never
// reads C (NaN or garbage there does not survive). Correct on any CPU (a
// scalar loop without AVX2); fast where few_row_gemm_applies.
void few_row_sgemm(bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                   const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace aotishim::cpu
