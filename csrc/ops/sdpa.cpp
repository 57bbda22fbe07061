// _scaled_dot_product_flash_attention_for_cpu and
// _scaled_dot_product_attention_math_for_mps: shapes, GQA head groups, mask
// broadcasting, the default scale, and torch's output layouts (cpu: the
// output follows the query's stride order, logsumexp is (B, L, H)-contiguous
// seen as (B, H, L); mps: both outputs contiguous), then the device's kernel.
#include "ops/sdpa.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace {

// Packed strides for `sizes` in the dimension order of `like`'s strides
// (outermost = largest stride), dense or not: torch's CPU flash attention
// lays its output out in the query's order (a query sliced from a fused QKV
// projection gives a (B, L, H, E)-ordered output).
std::vector<int64_t> strides_like(const Tensor& like, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return like.strides[a] > like.strides[b]; });
  std::vector<int64_t> strides(sizes.size());
  int64_t step = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = step;
    step *= std::max<int64_t>(sizes[*it], 1);
  }
  return strides;
}

}  // namespace

namespace ops {

Op<void(const SdpaArgs&)> sdpa("scaled_dot_product_attention");

namespace {

// The checks both variants share: 4-D query/key/value of one floating dtype
// on one device, consistent shapes, head groups (allowed only where the
// variant has them), mask broadcast to (B, H, L, S), causal flag and scale.
// Fills every field of SdpaArgs but the outputs.
SdpaArgs sdpa_inputs(const OpCall& call, AtenTensorHandle query, AtenTensorHandle key,
                     AtenTensorHandle value, AtenTensorHandle* attn_mask, double dropout_p,
                     int32_t is_causal, double* scale, bool grouped_heads) {
  auto q_p = call.tensor(query, "query"), k_p = call.tensor(key, "key"),
       v_p = call.tensor(value, "value");
  auto mask_p = call.optional_tensor(attn_mask ? *attn_mask : nullptr, "attn_mask");
  const Tensor &q = *q_p, &k = *k_p, &v = *v_p;
  AOTISHIM_CHECK(dropout_p == 0.0, call.op, ": dropout_p = ", dropout_p,
                 " is not supported (inference only: dropout must be 0)");
  AOTISHIM_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, call.op,
                 ": query, key and value must be 4-D (batch, heads, length, head dim), got sizes ",
                 shape_string(q.sizes), ", ", shape_string(k.sizes), ", ", shape_string(v.sizes));
  AOTISHIM_CHECK(k.dtype == q.dtype && v.dtype == q.dtype, call.op,
                 ": query, key and value must share one dtype, got ", dtype_name(q.dtype), ", ",
                 dtype_name(k.dtype), ", ", dtype_name(v.dtype));
  AOTISHIM_CHECK(q.dtype == DType::Float32 || q.dtype == DType::BFloat16 ||
                     q.dtype == DType::Float16 || q.dtype == DType::Float64,
                 call.op, ": unsupported dtype ", dtype_name(q.dtype),
                 " (float32, float64, bfloat16, float16)");
  AOTISHIM_CHECK(&k.device() == &q.device() && &v.device() == &q.device(), call.op,
                 ": query, key and value are on different devices");
  const int64_t B = q.sizes[0], H = q.sizes[1], L = q.sizes[2], E = q.sizes[3];
  const int64_t Hkv = k.sizes[1], S = k.sizes[2];
  AOTISHIM_CHECK(k.sizes[0] == B && v.sizes[0] == B && v.sizes[1] == Hkv && v.sizes[2] == S &&
                     k.sizes[3] == E,
                 call.op, ": inconsistent shapes: query ", shape_string(q.sizes), ", key ",
                 shape_string(k.sizes), ", value ", shape_string(v.sizes));
  if (grouped_heads) {
    AOTISHIM_CHECK(Hkv > 0 ? H % Hkv == 0 : H == 0, call.op, ": query has ", H,
                   " heads, not a multiple of key/value's ", Hkv);
  } else {
    AOTISHIM_CHECK(Hkv == H, call.op, ": query has ", H, " heads but key/value have ", Hkv,
                   " (grouped-query attention needs enable_gqa)");
  }

  SdpaArgs args;
  if (mask_p) {
    const Tensor& m = *mask_p;
    AOTISHIM_CHECK(m.dtype == DType::Bool || is_floating(m.dtype), call.op,
                   ": attn_mask must be bool or floating, got ", dtype_name(m.dtype));
    AOTISHIM_CHECK(&m.device() == &q.device(), call.op, ": attn_mask is on another device");
    AOTISHIM_CHECK(m.dim() <= 4, call.op, ": attn_mask of sizes ", shape_string(m.sizes),
                   " cannot be broadcast to ", shape_string({B, H, L, S}));
    args.mask = broadcast_to(m, {B, H, L, S});
    args.has_mask = true;
  }
  args.causal = is_causal != 0;
  args.scale = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(E));
  args.q = q;
  args.k = k;
  args.v = v;
  return args;
}

}  // namespace

void _scaled_dot_product_flash_attention_for_cpu(const OpCall& call, AtenTensorHandle query,
                                                 AtenTensorHandle key, AtenTensorHandle value,
                                                 double dropout_p, int32_t is_causal,
                                                 AtenTensorHandle* attn_mask, double* scale,
                                                 AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  require_out(ret1, "ret1");
  SdpaArgs args =
      sdpa_inputs(call, query, key, value, attn_mask, dropout_p, is_causal, scale, true);
  const Tensor &q = args.q, &v = args.v;
  const int64_t B = q.sizes[0], H = q.sizes[1], L = q.sizes[2], Ev = v.sizes[3];
  AOTISHIM_CHECK(Ev == q.sizes[3], call.op, ": inconsistent shapes: query ",
                 shape_string(q.sizes), ", value ", shape_string(v.sizes),
                 " (query, key and value must have the same head size, as torch requires)");

  const std::vector<int64_t> out_sizes = {B, H, L, Ev};
  Tensor out = make_empty(q.device(), q.dtype, out_sizes, strides_like(q, out_sizes));
  // torch's CPU kernel: logsumexp in float64 for float64, else float32.
  const DType lse_dtype = q.dtype == DType::Float64 ? DType::Float64 : DType::Float32;
  Tensor lse = make_empty(q.device(), lse_dtype, {B, H, L}, {L * H, 1, H});
  if (out.numel() > 0) {
    args.out = out;
    args.lse = lse;
    ops::sdpa.run(q.device(), args);
  }
  // Both registered only once the kernel has succeeded: nothing leaks on error.
  AtenTensorHandle out_h = register_tensor(std::move(out));
  *ret1 = register_tensor(std::move(lse));
  *ret0 = out_h;
}

namespace {

// (out (B, H, L, Ev) contiguous, attn (B, H, L, S) contiguous: the softmax
// weights), as torch's meta function for the mps math variant lays them out.
// The weights are computed only when the caller asks for them (ret1 not null).
// dropout_mask only matters with dropout, which is refused.
void math_for_mps(const OpCall& call, AtenTensorHandle query, AtenTensorHandle key,
                  AtenTensorHandle value, AtenTensorHandle* attn_mask, double dropout_p,
                  int32_t is_causal, double* scale, bool enable_gqa, AtenTensorHandle* ret0,
                  AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  SdpaArgs args =
      sdpa_inputs(call, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa);
  // torch's math kernels add a bool mask as 0/1 rather than masking with it
  // (torch's public SDPA converts bool masks to -inf/0 before this op): rather
  // than guess which a caller means, refuse.
  AOTISHIM_CHECK(!args.has_mask || args.mask.dtype != DType::Bool, call.op,
                 ": a bool attn_mask is not supported (convert it to an additive float mask, "
                 "as scaled_dot_product_attention does before calling this op)");
  const Tensor& q = args.q;
  const int64_t B = q.sizes[0], H = q.sizes[1], L = q.sizes[2], S = args.k.sizes[2],
                Ev = args.v.sizes[3];
  Device& device = q.device();
  Tensor out = make_empty(device, q.dtype, {B, H, L, Ev});
  Tensor probs = make_empty(device, q.dtype, {B, H, L, S});
  // The kernel's row statistics; not an output of this variant.
  Tensor lse = make_empty(device, DType::Float32, {B, H, L});
  if (B * H * L > 0) {
    args.out = out;
    args.lse = lse;
    args.has_probs = ret1 != nullptr && probs.numel() > 0;
    args.probs = probs;
    ops::sdpa.run(device, args);
  }
  AtenTensorHandle out_h = register_tensor(std::move(out));
  if (ret1 != nullptr) *ret1 = register_tensor(std::move(probs));
  *ret0 = out_h;
}

}  // namespace

void _scaled_dot_product_attention_math_for_mps(const OpCall& call, AtenTensorHandle query,
                                                AtenTensorHandle key, AtenTensorHandle value,
                                                AtenTensorHandle* attn_mask, double dropout_p,
                                                int32_t is_causal,
                                                AtenTensorHandle* /*dropout_mask*/,
                                                double* scale, AtenTensorHandle* ret0,
                                                AtenTensorHandle* ret1) {
  math_for_mps(call, query, key, value, attn_mask, dropout_p, is_causal, scale, false, ret0,
               ret1);
}

// The same with torch's enable_gqa argument (emitted when it is not false).
void _scaled_dot_product_attention_math_for_mps_v2(
    const OpCall& call, AtenTensorHandle query, AtenTensorHandle key, AtenTensorHandle value,
    AtenTensorHandle* attn_mask, double dropout_p, int32_t is_causal,
    AtenTensorHandle* /*dropout_mask*/, double* scale, int32_t enable_gqa, AtenTensorHandle* ret0,
    AtenTensorHandle* ret1) {
  math_for_mps(call, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa != 0,
               ret0, ret1);
}

}  // namespace ops
}  // namespace aotishim
