// Loading a compiled model's shared library so that it binds to our shims.
#pragma once

#include <string>
#include <vector>

namespace aotishim::runner {

// A dlopen'ed library, closed when the last owner lets go.
class SharedLibrary {
 public:
  SharedLibrary() = default;
  // dlopen(path, RTLD_NOW | RTLD_LOCAL); throws aotishim::Error with dlerror().
  explicit SharedLibrary(const std::string& path);
  ~SharedLibrary();
  SharedLibrary(SharedLibrary&& other) noexcept;
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;

  // nullptr when the library does not define `name`.
  void* find(const char* name) const;
  const std::string& path() const { return path_; }

 private:
  void* handle_ = nullptr;
  std::string path_;
};

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
