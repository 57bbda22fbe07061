#include "core/library_search.h"

#include <dlfcn.h>

#include <cstdlib>

#include "core/library_path.h"

namespace aotishim {

namespace {

// "…/lib/" or "…/lib" names a folder; "…/libcublas.so.12" a file.
bool is_directory_like(const std::string& p) {
  return !p.empty() && (p.back() == '/' || p.find(".so") == std::string::npos);
}

// The folder of aotishim's libraries: the wheels are installed beside the package.
std::string package_directory() {
  return directory_of(library_file_of(reinterpret_cast<const void*>(&candidate_paths)));
}

void preload_siblings(const LibrarySearch& search, const std::string& path) {
  const std::string dir = directory_of(path);
  if (dir.empty()) return;  // found by the loader, which finds the siblings too
  for (const char* name : search.siblings) {
    // Optional: a sibling may be absent or need what this machine lacks
    // (cuDNN's runtime-compiled engines need NVRTC); the library then uses
    // the others.
    dlopen((dir + name).c_str(), RTLD_NOW | RTLD_LOCAL);
  }
}

}  // namespace

std::vector<std::string> candidate_paths(const LibrarySearch& search) {
  std::vector<std::string> out;
  if (const char* env = std::getenv(search.env); env && *env) {
    std::string p = env;
    if (is_directory_like(p)) {
      if (p.back() != '/') p += '/';
      for (const char* name : search.sonames) out.push_back(p + name);
    } else {
      out.push_back(p);
    }
    return out;
  }
  for (const char* name : search.sonames) out.push_back(name);
  const std::string dir = package_directory();
  if (!dir.empty()) {
    for (const char* sub : search.wheel_dirs)
      for (const char* name : search.sonames) out.push_back(dir + sub + name);
  }
  return out;
}

FoundLibrary load_library(const LibrarySearch& search, const std::string& why_needed) {
  std::string tried;
  for (const std::string& path : candidate_paths(search)) {
    preload_siblings(search, path);
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle != nullptr) return FoundLibrary{handle, path};
    const char* why = dlerror();
    tried += str("\n  ", path, ": ", why ? why : "not loadable");
  }
  fail(str(why_needed, " Tried:", tried));
}

void* find_symbol(void* handle, const char* symbol) { return dlsym(handle, symbol); }

}  // namespace aotishim
