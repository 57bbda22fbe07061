// _trilinear: torch's checks and messages (dim lists wrapped and checked for
// repeats, unroll_dim's range, matching non-broadcast sizes), the result's
// shape (the summed dims dropped) and contiguous layout.
#include "ops/trilinear.h"

#include <algorithm>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace {

std::vector<bool> dim_bits(const char* op, const int64_t* dims, int64_t len, int64_t total) {
  std::vector<bool> bits(static_cast<size_t>(total), false);
  AOTISHIM_CHECK(len == 0 || dims != nullptr, op, ": a dim list is null");
  for (int64_t i = 0; i < len; ++i) {
    int64_t d = dims[i];
    AOTISHIM_CHECK(d >= -total && d < total, op, ": Dimension out of range (expected to be in "
                   "range of [", -total, ", ", total - 1, "], but got ", d, ")");
    if (d < 0) d += total;
    AOTISHIM_CHECK(!bits[d], op, ": dim ", d, " appears multiple times in the list of dims");
    bits[d] = true;
  }
  return bits;
}

// t with a size-1, stride-0 dim at every expanded position (size-1 dims get
// stride 0 too, so that they broadcast).
Tensor expanded_view(const char* op, const char* name, const Tensor& t,
                     const std::vector<bool>& expand) {
  const int64_t total = static_cast<int64_t>(expand.size());
  const int64_t count = std::count(expand.begin(), expand.end(), true);
  AOTISHIM_CHECK(t.dim() + count == total, op, ": ", name, " has ", t.dim(), " dims and ", count,
                 " expanded, but the result has ", total);
  std::vector<int64_t> sizes, strides;
  int64_t next = 0;
  for (int64_t i = 0; i < total; ++i) {
    if (expand[i]) {
      sizes.push_back(1);
      strides.push_back(0);
    } else {
      sizes.push_back(t.sizes[next]);
      strides.push_back(t.sizes[next] == 1 ? 0 : t.strides[next]);
      ++next;
    }
  }
  return make_view(t, sizes, strides, t.storage_offset);
}

}  // namespace

namespace ops {

Op<void(const TrilinearArgs&)> trilinear_kernel("_trilinear");

void _trilinear(const OpCall& call, AtenTensorHandle i1_h, AtenTensorHandle i2_h,
                AtenTensorHandle i3_h, const int64_t* expand1, int64_t expand1_len_,
                const int64_t* expand2, int64_t expand2_len_, const int64_t* expand3,
                int64_t expand3_len_, const int64_t* sumdim, int64_t sumdim_len_,
                int64_t unroll_dim, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const char* op = call.op;
  auto i1_p = call.tensor(i1_h, "i1");
  auto i2_p = call.tensor(i2_h, "i2");
  auto i3_p = call.tensor(i3_h, "i3");
  const Tensor &i1 = *i1_p, &i2 = *i2_p, &i3 = *i3_p;
  const int64_t total = i1.dim() + expand1_len_;
  AOTISHIM_CHECK(unroll_dim >= 0 && unroll_dim < total, op, ": unroll_dim must be in [0,",
                 total - 1, "]");
  AOTISHIM_CHECK(i1.dtype == i2.dtype && i1.dtype == i3.dtype, op, ": expected scalar type ",
                 dtype_name(i1.dtype), " but found ",
                 dtype_name(i1.dtype != i2.dtype ? i2.dtype : i3.dtype));
  AOTISHIM_CHECK(is_floating(i1.dtype), op, ": ", dtype_name(i1.dtype),
                 " is not supported (the floating types are)");
  const auto e1 = dim_bits(op, expand1, expand1_len_, total);
  const auto e2 = dim_bits(op, expand2, expand2_len_, total);
  const auto e3 = dim_bits(op, expand3, expand3_len_, total);
  const auto sum = dim_bits(op, sumdim, sumdim_len_, total);
  TrilinearArgs a;
  a.i1 = expanded_view(op, "i1", i1, e1);
  a.i2 = expanded_view(op, "i2", i2, e2);
  a.i3 = expanded_view(op, "i3", i3, e3);
  std::vector<int64_t> full(static_cast<size_t>(total)), kept;
  for (int64_t i = 0; i < total; ++i) {
    int64_t s = 1;
    for (const Tensor* t : {&a.i1, &a.i2, &a.i3}) {
      const int64_t z = t->sizes[i];
      AOTISHIM_CHECK(z == 1 || s == 1 || z == s, op, ": non-broadcast dimensions must match");
      if (z != 1) s = z;
    }
    full[i] = sum[i] ? 1 : s;
    if (!sum[i]) kept.push_back(s);
  }
  a.sum12.assign(static_cast<size_t>(total), false);
  a.sum23.assign(static_cast<size_t>(total), false);
  for (int64_t i = 0; i < total; ++i) {
    if (!sum[i] || i == unroll_dim) continue;
    (e3[i] ? a.sum12 : a.sum23)[i] = true;
  }
  a.unroll_dim = unroll_dim;
  a.unroll_summed = sum[unroll_dim];
  Device& device = i1.device();
  Tensor out = make_empty(device, i1.dtype, kept);
  if (out.numel() > 0) {
    a.out = make_view(out, full, contiguous_strides(full), out.storage_offset);
    trilinear_kernel.run(device, a);
  }
  *ret0 = register_tensor(out);
}

}  // namespace ops
}  // namespace aotishim
