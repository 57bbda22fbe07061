#include "core/device.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/library_path.h"
#include "core/tensor.h"

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

// Optional backends (cuda) are plugins beside libaotishim, loaded on first
// use, so a machine without their runtime libraries still runs everything
// else. Loading registers the backend from the plugin's static initializer.
struct Plugin {
  std::once_flag once;
  std::string error;
  void* handle = nullptr;
};

const char* plugin_name(DeviceType type) {
  switch (type) {
    case DeviceType::CUDA:
#if defined(__APPLE__)
      return "libaotishim_cuda.dylib";
#else
      return "libaotishim_cuda.so";
#endif
    default:
      return nullptr;
  }
}

// Loads the plugin once; its error is "" when loaded (or nothing to load).
Plugin& load_plugin_entry(DeviceType type) {
  static std::map<DeviceType, Plugin>* plugins = new std::map<DeviceType, Plugin>();
  static std::mutex map_mutex;
  Plugin* plugin;
  {
    std::lock_guard<std::mutex> lock(map_mutex);
    plugin = &(*plugins)[type];
  }
  std::call_once(plugin->once, [&] {
    const char* name = plugin_name(type);
    if (name == nullptr) return;
    std::string path =
        directory_of(library_file_of(reinterpret_cast<const void*>(&register_backend))) + name;
    plugin->handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (plugin->handle == nullptr) {
      const char* why = dlerror();
      plugin->error = why ? why : "dlopen failed";
    }
  });
  return *plugin;
}

// Returns "" when loaded (or nothing to load), else why not.
const std::string& load_plugin(DeviceType type) { return load_plugin_entry(type).error; }

Device* find_created(Devices& d, DeviceType type, int32_t index) {
  auto it = d.created.find(std::make_pair(type, index));
  return it == d.created.end() ? nullptr : it->second.get();
}
}  // namespace

void Device::upload_zeros(const Tensor& dst_packed) {
  const std::vector<char> zeros(dst_packed.extent_bytes(), 0);
  if (!zeros.empty()) upload(dst_packed, zeros.data());
}

std::string Device::name() const {
  if (type_ == DeviceType::CPU) return "cpu";
  return str(device_type_name(type_), ":", index_);
}

void Device::cannot_record() const {
  fail(str(name(), " cannot record work as a graph (only cuda devices can)"));
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
  // Hot path (every tensor creation, every host copy): one lock, one lookup.
  bool registered;
  {
    std::lock_guard<std::mutex> lock(d.mutex);
    if (Device* found = find_created(d, type, index)) return *found;
    registered = d.backends.count(type) == 1;
  }
  // First use of this device: load its plugin if its backend is not yet
  // registered (outside the lock: the plugin's initializer registers it).
  std::string plugin_error;
  if (!registered) plugin_error = load_plugin(type);
  std::lock_guard<std::mutex> lock(d.mutex);
  if (Device* found = find_created(d, type, index)) return *found;  // made meanwhile
  auto key = std::make_pair(type, index);
  auto backend = d.backends.find(type);
  AOTISHIM_CHECK(backend != d.backends.end(), "device type '", device_type_name(type),
                 "' is not available in this aotishim build",
                 plugin_error.empty() ? "" : " (its backend failed to load: ", plugin_error,
                 plugin_error.empty() ? "" : ")");
  int count = backend->second.count();
  AOTISHIM_CHECK(index >= 0 && index < count, "device ", device_type_name(type), ":", index,
                 " is not available (", count, " present)");
  auto device = backend->second.factory(index);
  Device& ref = *device;
  d.created.emplace(key, std::move(device));
  return ref;
}

std::vector<std::string> available_devices() {
  load_plugin(DeviceType::CUDA);
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

void* find_backend_symbol(const char* name) {
  for (DeviceType type : {DeviceType::CUDA}) {
    Plugin& plugin = load_plugin_entry(type);
    if (plugin.handle == nullptr) continue;
    if (void* sym = dlsym(plugin.handle, name)) return sym;
  }
  return nullptr;
}

std::vector<Device*> created_devices() {
  Devices& d = devices_state();
  std::lock_guard<std::mutex> lock(d.mutex);
  std::vector<Device*> out;
  for (auto& kv : d.created) out.push_back(kv.second.get());
  return out;
}

}  // namespace aotishim
