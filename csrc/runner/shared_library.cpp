#include "runner/shared_library.h"
#include "runner/unsupported_ops.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <tuple>

#include "aotishim/c_shim.h"
#include "aotishim/error.h"
#include "core/library_path.h"
#include "core/device.h"
#include "runner/container_api.h"
#include "runner/content_digest.h"
#include "runner/elf_symbols.h"

namespace aotishim::runner {

namespace {

// What identifies a file's bytes without reading them: a write changes the
// size, mtime or (not settable by users) ctime; a replacement changes the inode.
using FileId = std::tuple<dev_t, ino_t, int64_t, int64_t, int64_t>;  // dev, inode, size, mtime, ctime

int64_t nanoseconds(const struct timespec& t) { return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec; }

FileId file_id(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    throw Error("cannot read '" + path + "': " + std::strerror(errno));
  }
#ifdef __APPLE__
  return {st.st_dev, st.st_ino, static_cast<int64_t>(st.st_size), nanoseconds(st.st_mtimespec),
          nanoseconds(st.st_ctimespec)};
#else
  return {st.st_dev, st.st_ino, static_cast<int64_t>(st.st_size), nanoseconds(st.st_mtim),
          nanoseconds(st.st_ctim)};
#endif
}

// A private copy of `path` under a fresh name (removed once opened).
std::string private_copy(const std::string& path) {
  std::string pattern = (std::filesystem::temp_directory_path() / "aotishim-model-XXXXXX.so").string();
  const int fd = mkstemps(pattern.data(), 3);
  if (fd < 0) throw Error(std::string("cannot create a temporary file: ") + std::strerror(errno));
  close(fd);
  std::error_code ec;
  std::filesystem::copy_file(path, pattern, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) {
    unlink(pattern.c_str());
    throw Error("cannot copy '" + path + "': " + ec.message());
  }
  return pattern;
}

struct LibraryCache {
  std::mutex mutex;
  std::map<std::string, void*> by_digest;                      // content -> loaded library
  std::map<FileId, std::string> digest_of;                      // files already hashed
  std::map<std::string, std::string> opened_paths;              // path dlopen saw -> its content then
  std::map<std::pair<dev_t, ino_t>, std::string> opened_files;  // inode dlopen saw -> content then
};

LibraryCache& cache() {
  static LibraryCache* c = new LibraryCache();  // never destroyed: libraries stay loaded
  return *c;
}

}  // namespace

SharedLibrary SharedLibrary::open(const std::string& path) {
  LibraryCache& c = cache();
  const FileId id = file_id(path);
  // One load at a time: two threads loading the same new model must not
  // both dlopen it.
  std::lock_guard<std::mutex> lock(c.mutex);
  auto known = c.digest_of.find(id);
  const std::string digest = known != c.digest_of.end() ? known->second : file_sha256(path);
  c.digest_of.emplace(id, digest);

  SharedLibrary lib;
  lib.digest_ = digest;
  lib.path_ = path;
  auto loaded = c.by_digest.find(digest);
  if (loaded != c.by_digest.end()) {
    lib.handle_ = loaded->second;
    return lib;
  }
  // The loader hands back an already-loaded library for a name or an inode
  // it has seen, even when the file there was rewritten since (a model
  // compiled again into the same place). New bytes behind a name or inode
  // already opened are therefore opened through a copy under a fresh name.
  const auto inode = std::make_pair(std::get<0>(id), std::get<1>(id));
  std::string open_path = path;
  if (c.opened_paths.count(path) || c.opened_files.count(inode)) open_path = private_copy(path);
  dlerror();
  void* handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char* why = handle ? nullptr : dlerror();
  if (open_path != path) unlink(open_path.c_str());
  if (!handle) {
    throw Error("cannot load '" + path + "': " + (why ? why : "unknown dlopen error"));
  }
  if (open_path == path) {
    c.opened_paths.emplace(path, digest);
    c.opened_files.emplace(inode, digest);
  }
  c.by_digest.emplace(digest, handle);
  lib.handle_ = handle;
  return lib;
}

size_t loaded_library_count() {
  LibraryCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return c.by_digest.size();
}

void* SharedLibrary::find(const char* name) const {
  return handle_ ? dlsym(handle_, name) : nullptr;
}

namespace {

// Our own library, opened once more (never closed) to look shims up in it.
void* shim_handle() {
  static void* handle = [] {
    const std::string self = library_file_of(reinterpret_cast<const void*>(&aotishim_last_error));
    if (self.empty()) throw Error("cannot find the path of libaotishim (dladdr failed)");
    dlerror();
    void* h = dlopen(self.c_str(), RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
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
  std::string file = library_file_of(address);
  return file.empty() ? "another library" : file;
}

}  // namespace

void make_shims_global() {
  static std::once_flag once;
  std::call_once(once, [] {
    shim_handle();
#if defined(__linux__)
    // A model built by a toolchain that links libstdc++ statically still
    // expects the host process (libtorch, normally) to provide a global C++
    // runtime; without one its std::regex/locale code crashed on load. Our
    // own libraries keep their runtime private, so this changes nothing else.
    dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
#endif
  });
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
    // Device-specific shims (aoti_torch_cuda_*) live in backend plugins,
    // loaded RTLD_GLOBAL so the model binds to them.
    if (!ours) ours = find_backend_symbol(name.c_str());
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
    // Ops aotishim declines on purpose are named with the reason.
    std::string declined;
    for (const std::string& name : check.missing) {
      if (const char* reason = unsupported_reason(name))
        declined += "; " + name + " is not supported: " + reason;
    }
    throw Error("'" + path + "' needs " + std::to_string(check.missing.size()) +
                " shim function(s) that aotishim does not provide: " + join(check.missing) +
                declined);
  }
  if (!check.conflicts.empty()) {
    throw Error("'" + path + "' would bind shim functions to another library loaded with " +
                "RTLD_GLOBAL before aotishim: " + join(check.conflicts));
  }
}

}  // namespace aotishim::runner
