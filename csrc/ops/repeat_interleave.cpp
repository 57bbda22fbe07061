// repeat_interleave.Tensor validation with torch's messages.
#include "ops/repeat_interleave.h"

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(RepeatInterleaveArgs&)> repeat_interleave_kernel("repeat_interleave");

void repeat_interleave_Tensor(const OpCall& call, AtenTensorHandle repeats_h,
                              int64_t* output_size, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto repeats_p = call.tensor(repeats_h, "repeats");
  const Tensor& repeats = *repeats_p;
  AOTISHIM_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  AOTISHIM_CHECK(repeats.dtype == DType::Int64 || repeats.dtype == DType::Int32,
                 "repeats has to be Long or Int tensor");
  AOTISHIM_CHECK(output_size == nullptr || *output_size >= 0,
                 "repeat_interleave: output_size must be non-negative, got ", *output_size);
  RepeatInterleaveArgs args;
  args.repeats = repeats;
  args.output_size = output_size == nullptr ? -1 : *output_size;
  repeat_interleave_kernel.run(repeats.device(), args);
  AOTISHIM_CHECK(args.out.storage != nullptr, "repeat_interleave: the kernel for ",
                 repeats.device().name(), " produced no result");
  *ret0 = register_tensor(args.out);
}

}  // namespace ops
}  // namespace aotishim
