// Scaled dot-product attention (torch's _scaled_dot_product_flash_attention_for_cpu).
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out[b, h, i] = softmax_j(scale * q[b, h, i] . k[b, h/g, j] + mask[b, h, i, j]) v[b, h/g, j]
// with g = H / Hkv (grouped-query attention when Hkv < H) and
// lse[b, h, i] = log sum_j exp(scale * q . k + mask), the logsumexp (float32).
// q (B, H, L, E), k (B, Hkv, S, E), v (B, Hkv, S, Ev), out (B, H, L, Ev),
// lse (B, H, L): views with any strides; q, k, v and out share one dtype.
// mask: absent (numel 0) or already broadcast to (B, H, L, S) (stride-0 views),
// bool (false = masked out) or floating (added to the scores).
// causal: key j is masked for query i when j > i (top-left aligned).
struct SdpaArgs {
  Tensor out, lse;
  Tensor q, k, v;
  Tensor mask;
  bool has_mask = false;
  bool causal = false;
  double scale = 1.0;
};

namespace ops {
AOTISHIM_API extern Op<void(const SdpaArgs&)> sdpa;
}  // namespace ops

}  // namespace aotishim
