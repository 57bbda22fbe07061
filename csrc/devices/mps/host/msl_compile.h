// The host Metal's newLibraryWithSource: an MSL source is preprocessed,
// translated (msl_translate.h) and compiled as C++ by clang into a shared
// object, cached by a hash of everything that goes into it, and loaded; its
// kernels are then found by name.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "devices/mps/host/kernel_abi.h"

namespace aotishim::mps::host {

// One kernel of a library: what dispatch needs.
struct Function {
  std::string name;
  aotishim_msl_entry entry = nullptr;
  std::vector<aotishim_msl_param> params;  // names point into the loaded library
  std::shared_ptr<void> library;           // keeps the shared object loaded
};

class Library {
 public:
  // Throws with the compiler's output when the source does not compile.
  explicit Library(const std::string& msl_source);
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  // Throws naming the kernels there are when `name` is not one of them.
  std::shared_ptr<const Function> function(const std::string& name) const;
  std::vector<std::string> function_names() const;
  bool from_cache() const { return from_cache_; }  // the shared object was already built
  const std::string& path() const { return path_; }

 private:
  std::shared_ptr<void> handle_;
  std::vector<std::shared_ptr<const Function>> functions_;
  bool from_cache_ = false;
  std::string path_;
};

// The compiler used: $AOTISHIM_METAL_HOST_CXX, else clang++-19 ... clang++ on
// PATH. Throws naming every place tried when there is none.
std::string host_compiler();
// Where compiled libraries are kept: $AOTISHIM_METAL_HOST_CACHE, else
// $XDG_CACHE_HOME/aotishim/metal-host, else ~/.cache/aotishim/metal-host.
std::string cache_dir();

}  // namespace aotishim::mps::host
