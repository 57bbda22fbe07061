// cuBLAS's linalg routines, resolved in the very libcublas the GEMMs loaded:
// the library holding cublasCreate is found by its address, so an override
// or a wheel's copy is never replaced by another one on the loader's path.
#include <dlfcn.h>

#include <string>

#include "core/error.h"
#include "devices/cuda/cublas_linalg_api.h"
#include "core/library_search.h"

namespace aotishim {
namespace cuda {
namespace cublas {

namespace {

// The loaded libcublas: a handle of our own to it (RTLD_NOLOAD: it is
// never loaded a second time), and its path for messages.
FoundLibrary loaded_cublas() {
  const Api& gemm_api = api();
  Dl_info info{};
  AOTISHIM_CHECK(dladdr(reinterpret_cast<void*>(gemm_api.create), &info) != 0 &&
                     info.dli_fname != nullptr,
                 "cuBLAS: cannot find the library that holds cublasCreate_v2");
  void* handle = dlopen(info.dli_fname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (handle == nullptr) {
    const char* why = dlerror();
    fail(str("cuBLAS: cannot reopen ", info.dli_fname, ": ", why ? why : "not loaded"));
  }
  return FoundLibrary{handle, info.dli_fname};
}

LinalgApi load() {
  const FoundLibrary lib = loaded_cublas();
  const LibrarySearch named{"cuBLAS", "AOTISHIM_CUBLAS_PATH", {}, {}, {}};
  const char prefixes[kLinalgPrecisions] = {'S', 'D', 'C', 'Z'};
  LinalgApi a{};
  for (int p = 0; p < kLinalgPrecisions; ++p) {
    const auto resolve = [&](const char* name, auto& fn) {
      const std::string symbol = str("cublas", prefixes[p], name);
      resolve_symbol(lib, named, symbol.c_str(), fn);
    };
    resolve("trsm_v2", a.trsm[p]);
    resolve("trsmBatched", a.trsm_batched[p]);
    resolve("geqrfBatched", a.geqrf_batched[p]);
  }
  return a;
}

}  // namespace

const LinalgApi& linalg_api() { return load_once(&load); }

}  // namespace cublas
}  // namespace cuda
}  // namespace aotishim
