// The public C++ API (aotishim/runtime.h) over the core.
#include "aotishim/runtime.h"

#include "core/copy.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "core/scope.h"
#include "core/device.h"

namespace aotishim {

void check(AOTITorchError err) {
  if (err != AOTI_TORCH_SUCCESS) throw Error(last_error().empty() ? "aotishim call failed" : last_error());
}

std::vector<std::string> devices() { return available_devices(); }

void synchronize(const std::string& device) {
  DeviceType type;
  int32_t index;
  parse_device(device, type, index);
  get_device(type, index).synchronize();
}

AbiDevice parse_device_abi(const std::string& device) {
  DeviceType type;
  int32_t index;
  parse_device(device, type, index);
  return AbiDevice{static_cast<int32_t>(type), type == DeviceType::CPU ? -1 : index};
}

uint64_t create_scope(const std::string& name) { return new_scope(name); }

std::vector<std::string> destroy_scope(uint64_t scope) {
  AOTISHIM_CHECK(scope != kDefaultScope, "the default scope cannot be destroyed");
  return release_and_forget_scope(scope);
}

uint64_t current_scope_id() { return current_scope(); }

ScopeGuard::ScopeGuard(uint64_t scope) : previous_(set_current_scope(scope)) {}
ScopeGuard::~ScopeGuard() {
  // The previous scope may have been destroyed meanwhile, also by another
  // thread between a check and a set: fall back to default, never throw.
  restore_current_scope(previous_);
}

size_t cleanup_memory() { return release_scope(current_scope()).size(); }

MemoryStats memory_stats() {
  MemoryStats stats;
  stats.released_handles = released_count();
  stats.scopes = scope_stats();
  for (Device* d : created_devices()) {
    DeviceCounters c = d->counters();
    stats.devices.push_back(DeviceMemory{d->name(), d->allocations().count(), d->allocations().bytes(),
                                         c.synchronizes, c.hazards, c.commands});
  }
  stats.live_tensors = live_count();
  return stats;
}

bool is_live_handle(AtenTensorHandle handle) { return is_live(handle); }

TensorInfo tensor_info(AtenTensorHandle handle) {
  auto t = lookup(handle);
  TensorInfo info;
  info.sizes = t->sizes;
  info.strides = t->strides;
  info.storage_offset = t->storage_offset;
  info.dtype = static_cast<int32_t>(t->dtype);
  info.device = t->device().name();
  info.data_ptr = t->data();
  info.storage_nbytes = t->storage->nbytes();
  info.owns_storage = t->storage->owned();
  return info;
}

void copy_to_host(AtenTensorHandle src, void* dst) {
  auto t = lookup(src, "src");
  AOTISHIM_CHECK(dst != nullptr || t->numel() == 0, "destination pointer is null");
  copy_to_host_packed(*t, dst);
}

AtenTensorHandle borrow_host_memory(void* data, const std::vector<int64_t>& sizes,
                                    const std::vector<int64_t>& strides, int32_t dtype,
                                    std::shared_ptr<void> keepalive) {
  return register_tensor(borrowed_tensor(get_device(DeviceType::CPU), data,
                                         static_cast<int64_t>(sizes.size()), sizes.data(),
                                         strides.empty() ? nullptr : strides.data(),
                                         dtype_from_int(dtype), 0, std::move(keepalive)));
}

AtenTensorHandle copy_from_host(const void* data, const std::vector<int64_t>& sizes,
                                const std::vector<int64_t>& strides, int32_t dtype,
                                const std::string& device) {
  DeviceType type;
  int32_t index;
  parse_device(device, type, index);
  Tensor host = borrowed_tensor(get_device(DeviceType::CPU), const_cast<void*>(data),
                                static_cast<int64_t>(sizes.size()), sizes.data(),
                                strides.empty() ? nullptr : strides.data(), dtype_from_int(dtype));
  Tensor out = make_empty(get_device(type, index), host.dtype, host.sizes);
  copy_tensor(out, host);
  return register_tensor(std::move(out));
}

namespace {
Device& named_device(const std::string& device) {
  DeviceType type;
  int32_t index;
  parse_device(device, type, index);
  return get_device(type, index);
}
}  // namespace

AtenTensorHandle borrow_memory(const std::string& device, void* data,
                               const std::vector<int64_t>& sizes,
                               const std::vector<int64_t>& strides, int64_t storage_offset,
                               int32_t dtype, std::shared_ptr<void> keepalive) {
  return register_tensor(borrowed_tensor(named_device(device), data,
                                         static_cast<int64_t>(sizes.size()), sizes.data(),
                                         strides.empty() ? nullptr : strides.data(),
                                         dtype_from_int(dtype), storage_offset,
                                         std::move(keepalive)));
}

std::shared_ptr<void> retain_storage(AtenTensorHandle handle) { return lookup(handle)->storage; }

intptr_t device_stream(const std::string& device) {
  return named_device(device).current_stream_handle();
}

void order_stream_after_device(const std::string& device, intptr_t stream) {
  named_device(device).order_stream_after_device(stream);
}

void order_device_after_stream(const std::string& device, intptr_t stream) {
  named_device(device).order_device_after_stream(stream);
}

}  // namespace aotishim
