// The mps device's own Metal kernels: a strided element copy (with dtype
// conversion), a strided GEMM, convolution and attention. Their MSL sources
// are kernels/*.metal; their parameter structs (passed with setBytes) are
// kernels/params.h, which the shaders compile too.
#pragma once

#include "core/dtype.h"
#include "devices/mps/kernels/params.h"
#include "devices/mps/kernels/sources.h"

namespace aotishim::mps {

// The kernels receive DType values as their dtype codes.
static_assert(AOTISHIM_DT_UINT8 == static_cast<int>(DType::UInt8) &&
                  AOTISHIM_DT_INT8 == static_cast<int>(DType::Int8) &&
                  AOTISHIM_DT_INT16 == static_cast<int>(DType::Int16) &&
                  AOTISHIM_DT_INT32 == static_cast<int>(DType::Int32) &&
                  AOTISHIM_DT_INT64 == static_cast<int>(DType::Int64) &&
                  AOTISHIM_DT_FLOAT16 == static_cast<int>(DType::Float16) &&
                  AOTISHIM_DT_FLOAT32 == static_cast<int>(DType::Float32) &&
                  AOTISHIM_DT_FLOAT64 == static_cast<int>(DType::Float64) &&
                  AOTISHIM_DT_BOOL == static_cast<int>(DType::Bool) &&
                  AOTISHIM_DT_BFLOAT16 == static_cast<int>(DType::BFloat16),
              "kernel dtype codes");

constexpr int kMaxCopyDims = AOTISHIM_COPY_MAX_DIMS;

// Kernel names in the library.
constexpr const char* kCopyKernel = "aotishim_copy";
constexpr const char* kGemmFloat32 = "aotishim_gemm_float32";
constexpr const char* kGemmFloat16 = "aotishim_gemm_float16";
constexpr const char* kGemmBFloat16 = "aotishim_gemm_bfloat16";

}  // namespace aotishim::mps
