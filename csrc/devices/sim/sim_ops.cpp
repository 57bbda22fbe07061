// Convolution and attention on sim: the cpu kernels, run as commands on the
// stream. sim memory is host memory, so the cpu kernel reads and writes the
// views where they lie; what the sim adds is the GPU's ordering: each
// command binds every buffer it reads or writes, so it runs after the work
// that produces its inputs and before the host or a later command sees its
// outputs (the hazard checker and the random schedules test exactly that).
#include "core/device.h"
#include "core/error.h"
#include "devices/sim/sim_device.h"
#include "ops/convolution.h"
#include "ops/sdpa.h"

namespace aotishim {
namespace {

// The cpu kernel of `op`, looked up when the command is recorded (a clear
// error then, not when the stream runs, if there is none).
template <typename Op>
auto cpu_kernel(const Op& op) {
  return op.kernel_for(get_device(DeviceType::CPU, 0));
}

void sim_conv(const ConvArgs& a) {
  auto kernel = cpu_kernel(ops::conv);
  // Refused now: the cpu kernel's own refusal would come only when the
  // stream runs, after the op had returned an output.
  AOTISHIM_CHECK(a.out.dtype != DType::Float16,
                 "unsupported dtype float16 for convolution on sim (it runs the CPU kernel, "
                 "which supports float32, float64, bfloat16)");
  std::vector<SimDevice::Role> reads = {{"input", &a.input}, {"weight", &a.weight}};
  if (a.has_bias) reads.push_back({"bias", &a.bias});
  static_cast<SimDevice&>(a.out.device())
      .host_command("convolution", reads, {{"out", &a.out}}, [a, kernel] { kernel(a); });
}

void sim_sdpa(const SdpaArgs& a) {
  auto kernel = cpu_kernel(ops::sdpa);
  std::vector<SimDevice::Role> reads = {{"q", &a.q}, {"k", &a.k}, {"v", &a.v}};
  if (a.has_mask) reads.push_back({"mask", &a.mask});
  std::vector<SimDevice::Role> writes = {{"out", &a.out}, {"lse", &a.lse}};
  if (a.has_probs) writes.push_back({"probs", &a.probs});
  static_cast<SimDevice&>(a.out.device())
      .host_command("scaled_dot_product_attention", reads, writes, [a, kernel] { kernel(a); });
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::conv, DeviceType::Sim, sim_conv);
AOTISHIM_REGISTER_KERNEL(ops::sdpa, DeviceType::Sim, sim_sdpa);

}  // namespace aotishim
