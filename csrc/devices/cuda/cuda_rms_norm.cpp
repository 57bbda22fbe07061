// _fused_rms_norm on cuda: the validation (ops/rms_norm.cpp) checked the
// shapes and made out (contiguous, input's dtype) and rstd (float32, float64
// for float64 input, as torch cuda's accumulation type); one block per row
// reduces and normalizes (misc_kernels.cu).
#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/misc_kernels.h"
#include "ops/rms_norm.h"

namespace aotishim {
namespace cuda {

namespace {

void fused_rms_norm(const RmsNormArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.input.device());
  DeviceScope on(device.index());
  const int64_t nd = a.input.dim();
  AOTISHIM_CHECK(nd <= kMaxCopyDims, "cuda _fused_rms_norm: up to ", kMaxCopyDims,
                 " dimensions, got ", nd);
  AOTISHIM_CHECK(a.out.is_contiguous() && a.rstd.is_contiguous(),
                 "cuda _fused_rms_norm: out and rstd must be contiguous");
  RmsNormLaunch L;
  L.dtype = a.input.dtype;
  L.input = a.input.data();
  L.input_dims = static_cast<int>(nd);
  for (int64_t d = 0; d < nd; ++d) {
    L.input_sizes[d] = a.input.sizes[d];
    L.input_strides[d] = a.input.strides[d];
  }
  if (a.weight) {
    const Tensor& w = *a.weight;
    AOTISHIM_CHECK(w.dim() <= kMaxCopyDims, "cuda _fused_rms_norm: weight of up to ",
                   kMaxCopyDims, " dimensions");
    L.weight = w.data();
    L.weight_dtype = w.dtype;
    L.weight_dims = static_cast<int>(w.dim());
    for (int64_t d = 0; d < w.dim(); ++d) {
      L.weight_sizes[d] = w.sizes[d];
      L.weight_strides[d] = w.strides[d];
    }
  }
  L.out = a.out.data();
  L.rstd = a.rstd.data();
  L.rows = a.rstd.numel();
  L.n = a.n;
  L.eps = a.eps;
  device.count_command();
  launch_fused_rms_norm(L, device.stream());
}

AOTISHIM_REGISTER_KERNEL(ops::fused_rms_norm_kernel, DeviceType::CUDA, fused_rms_norm);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
