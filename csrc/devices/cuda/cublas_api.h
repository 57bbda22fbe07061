// The few cuBLAS entry points and enum values aotishim uses, declared here
// from NVIDIA's documented API so the cuda backend builds with only the CUDA
// runtime installed; libcublas itself is loaded at the first GEMM.
#pragma once

#include <cuda_runtime_api.h>
#include <library_types.h>

#include <cstddef>
#include <cstdint>
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

// cuBLASLt (libcublasLt, which libcublas links, so its entry points are
// resolved through libcublas): matmuls planned once per problem.
using LtHandle = struct cublasLtContext*;
struct LtMatmulDescOpaque;
using LtMatmulDesc = LtMatmulDescOpaque*;
struct LtLayoutOpaque;
using LtLayout = LtLayoutOpaque*;
struct LtPreferenceOpaque;
using LtPreference = LtPreferenceOpaque*;
struct LtAlgo {  // cublasLtMatmulAlgo_t
  uint64_t data[8];
};
struct LtHeuristicResult {  // cublasLtMatmulHeuristicResult_t
  LtAlgo algo;
  size_t workspace_size;
  Status state;
  float waves_count;
  int reserved[4];
};
// cublasLtMatmulDescAttributes_t (int32 ops, uint32 epilogue, pointer bias)
constexpr int kLtDescTransA = 3;
constexpr int kLtDescTransB = 4;
constexpr int kLtDescEpilogue = 7;
constexpr int kLtDescBiasPointer = 8;
constexpr uint32_t kLtEpilogueDefault = 1;
constexpr uint32_t kLtEpilogueBias = 4;  // bias vector along D's rows, added to every column
// cublasLtMatrixLayoutAttribute_t (int32 count, int64 stride)
constexpr int kLtLayoutBatchCount = 5;
constexpr int kLtLayoutBatchStride = 6;
// cublasLtMatmulPreferenceAttributes_t (uint64 bytes, uint32 alignments)
constexpr int kLtPrefMaxWorkspace = 1;
constexpr int kLtPrefAlignA = 5;  // then B, C, D: 6, 7, 8

struct LtApi {
  Status (*create)(LtHandle*);
  Status (*destroy)(LtHandle);
  Status (*desc_create)(LtMatmulDesc*, int compute_type, cudaDataType scale_type);
  Status (*desc_destroy)(LtMatmulDesc);
  Status (*desc_set)(LtMatmulDesc, int attr, const void* buf, size_t size);
  Status (*layout_create)(LtLayout*, cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld);
  Status (*layout_destroy)(LtLayout);
  Status (*layout_set)(LtLayout, int attr, const void* buf, size_t size);
  Status (*pref_create)(LtPreference*);
  Status (*pref_destroy)(LtPreference);
  Status (*pref_set)(LtPreference, int attr, const void* buf, size_t size);
  Status (*heuristic)(LtHandle, LtMatmulDesc, LtLayout a, LtLayout b, LtLayout c, LtLayout d,
                      LtPreference, int requested, LtHeuristicResult* results, int* returned);
  Status (*matmul)(LtHandle, LtMatmulDesc, const void* alpha, const void* a, LtLayout a_desc,
                   const void* b, LtLayout b_desc, const void* beta, const void* c,
                   LtLayout c_desc, void* d, LtLayout d_desc, const LtAlgo* algo, void* workspace,
                   size_t workspace_size, cudaStream_t stream);
};

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
  LtApi lt;          // valid when has_lt
  bool has_lt = false;  // every cuBLASLt entry point resolved
};

// Loads libcublas on first use (thread-safe) and returns its entry points.
// Throws a clear error naming every place it looked when none loads.
const Api& api();

// "CUBLAS_STATUS_..." text for a status, for error messages.
std::string status_text(Status status);

}  // namespace cublas
}  // namespace cuda
}  // namespace aotishim
