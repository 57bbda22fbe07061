// The fallback-op shims, generated from the op table: each entry runs its
// op's validation inside guard(), which turns any error into an error code and
// this thread's last error. Nothing here is written per op or per device.
// The device-generic aotishim_<op> entries do not log: their callers (native
// runners, Python) always check the code and raise the message themselves.
#include "aotishim/fallback_ops.h"
#include "core/error.h"
#include "ops/fallback_ops.h"

using aotishim::DeviceType;

#define AOTISHIM_ENTRY(prefix, type, name, params, args)                                 \
  AOTITorchError aoti_torch_##prefix##_##name params {                                   \
    return aotishim::guard("aoti_torch_" #prefix "_" #name, [&] {                        \
      aotishim::ops::name(aotishim::ops::OpCall{#name, type}, AOTISHIM_UNPAREN args);    \
    });                                                                                  \
  }

extern "C" {

#define AOTISHIM_FALLBACK_OP(name, on_cpu, on_cuda, on_mps, params, args)                         \
  AOTISHIM_IF(on_cpu, AOTISHIM_ENTRY(cpu, DeviceType::CPU, name, params, args))             \
  AOTISHIM_IF(on_cuda, AOTISHIM_ENTRY(cuda, DeviceType::CUDA, name, params, args))          \
  AOTISHIM_IF(on_mps, AOTISHIM_ENTRY(mps, DeviceType::MPS, name, params, args))             \
  AOTITorchError aotishim_##name params {                                                \
    return aotishim::guard("aotishim_" #name, [&] {                                      \
      aotishim::ops::name(aotishim::ops::OpCall{#name, std::nullopt}, AOTISHIM_UNPAREN args); \
    }, /*quiet=*/true);                                                                  \
  }
#include "aotishim/fallback_ops.def"
#undef AOTISHIM_FALLBACK_OP


const AotishimFallbackOp* aotishim_fallback_ops(size_t* count) {
  static const AotishimFallbackOp table[] = {
#define AOTISHIM_FALLBACK_OP(name, on_cpu, on_cuda, on_mps, params, args) \
  {#name, #params, on_cpu, on_cuda, on_mps},
#include "aotishim/fallback_ops.def"
#undef AOTISHIM_FALLBACK_OP
  };
  if (count != nullptr) *count = sizeof(table) / sizeof(table[0]);
  return table;
}

}  // extern "C"
