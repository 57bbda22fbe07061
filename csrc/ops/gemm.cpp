// mm / addmm / bmm / baddbmm / addmv / addbmm for every device: validation, broadcasting of addmm's
// bias and overlap handling live here, once; the device's gemm kernel then
// runs one batched GemmArgs on its stream. Views are never copied on the host: every byte
// moved goes through the device's copy or gemm, so asynchronous devices see
// (and order) all of it.
#include "ops/gemm.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace {

struct Arg {
  const char* name;
  const Tensor& t;
};

bool gemm_dtype(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::BFloat16 ||
         dtype == DType::Float16;
}

// One device and one supported dtype for all operands.
void check_operands(const Arg& out, std::initializer_list<Arg> inputs) {
  for (const Arg& in : inputs) {
    AOTISHIM_CHECK(&in.t.device() == &out.t.device(), "tensors are on different devices: ",
                   out.name, " is on ", out.t.device().name(), " but ", in.name, " is on ",
                   in.t.device().name());
  }
  for (const Arg& in : inputs) {
    AOTISHIM_CHECK(in.t.dtype == out.t.dtype, "dtype mismatch: ", out.name, " is ",
                   dtype_name(out.t.dtype), " but ", in.name, " is ", dtype_name(in.t.dtype));
  }
  AOTISHIM_CHECK(gemm_dtype(out.t.dtype), "unsupported dtype ", dtype_name(out.t.dtype),
                 " (matrix products support float32, float64, bfloat16 and float16)");
}

void check_rank(const Arg& arg, int64_t rank) {
  AOTISHIM_CHECK(arg.t.dim() == rank, arg.name, " must be ", rank, "-D, got a ", arg.t.dim(),
                 "-D tensor of sizes ", shape_string(arg.t.sizes));
}

void check_out_shape(const Tensor& out, const std::vector<int64_t>& expected) {
  AOTISHIM_CHECK(out.sizes == expected, "out has sizes ", shape_string(out.sizes),
                 " but the result has sizes ", shape_string(expected));
}

// Writing one result element through two aliases would make the result depend
// on the order of writes. Accepts every layout whose dims, sorted by stride,
// each step past everything the smaller dims reach (all dense and padded
// layouts, in any permutation).
void check_no_internal_overlap(const Tensor& out) {
  if (out.numel() == 0) return;
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size)
  for (size_t d = 0; d < out.sizes.size(); ++d)
    if (out.sizes[d] > 1) dims.emplace_back(out.strides[d], out.sizes[d]);
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;
  for (const auto& [stride, size] : dims) {
    AOTISHIM_CHECK(stride > reach, "out's elements overlap in memory (sizes ", shape_string(out.sizes),
                   ", strides ", shape_string(out.strides), "); it cannot be written");
    reach += stride * (size - 1);
  }
}

// The same elements at the same addresses.
bool same_view(const Tensor& x, const Tensor& y) {
  return x.data() == y.data() && x.dtype == y.dtype && x.sizes == y.sizes &&
         x.strides == y.strides;
}

// A 2-D view as a batch of one; batched views pass through.
Tensor as_batch(const Tensor& t) {
  if (t.dim() == 3) return t;
  return make_view(t, {1, t.sizes[0], t.sizes[1]}, {0, t.strides[0], t.strides[1]},
                   t.storage_offset);
}

// addmm's / baddbmm's self broadcast to the result's sizes (2-D or 3-D) as
// a stride-0 view, by torch's rules: trailing dims match or are 1, missing
// leading dims are added.
Tensor expand_bias(const Tensor& self, const std::vector<int64_t>& target) {
  const int64_t rank = static_cast<int64_t>(target.size());
  AOTISHIM_CHECK(self.dim() <= rank, "self must have at most ", rank,
                 " dimensions to broadcast to ", shape_string(target), ", got sizes ",
                 shape_string(self.sizes));
  std::vector<int64_t> strides(target.size(), 0);
  const int64_t lead = rank - self.dim();
  for (int64_t d = 0; d < self.dim(); ++d) {
    const int64_t size = self.sizes[d], want = target[d + lead];
    AOTISHIM_CHECK(size == want || size == 1, "self of sizes ", shape_string(self.sizes),
                   " cannot be broadcast to ", shape_string(target));
    strides[d + lead] = size == want ? self.strides[d] : 0;
  }
  return make_view(self, target, strides, self.storage_offset);
}

// A 2-D (M, N) view holding one N-vector: stride 0 down the rows, unit
// stride along them (size-1 dimensions may have any stride).
bool is_row_vector(const Tensor& bias) {
  return (bias.sizes[0] == 1 || bias.strides[0] == 0) &&
         (bias.sizes[1] == 1 || bias.strides[1] == 1);
}

// out = beta * bias + alpha * a @ b (out, a, b all 2-D or all 3-D). bias is
// already out's shape and is read only when beta != 0; without a bias the
// product simply overwrites out.
void run(const Tensor& out, const Tensor& a, const Tensor& b, double alpha, double beta,
         const Tensor* bias) {
  check_no_internal_overlap(out);
  if (out.numel() == 0) return;
  Device& device = out.device();
  const bool read_bias = bias != nullptr && beta != 0.0;
  const bool bias_in_place = read_bias && same_view(*bias, out);
  // GemmArgs promises out does not overlap its inputs; when it would, work in
  // a fresh buffer and copy the result in afterwards.
  const bool via_temp = may_overlap(out, a) || may_overlap(out, b) ||
                        (read_bias && !bias_in_place && may_overlap(out, *bias));
  Tensor target = via_temp ? make_empty(device, out.dtype, out.sizes) : out;
  // addmm's usual bias, a vector added to every row, goes to a kernel that
  // adds it in the product's epilogue; any other is copied into out first.
  const bool fuse_bias = read_bias && !bias_in_place && beta == 1.0 && bias->dim() == 2 &&
                         is_row_vector(*bias) && device.gemm_fuses_row_bias();
  if (read_bias && !fuse_bias && !(bias_in_place && !via_temp)) device.copy(target, *bias);

  GemmArgs args;
  args.out = as_batch(target);
  args.a = as_batch(a);
  args.b = as_batch(b);
  args.alpha = alpha;
  args.beta = read_bias && !fuse_bias ? beta : 0.0;
  if (fuse_bias) args.row_bias = as_batch(*bias);
  ops::gemm.run(device, args);
  if (via_temp) device.copy(out, target);
}

}  // namespace

namespace ops {

Op<void(const GemmArgs&)> gemm("gemm");

void mm_out(const OpCall& call, AtenTensorHandle out_h, AtenTensorHandle self_h,
            AtenTensorHandle mat2_h) {
  auto out_p = call.tensor(out_h, "out"), self_p = call.tensor(self_h, "self");
  auto mat2_p = call.tensor(mat2_h, "mat2");
  const Tensor &out = *out_p, &self = *self_p, &mat2 = *mat2_p;
  check_operands({"out", out}, {{"self", self}, {"mat2", mat2}});
  check_rank({"self", self}, 2);
  check_rank({"mat2", mat2}, 2);
  check_rank({"out", out}, 2);
  AOTISHIM_CHECK(self.sizes[1] == mat2.sizes[0], "self ", shape_string(self.sizes), " and mat2 ",
                 shape_string(mat2.sizes), " cannot be multiplied (inner dimensions ", self.sizes[1],
                 " and ", mat2.sizes[0], " differ)");
  check_out_shape(out, {self.sizes[0], mat2.sizes[1]});
  run(out, self, mat2, 1.0, 0.0, nullptr);
}

void addmm_out(const OpCall& call, AtenTensorHandle out_h, AtenTensorHandle self_h,
               AtenTensorHandle mat1_h, AtenTensorHandle mat2_h, double beta, double alpha) {
  auto out_p = call.tensor(out_h, "out"), self_p = call.tensor(self_h, "self");
  auto mat1_p = call.tensor(mat1_h, "mat1"), mat2_p = call.tensor(mat2_h, "mat2");
  const Tensor &out = *out_p, &self = *self_p, &mat1 = *mat1_p, &mat2 = *mat2_p;
  check_operands({"out", out}, {{"self", self}, {"mat1", mat1}, {"mat2", mat2}});
  check_rank({"mat1", mat1}, 2);
  check_rank({"mat2", mat2}, 2);
  check_rank({"out", out}, 2);
  AOTISHIM_CHECK(mat1.sizes[1] == mat2.sizes[0], "mat1 ", shape_string(mat1.sizes), " and mat2 ",
                 shape_string(mat2.sizes), " cannot be multiplied (inner dimensions ", mat1.sizes[1],
                 " and ", mat2.sizes[0], " differ)");
  const int64_t M = mat1.sizes[0], N = mat2.sizes[1];
  check_out_shape(out, {M, N});
  const Tensor bias = expand_bias(self, {M, N});  // validated even when beta == 0
  run(out, mat1, mat2, alpha, beta, &bias);
}

void bmm_out(const OpCall& call, AtenTensorHandle out_h, AtenTensorHandle self_h,
             AtenTensorHandle mat2_h) {
  auto out_p = call.tensor(out_h, "out"), self_p = call.tensor(self_h, "self");
  auto mat2_p = call.tensor(mat2_h, "mat2");
  const Tensor &out = *out_p, &self = *self_p, &mat2 = *mat2_p;
  check_operands({"out", out}, {{"self", self}, {"mat2", mat2}});
  check_rank({"self", self}, 3);
  check_rank({"mat2", mat2}, 3);
  check_rank({"out", out}, 3);
  AOTISHIM_CHECK(self.sizes[0] == mat2.sizes[0], "batch sizes differ: self has ",
                 self.sizes[0], " matrices, mat2 has ", mat2.sizes[0]);
  AOTISHIM_CHECK(self.sizes[2] == mat2.sizes[1], "self ", shape_string(self.sizes), " and mat2 ",
                 shape_string(mat2.sizes), " cannot be multiplied (inner dimensions ", self.sizes[2],
                 " and ", mat2.sizes[1], " differ)");
  check_out_shape(out, {self.sizes[0], self.sizes[1], mat2.sizes[2]});
  run(out, self, mat2, 1.0, 0.0, nullptr);
}

void baddbmm_out(const OpCall& call, AtenTensorHandle out_h, AtenTensorHandle self_h,
                 AtenTensorHandle batch1_h, AtenTensorHandle batch2_h, double beta, double alpha) {
  auto out_p = call.tensor(out_h, "out"), self_p = call.tensor(self_h, "self");
  auto b1_p = call.tensor(batch1_h, "batch1"), b2_p = call.tensor(batch2_h, "batch2");
  const Tensor &out = *out_p, &self = *self_p, &batch1 = *b1_p, &batch2 = *b2_p;
  check_operands({"out", out}, {{"self", self}, {"batch1", batch1}, {"batch2", batch2}});
  check_rank({"batch1", batch1}, 3);
  check_rank({"batch2", batch2}, 3);
  check_rank({"out", out}, 3);
  AOTISHIM_CHECK(batch1.sizes[0] == batch2.sizes[0], "batch sizes differ: batch1 has ",
                 batch1.sizes[0], " matrices, batch2 has ", batch2.sizes[0]);
  AOTISHIM_CHECK(batch1.sizes[2] == batch2.sizes[1], "batch1 ", shape_string(batch1.sizes),
                 " and batch2 ", shape_string(batch2.sizes),
                 " cannot be multiplied (inner dimensions ", batch1.sizes[2], " and ",
                 batch2.sizes[1], " differ)");
  const std::vector<int64_t> sizes = {batch1.sizes[0], batch1.sizes[1], batch2.sizes[2]};
  check_out_shape(out, sizes);
  const Tensor bias = expand_bias(self, sizes);  // validated even when beta == 0
  run(out, batch1, batch2, alpha, beta, &bias);
}

// out (M,) = beta * self + alpha * mat @ vec: one gemm, vec seen as a
// (K, 1) matrix and out and self as (M, 1) ones.
void addmv(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle mat_h,
           AtenTensorHandle vec_h, double beta, double alpha, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self"), mat_p = call.tensor(mat_h, "mat");
  auto vec_p = call.tensor(vec_h, "vec");
  const Tensor &self = *self_p, &mat = *mat_p, &vec = *vec_p;
  check_operands({"self", self}, {{"mat", mat}, {"vec", vec}});
  check_rank({"mat", mat}, 2);
  check_rank({"vec", vec}, 1);
  AOTISHIM_CHECK(mat.sizes[1] == vec.sizes[0], "mat ", shape_string(mat.sizes), " and vec ",
                 shape_string(vec.sizes), " cannot be multiplied (", mat.sizes[1], " columns, ",
                 vec.sizes[0], " elements)");
  const int64_t M = mat.sizes[0], K = mat.sizes[1];
  const Tensor bias = expand_bias(self, {M});  // validated even when beta == 0
  Tensor out = make_empty(self.device(), self.dtype, {M});
  const Tensor bias_2d = make_view(bias, {M, 1}, {bias.strides[0], 1}, bias.storage_offset);
  run(make_view(out, {M, 1}, {1, 1}, 0), mat,
      make_view(vec, {K, 1}, {vec.strides[0], 1}, vec.storage_offset), alpha, beta, &bias_2d);
  *ret0 = register_tensor(out);
}

// out (M, N) = beta * self + alpha * sum_b batch1[b] @ batch2[b], one gemm
// per batch accumulating into out, as torch's CPU addbmm does (so a
// reduced-precision out is rounded after each batch there too).
void addbmm(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle batch1_h,
            AtenTensorHandle batch2_h, double beta, double alpha, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self"), b1_p = call.tensor(batch1_h, "batch1");
  auto b2_p = call.tensor(batch2_h, "batch2");
  const Tensor &self = *self_p, &batch1 = *b1_p, &batch2 = *b2_p;
  check_operands({"self", self}, {{"batch1", batch1}, {"batch2", batch2}});
  check_rank({"batch1", batch1}, 3);
  check_rank({"batch2", batch2}, 3);
  AOTISHIM_CHECK(batch1.sizes[0] == batch2.sizes[0], "batch sizes differ: batch1 has ",
                 batch1.sizes[0], " matrices, batch2 has ", batch2.sizes[0]);
  AOTISHIM_CHECK(batch1.sizes[2] == batch2.sizes[1], "batch1 ", shape_string(batch1.sizes),
                 " and batch2 ", shape_string(batch2.sizes),
                 " cannot be multiplied (inner dimensions ", batch1.sizes[2], " and ",
                 batch2.sizes[1], " differ)");
  const int64_t B = batch1.sizes[0], M = batch1.sizes[1], N = batch2.sizes[2];
  const Tensor bias = expand_bias(self, {M, N});  // validated even when beta == 0
  Tensor out = make_empty(self.device(), self.dtype, {M, N});
  const auto matrix = [](const Tensor& t, int64_t b) {
    return make_view(t, {t.sizes[1], t.sizes[2]}, {t.strides[1], t.strides[2]},
                     t.storage_offset + b * t.strides[0]);
  };
  if (B == 0) {  // no products: beta * self, through a gemm over nothing
    run(out, make_view(batch1, {M, 0}, {0, 1}, batch1.storage_offset),
        make_view(batch2, {0, N}, {0, 1}, batch2.storage_offset), alpha, beta, &bias);
  }
  for (int64_t b = 0; b < B; ++b) {
    if (b == 0) run(out, matrix(batch1, 0), matrix(batch2, 0), alpha, beta, &bias);
    else run(out, matrix(batch1, b), matrix(batch2, b), alpha, 1.0, &out);
  }
  *ret0 = register_tensor(out);
}

}  // namespace ops
}  // namespace aotishim
