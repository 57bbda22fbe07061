// Loads libcublas at run time (library_search.h): the backend must load,
// and report its devices, where cuBLAS is absent; only a GEMM needs it.
#include <string>

#include "core/error.h"
#include "devices/cuda/cublas_api.h"
#include "core/library_search.h"

namespace aotishim {
namespace cuda {
namespace cublas {

namespace {

const LibrarySearch& search() {
  static const LibrarySearch s{
      "cuBLAS",
      "AOTISHIM_CUBLAS_PATH",
      {"libcublas.so.13", "libcublas.so.12"},
      {"../nvidia/cu13/lib/", "../nvidia/cublas/lib/", "../nvidia/cu12/lib/"},
      {}};
  return s;
}

Api load() {
  const FoundLibrary lib = load_library(
      search(), "cuBLAS is needed for matrix products on cuda but could not be loaded; set "
                "AOTISHIM_CUBLAS_PATH to libcublas.so (or its folder).");
  Api a{};
  resolve_symbol(lib, search(), "cublasCreate_v2", a.create);
  resolve_symbol(lib, search(), "cublasDestroy_v2", a.destroy);
  resolve_symbol(lib, search(), "cublasSetStream_v2", a.set_stream);
  resolve_symbol(lib, search(), "cublasGetStatusString", a.status_string, /*required=*/false);
  resolve_symbol(lib, search(), "cublasGemmStridedBatchedEx", a.gemm_strided_batched_ex);
  // cuBLASLt through libcublas's own dependency, so both are one release;
  // without it every GEMM takes cublasGemmStridedBatchedEx.
  LtApi& l = a.lt;
  const auto lt = [&](const char* symbol, auto& fn) {
    resolve_symbol(lib, search(), symbol, fn, /*required=*/false);
    return fn != nullptr;
  };
  a.has_lt = lt("cublasLtCreate", l.create) && lt("cublasLtDestroy", l.destroy) &&
             lt("cublasLtMatmulDescCreate", l.desc_create) &&
             lt("cublasLtMatmulDescDestroy", l.desc_destroy) &&
             lt("cublasLtMatmulDescSetAttribute", l.desc_set) &&
             lt("cublasLtMatrixLayoutCreate", l.layout_create) &&
             lt("cublasLtMatrixLayoutDestroy", l.layout_destroy) &&
             lt("cublasLtMatrixLayoutSetAttribute", l.layout_set) &&
             lt("cublasLtMatmulPreferenceCreate", l.pref_create) &&
             lt("cublasLtMatmulPreferenceDestroy", l.pref_destroy) &&
             lt("cublasLtMatmulPreferenceSetAttribute", l.pref_set) &&
             lt("cublasLtMatmulAlgoGetHeuristic", l.heuristic) &&
             lt("cublasLtMatmul", l.matmul);
  return a;
}

}  // namespace

const Api& api() { return load_once(&load); }

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
