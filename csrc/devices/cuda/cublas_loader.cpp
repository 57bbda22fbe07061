// Finds and loads libcublas at run time. The backend must load (and report
// its devices) where cuBLAS is absent; only a GEMM needs it.
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/library_path.h"
#include "devices/cuda/cublas_api.h"

namespace aotishim {
namespace cuda {
namespace cublas {

namespace {

const char* const kSonames[] = {"libcublas.so.13", "libcublas.so.12"};

bool is_directory_like(const std::string& p) {
  return !p.empty() && (p.back() == '/' || p.find(".so") == std::string::npos);
}

// Where to look, in order: the user's override (alone, if set), the loader's search path
// (which also finds a copy already loaded, e.g. by another framework), then
// NVIDIA's pip wheels installed beside the aotishim package.
std::vector<std::string> candidates() {
  std::vector<std::string> out;
  // An explicit choice is the only one tried, so a wrong path is reported
  // rather than silently replaced by another copy.
  if (const char* env = std::getenv("AOTISHIM_CUBLAS_PATH"); env && *env) {
    std::string p = env;
    if (is_directory_like(p)) {
      if (p.back() != '/') p += '/';
      for (const char* name : kSonames) out.push_back(p + name);
    } else {
      out.push_back(p);
    }
    return out;
  }
  for (const char* name : kSonames) out.push_back(name);
  std::string dir = directory_of(library_file_of(reinterpret_cast<const void*>(&api)));
  if (!dir.empty()) {
    const char* wheel_dirs[] = {"../nvidia/cu13/lib/", "../nvidia/cublas/lib/",
                                "../nvidia/cu12/lib/"};
    for (const char* sub : wheel_dirs)
      for (const char* name : kSonames) out.push_back(dir + sub + name);
  }
  return out;
}

template <typename Fn>
void resolve(void* lib, const char* symbol, Fn& fn, const std::string& path, bool required) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  AOTISHIM_CHECK(fn != nullptr || !required, "cuBLAS at ", path, " lacks the symbol ", symbol);
}

Api load() {
  std::string tried;
  for (const std::string& path : candidates()) {
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      tried += str("\n  ", path, ": ", why ? why : "not loadable");
      continue;
    }
    Api a{};
    resolve(lib, "cublasCreate_v2", a.create, path, true);
    resolve(lib, "cublasDestroy_v2", a.destroy, path, true);
    resolve(lib, "cublasSetStream_v2", a.set_stream, path, true);
    resolve(lib, "cublasGetStatusString", a.status_string, path, false);
    resolve(lib, "cublasGemmStridedBatchedEx", a.gemm_strided_batched_ex, path, true);
    return a;  // the library stays loaded for the life of the process
  }
  fail(str("cuBLAS is needed for matrix products on cuda but could not be loaded; set "
           "AOTISHIM_CUBLAS_PATH to libcublas.so (or its folder). Tried:",
           tried));
}

}  // namespace

const Api& api() {
  // Retried after a failure, so setting AOTISHIM_CUBLAS_PATH later works.
  static std::mutex mutex;
  static Api* loaded = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded == nullptr) loaded = new Api(load());
  return *loaded;
}

std::string status_text(Status status) {
  const Api* a = nullptr;
  try {
    a = &api();
  } catch (...) {
  }
  if (a != nullptr && a->status_string != nullptr) return a->status_string(status);
  return str("cublasStatus ", status);
}

}  // namespace cublas
}  // namespace cuda
}  // namespace aotishim
