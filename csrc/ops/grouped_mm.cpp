// _grouped_mm validation: torch's checks and messages (int32 1-D offsets
// exactly when an operand is 2-D, matching group counts and contraction
// sizes, 16-byte aligned strides with one unit stride per matrix, no bias,
// out_dtype equal to the inputs'), and the output in torch's layout: each
// row padded to a multiple of 16 bytes.
#include "ops/grouped_mm.h"

#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(const GroupedMmArgs&)> grouped_mm_kernel("_grouped_mm");

namespace {

// torch's stride rule: the matrix is row-major (unit last stride) or column-
// major (unit second-to-last), its other stride a multiple of 16 bytes.
void check_strides(const Tensor& t) {
  const int64_t d = t.dim(), align = 16 / static_cast<int64_t>(t.itemsize());
  const int64_t rs = t.strides[d - 2], cs = t.strides[d - 1];
  const bool ok = (cs == 1 && rs % align == 0) || (rs == 1 && cs % align == 0);
  AOTISHIM_CHECK(ok, "strides should be multiple of 16 bytes (got strides ",
                 shape_string(t.strides), " for sizes ", shape_string(t.sizes), ")");
}

}  // namespace

void _grouped_mm(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle mat2_h,
                 AtenTensorHandle* offs_h, AtenTensorHandle* bias_h, int32_t* out_dtype,
                 AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto a_p = call.tensor(self_h, "self"), b_p = call.tensor(mat2_h, "mat2");
  const Tensor &a = *a_p, &b = *b_p;
  std::shared_ptr<Tensor> offs_p = offs_h != nullptr ? call.optional_tensor(*offs_h, "offs") : nullptr;
  std::shared_ptr<Tensor> bias_p = bias_h != nullptr ? call.optional_tensor(*bias_h, "bias") : nullptr;
  AOTISHIM_CHECK(&a.device() == &b.device(), call.op, ": tensors are on different devices (",
                 a.device().name(), " and ", b.device().name(), ")");
  const DType dt = a.dtype;
  AOTISHIM_CHECK(dt == DType::Float32 || dt == DType::BFloat16 || dt == DType::Float16,
                 "Expected mat_a to be Float32, BFloat16 or Float16 matrix, got ", dtype_name(dt));
  AOTISHIM_CHECK(b.dtype == dt, "expected m1 and m2 to have the same dtype, but got: ",
                 dtype_name(dt), " != ", dtype_name(b.dtype));
  AOTISHIM_CHECK((a.dim() == 2 || a.dim() == 3) && (b.dim() == 2 || b.dim() == 3),
                 "mat_a and mat_b must be 2-D or 3-D, got sizes ", shape_string(a.sizes), " and ",
                 shape_string(b.sizes));
  const bool a3 = a.dim() == 3, b3 = b.dim() == 3;
  AOTISHIM_CHECK((offs_p != nullptr) == !(a3 && b3),
                 "Have to provide offsets if there is a 2d matrix, or no offset if both matrices "
                 "are 3d");
  AOTISHIM_CHECK(bias_p == nullptr, "Bias not supported yet");
  AOTISHIM_CHECK(out_dtype == nullptr || *out_dtype == static_cast<int32_t>(dt),
                 "Grouped gemm output dtype must match `mat_a` dtype");
  if (offs_p) {
    AOTISHIM_CHECK(&offs_p->device() == &a.device(), call.op, ": offs is on ",
                   offs_p->device().name(), ", the matrices on ", a.device().name());
    AOTISHIM_CHECK(offs_p->dtype == DType::Int32, "Offsets have to be int32");
    AOTISHIM_CHECK(offs_p->dim() == 1, "offs has to be 1D");
  }
  AOTISHIM_CHECK(a.sizes[a.dim() - 1] == b.sizes[b.dim() - 2],
                 "contraction dimension of mat_a and mat_b must match");
  const int64_t groups = offs_p ? offs_p->sizes[0] : a.sizes[0];
  if (a3 && b3)
    AOTISHIM_CHECK(a.sizes[0] == b.sizes[0], "batched dimension has to match");
  if (a3 != b3)
    AOTISHIM_CHECK((a3 ? a.sizes[0] : b.sizes[0]) == groups, "matrix batch sizes have to match");
  check_strides(a);
  check_strides(b);

  // torch's output: rows padded to 16 bytes.
  const int64_t align = 16 / static_cast<int64_t>(element_size(dt));
  const int64_t M = a.sizes[a.dim() - 2], N = b.sizes[b.dim() - 1];
  const int64_t row = (N + align - 1) / align * align;
  std::vector<int64_t> sizes, strides;
  if (a3 == b3) {  // one result per group
    sizes = {groups, M, N};
    strides = {M * row, row, 1};
  } else {
    sizes = {M, N};
    strides = {row, 1};
  }
  GroupedMmArgs args;
  args.a = a;
  args.b = b;
  args.has_offs = offs_p != nullptr;
  if (offs_p) args.offs = *offs_p;
  args.out = make_empty(a.device(), dt, sizes, strides);
  if (args.out.numel() > 0) grouped_mm_kernel.run(a.device(), args);
  *ret0 = register_tensor(args.out);
}

}  // namespace ops
}  // namespace aotishim
