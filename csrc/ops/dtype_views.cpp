// The views that reinterpret a tensor's elements as another dtype:
// view_dtype, view_as_real and view_as_complex. Each returns a new handle over
// the same storage (never a copy) with torch's geometry and torch's errors
// for views that cannot exist. Nothing runs on a device, so every device
// gets them alike.
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

namespace {

// What a view of `from` as `to` needs, named as torch names it.
std::string reinterpretation(DType from, DType to) {
  return str(" to view ", dtype_name(from), " as ", dtype_name(to), " (different element sizes)");
}

}  // namespace

void view_dtype(const OpCall& call, AtenTensorHandle self_h, int32_t dtype_code,
                AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const Tensor& self = *call.tensor(self_h, "self");
  const DType to = dtype_from_int(dtype_code);
  const int64_t from_size = static_cast<int64_t>(self.itemsize());
  const int64_t to_size = static_cast<int64_t>(element_size(to));
  std::vector<int64_t> sizes = self.sizes, strides = self.strides;
  int64_t offset = self.storage_offset;
  if (from_size != to_size) {
    const std::string what = reinterpretation(self.dtype, to);
    AOTISHIM_CHECK(self.dim() > 0, "self.dim() cannot be 0", what);
    const size_t last = sizes.size() - 1;
    AOTISHIM_CHECK(strides[last] == 1, "self.stride(-1) must be 1", what, ", but got ",
                   strides[last]);
    if (to_size > from_size) {  // fewer, wider elements
      const int64_t ratio = to_size / from_size;
      AOTISHIM_CHECK(sizes[last] % ratio == 0, "self.size(-1) must be divisible by ", ratio,
                     what, ", but got ", sizes[last]);
      AOTISHIM_CHECK(offset % ratio == 0, "self.storage_offset() must be divisible by ", ratio,
                     what, ", but got ", offset);
      for (size_t d = 0; d < last; ++d)
        AOTISHIM_CHECK(strides[d] % ratio == 0, "self.stride(", d, ") must be divisible by ",
                       ratio, what, ", but got ", strides[d]);
      sizes[last] /= ratio;
      for (size_t d = 0; d < last; ++d) strides[d] /= ratio;
      offset /= ratio;
    } else {  // more, narrower elements
      const int64_t ratio = from_size / to_size;
      sizes[last] *= ratio;
      for (size_t d = 0; d < last; ++d) strides[d] *= ratio;
      offset *= ratio;
    }
  }
  Tensor view = self;
  view.dtype = to;
  view.sizes = std::move(sizes);
  view.strides = std::move(strides);
  view.storage_offset = offset;
  check_in_bounds(view);
  *ret0 = register_tensor(std::move(view));
}

void view_as_real(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const Tensor& self = *call.tensor(self_h, "self");
  AOTISHIM_CHECK(is_complex(self.dtype), "view_as_real is only supported for complex tensors");
  std::vector<int64_t> sizes = self.sizes, strides = self.strides;
  for (int64_t& s : strides) s *= 2;
  sizes.push_back(2);
  strides.push_back(1);
  Tensor view = self;
  view.dtype = complex_part(self.dtype);
  view.sizes = std::move(sizes);
  view.strides = std::move(strides);
  view.storage_offset = self.storage_offset * 2;
  check_in_bounds(view);
  *ret0 = register_tensor(std::move(view));
}

void view_as_complex(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const Tensor& self = *call.tensor(self_h, "self");
  AOTISHIM_CHECK(self.dtype == DType::Float32 || self.dtype == DType::Float64,
                 "view_as_complex is only supported for float and double tensors, but got a "
                 "tensor of scalar type: ", dtype_name(self.dtype),
                 self.dtype == DType::Float16 ? " (complex32 tensors are not supported here)" : "");
  AOTISHIM_CHECK(self.dim() != 0, "Input tensor must have one or more dimensions");
  AOTISHIM_CHECK(self.sizes.back() == 2, "Tensor must have a last dimension of size 2");
  AOTISHIM_CHECK(self.strides.back() == 1, "Tensor must have a last dimension with stride 1");
  std::vector<int64_t> sizes(self.sizes.begin(), self.sizes.end() - 1);
  std::vector<int64_t> strides(self.strides.begin(), self.strides.end() - 1);
  for (int64_t& s : strides) {
    AOTISHIM_CHECK(s % 2 == 0, "Tensor must have a stride divisible by 2 for all but last dimension");
    s /= 2;
  }
  AOTISHIM_CHECK(self.storage_offset % 2 == 0, "Tensor must have a storage_offset divisible by 2");
  Tensor view = self;
  view.dtype = self.dtype == DType::Float32 ? DType::Complex64 : DType::Complex128;
  view.sizes = std::move(sizes);
  view.strides = std::move(strides);
  view.storage_offset = self.storage_offset / 2;
  check_in_bounds(view);
  *ret0 = register_tensor(std::move(view));
}

}  // namespace ops
}  // namespace aotishim
