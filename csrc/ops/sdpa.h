// Scaled dot-product attention: torch's _scaled_dot_product_flash_attention_for_cpu
// and _scaled_dot_product_attention_math_for_mps (the variant Inductor emits
// for Metal), validated alike in ops/sdpa.cpp into one SdpaArgs.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out[b, h, i] = softmax_j(scale * q[b, h, i] . k[b, h/g, j] + mask[b, h, i, j]) v[b, h/g, j]
// with g = H / Hkv (grouped-query attention when Hkv < H) and
// lse[b, h, i] = log sum_j exp(scale * q . k + mask), the logsumexp (float64 for
// float64 inputs, float32 otherwise, as torch's CPU kernel gives it).
// q (B, H, L, E), k (B, Hkv, S, E), v (B, Hkv, S, Ev), out (B, H, L, Ev),
// lse (B, H, L): views with any strides; q, k, v and out share one dtype.
// mask: absent (numel 0) or already broadcast to (B, H, L, S) (stride-0 views),
// bool (false = masked out) or floating (added to the scores).
// causal: key j is masked for query i when j > i (top-left aligned).
// probs (B, H, L, S) of q's dtype, written only if has_probs: the softmax
// weights exp(scale * q . k + mask - lse) (0 for masked keys and for rows
// with no key left), which the mps math variant returns as its second output.
struct SdpaArgs {
  Tensor out, lse;
  bool has_probs = false;
  Tensor probs;
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
