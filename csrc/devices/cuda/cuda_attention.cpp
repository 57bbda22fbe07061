// AttentionArgs on the cuda device: the views as they lie go to the attention
// kernel (attention_kernel.cu) on the current stream.
#include "core/error.h"
#include "devices/cuda/attention_kernel.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "ops/attention.h"

namespace aotishim {
namespace cuda {
namespace {

void copy_strides(int64_t* dst, const Tensor& t) {
  for (int64_t d = 0; d < t.dim(); ++d) dst[d] = t.strides[d];
}

void attention_kernel(const AttentionArgs& a) {
  CudaDevice& device = static_cast<CudaDevice&>(a.q.device());
  DeviceScope on(device.index());
  AttentionLaunch p;
  p.dtype = a.q.dtype;
  p.B = a.q.sizes[0];
  p.H = a.q.sizes[1];
  p.Lq = a.q.sizes[2];
  p.D = a.q.sizes[3];
  p.Hkv = a.k.sizes[1];
  p.Lk = a.k.sizes[2];
  p.Dv = a.v.sizes[3];
  p.q = a.q.data();
  p.k = a.k.data();
  p.v = a.v.data();
  p.out = a.out.data();
  copy_strides(p.q_st, a.q);
  copy_strides(p.k_st, a.k);
  copy_strides(p.v_st, a.v);
  copy_strides(p.out_st, a.out);
  if (a.has_bias) {
    p.bias = a.bias.data();
    copy_strides(p.bias_st, a.bias);
  }
  if (a.has_lse) {
    p.lse = reinterpret_cast<float*>(a.lse.data());
    copy_strides(p.lse_st, a.lse);
    p.lse_rows = a.lse.sizes[2];
  }
  p.causal = a.causal;
  p.scale = static_cast<float>(a.scale);
  device.count_command();
  launch_attention(p, device.stream());
}

AOTISHIM_REGISTER_KERNEL(ops::attention, DeviceType::CUDA, attention_kernel);

}  // namespace
}  // namespace cuda
}  // namespace aotishim
