// fractional_max_pool2d/3d with the random samples given as a tensor (what
// generated code passes: the draw happened before the call), so the op is
// deterministic. torch's checks and messages; outputs contiguous, as torch's
// CPU kernels give them for every input layout.
#include "ops/fractional_max_pool.h"

#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"
#include "ops/pool_geometry.h"

namespace aotishim {
namespace {

void fractional_pool(const ops::OpCall& call, int64_t n, AtenTensorHandle self_h,
                     const int64_t* kernel_size, int64_t kernel_len, const int64_t* output_size,
                     int64_t output_len, AtenTensorHandle samples_h, AtenTensorHandle* ret0,
                     AtenTensorHandle* ret1) {
  require_out(ret0, "ret0");
  require_out(ret1, "ret1");
  const bool two = n == 2;
  const char* op = two ? "fractional_max_pool2d" : "fractional_max_pool3d";
  const char* fn = two ? "fractional_max_pool2d()" : "fractional_max_pool3d_out()";
  AOTISHIM_CHECK(kernel_len == n && kernel_size != nullptr, op,
                 two ? ": kernel_size must either be a single Int or tuple of Ints"
                     : ": kernel_size must either be a single Int or tuple of three Ints");
  AOTISHIM_CHECK(output_len == n && output_size != nullptr, op,
                 two ? ": output_size must either be a single Int or tuple of Ints"
                     : ": output_size must either be a single Int or tuple of three Ints");
  auto self_p = call.tensor(self_h, "self");
  auto samples_p = call.tensor(samples_h, "random_samples");
  const Tensor &self = *self_p, &samples = *samples_p;
  const int64_t nd = self.dim();
  AOTISHIM_CHECK(nd == n + 1 || nd == n + 2, fn, ": Expected ", n + 1, "D or ", n + 2,
                 "D tensor, but got: ", shape_string(self.sizes));
  for (int64_t i = 1; i < nd; ++i)
    AOTISHIM_CHECK(self.sizes[i] > 0, fn, ": Expected input to have non-zero size for non-batch "
                   "dimensions, but got", shape_string(self.sizes), " with dimension ", i,
                   " being empty.");
  AOTISHIM_CHECK(is_floating(self.dtype), op, ": ", dtype_name(self.dtype),
                 " is not supported (the floating types are)");
  AOTISHIM_CHECK(samples.dtype == self.dtype, op,
                 ": Expect _random_samples to have the same dtype as input");
  AOTISHIM_CHECK(samples.dim() == 3, op, ": Expect _random_samples to be 3D, got ",
                 samples.dim(), "D");
  const int64_t batch = nd == n + 2 ? self.sizes[0] : 1, planes = self.sizes[nd - n - 1];
  AOTISHIM_CHECK(samples.sizes[0] >= batch, op,
                 ": Expect _random_samples.size(0) no less then input batch size.");
  AOTISHIM_CHECK(samples.sizes[1] == planes, op,
                 ": Expect _random_samples.size(1) equals to input channel size.");
  AOTISHIM_CHECK(samples.sizes[2] == n, op, ": Expect _random_samples.size(2) equals to ", n,
                 "; got ", samples.sizes[2], ".");
  // torch checks the dims in this order: H, W (2-D); T, H, W (3-D)
  static const char* const names[] = {"time", "height", "width"};
  for (int64_t i = 0; i < n; ++i) {
    const int64_t in = self.sizes[nd - n + i];
    AOTISHIM_CHECK(output_size[i] >= 0, op, ": output_size must be non-negative, got ",
                   output_size[i]);
    AOTISHIM_CHECK(kernel_size[i] >= 0, op, ": kernel_size must be non-negative, got ",
                   kernel_size[i]);
    AOTISHIM_CHECK(output_size[i] + kernel_size[i] - 1 <= in, fn, ": pool ",
                   names[i + 3 - n], " ", kernel_size[i], " too large relative to input ",
                   names[i + 3 - n], " ", in);
  }
  std::vector<int64_t> out_sizes(self.sizes.begin(), self.sizes.end() - n);
  out_sizes.insert(out_sizes.end(), output_size, output_size + n);
  Device& device = self.device();
  Tensor out = make_empty(device, self.dtype, out_sizes);
  Tensor indices = make_empty(device, DType::Int64, out_sizes);
  if (out.numel() > 0) {
    FractionalPoolArgs a;
    a.self = pool_view_5d(self, n);
    a.out = pool_view_5d(out, n);
    a.indices = pool_view_5d(indices, n);
    a.samples = samples;
    a.spatial = n;
    for (int64_t i = 0; i < 3; ++i) a.pool[i] = i >= 3 - n ? kernel_size[i - (3 - n)] : 1;
    ops::fractional_max_pool_kernel.run(device, a);
  }
  *ret0 = register_tensor(out);
  *ret1 = register_tensor(indices);
}

}  // namespace

namespace ops {

Op<void(const FractionalPoolArgs&)> fractional_max_pool_kernel("fractional max pooling");

void fractional_max_pool2d(const OpCall& call, AtenTensorHandle self, const int64_t* kernel_size,
                           int64_t kernel_size_len_, const int64_t* output_size,
                           int64_t output_size_len_, AtenTensorHandle random_samples,
                           AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  fractional_pool(call, 2, self, kernel_size, kernel_size_len_, output_size, output_size_len_,
                  random_samples, ret0, ret1);
}

void fractional_max_pool3d(const OpCall& call, AtenTensorHandle self, const int64_t* kernel_size,
                           int64_t kernel_size_len_, const int64_t* output_size,
                           int64_t output_size_len_, AtenTensorHandle random_samples,
                           AtenTensorHandle* ret0, AtenTensorHandle* ret1) {
  fractional_pool(call, 3, self, kernel_size, kernel_size_len_, output_size, output_size_len_,
                  random_samples, ret0, ret1);
}

}  // namespace ops
}  // namespace aotishim
