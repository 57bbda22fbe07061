// The mps device's own Metal kernels: a strided element copy (with dtype
// conversion) and a strided GEMM; the convolution and attention kernels
// live with their ops (mps_conv.mm, mps_sdpa.mm). Compiled from source on first use.
// The parameter structs are passed with setBytes; their layout is mirrored
// field by field in the Metal source (mps_kernels.mm).
#pragma once

#include <cstdint>
#include <string>

namespace aotishim::mps {

constexpr int kMaxCopyDims = 8;

struct CopyParams {
  int64_t sizes[kMaxCopyDims];
  int64_t dst_strides[kMaxCopyDims];  // elements
  int64_t src_strides[kMaxCopyDims];  // elements
  int32_t ndim;
  int32_t dst_dtype;  // c10 ScalarType numbers
  int32_t src_dtype;
  int32_t pad;
};
static_assert(sizeof(CopyParams) == 3 * 8 * kMaxCopyDims + 16, "CopyParams layout");

struct GemmParams {
  int64_t batch, m, n, k;
  int64_t out_strides[3];  // (batch, row, col), elements
  int64_t a_strides[3];
  int64_t b_strides[3];
  float alpha;
  float beta;
};
static_assert(sizeof(GemmParams) == 8 * 4 + 3 * 3 * 8 + 8, "GemmParams layout");

// Kernel names in the library.
constexpr const char* kCopyKernel = "aotishim_copy";
constexpr const char* kGemmFloat32 = "aotishim_gemm_float32";
constexpr const char* kGemmFloat16 = "aotishim_gemm_float16";
constexpr const char* kGemmBFloat16 = "aotishim_gemm_bfloat16";

// Metal Shading Language source of the kernels above, with the shared
// helpers (bf16_t, load_value/store_value, load_float) the op kernels use.
const char* kernel_source();
// The op kernels' sources (mps_conv.mm, mps_sdpa.mm), appended to it.
const char* conv_kernel_source();
const char* sdpa_kernel_source();
// The whole device library: one compile on first use.
std::string library_source();

}  // namespace aotishim::mps
