// The few cuBLAS entry points and enum values aotishim uses, declared here
// from NVIDIA's documented API so the cuda backend builds with only the CUDA
// runtime installed; libcublas itself is loaded at the first GEMM.
#pragma once

#include <cuda_runtime_api.h>
#include <library_types.h>

#include <string>

namespace aotishim {
namespace cuda {
namespace cublas {

using Handle = struct cublasContext*;
using Status = int;  // cublasStatus_t

constexpr Status kStatusSuccess = 0;
constexpr int kOpN = 0;  // cublasOperation_t CUBLAS_OP_N
constexpr int kOpT = 1;  // CUBLAS_OP_T
constexpr int kCompute32F = 68;  // cublasComputeType_t CUBLAS_COMPUTE_32F
constexpr int kCompute64F = 70;  // CUBLAS_COMPUTE_64F
constexpr int kGemmDefault = -1;  // cublasGemmAlgo_t CUBLAS_GEMM_DEFAULT

struct Api {
  Status (*create)(Handle*);
  Status (*destroy)(Handle);
  Status (*set_stream)(Handle, cudaStream_t);
  const char* (*status_string)(Status);  // may be null in old libraries
  Status (*gemm_strided_batched_ex)(Handle, int transa, int transb, int m, int n, int k,
                                    const void* alpha, const void* a, cudaDataType a_type,
                                    int lda, long long stride_a, const void* b,
                                    cudaDataType b_type, int ldb, long long stride_b,
                                    const void* beta, void* c, cudaDataType c_type, int ldc,
                                    long long stride_c, int batch_count, int compute_type,
                                    int algo);
};

// Loads libcublas on first use (thread-safe) and returns its entry points.
// Throws a clear error naming every place it looked when none loads.
const Api& api();

// "CUBLAS_STATUS_..." text for a status, for error messages.
std::string status_text(Status status);

}  // namespace cublas
}  // namespace cuda
}  // namespace aotishim
