// Parameter structs of the mps device's Metal kernels, shared by the host
// code (C++) and the shaders (MSL): the library source starts with this file,
// so both sides compile the same declarations. Strides are in elements.
//
// Only plain fields: 64-bit `i64`, 32-bit `i32`/`f32`, arrays of them; MSL's
// long/int/float have the same sizes and alignments as C++'s on every
// platform the device runs on, so the layouts agree field by field.
#ifndef AOTISHIM_MPS_KERNEL_PARAMS_H
#define AOTISHIM_MPS_KERNEL_PARAMS_H

#if defined(__METAL__) || defined(__METAL_VERSION__)
typedef long aotishim_i64;
typedef int aotishim_i32;
typedef float aotishim_f32;
#else
#include <cstdint>
namespace aotishim {
namespace mps {
typedef int64_t aotishim_i64;
typedef int32_t aotishim_i32;
typedef float aotishim_f32;
#endif

// Dtype codes the kernels receive: c10 ScalarType numbers.
#define AOTISHIM_DT_UINT8 0
#define AOTISHIM_DT_INT8 1
#define AOTISHIM_DT_INT16 2
#define AOTISHIM_DT_INT32 3
#define AOTISHIM_DT_INT64 4
#define AOTISHIM_DT_FLOAT16 5
#define AOTISHIM_DT_FLOAT32 6
#define AOTISHIM_DT_FLOAT64 7
#define AOTISHIM_DT_BOOL 11
#define AOTISHIM_DT_BFLOAT16 15

#define AOTISHIM_COPY_MAX_DIMS 8

// aotishim_copy: dst[i] = convert(src[i]) over a coalesced view.
struct CopyParams {
  aotishim_i64 sizes[AOTISHIM_COPY_MAX_DIMS];
  aotishim_i64 dst_strides[AOTISHIM_COPY_MAX_DIMS];
  aotishim_i64 src_strides[AOTISHIM_COPY_MAX_DIMS];
  aotishim_i32 ndim;
  aotishim_i32 dst_dtype;
  aotishim_i32 src_dtype;
  aotishim_i32 pad;
};

// aotishim_gemm_*: out[b] = alpha * a[b] @ b[b] + beta * out[b]; strides are
// (batch, row, col).
struct GemmParams {
  aotishim_i64 batch;
  aotishim_i64 m;
  aotishim_i64 n;
  aotishim_i64 k;
  aotishim_i64 out_strides[3];
  aotishim_i64 a_strides[3];
  aotishim_i64 b_strides[3];
  aotishim_f32 alpha;
  aotishim_f32 beta;
};

// aotishim_conv_*: spatial dims right-aligned in 3 (a 1-D convolution is
// depth 1, height 1); strides (n, c, d, h, w) for input and out, (dim0, dim1,
// kd, kh, kw) for weight, 0 for a missing dim.
struct ConvParams {
  aotishim_i64 n;
  aotishim_i64 cin;
  aotishim_i64 cout;
  aotishim_i64 groups;
  aotishim_i64 in_size[3];
  aotishim_i64 out_size[3];
  aotishim_i64 k_size[3];
  aotishim_i64 stride[3];
  aotishim_i64 pad[3];
  aotishim_i64 dil[3];
  aotishim_i64 in_strides[5];
  aotishim_i64 w_strides[5];
  aotishim_i64 out_strides[5];
  aotishim_i64 bias_stride;
  aotishim_i32 transposed;
  aotishim_i32 has_bias;
};

// aotishim_sdpa_*: one threadgroup of AOTISHIM_SDPA_ROWS SIMD groups of
// AOTISHIM_SDPA_LANES lanes per (block of query rows, head, batch); each lane
// holds AOTISHIM_SDPA_PER_LANE head dims, so head dims go up to their product.
#define AOTISHIM_SDPA_ROWS 8
#define AOTISHIM_SDPA_LANES 32
#define AOTISHIM_SDPA_PER_LANE 16

struct SdpaParams {
  aotishim_i64 b;
  aotishim_i64 h;
  aotishim_i64 hkv;
  aotishim_i64 l;
  aotishim_i64 s;
  aotishim_i64 e;
  aotishim_i64 ev;
  aotishim_i64 q_strides[4];
  aotishim_i64 k_strides[4];
  aotishim_i64 v_strides[4];
  aotishim_i64 out_strides[4];
  aotishim_i64 mask_strides[4];
  aotishim_i64 probs_strides[4];
  aotishim_i64 lse_strides[3];
  aotishim_f32 scale;
  aotishim_i32 causal;
  aotishim_i32 has_mask;
  aotishim_i32 mask_dtype;  // a dtype code
  aotishim_i32 has_probs;
  aotishim_i32 pad;
};

#if !(defined(__METAL__) || defined(__METAL_VERSION__))
static_assert(sizeof(CopyParams) == 3 * 8 * AOTISHIM_COPY_MAX_DIMS + 16, "CopyParams layout");
static_assert(sizeof(GemmParams) == 8 * 4 + 3 * 3 * 8 + 8, "GemmParams layout");
static_assert(sizeof(ConvParams) == 4 * 8 + 6 * 3 * 8 + 3 * 5 * 8 + 8 + 8, "ConvParams layout");
static_assert(sizeof(SdpaParams) == 7 * 8 + 6 * 4 * 8 + 3 * 8 + 24, "SdpaParams layout");
}  // namespace mps
}  // namespace aotishim
#endif

#endif  // AOTISHIM_MPS_KERNEL_PARAMS_H
