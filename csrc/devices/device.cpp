#include "devices/device.h"

#include <dlfcn.h>

#include <map>
#include <mutex>
#include <string>

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

// Optional backends (cuda) are plugins beside libaotishim, loaded on first
// use, so a machine without their runtime libraries still runs everything
// else. Loading registers the backend from the plugin's static initializer.
struct Plugin {
  std::once_flag once;
  std::string error;
};

std::string library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&register_backend), &info) == 0 || !info.dli_fname) return "";
  std::string path = info.dli_fname;
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

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

// Returns "" when loaded (or nothing to load), else why not.
const std::string& load_plugin(DeviceType type) {
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
    std::string path = library_dir() + name;
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL) == nullptr) {
      const char* why = dlerror();
      plugin->error = why ? why : "dlopen failed";
    }
  });
  return plugin->error;
}

bool has_backend(DeviceType type) {
  Devices& d = devices_state();
  std::lock_guard<std::mutex> lock(d.mutex);
  return d.backends.count(type) == 1;
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
  std::string plugin_error;
  if (!has_backend(type)) plugin_error = load_plugin(type);
  Devices& d = devices_state();
  std::lock_guard<std::mutex> lock(d.mutex);
  auto key = std::make_pair(type, index);
  auto it = d.created.find(key);
  if (it != d.created.end()) return *it->second;
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

std::vector<Device*> created_devices() {
  Devices& d = devices_state();
  std::lock_guard<std::mutex> lock(d.mutex);
  std::vector<Device*> out;
  for (auto& kv : d.created) out.push_back(kv.second.get());
  return out;
}

}  // namespace aotishim
