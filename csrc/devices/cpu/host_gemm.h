// GEMM on host memory through the platform BLAS (OpenBLAS / Accelerate):
// the cpu device's gemm kernel, and what the sim device's recorded gemm
// commands run.
#pragma once

#include "ops/gemm.h"

namespace aotishim {

// Runs args on host memory now. Supports float32, float64, bfloat16 and
// float16 (16-bit floats accumulate in float32). Views with a unit stride in either matrix
// dimension go to BLAS as they are; others are packed first.
void host_gemm(const GemmArgs& args);

}  // namespace aotishim
