// The validation step of every fallback op, declared from the op table
// (aotishim/fallback_ops.def): aotishim::ops::<name>(call, <the shim's
// parameters>). Each is defined in its op's file (csrc/ops/<op>.cpp); it
// resolves handles, checks and normalises arguments, and runs the kernel the
// tensors' device registered.
#pragma once

#include "aotishim/c_shim.h"
#include "ops/op_call.h"

#define AOTISHIM_UNPAREN(...) __VA_ARGS__

namespace aotishim {
namespace ops {

#define AOTISHIM_FALLBACK_OP(name, on_cpu, on_cuda, on_mps, params, args) \
  void name(const OpCall& call, AOTISHIM_UNPAREN params);
#include "aotishim/fallback_ops.def"
#undef AOTISHIM_FALLBACK_OP

}  // namespace ops
}  // namespace aotishim
