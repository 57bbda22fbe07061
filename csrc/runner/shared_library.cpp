#include "runner/shared_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>

#include "aotishim/c_shim.h"
#include "aotishim/error.h"
#include "runner/container_api.h"
#include "runner/elf_symbols.h"

namespace aotishim::runner {

SharedLibrary::SharedLibrary(const std::string& path) : path_(path) {
  dlerror();
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* why = dlerror();
    throw Error("cannot load '" + path + "': " + (why ? why : "unknown dlopen error"));
  }
}

SharedLibrary::~SharedLibrary() {
  if (handle_) dlclose(handle_);
}

SharedLibrary::SharedLibrary(SharedLibrary&& other) noexcept
    : handle_(other.handle_), path_(std::move(other.path_)) {
  other.handle_ = nullptr;
}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_) dlclose(handle_);
    handle_ = other.handle_;
    path_ = std::move(other.path_);
    other.handle_ = nullptr;
  }
  return *this;
}

void* SharedLibrary::find(const char* name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

namespace {

// Our own library, opened once more (never closed) to look shims up in it.
void* shim_handle() {
  static void* handle = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void*>(&aotishim_last_error), &info) || !info.dli_fname) {
      throw Error("cannot find the path of libaotishim (dladdr failed)");
    }
    dlerror();
    void* h = dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
    if (!h) {
      const char* why = dlerror();
      throw Error(std::string("cannot make libaotishim's shims global: ") +
                  (why ? why : "unknown dlopen error"));
    }
    return h;
  }();
  return handle;
}

bool is_shim_name(const std::string& name) { return name.rfind("aoti_", 0) == 0; }

std::string provider_of(void* address) {
  Dl_info info{};
  if (address && dladdr(address, &info) && info.dli_fname) return info.dli_fname;
  return "another library";
}

}  // namespace

void make_shims_global() {
  static std::once_flag once;
  std::call_once(once, [] { shim_handle(); });
}

std::string shim_library_path() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&aotishim_last_error), &info) && info.dli_fname) {
    return info.dli_fname;
  }
  return "libaotishim";
}

ShimCheck check_model_symbols(const std::string& path) {
  ShimCheck check;
  if (!elf_platform()) return check;
  make_shims_global();
  const DynamicSymbols symbols = read_dynamic_symbols(path);
  for (const std::string& name : symbols.undefined) {
    if (!is_shim_name(name)) continue;
    check.needed.push_back(name);
    void* ours = dlsym(shim_handle(), name.c_str());
    if (!ours) {
      check.missing.push_back(name);
      continue;
    }
    // The model binds to the first global definition; it must be ours, or
    // it would hand our runtime tensors made by someone else.
    void* first = dlsym(RTLD_DEFAULT, name.c_str());
    if (first && first != ours) check.conflicts.push_back(name + " (from " + provider_of(first) + ")");
  }
  for (const char* entry : required_entry_points()) {
    if (std::find(symbols.defined.begin(), symbols.defined.end(), entry) == symbols.defined.end()) {
      check.entry_points_missing.push_back(entry);
    }
  }
  std::sort(check.needed.begin(), check.needed.end());
  std::sort(check.missing.begin(), check.missing.end());
  return check;
}

namespace {
std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}
}  // namespace

void require_loadable(const std::string& path, const ShimCheck& check) {
  if (!check.entry_points_missing.empty()) {
    throw Error("'" + path + "' is not an AOTInductor model: it does not define " +
                join(check.entry_points_missing));
  }
  if (!check.missing.empty()) {
    throw Error("'" + path + "' needs " + std::to_string(check.missing.size()) +
                " shim function(s) that aotishim does not provide: " + join(check.missing));
  }
  if (!check.conflicts.empty()) {
    throw Error("'" + path + "' would bind shim functions to another library loaded with " +
                "RTLD_GLOBAL before aotishim: " + join(check.conflicts));
  }
}

}  // namespace aotishim::runner
