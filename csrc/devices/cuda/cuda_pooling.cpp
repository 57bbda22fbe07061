// avg/max pooling, adaptive pooling and fractional max pooling on cuda: the
// ops' 5-D views go to one kernel each (pooling_kernels.cu), with the
// choices torch's cuda kernels make from the input's layout, which the op
// has already read into the output's (channels-last output: torch's NHWC
// kernel ran).
#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/pooling_kernels.h"
#include "ops/adaptive_pool.h"
#include "ops/fractional_max_pool.h"
#include "ops/pooling.h"

namespace aotishim {
namespace cuda {

namespace {

// A 2-D op's 5-D views have D inserted with stride 0 (ops/pool_geometry.h);
// a 3-D op's fresh output has no zero stride.
bool is_2d_pool(const Tensor& out) { return out.sizes[2] == 1 && out.strides[2] == 0; }

// Whether the op laid its fresh output out channels-last (it does so where
// torch follows a channels-last input).
bool channels_last_output(const Tensor& out) {
  std::vector<int64_t> sizes, strides;
  for (int d = 0; d < 5; ++d) {
    if (out.sizes[d] == 1 && out.strides[d] == 0) continue;  // inserted by pool_view_5d
    sizes.push_back(out.sizes[d]);
    strides.push_back(out.strides[d]);
  }
  return strides != contiguous_strides(sizes);
}

void window_pool(const PoolArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.self.device());
  DeviceScope on(device.index());
  WindowPoolLaunch L;
  L.dtype = a.self.dtype;
  L.self = volume_of(a.self);
  L.out = volume_of(a.out);
  if (a.max) L.indices = volume_of(a.indices);
  for (int i = 0; i < 3; ++i) {
    L.kernel[i] = a.kernel[i];
    L.stride[i] = a.stride[i];
    L.padding[i] = a.padding[i];
    L.dilation[i] = a.dilation[i];
  }
  L.max = a.max;
  L.count_include_pad = a.count_include_pad;
  L.divisor_override = a.divisor_override;
  // torch cuda's channels-last max_pool2d kernel starts every window's index
  // at 0, its other max pool kernels (and the cpu's) at the window's first
  // cell: the two differ where no value of a window is above -inf
  L.first_index_zero = a.max && is_2d_pool(a.out) && channels_last_output(a.out);
  device.count_command();
  launch_window_pool(L, device.stream());
}

void adaptive_pool(const AdaptivePoolArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.self.device());
  DeviceScope on(device.index());
  AdaptivePoolLaunch L;
  L.dtype = a.self.dtype;
  L.self = volume_of(a.self);
  L.out = volume_of(a.out);
  if (a.max) L.indices = volume_of(a.indices);
  L.max = a.max;
  // torch cuda's averages, unlike its cpu kernels' (ops/adaptive_pool.h):
  // the 2-D pool's channels-last kernel (divide_once marks its output)
  // multiplies by the reciprocal of the window's size rounded to the dtype,
  // its contiguous kernel divides by each extent in turn, and the 3-D pool
  // divides once by the window's size
  L.average = !is_2d_pool(a.out) ? AdaptiveAverage::DivideOnce
              : a.divide_once    ? AdaptiveAverage::ReciprocalInDtype
                                 : AdaptiveAverage::DivideInTurn;
  device.count_command();
  launch_adaptive_pool(L, device.stream());
}

void fractional_max_pool(const FractionalPoolArgs& a) {
  AOTISHIM_CHECK(a.samples.dim() == 3, "cuda fractional max pooling: 3-D samples expected");
  auto& device = static_cast<CudaDevice&>(a.self.device());
  DeviceScope on(device.index());
  FractionalPoolLaunch L;
  L.dtype = a.self.dtype;
  L.self = volume_of(a.self);
  L.out = volume_of(a.out);
  L.indices = volume_of(a.indices);
  L.samples = a.samples.data();
  for (int i = 0; i < 3; ++i) {
    L.sample_strides[i] = a.samples.strides[i];
    L.pool[i] = a.pool[i];
  }
  // the sample behind each of D, H, W: 3-D pools take them in that order,
  // 2-D pools W from the first and H from the second (torch's order)
  const int two_d[3] = {-1, 1, 0}, three_d[3] = {0, 1, 2};
  for (int i = 0; i < 3; ++i) L.sample_column[i] = a.spatial == 3 ? three_d[i] : two_d[i];
  device.count_command();
  launch_fractional_max_pool(L, device.stream());
}

AOTISHIM_REGISTER_KERNEL(ops::pool_kernel, DeviceType::CUDA, window_pool);
AOTISHIM_REGISTER_KERNEL(ops::adaptive_pool_kernel, DeviceType::CUDA, adaptive_pool);
AOTISHIM_REGISTER_KERNEL(ops::fractional_max_pool_kernel, DeviceType::CUDA, fractional_max_pool);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
