// Loading a compiled model's shared library so that it binds to our shims.
#pragma once

#include <string>
#include <vector>

namespace aotishim::runner {

// A model library, loaded once per content and kept for the life of the
// process. Model libraries define GNU unique symbols, which make dlclose a
// no-op, so unloading was never possible; what can be avoided is loading the
// same model again: a later load of the same bytes (another path, a copy, a
// fresh .pt2 extraction) reuses the library already loaded, so switching
// between models never grows the process.
class SharedLibrary {
 public:
  SharedLibrary() = default;
  // `path` must be absolute and canonical (callers resolve it first: the
  // loader matches libraries by the string it is given). Throws
  // aotishim::Error with dlerror() when it cannot be loaded.
  static SharedLibrary open(const std::string& path);

  // nullptr when the library does not define `name`.
  void* find(const char* name) const;
  // The SHA-256 of the library's bytes.
  const std::string& digest() const { return digest_; }
  // The path this load asked for (the library may have come from another).
  const std::string& path() const { return path_; }

 private:
  void* handle_ = nullptr;
  std::string digest_;
  std::string path_;
};

// Libraries held by the cache (diagnostics and tests).
size_t loaded_library_count();

// Re-opens libaotishim with RTLD_GLOBAL (Python loads extensions with
// RTLD_LOCAL), so a model opened later resolves aoti_torch_* to us. Idempotent.
void make_shims_global();

struct ShimCheck {
  std::vector<std::string> needed;      // aoti_* symbols the model leaves undefined
  std::vector<std::string> missing;     // ... that libaotishim does not define
  std::vector<std::string> conflicts;   // ... that another global library provides first
  std::vector<std::string> entry_points_missing;  // container entry points it lacks
};

// Reads the model's dynamic symbols (no code runs). On platforms without ELF
// the lists are empty and dlopen reports what is missing.
ShimCheck check_model_symbols(const std::string& path);

// Throws aotishim::Error listing every problem `check` found.
void require_loadable(const std::string& path, const ShimCheck& check);

}  // namespace aotishim::runner
