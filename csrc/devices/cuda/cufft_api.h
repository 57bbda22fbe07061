// The few cuFFT entry points aotishim uses, declared from NVIDIA's documented
// API so the cuda backend builds with only the CUDA runtime installed;
// libcufft itself is loaded at the first FFT (cufft_loader.cpp).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

namespace aotishim {
namespace cuda {
namespace cufft {

using Handle = int;   // cufftHandle
using Result = int;   // cufftResult
using Type = int;     // cufftType

constexpr Result kSuccess = 0;
constexpr Type kR2C = 0x2a, kC2R = 0x2c, kC2C = 0x29;
constexpr Type kD2Z = 0x6a, kZ2D = 0x6c, kZ2Z = 0x69;
constexpr int kForward = -1, kInverse = 1;

struct Api {
  Result (*create)(Handle*);
  Result (*destroy)(Handle);
  Result (*set_auto_allocation)(Handle, int);
  Result (*make_plan_many64)(Handle, int rank, long long* n, long long* inembed,
                             long long istride, long long idist, long long* onembed,
                             long long ostride, long long odist, Type type, long long batch,
                             size_t* work_size);
  Result (*set_work_area)(Handle, void*);
  Result (*set_stream)(Handle, cudaStream_t);
  Result (*exec_c2c)(Handle, void* in, void* out, int direction);
  Result (*exec_r2c)(Handle, void* in, void* out);
  Result (*exec_c2r)(Handle, void* in, void* out);
  Result (*exec_z2z)(Handle, void* in, void* out, int direction);
  Result (*exec_d2z)(Handle, void* in, void* out);
  Result (*exec_z2d)(Handle, void* in, void* out);
};

// Loaded on first use (AOTISHIM_CUFFT_PATH, else libcufft.so.12/.11 from the
// loader's path, else NVIDIA's wheels beside the package); a missing cuFFT
// is an error naming every place tried.
const Api& api();

// "cuFFT error <name> (<code>) in <what>".
std::string error_text(Result result, const char* what);

}  // namespace cufft
}  // namespace cuda
}  // namespace aotishim
