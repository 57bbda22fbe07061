#include "devices/mps/host/test_controls.h"

#include <algorithm>

#include "core/error.h"
#include "core/handle_registry.h"
#include "devices/mps/host/controls.h"
#include "devices/mps/mps_device.h"

namespace aotishim::host_metal {

using mps::host::Order;

void configure(const std::string& order, uint64_t seed, bool deferred, bool checker) {
  metal::host::Config c;
  if (order == "fifo") c.order = Order::Fifo;
  else if (order == "reverse") c.order = Order::Reverse;
  else if (order == "shuffle") c.order = Order::Shuffle;
  else fail(str("host Metal: unknown order '", order, "' (fifo, reverse or shuffle)"));
  c.seed = seed;
  c.deferred = deferred;
  c.checker = checker;
  metal::host::configure(c);
}

Settings settings() {
  const metal::host::Config c = metal::host::config();
  const char* order = c.order == Order::Fifo ? "fifo" : c.order == Order::Reverse ? "reverse" : "shuffle";
  return {order, c.seed, c.deferred, c.checker};
}

uint64_t hazards() { return metal::host::hazards(); }

AtenTensorHandle make_alias(AtenTensorHandle handle) {
  std::shared_ptr<Tensor> t = lookup(handle, "tensor");
  AOTISHIM_CHECK(t->device().type() == DeviceType::MPS, "host_metal.make_alias: tensor is on ",
                 t->device().name(), ", not mps");
  auto& device = static_cast<MpsDevice&>(t->device());
  const size_t n = std::max<size_t>(t->extent_bytes(), 1);
  auto [buffer, offset] = device.buffer_at(t->data(), n);
  Tensor alias;
  // The alias keeps the parent's storage (and so its bytes) alive.
  alias.storage = Storage::borrow(device, t->data(), n, t->storage);
  alias.storage_offset = 0;
  alias.sizes = t->sizes;
  alias.strides = t->strides;
  alias.dtype = t->dtype;
  device.bind_storage(alias.storage, metal::host::make_alias(buffer, offset, n));
  return register_tensor(std::move(alias));
}

std::vector<uint8_t> host_read(const void* addr, size_t nbytes) {
  return mps_device().read_unsynchronized(addr, nbytes);
}

bool is_buffer_base(const void* addr) {
  return mps_device().owns(addr) && mps_device().buffer_at(addr, 1).second == 0;
}

bool has_pending_writes(const void* addr, bool exact_base) {
  return mps_device().has_pending_writes(addr, exact_base);
}

}  // namespace aotishim::host_metal
