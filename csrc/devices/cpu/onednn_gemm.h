// oneDNN's sgemm for the cpu's float32 GEMMs, loaded at run time.
//
// On an AVX-512 Xeon, oneDNN's JIT GEMM ran most float32 products of
// Linear layers (x @ W^T) 1.1-3x faster than OpenBLAS, and lost where N is
// small against K or where the product is tiny (benchmarks/gemm_sweep.cpp,
// benchmarks/README.md). So float32 GEMMs of the shapes where it won take
// it when it is found (prefers_onednn); everything else, and every GEMM where
// it is not found, stays on the BLAS (blas.h). oneDNN runs on the calling
// thread, as the BLAS does (blas::gemm splits large products over the
// model's OpenMP team itself), and only a build whose threads are OpenMP's
// (the onednn-cpu-gomp wheel) or sequential is used.
#pragma once

#include <cstdint>
#include <string>

namespace aotishim::cpu::onednn {

// dnnl_sgemm: row-major C = alpha * op(A) op(B) + beta * C; 0 on success.
using Sgemm = int (*)(char trans_a, char trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                      const float* a, int64_t lda, const float* b, int64_t ldb, float beta,
                      float* c, int64_t ldc);

// The sgemm float32 GEMMs use now, or null for the BLAS. The first call
// applies AOTISHIM_CPU_GEMM ("auto", the default: oneDNN if it loads;
// "onednn": required, an error naming every place tried; "blas").
Sgemm chosen_sgemm();

// The shapes where oneDNN's sgemm was faster than OpenBLAS's (row-major
// C[m, n] of an m x k by k x n product).
bool prefers_onednn(int64_t m, int64_t n, int64_t k);

// set_cpu_gemm_library / cpu_gemm_library (aotishim/runtime.h).
void choose(const std::string& name);
std::string describe_choice();

}  // namespace aotishim::cpu::onednn
