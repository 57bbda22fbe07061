// Test controls of the host Metal (AOTISHIM_METAL_HOST builds only; bound as
// aotishim._core.host_metal). They change how the host runs what Metal
// leaves open, never what a correct program computes:
//   - order: how commands that no buffer object orders are run (schedule.h);
//   - deferred: committed command buffers run only when the host waits for
//     one (then every one committed before it too), as a slow GPU would, so
//     a missing wait reads poison every time instead of some of the time;
//   - checker: the hazard checker (hazards.h), on unless
//     AOTISHIM_METAL_HOST_CHECKER=0.
// Plus a no-copy alias: a second buffer object over a buffer's bytes, as
// newBufferWithBytesNoCopy makes one, which Metal does not order with the
// first; the regression tests of the offset-view defect need it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "devices/mps/host/schedule.h"
#include "devices/mps/metal.h"

namespace aotishim::metal::host {

struct Config {
  mps::host::Order order = mps::host::Order::Fifo;
  uint64_t seed = 0;
  bool deferred = false;
  bool checker = true;
};

void configure(const Config& config);
Config config();
// Hazards reported since the process started.
uint64_t hazards();
// A buffer object over bytes [offset, offset + length) of `buffer`'s memory.
std::shared_ptr<Buffer> make_alias(const std::shared_ptr<Buffer>& buffer, size_t offset,
                                   size_t length);
// The buffer object's identity, as hazard messages name it.
uint64_t buffer_id(const Buffer& buffer);

}  // namespace aotishim::metal::host
