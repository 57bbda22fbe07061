// The public aotishim::sim API (aotishim/sim.h) over sim:0.
#include "aotishim/sim.h"

#include <mutex>
#include <set>

#include "core/error.h"
#include "core/handle_registry.h"
#include "devices/sim/sim_device.h"

namespace aotishim::sim {

namespace {
// raw_free frees only what raw_alloc returned, never a storage's allocation.
std::mutex raw_mutex;
std::set<void*>& raw_blocks() {
  static std::set<void*> blocks;
  return blocks;
}
}  // namespace

void configure(const Config& config) { sim_device().configure(config); }
Config config() { return sim_device().config(); }
size_t pending_commands() { return sim_device().pending_commands(); }
std::vector<std::string> last_execution_order() { return sim_device().last_execution_order(); }
void reset_counters() { sim_device().reset_counters(); }

AtenTensorHandle make_alias(AtenTensorHandle tensor) {
  std::shared_ptr<Tensor> t = lookup(tensor, "tensor");
  AOTISHIM_CHECK(t->device().type() == DeviceType::Sim, "sim.make_alias: tensor is on ",
                 t->device().name(), ", not sim");
  return register_tensor(static_cast<SimDevice&>(t->device()).make_alias(*t));
}

bool is_buffer_base(const void* addr) { return sim_device().is_buffer_base(addr); }
bool has_pending_writes_exact_base(const void* addr) {
  return sim_device().has_pending_writes_exact_base(addr);
}
bool has_pending_writes(const void* addr) { return sim_device().has_pending_writes(addr); }

std::vector<uint8_t> host_read(const void* addr, size_t nbytes) {
  return sim_device().host_read(addr, nbytes);
}

void* raw_alloc(size_t nbytes) {
  AOTISHIM_CHECK(nbytes > 0, "sim.raw_alloc: size must be positive");
  void* p = sim_device().allocate(nbytes);
  std::lock_guard<std::mutex> lock(raw_mutex);
  raw_blocks().insert(p);
  return p;
}

void raw_free(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(raw_mutex);
    AOTISHIM_CHECK(raw_blocks().erase(ptr) == 1, "sim.raw_free: 0x", std::hex,
                   reinterpret_cast<uintptr_t>(ptr), " was not returned by sim.raw_alloc or is already freed");
  }
  sim_device().free(ptr);
}

}  // namespace aotishim::sim
