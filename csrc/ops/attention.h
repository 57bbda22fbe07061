// Scaled dot-product attention: the SDPA variants Inductor emits
// (_scaled_dot_product_{efficient,flash,cudnn}_attention) validate and
// normalise into one AttentionArgs (ops/attention.cpp); a device registers a
// kernel for the `attention` op that runs it on its stream.
#pragma once

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out[b,h,i,:] = softmax_j(scale * q[b,h,i,:] . k[b,g,j,:] + bias[b,h,i,j]) @ v[b,g,j,:]
// with g = h / (H / Hkv) (grouped heads share keys and values).
// All views as they lie (any non-negative strides, storage offsets), one
// device, one dtype (float32, float16 or bfloat16); accumulation in float32.
struct AttentionArgs {
  Tensor out;  // (B, H, Lq, Dv), written
  Tensor q;    // (B, H, Lq, D)
  Tensor k;    // (B, Hkv, Lk, D)
  Tensor v;    // (B, Hkv, Lk, Dv)
  // (B, H, Lq, Lk) view of q's dtype, stride 0 where broadcast; read if has_bias.
  bool has_bias = false;
  Tensor bias;
  // (B, H, R) float32 with R >= Lq: the natural-log sum of exp of each row's
  // scores (-inf for a row with no key left); rows Lq..R-1 are padding and
  // get +inf. Written if has_lse.
  bool has_lse = false;
  Tensor lse;
  // Top-left aligned: query i sees keys j <= i.
  bool causal = false;
  double scale = 1.0;
};

namespace ops {
// The kernel slot of every attention variant; validation guarantees its promise.
AOTISHIM_API extern Op<void(const AttentionArgs&)> attention;
}  // namespace ops

}  // namespace aotishim
