// Finding a vendor library at run time (cuBLAS, cuDNN, oneDNN): the runtime
// loads where the library is absent, and only work that needs it reports it
// missing, naming every place that was tried.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "aotishim/export.h"
#include "core/error.h"

namespace aotishim {

struct LibrarySearch {
  const char* what;                  // "cuBLAS", for messages
  const char* env;                   // the override: a file, or the folder holding one
  std::vector<const char*> sonames;  // in order of preference
  // Folders of the vendor's pip wheels, relative to the folder of aotishim's
  // libraries (the package folder, where the wheels install beside it).
  std::vector<const char*> wheel_dirs;
  // Libraries the chosen one loads from its own folder by soname: loaded
  // first from there when it is found outside the loader's path (optional).
  std::vector<const char*> siblings;
};

struct FoundLibrary {
  void* handle;  // stays loaded for the life of the process
  std::string path;
};

// Where to look, in order: the override alone if set (so a wrong path is
// reported, not silently replaced by another copy), else the loader's search
// path (which also finds a copy already loaded, e.g. by torch), then the
// wheels beside the package.
AOTISHIM_API std::vector<std::string> candidate_paths(const LibrarySearch& search);

// The first candidate that loads. Throws `why_needed` followed by every
// candidate tried and the loader's reason for each.
AOTISHIM_API FoundLibrary load_library(const LibrarySearch& search, const std::string& why_needed);

// dlsym: the symbol's address in a loaded library, or null.
AOTISHIM_API void* find_symbol(void* handle, const char* symbol);

// A function of a loaded library; a missing required one is an error naming
// the library and the symbol.
template <typename Fn>
void resolve_symbol(const FoundLibrary& lib, const LibrarySearch& search, const char* symbol,
                    Fn& fn, bool required = true) {
  fn = reinterpret_cast<Fn>(find_symbol(lib.handle, symbol));
  AOTISHIM_CHECK(fn != nullptr || !required, search.what, " at ", lib.path, " lacks the symbol ",
                 symbol);
}

// The entry points `load` returns, loaded on first use and kept for the
// process (thread-safe). A failed load is retried at the next call, so a
// library installed or an override set afterwards is found then.
template <typename Api>
const Api& load_once(Api (*load)()) {
  static std::mutex mutex;
  static Api* loaded = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded == nullptr) loaded = new Api(load());
  return *loaded;
}

}  // namespace aotishim
