// Declarations of the fallback-op shims, generated from fallback_ops.def:
// aoti_torch_cpu_<op>, aoti_torch_cuda_<op>, aoti_torch_mps_<op> where torch
// declares them, and aotishim_<op>, the device-generic entry (any device,
// taken from the tensors) for native runners and tests.
#pragma once

#include <stddef.h>

#include "aotishim/c_shim.h"

#define AOTISHIM_IF_0(...)
#define AOTISHIM_IF_1(...) __VA_ARGS__
#define AOTISHIM_IF(flag, ...) AOTISHIM_IF_##flag(__VA_ARGS__)

#ifdef __cplusplus
extern "C" {
#endif

// One row of the table, for introspection (Python builds its wrappers from it).
typedef struct {
  const char* name;    // "mm_out"
  const char* params;  // "(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2)"
  int cpu, cuda, mps;  // 1 where aoti_torch_<device>_<name> exists
} AotishimFallbackOp;
AOTISHIM_API const AotishimFallbackOp* aotishim_fallback_ops(size_t* count);

#define AOTISHIM_FALLBACK_OP(name, on_cpu, on_cuda, on_mps, params, args)             \
  AOTISHIM_IF(on_cpu, AOTISHIM_API AOTITorchError aoti_torch_cpu_##name params;)   \
  AOTISHIM_IF(on_cuda, AOTISHIM_API AOTITorchError aoti_torch_cuda_##name params;) \
  AOTISHIM_IF(on_mps, AOTISHIM_API AOTITorchError aoti_torch_mps_##name params;)   \
  AOTISHIM_API AOTITorchError aotishim_##name params;
#include "aotishim/fallback_ops.def"
#undef AOTISHIM_FALLBACK_OP

#ifdef __cplusplus
}  // extern "C"
#endif
