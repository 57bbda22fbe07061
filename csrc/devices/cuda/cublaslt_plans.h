// GEMMs through cuBLASLt with everything but the pointers decided once per
// problem: the matmul and layout descriptors and the algorithm cuBLASLt's
// heuristic ranks first. A call then costs one cublasLtMatmul, where
// cublasGemmStridedBatchedEx repeats that selection every time. addmm's
// bias rides in the matmul's epilogue instead of a copy before it.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>
#include <map>

#include "devices/cuda/cublas_api.h"

namespace aotishim {
namespace cuda {

// One column-major matmul D = alpha * op(A) op(B) + beta * C (+ bias along
// D's rows), C and D one matrix, as cuBLAS takes it.
struct LtProblem {
  cudaDataType type;
  int compute;
  cudaDataType scale_type;
  int op_a, op_b;
  int64_t rows, cols, k;  // D is rows x cols
  int64_t lda, ldb, ldd;
  int64_t batch, stride_a, stride_b, stride_d;
  const void* a;
  const void* b;
  void* d;
  const void* bias;  // null: no bias; else `rows` packed elements of `type`
};

// A device's cuBLASLt plans (callers hold its cuBLAS lock). Descriptors
// are made on the first call for a problem and kept; a problem cuBLASLt
// offers no algorithm for is remembered as such.
class LtPlans {
 public:
  LtPlans() = default;
  ~LtPlans();
  LtPlans(const LtPlans&) = delete;
  LtPlans& operator=(const LtPlans&) = delete;

  // Runs `p` on `stream` with `workspace`; false when cuBLASLt cannot
  // (unloaded, no algorithm, or refused at launch), nothing then queued.
  // Throws when cuBLASLt fails otherwise.
  bool run(const cublas::Api& api, const LtProblem& p, const void* alpha, const void* beta,
           void* workspace, size_t workspace_size, cudaStream_t stream);

 private:
  struct Plan {
    cublas::LtMatmulDesc desc = nullptr;
    cublas::LtLayout a = nullptr, b = nullptr, d = nullptr;
    cublas::LtAlgo algo{};
    bool usable = false;
  };
  using Key = std::array<int64_t, 20>;
  static Key key_of(const LtProblem& p, size_t workspace_size);
  Plan make_plan(const cublas::LtApi& lt, const LtProblem& p, size_t workspace_size);
  void destroy(Plan& plan);
  void clear();

  const cublas::LtApi* lt_ = nullptr;  // whose descriptors these are
  cublas::LtHandle handle_ = nullptr;
  std::map<Key, Plan> plans_;
};

}  // namespace cuda
}  // namespace aotishim
