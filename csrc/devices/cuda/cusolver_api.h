// The few cuSOLVER (dense) entry points aotishim uses, declared from NVIDIA's
// documented API so the cuda backend builds with only the CUDA runtime
// installed; libcusolver itself is loaded at the first linalg op
// (cusolver_loader.cpp).
//
// Each routine comes in four precisions (cuSOLVER's S, D, C, Z prefixes),
// held in arrays indexed by Precision. Their matrix and scalar arguments are
// all pointers, so one signature with void* serves every precision.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace aotishim {
namespace cuda {
namespace cusolver {

using Handle = struct cusolverDnContext*;  // cusolverDnHandle_t
using Status = int;                        // cusolverStatus_t

constexpr Status kSuccess = 0;
// cuBLAS's enums, which cuSOLVER takes: cublasFillMode_t, cublasSideMode_t,
// cublasOperation_t.
constexpr int kFillLower = 0, kFillUpper = 1;
constexpr int kSideLeft = 0, kSideRight = 1;
constexpr int kOpN = 0, kOpT = 1, kOpC = 2;

// Element types, in the order of the S, D, C, Z routines.
enum Precision { kS = 0, kD = 1, kC = 2, kZ = 3, kPrecisions = 4 };

struct Api {
  Status (*create)(Handle*);
  Status (*destroy)(Handle);
  Status (*set_stream)(Handle, cudaStream_t);
  // B := A^-1 B with A = U^H U or L L^H from its factor (cusolverDn<t>potrs).
  Status (*potrs[kPrecisions])(Handle, int uplo, int n, int nrhs, const void* a, int lda,
                               void* b, int ldb, int* dev_info);
  // Householder QR in place (cusolverDn<t>geqrf), workspace in elements.
  Status (*geqrf_buffer_size[kPrecisions])(Handle, int m, int n, void* a, int lda, int* lwork);
  Status (*geqrf[kPrecisions])(Handle, int m, int n, void* a, int lda, void* tau, void* work,
                               int lwork, int* dev_info);
  // C := op(Q) C or C op(Q) (cusolverDn<t>ormqr for S/D, <t>unmqr for C/Z).
  Status (*ormqr_buffer_size[kPrecisions])(Handle, int side, int trans, int m, int n, int k,
                                           const void* a, int lda, const void* tau,
                                           const void* c, int ldc, int* lwork);
  Status (*ormqr[kPrecisions])(Handle, int side, int trans, int m, int n, int k, const void* a,
                               int lda, const void* tau, void* c, int ldc, void* work, int lwork,
                               int* dev_info);
};

// Loaded on first use (AOTISHIM_CUSOLVER_PATH, else libcusolver.so.12/.11
// from the loader's path, else NVIDIA's wheels beside the package); a
// missing cuSOLVER is an error naming every place tried.
const Api& api();

// "CUSOLVER_STATUS_<name> (<code>)", for error messages.
std::string status_text(Status status);

}  // namespace cusolver
}  // namespace cuda
}  // namespace aotishim
