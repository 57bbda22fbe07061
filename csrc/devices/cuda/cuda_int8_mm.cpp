// _int_mm and _weight_int8pack_mm on cuda: the operands as they lie (any
// strides) into the tiled kernels of int8_mm_kernels.cu, on the current stream.
#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/int8_mm_kernels.h"
#include "ops/int_mm.h"
#include "ops/weight_int8pack_mm.h"

namespace aotishim {
namespace cuda {

namespace {

Matrix2d matrix(const Tensor& t) {
  Matrix2d m;
  m.data = t.data();
  m.s0 = t.strides[0];
  m.s1 = t.strides[1];
  return m;
}

void int_mm(const IntMmArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  const int64_t M = a.self.sizes[0], K = a.self.sizes[1], N = a.mat2.sizes[1];
  device.count_command();
  launch_int_mm(matrix(a.out), matrix(a.self), matrix(a.mat2), M, N, K, device.stream());
}

void weight_int8pack_mm(const WeightInt8PackMmArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  const int64_t M = a.self.sizes[0], K = a.self.sizes[1], N = a.mat2.sizes[0];
  device.count_command();
  launch_weight_int8pack_mm(a.self.dtype, matrix(a.out), matrix(a.self), matrix(a.mat2),
                            a.scales.data(), a.scales.strides[0], M, N, K, device.stream());
}

AOTISHIM_REGISTER_KERNEL(ops::int_mm_kernel, DeviceType::CUDA, int_mm);
AOTISHIM_REGISTER_KERNEL(ops::weight_int8pack_mm_kernel, DeviceType::CUDA, weight_int8pack_mm);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
