// The SDPA variants Inductor emits for CUDA, validated once: each entry
// normalises its arguments into AttentionArgs, allocates the outputs in the
// layouts torch's meta functions give them (which generated code assumes),
// and runs the device's attention kernel. Only inference is supported:
// dropout must be 0.
#include "ops/attention.h"

#include <cmath>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "core/strided.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace {

bool attention_dtype(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16;
}

// The shared part of every variant's validation.
struct Inputs {
  std::shared_ptr<Tensor> q, k, v, bias;
  int64_t B = 0, H = 0, Hkv = 0, Lq = 0, Lk = 0, D = 0, Dv = 0;
};

Inputs resolve(const ops::OpCall& call, AtenTensorHandle q_h, AtenTensorHandle k_h,
               AtenTensorHandle v_h, AtenTensorHandle* bias_h, double dropout_p,
               const char* op) {
  Inputs in;
  in.q = call.tensor(q_h, "query");
  in.k = call.tensor(k_h, "key");
  in.v = call.tensor(v_h, "value");
  if (bias_h != nullptr) in.bias = call.optional_tensor(*bias_h, "attn_bias");
  const Tensor &q = *in.q, &k = *in.k, &v = *in.v;
  AOTISHIM_CHECK(dropout_p == 0.0, op, ": dropout_p must be 0 (got ", dropout_p,
                 "); only inference is supported, export the model in eval mode");
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"query", &q}, {"key", &k},
                                {"value", &v}}) {
    AOTISHIM_CHECK(t->dim() == 4, op, ": ", name, " must be 4-D (batch, heads, length, dim), got sizes ",
                   shape_string(t->sizes));
    AOTISHIM_CHECK(&t->device() == &q.device(), op, ": query is on ", q.device().name(), " but ",
                   name, " is on ", t->device().name());
    AOTISHIM_CHECK(t->dtype == q.dtype, op, ": query is ", dtype_name(q.dtype), " but ", name,
                   " is ", dtype_name(t->dtype));
  }
  AOTISHIM_CHECK(attention_dtype(q.dtype), op, ": unsupported dtype ", dtype_name(q.dtype),
                 " (attention supports float32, float16 and bfloat16)");
  in.B = q.sizes[0];
  in.H = q.sizes[1];
  in.Lq = q.sizes[2];
  in.D = q.sizes[3];
  in.Hkv = k.sizes[1];
  in.Lk = k.sizes[2];
  in.Dv = v.sizes[3];
  AOTISHIM_CHECK(k.sizes[0] == in.B && v.sizes[0] == in.B, op, ": batch sizes differ: query ",
                 shape_string(q.sizes), ", key ", shape_string(k.sizes), ", value ",
                 shape_string(v.sizes));
  AOTISHIM_CHECK(k.sizes[3] == in.D, op, ": query and key head dims differ: query ",
                 shape_string(q.sizes), ", key ", shape_string(k.sizes));
  AOTISHIM_CHECK(v.sizes[1] == in.Hkv && v.sizes[2] == in.Lk, op,
                 ": key and value differ in heads or length: key ", shape_string(k.sizes),
                 ", value ", shape_string(v.sizes));
  AOTISHIM_CHECK(in.Hkv > 0 ? in.H % in.Hkv == 0 : in.H == 0, op, ": query's ", in.H,
                 " heads are not a multiple of key/value's ", in.Hkv);
  if (in.bias) {
    const Tensor& b = *in.bias;
    AOTISHIM_CHECK(&b.device() == &q.device(), op, ": attn_bias is on ", b.device().name(),
                   " but query is on ", q.device().name());
    AOTISHIM_CHECK(b.dtype == q.dtype, op, ": attn_bias is ", dtype_name(b.dtype),
                   " but query is ", dtype_name(q.dtype), " (an additive bias of the same dtype)");
  }
  return in;
}

// attn_bias broadcast to (B, H, Lq, Lk) as a stride-0 view, as torch
// broadcasts: trailing dimensions aligned, size 1 (or missing) broadcast.
Tensor expand_bias(const Tensor& bias, const Inputs& in, const char* op) {
  const std::vector<int64_t> target = {in.B, in.H, in.Lq, in.Lk};
  AOTISHIM_CHECK(bias.dim() <= 4, op, ": attn_bias of sizes ", shape_string(bias.sizes),
                 " cannot be broadcast to ", shape_string(target));
  std::vector<int64_t> strides = {0, 0, 0, 0};
  const int64_t lead = 4 - bias.dim();
  for (int64_t d = 0; d < bias.dim(); ++d) {
    const int64_t size = bias.sizes[d], want = target[d + lead];
    AOTISHIM_CHECK(size == want || size == 1, op, ": attn_bias of sizes ",
                   shape_string(bias.sizes), " cannot be broadcast to ", shape_string(target));
    strides[d + lead] = size == want ? bias.strides[d] : 0;
  }
  return make_view(bias, target, strides, bias.storage_offset);
}

AttentionArgs base_args(const Inputs& in, double* scale, int32_t is_causal, const char* op) {
  AttentionArgs a;
  a.q = *in.q;
  a.k = *in.k;
  a.v = *in.v;
  a.causal = is_causal != 0;
  a.scale = scale != nullptr ? *scale : 1.0 / std::sqrt(static_cast<double>(in.D));
  if (in.bias) {
    a.has_bias = true;
    a.bias = expand_bias(*in.bias, in, op);
  }
  return a;
}

// Strides of a dense tensor of `sizes` whose dimensions are laid out in
// `order` (outermost first).
std::vector<int64_t> dense_strides(const std::vector<int64_t>& sizes,
                                   const std::vector<int>& order) {
  std::vector<int64_t> strides(sizes.size(), 0);
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = stride;
    stride *= std::max<int64_t>(sizes[*it], 1);
  }
  return strides;
}

// torch's empty_like(query) (preserve_format): a dense query's strides, else
// dense in query's dimension order (a query sliced from a fused projection is
// not dense, and generated code reads the output with these strides).
Tensor empty_like(const Tensor& t) {
  if (t.is_non_overlapping_and_dense())
    return make_empty(t.device(), t.dtype, t.sizes, t.strides);
  return make_empty(t.device(), t.dtype, t.sizes, dense_strides_like(t.sizes, t.strides));
}

// torch's alloc_with_matching_layout: query's dimension order (by
// decreasing stride, ties in dimension order) applied to the result's shape.
Tensor empty_matching(const Tensor& q, const std::vector<int64_t>& sizes) {
  if (q.sizes == sizes) return empty_like(q);
  std::vector<int> order = {0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return q.strides[a] > q.strides[b]; });
  return make_empty(q.device(), q.dtype, sizes, dense_strides(sizes, order));
}

// A zero-filled tensor (the philox seed/offset slots: no dropout, no RNG state).
Tensor zeros(Device& device, DType dtype, std::vector<int64_t> sizes) {
  Tensor t = make_empty(device, dtype, std::move(sizes));
  device.fill_zero(t);  // queued on the device: no wait for the host per call
  return t;
}

void run(const AttentionArgs& args) {
  if (args.out.numel() == 0 && (!args.has_lse || args.lse.numel() == 0)) return;
  ops::attention.run(args.q.device(), args);
}

// Generated code passes null for outputs it never reads (the cudnn variant's
// unused philox state, say): those are simply not returned.
template <typename T>
void set_output(T* slot, T value) {
  if (slot != nullptr) *slot = value;
}
void set_output(AtenTensorHandle* slot, const Tensor& value) {
  if (slot != nullptr) *slot = register_tensor(value);
}

}  // namespace

namespace ops {

Op<void(const AttentionArgs&)> attention("attention");

// (out (B,H,Lq,Dv) laid out as (B,Lq,H,Dv), logsumexp (B,H,ceil(Lq/32)*32) or
// (B,H,0), philox seed, philox offset)
void _scaled_dot_product_efficient_attention(const OpCall& call, AtenTensorHandle query,
                                             AtenTensorHandle key, AtenTensorHandle value,
                                             AtenTensorHandle* attn_bias,
                                             int32_t compute_log_sumexp, double dropout_p,
                                             int32_t is_causal, double* scale,
                                             AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                                             AtenTensorHandle* ret2, AtenTensorHandle* ret3) {
  const char* op = "_scaled_dot_product_efficient_attention";
  require_out(ret0, "ret0");
  Inputs in = resolve(call, query, key, value, attn_bias, dropout_p, op);
  AttentionArgs a = base_args(in, scale, is_causal, op);
  Device& device = a.q.device();
  const std::vector<int64_t> out_sizes = {in.B, in.H, in.Lq, in.Dv};
  a.out = make_empty(device, a.q.dtype, out_sizes, dense_strides(out_sizes, {0, 2, 1, 3}));
  const int64_t rows = compute_log_sumexp ? (in.Lq + 31) / 32 * 32 : 0;
  a.lse = make_empty(device, DType::Float32, {in.B, in.H, rows});
  a.has_lse = rows > 0;
  Tensor seed = zeros(device, DType::Int64, {});
  Tensor offset = zeros(device, DType::Int64, {});
  run(a);
  set_output(ret0, a.out);
  set_output(ret1, a.lse);
  set_output(ret2, seed);
  set_output(ret3, offset);
}

// (out like query, logsumexp (B,H,Lq), cum_seq_q = None, cum_seq_k = None,
// max_q, max_k, philox seed (2,), philox offset (), debug mask (0,))
void _scaled_dot_product_flash_attention(const OpCall& call, AtenTensorHandle query,
                                         AtenTensorHandle key, AtenTensorHandle value,
                                         double dropout_p, int32_t is_causal,
                                         int32_t return_debug_mask, double* scale,
                                         AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                                         AtenTensorHandle* ret2, AtenTensorHandle* ret3,
                                         int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6,
                                         AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
  const char* op = "_scaled_dot_product_flash_attention";
  require_out(ret0, "ret0");
  Inputs in = resolve(call, query, key, value, nullptr, dropout_p, op);
  AOTISHIM_CHECK(return_debug_mask == 0, op, ": return_debug_mask is not supported (it exists "
                 "for dropout, which is not supported either)");
  AOTISHIM_CHECK(in.Dv == in.D, op, ": value's head dim (", in.Dv, ") must equal query's (",
                 in.D, "): the output is shaped like query");
  AttentionArgs a = base_args(in, scale, is_causal, op);
  Device& device = a.q.device();
  a.out = empty_like(a.q);
  a.lse = make_empty(device, DType::Float32, {in.B, in.H, in.Lq});
  a.has_lse = true;
  // torch declares these uint64; aotishim has no uint64 dtype, and the
  // bytes (zeros) are the same.
  Tensor seed = zeros(device, DType::Int64, {2});
  Tensor offset = zeros(device, DType::Int64, {});
  Tensor debug_mask = make_empty(device, a.q.dtype, {0});
  run(a);
  set_output(ret0, a.out);
  set_output(ret1, a.lse);
  set_output<AtenTensorHandle>(ret2, nullptr);
  set_output<AtenTensorHandle>(ret3, nullptr);
  set_output<int64_t>(ret4, in.Lq);
  set_output<int64_t>(ret5, in.Lk);
  set_output(ret6, seed);
  set_output(ret7, offset);
  set_output(ret8, debug_mask);
}

// (out (B,H,Lq,Dv) in query's dimension order, logsumexp (B,H,Lq,1),
// cum_seq_q = None, cum_seq_k = None, max_q, max_k, philox seed (),
// philox offset (), debug mask = None)
void _scaled_dot_product_cudnn_attention(const OpCall& call, AtenTensorHandle query,
                                         AtenTensorHandle key, AtenTensorHandle value,
                                         AtenTensorHandle* attn_bias, int32_t compute_log_sumexp,
                                         double dropout_p, int32_t is_causal,
                                         int32_t return_debug_mask, double* scale,
                                         AtenTensorHandle* ret0, AtenTensorHandle* ret1,
                                         AtenTensorHandle* ret2, AtenTensorHandle* ret3,
                                         int64_t* ret4, int64_t* ret5, AtenTensorHandle* ret6,
                                         AtenTensorHandle* ret7, AtenTensorHandle* ret8) {
  const char* op = "_scaled_dot_product_cudnn_attention";
  require_out(ret0, "ret0");
  Inputs in = resolve(call, query, key, value, attn_bias, dropout_p, op);
  AOTISHIM_CHECK(return_debug_mask == 0, op, ": return_debug_mask is not supported (it exists "
                 "for dropout, which is not supported either)");
  AttentionArgs a = base_args(in, scale, is_causal, op);
  Device& device = a.q.device();
  a.out = empty_matching(a.q, {in.B, in.H, in.Lq, in.Dv});
  // Written whether or not compute_log_sumexp asks: it costs one store per row.
  Tensor lse4 = make_empty(device, DType::Float32, {in.B, in.H, in.Lq, 1});
  a.lse = make_view(lse4, {in.B, in.H, in.Lq},
                    {lse4.strides[0], lse4.strides[1], lse4.strides[2]}, lse4.storage_offset);
  a.has_lse = true;
  Tensor seed = zeros(device, DType::Int64, {});
  Tensor offset = zeros(device, DType::Int64, {});
  run(a);
  set_output(ret0, a.out);
  set_output(ret1, lse4);
  set_output<AtenTensorHandle>(ret2, nullptr);
  set_output<AtenTensorHandle>(ret3, nullptr);
  set_output<int64_t>(ret4, in.Lq);
  set_output<int64_t>(ret5, in.Lk);
  set_output(ret6, seed);
  set_output(ret7, offset);
  set_output<AtenTensorHandle>(ret8, nullptr);
}

}  // namespace ops
}  // namespace aotishim
