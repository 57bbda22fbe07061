// The host Metal's controls as libaotishim exports them to
// aotishim._core.host_metal (tests only; not an installed header). The
// settings are controls.h's; the probes reproduce the old defects of views
// at offsets so tests can show they fail:
//   - make_alias: a tensor over a view's bytes bound to a second buffer
//     object (the old no-copy path), which Metal does not order with work
//     on the parent, and whose uses the device does not record;
//   - host_read: a host read that does not wait (the old host copy);
//   - is_buffer_base / has_pending_writes: the old exact-address lookup
//     beside the lookup by range.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "aotishim/c_shim.h"
#include "aotishim/export.h"

namespace aotishim::host_metal {

// order: "fifo", "reverse" or "shuffle" (with seed).
AOTISHIM_API void configure(const std::string& order, uint64_t seed, bool deferred, bool checker);
struct Settings {
  std::string order;
  uint64_t seed;
  bool deferred, checker;
};
AOTISHIM_API Settings settings();
AOTISHIM_API uint64_t hazards();
AOTISHIM_API AtenTensorHandle make_alias(AtenTensorHandle tensor);
AOTISHIM_API std::vector<uint8_t> host_read(const void* addr, size_t nbytes);
AOTISHIM_API bool is_buffer_base(const void* addr);
AOTISHIM_API bool has_pending_writes(const void* addr, bool exact_base);

}  // namespace aotishim::host_metal
