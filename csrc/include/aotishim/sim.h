// Controls and test probes of the `sim` device: a deterministic model of an
// asynchronous GPU with Metal's ordering rules (see DESIGN.md, Devices).
//
// Memory is host memory; each allocation is its own buffer object, poisoned
// with 0xFF bytes when allocated (NaN as float16, bfloat16, float32 and
// float64; -1 as signed integers; 255 as uint8), so a read of bytes no command
// wrote shows. Like a GPU's caching allocator, freed blocks are kept and handed
// back to the next allocation of the same rounded size (last freed first), so
// addresses are reused deterministically. Work is recorded and runs at a synchronize, before a host
// access that needs it, or every `flush_interval` queued commands.
// Errors throw aotishim::Error.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "aotishim/c_shim.h"
#include "aotishim/error.h"
#include "aotishim/export.h"

namespace aotishim::sim {

// How the scheduler orders commands that nothing orders: in submission order,
// in reverse, or shuffled with `seed`.
enum class Order : int32_t { Fifo = 0, Reverse = 1, Shuffle = 2 };

struct Config {
  Order order = Order::Fifo;
  uint64_t seed = 0;
  size_t flush_interval = 0;  // run the stream every N queued commands; 0 = only when needed
  bool checker = true;        // report hazards as errors
};

// Applies to sim:0 from now on: the next run of the stream (including work
// already queued) uses the new order and seed; the checker applies to
// accesses made from now on.
AOTISHIM_API void configure(const Config& config);
AOTISHIM_API Config config();

AOTISHIM_API size_t pending_commands();
// Names of the commands run by the latest drain of the stream, in the order
// they ran ("#3 gemm", ...): proof of what the scheduler did.
AOTISHIM_API std::vector<std::string> last_execution_order();
AOTISHIM_API void reset_counters();

// A new tensor over the same bytes as `tensor`'s view, bound to a new buffer
// object, as Metal's newBufferWithBytesNoCopy makes one. Work through it is NOT
// ordered with work through the parent: test-only, to reproduce the defect of
// binding views that way. The parent's memory stays alive while the alias does.
AOTISHIM_API AtenTensorHandle make_alias(AtenTensorHandle tensor);

// Probes for reproducing the old exact-address algorithm.
// Is addr the first byte of a live buffer object?
AOTISHIM_API bool is_buffer_base(const void* addr);
// Pending writes to the buffer object whose base is exactly addr (false when
// addr is not a base: the old defect's blind spot).
AOTISHIM_API bool has_pending_writes_exact_base(const void* addr);
// Pending writes to the buffer object containing addr (found by range).
AOTISHIM_API bool has_pending_writes(const void* addr);

// The host reads sim memory directly, without waiting for anything (as a
// host copy that trusts its own wait would); the checker reports a read of
// bytes with pending writes.
AOTISHIM_API std::vector<uint8_t> host_read(const void* addr, size_t nbytes);

// A raw device allocation (poisoned), as a model's constants blob is malloc'd
// on a GPU; freeing it waits for pending work on it first, as cudaFree does.
AOTISHIM_API void* raw_alloc(size_t nbytes);
AOTISHIM_API void raw_free(void* ptr);

}  // namespace aotishim::sim
