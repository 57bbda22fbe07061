#include "devices/device.h"

#include <map>
#include <mutex>

#include "core/error.h"

namespace aotishim {

namespace {
struct Backend {
  DeviceFactory factory;
  DeviceCount count;
};

struct Devices {
  std::mutex mutex;
  std::map<DeviceType, Backend> backends;
  std::map<std::pair<DeviceType, int32_t>, std::unique_ptr<Device>> created;
};

Devices& devices_state() {
  // Never destroyed: storages may be freed during static destruction.
  static Devices* d = new Devices();
  return *d;
}
}  // namespace

std::string Device::name() const {
  if (type_ == DeviceType::CPU) return "cpu";
  return str(device_type_name(type_), ":", index_);
}

void* Device::allocate(size_t nbytes) {
  void* base = raw_allocate(nbytes);
  AOTISHIM_CHECK(base != nullptr, "out of memory on ", name(), " allocating ", nbytes, " bytes");
  try {
    allocations_.insert(base, nbytes);
  } catch (...) {
    raw_free(base, nbytes);
    throw;
  }
  return base;
}

void Device::free(void* base) {
  Allocation a = allocations_.erase(base);
  raw_free(a.base, a.nbytes);
}

void register_backend(DeviceType type, DeviceFactory factory, DeviceCount count) {
  Devices& d = devices_state();
  std::lock_guard<std::mutex> lock(d.mutex);
  d.backends[type] = Backend{factory, count};
}

Device& get_device(DeviceType type, int32_t index) {
  Devices& d = devices_state();
  std::lock_guard<std::mutex> lock(d.mutex);
  auto key = std::make_pair(type, index);
  auto it = d.created.find(key);
  if (it != d.created.end()) return *it->second;
  auto backend = d.backends.find(type);
  AOTISHIM_CHECK(backend != d.backends.end(), "device type '", device_type_name(type),
                 "' is not built into this aotishim");
  int count = backend->second.count();
  AOTISHIM_CHECK(index >= 0 && index < count, "device ", device_type_name(type), ":", index,
                 " is not available (", count, " present)");
  auto device = backend->second.factory(index);
  Device& ref = *device;
  d.created.emplace(key, std::move(device));
  return ref;
}

std::vector<std::string> available_devices() {
  Devices& d = devices_state();
  std::lock_guard<std::mutex> lock(d.mutex);
  std::vector<std::string> names;
  for (auto& kv : d.backends) {
    int count = kv.second.count();
    for (int i = 0; i < count; ++i) {
      if (kv.first == DeviceType::CPU) names.push_back("cpu");
      else if (count == 1 && kv.first != DeviceType::CUDA) names.push_back(device_type_name(kv.first));
      else names.push_back(str(device_type_name(kv.first), ":", i));
    }
  }
  return names;
}

std::vector<Device*> created_devices() {
  Devices& d = devices_state();
  std::lock_guard<std::mutex> lock(d.mutex);
  std::vector<Device*> out;
  for (auto& kv : d.created) out.push_back(kv.second.get());
  return out;
}

}  // namespace aotishim
