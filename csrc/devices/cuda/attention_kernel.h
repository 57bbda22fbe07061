// The cuda attention kernel's launch (attention_kernel.cu): plain pointers
// and element strides, so the .cu file needs nothing of the op layer.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace aotishim {
namespace cuda {

struct AttentionLaunch {
  DType dtype = DType::Float32;  // of q, k, v, bias and out
  int64_t B = 0, H = 0, Hkv = 0, Lq = 0, Lk = 0, D = 0, Dv = 0;
  const void* q = nullptr;  // strides [4] each, in elements: (b, h, l, d)
  const void* k = nullptr;
  const void* v = nullptr;
  void* out = nullptr;
  int64_t q_st[4] = {}, k_st[4] = {}, v_st[4] = {}, out_st[4] = {};
  const void* bias = nullptr;  // null: none; (b, h, i, j) strides, 0 where broadcast
  int64_t bias_st[4] = {};
  float* lse = nullptr;  // null: not written; (b, h, row) strides
  int64_t lse_st[3] = {};
  int64_t lse_rows = 0;  // rows of lse (>= Lq); rows Lq.. get +inf
  bool causal = false;
  float scale = 1.0f;
};

// Largest head dims the kernel takes.
constexpr int64_t kAttentionMaxHeadDim = 256;

void launch_attention(const AttentionLaunch& p, cudaStream_t stream);

}  // namespace cuda
}  // namespace aotishim
