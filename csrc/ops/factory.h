// The arguments torch's factory ops share (a size list, layout, device,
// pinning), checked as torch checks them: shared by the ops that make a
// tensor from nothing (the random factories, windows, zero tensors).
#pragma once

#include <cstdint>

#include "core/device.h"
#include "ops/op_call.h"

namespace aotishim {
namespace ops {

// Throws unless the size list is readable and has no negative size.
void check_sizes(const OpCall& call, const int64_t* size, int64_t size_len);

// Only the strided layout (0) and unpinned memory are supported.
void check_layout_and_pinning(const OpCall& call, const int32_t* layout,
                              const int32_t* pin_memory);

// The device a factory makes its tensor on: the one it names, else the one
// the entry promises (the cpu for aotishim_* entries).
Device& factory_device(const OpCall& call, const int32_t* device, int32_t device_index);

}  // namespace ops
}  // namespace aotishim
