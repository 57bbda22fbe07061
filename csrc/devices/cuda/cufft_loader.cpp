// Loads libcufft at run time (library_search.h): the backend must load, and
// report its devices, where cuFFT is absent; only an FFT needs it.
#include <string>

#include "core/error.h"
#include "devices/cuda/cufft_api.h"
#include "core/library_search.h"

namespace aotishim {
namespace cuda {
namespace cufft {

namespace {

const LibrarySearch& search() {
  static const LibrarySearch s{
      "cuFFT",
      "AOTISHIM_CUFFT_PATH",
      {"libcufft.so.12", "libcufft.so.11"},
      {"../nvidia/cu13/lib/", "../nvidia/cufft/lib/", "../nvidia/cu12/lib/"},
      {}};
  return s;
}

Api load() {
  const FoundLibrary lib = load_library(
      search(), "cuFFT is needed for FFTs on cuda but could not be loaded; set "
                "AOTISHIM_CUFFT_PATH to libcufft.so (or its folder).");
  Api a{};
  resolve_symbol(lib, search(), "cufftCreate", a.create);
  resolve_symbol(lib, search(), "cufftDestroy", a.destroy);
  resolve_symbol(lib, search(), "cufftSetAutoAllocation", a.set_auto_allocation);
  resolve_symbol(lib, search(), "cufftMakePlanMany64", a.make_plan_many64);
  resolve_symbol(lib, search(), "cufftSetWorkArea", a.set_work_area);
  resolve_symbol(lib, search(), "cufftSetStream", a.set_stream);
  resolve_symbol(lib, search(), "cufftExecC2C", a.exec_c2c);
  resolve_symbol(lib, search(), "cufftExecR2C", a.exec_r2c);
  resolve_symbol(lib, search(), "cufftExecC2R", a.exec_c2r);
  resolve_symbol(lib, search(), "cufftExecZ2Z", a.exec_z2z);
  resolve_symbol(lib, search(), "cufftExecD2Z", a.exec_d2z);
  resolve_symbol(lib, search(), "cufftExecZ2D", a.exec_z2d);
  return a;
}

const char* result_name(Result r) {
  switch (r) {
    case 1: return "CUFFT_INVALID_PLAN";
    case 2: return "CUFFT_ALLOC_FAILED";
    case 3: return "CUFFT_INVALID_TYPE";
    case 4: return "CUFFT_INVALID_VALUE";
    case 5: return "CUFFT_INTERNAL_ERROR";
    case 6: return "CUFFT_EXEC_FAILED";
    case 7: return "CUFFT_SETUP_FAILED";
    case 8: return "CUFFT_INVALID_SIZE";
    case 9: return "CUFFT_UNALIGNED_DATA";
    default: return "cufftResult";
  }
}

}  // namespace

const Api& api() { return load_once(&load); }

std::string error_text(Result result, const char* what) {
  return str("cuFFT error ", result_name(result), " (", result, ") in ", what);
}

}  // namespace cufft
}  // namespace cuda
}  // namespace aotishim
