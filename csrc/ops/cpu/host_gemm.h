// GEMM on host memory through the platform BLAS (OpenBLAS / Accelerate).
// Used by the cpu device directly and by the sim device when its recorded
// commands run.
#pragma once

#include "ops/gemm.h"

namespace aotishim {

// Runs args on host memory now. Supports float32, float64 and bfloat16
// (bfloat16 accumulates in float32). Views with a unit stride in either matrix
// dimension go to BLAS as they are; others are packed first.
void host_gemm(const GemmArgs& args);

}  // namespace aotishim
