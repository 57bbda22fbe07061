// Loads libcusolver at run time (library_search.h): the backend must load,
// and report its devices, where cuSOLVER is absent; only a linalg op needs it.
#include <exception>
#include <string>

#include "core/error.h"
#include "devices/cuda/cublas_api.h"
#include "devices/cuda/cusolver_api.h"
#include "core/library_search.h"

namespace aotishim {
namespace cuda {
namespace cusolver {

namespace {

const LibrarySearch& search() {
  static const LibrarySearch s{
      "cuSOLVER",
      "AOTISHIM_CUSOLVER_PATH",
      {"libcusolver.so.12", "libcusolver.so.11"},
      {"../nvidia/cu13/lib/", "../nvidia/cusolver/lib/", "../nvidia/cu12/lib/"},
      // What libcusolver needs besides cuBLAS, where a wheel keeps them in
      // its own folder (CUDA 12's wheels find theirs by their run path).
      {"libnvJitLink.so.13", "libnvJitLink.so.12", "libcusparse.so.12"}};
  return s;
}

// The four precisions of one routine: cusolverDn<S|D|C|Z><name>.
template <typename Fn>
void resolve_precisions(const FoundLibrary& lib, const char* real_name, const char* complex_name,
                        Fn (&fns)[kPrecisions]) {
  const char prefixes[kPrecisions] = {'S', 'D', 'C', 'Z'};
  for (int p = 0; p < kPrecisions; ++p) {
    const std::string symbol =
        str("cusolverDn", prefixes[p], p < kC ? real_name : complex_name);
    resolve_symbol(lib, search(), symbol.c_str(), fns[p]);
  }
}

Api load() {
  // libcusolver links libcublas by soname: with cuBLAS loaded first it takes
  // that copy, the one the GEMMs use. A missing cuBLAS is reported below, by
  // cuSOLVER's own failure to load.
  try {
    cublas::api();
  } catch (const std::exception&) {
  }
  const FoundLibrary lib = load_library(
      search(), "cuSOLVER is needed for linear algebra on cuda (cholesky_solve, "
                "cholesky_inverse, geqrf, ormqr) but could not be loaded; set "
                "AOTISHIM_CUSOLVER_PATH to libcusolver.so (or its folder).");
  Api a{};
  resolve_symbol(lib, search(), "cusolverDnCreate", a.create);
  resolve_symbol(lib, search(), "cusolverDnDestroy", a.destroy);
  resolve_symbol(lib, search(), "cusolverDnSetStream", a.set_stream);
  resolve_precisions(lib, "potrs", "potrs", a.potrs);
  resolve_precisions(lib, "geqrf_bufferSize", "geqrf_bufferSize", a.geqrf_buffer_size);
  resolve_precisions(lib, "geqrf", "geqrf", a.geqrf);
  resolve_precisions(lib, "ormqr_bufferSize", "unmqr_bufferSize", a.ormqr_buffer_size);
  resolve_precisions(lib, "ormqr", "unmqr", a.ormqr);
  return a;
}

const char* status_name(Status s) {
  switch (s) {
    case 0: return "CUSOLVER_STATUS_SUCCESS";
    case 1: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case 2: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case 3: return "CUSOLVER_STATUS_INVALID_VALUE";
    case 4: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case 5: return "CUSOLVER_STATUS_MAPPING_ERROR";
    case 6: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case 7: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case 8: return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
    case 9: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    case 10: return "CUSOLVER_STATUS_ZERO_PIVOT";
    case 11: return "CUSOLVER_STATUS_INVALID_LICENSE";
    default: return "cusolverStatus";
  }
}

}  // namespace

const Api& api() { return load_once(&load); }

std::string status_text(Status status) { return str(status_name(status), " (", status, ")"); }

}  // namespace cusolver
}  // namespace cuda
}  // namespace aotishim
