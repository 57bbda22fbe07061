// The mps device's own Metal kernels: a strided element copy (with dtype
// conversion), a strided GEMM, convolution and attention. Their MSL sources
// are kernels/*.metal; their parameter structs (passed with setBytes) are
// kernels/params.h, which the shaders compile too.
#pragma once

#include "devices/mps/kernels/params.h"
#include "devices/mps/kernels/sources.h"

namespace aotishim::mps {

constexpr int kMaxCopyDims = AOTISHIM_COPY_MAX_DIMS;

// Kernel names in the library.
constexpr const char* kCopyKernel = "aotishim_copy";
constexpr const char* kGemmFloat32 = "aotishim_gemm_float32";
constexpr const char* kGemmFloat16 = "aotishim_gemm_float16";
constexpr const char* kGemmBFloat16 = "aotishim_gemm_bfloat16";

}  // namespace aotishim::mps
