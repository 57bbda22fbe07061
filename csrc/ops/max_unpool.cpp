// max_unpool2d/3d: torch's checks and messages; the output follows a
// channels-last input for the 2-D op on the cpu and is contiguous otherwise,
// as torch's kernels lay them out (its cuda kernels always give a contiguous
// output). stride and padding of the 3-D op are
// only checked: the indices say where each value goes.
#include "ops/max_unpool.h"

#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"
#include "ops/pool_geometry.h"

namespace aotishim {
namespace {

void unpool(const ops::OpCall& call, int64_t n, AtenTensorHandle self_h,
            AtenTensorHandle indices_h, const int64_t* output_size, int64_t output_len,
            AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  const bool two = n == 2;
  auto self_p = call.tensor(self_h, "self");
  auto indices_p = call.tensor(indices_h, "indices");
  const Tensor &self = *self_p, &indices = *indices_p;
  AOTISHIM_CHECK(indices.dtype == DType::Int64, call.op,
                 ": elements in indices should be type int64 but got: ", dtype_name(indices.dtype));
  if (two) {
    AOTISHIM_CHECK(output_len == 2 && output_size != nullptr, call.op,
                   ": There should be exactly two elements (height, width) in output_size, but "
                   "got ", output_len, " elements.");
    AOTISHIM_CHECK(self.dim() == 3 || self.dim() == 4, call.op,
                   ": Input to max_unpooling2d should be a 3d or 4d Tensor, but got a tensor "
                   "with ", self.dim(), " dimensions.");
  } else {
    AOTISHIM_CHECK(self.dim() == 4 || self.dim() == 5, call.op,
                   ": Input to max_unpooling3d should be a 4d or 5d Tensor, but got a tensor "
                   "with ", self.dim(), " dimensions.");
    AOTISHIM_CHECK(output_len == 3 && output_size != nullptr, call.op,
                   ": There should be exactly three elements (depth, height, width) in "
                   "output_size, but got ", output_len, " elements.");
  }
  AOTISHIM_CHECK(self.sizes == indices.sizes, call.op,
                 ": Expected shape of indices to be same as that of the input tensor (",
                 shape_string(self.sizes), ") but got indices tensor with shape: ",
                 shape_string(indices.sizes));
  for (int64_t i = 1; i < self.dim(); ++i)
    AOTISHIM_CHECK(self.sizes[i] > 0, call.op, ": Expected input to have non-zero size for "
                   "non-batch dimensions, but got ", shape_string(self.sizes), " with dimension ",
                   i, " being empty.");
  for (int64_t i = 0; i < n; ++i)
    AOTISHIM_CHECK(output_size[i] >= 0, call.op, ": output_size must be non-negative, got ",
                   output_size[i]);
  AOTISHIM_CHECK(is_floating(self.dtype), call.op, ": ", dtype_name(self.dtype),
                 " is not supported (the floating types are)");
  std::vector<int64_t> out_sizes(self.sizes.begin(), self.sizes.end() - n);
  out_sizes.insert(out_sizes.end(), output_size, output_size + n);
  Device& device = self.device();
  const bool follows_layout = two && device.type() != DeviceType::CUDA;
  Tensor out = make_empty(device, self.dtype, out_sizes,
                          follows_layout ? pool_output_strides(self, n, out_sizes)
                                         : contiguous_strides(out_sizes));
  if (out.numel() > 0) {
    UnpoolArgs a;
    a.self = pool_view_5d(self, n);
    a.indices = pool_view_5d(indices, n);
    a.out = pool_view_5d(out, n);
    a.spatial = n;
    ops::max_unpool_kernel.run(device, a);
  }
  *ret0 = register_tensor(out);
}

}  // namespace

namespace ops {

Op<void(const UnpoolArgs&)> max_unpool_kernel("max unpooling");

void max_unpool2d(const OpCall& call, AtenTensorHandle self, AtenTensorHandle indices,
                  const int64_t* output_size, int64_t output_size_len_, AtenTensorHandle* ret0) {
  unpool(call, 2, self, indices, output_size, output_size_len_, ret0);
}

void max_unpool3d(const OpCall& call, AtenTensorHandle self, AtenTensorHandle indices,
                  const int64_t* output_size, int64_t output_size_len_, const int64_t* stride,
                  int64_t stride_len_, const int64_t* padding, int64_t padding_len_,
                  AtenTensorHandle* ret0) {
  AOTISHIM_CHECK(stride_len_ == 3 && stride != nullptr, call.op,
                 ": There should be exactly three elements (depth, height, width) in stride, "
                 "but got: ", stride_len_, " elements.");
  AOTISHIM_CHECK(padding_len_ == 3 && padding != nullptr, call.op,
                 ": There should be exactly three elements (depth, height, width) in padding, "
                 "but got: ", padding_len_, " elements.");
  AOTISHIM_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0, call.op,
                 ": strides should be greater than zero, but got stride: ",
                 shape_string({stride[0], stride[1], stride[2]}));
  unpool(call, 3, self, indices, output_size, output_size_len_, ret0);
}

}  // namespace ops
}  // namespace aotishim
