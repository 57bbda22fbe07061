#include "devices/cuda/cublaslt_plans.h"

#include <cstdint>

#include "core/error.h"
#include "core/shim_profile.h"

namespace aotishim {
namespace cuda {

namespace {

// A pointer's alignment in bytes, up to the 256 cuBLASLt assumes unless
// told otherwise: a view at an offset may be aligned to its element only.
uint32_t alignment(const void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  if (address == 0) return 256;
  uint32_t a = 1;
  while (a < 256 && (address & a) == 0) a <<= 1;
  return a;
}

// A problem larger than this many plans is not a fixed model: start over
// rather than grow without bound (dynamic shapes make one plan per shape).
constexpr size_t kMaxPlans = 4096;

}  // namespace

LtPlans::~LtPlans() {
  // Best effort: the process may be exiting with the libraries unloading.
  clear();
  if (handle_ != nullptr && lt_ != nullptr) lt_->destroy(handle_);
}

void LtPlans::destroy(Plan& plan) {
  if (lt_ == nullptr) return;
  if (plan.desc != nullptr) lt_->desc_destroy(plan.desc);
  for (cublas::LtLayout l : {plan.a, plan.b, plan.d}) {
    if (l != nullptr) lt_->layout_destroy(l);
  }
  plan = Plan{};
}

void LtPlans::clear() {
  for (auto& [key, plan] : plans_) destroy(plan);
  plans_.clear();
}

LtPlans::Key LtPlans::key_of(const LtProblem& p, size_t workspace_size) {
  return {p.type,     p.compute,  p.scale_type, p.op_a,     p.op_b,
          p.rows,     p.cols,     p.k,          p.lda,      p.ldb,
          p.ldd,      p.batch,    p.stride_a,   p.stride_b, p.stride_d,
          p.bias != nullptr ? alignment(p.bias) : 0,
          alignment(p.a),         alignment(p.b),           alignment(p.d),
          static_cast<int64_t>(workspace_size)};
}

LtPlans::Plan LtPlans::make_plan(const cublas::LtApi& lt, const LtProblem& p,
                                 size_t workspace_size) {
  using namespace cublas;
  Plan plan;
  bool ok = lt.desc_create(&plan.desc, p.compute, p.scale_type) == kStatusSuccess;
  const int32_t op_a = p.op_a, op_b = p.op_b;
  ok = ok && lt.desc_set(plan.desc, kLtDescTransA, &op_a, sizeof op_a) == kStatusSuccess;
  ok = ok && lt.desc_set(plan.desc, kLtDescTransB, &op_b, sizeof op_b) == kStatusSuccess;
  const uint32_t epilogue = p.bias != nullptr ? kLtEpilogueBias : kLtEpilogueDefault;
  ok = ok && lt.desc_set(plan.desc, kLtDescEpilogue, &epilogue, sizeof epilogue) == kStatusSuccess;
  // The heuristic reads the bias pointer for its alignment.
  ok = ok && (p.bias == nullptr ||
              lt.desc_set(plan.desc, kLtDescBiasPointer, &p.bias, sizeof p.bias) == kStatusSuccess);

  // Each operand as stored (column-major): op(X) is X or its transpose.
  const auto layout = [&](LtLayout* out, int64_t rows, int64_t cols, int64_t ld, int64_t stride) {
    if (lt.layout_create(out, p.type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols),
                         ld) != kStatusSuccess) {
      return false;
    }
    if (p.batch == 1) return true;
    const int32_t count = static_cast<int32_t>(p.batch);
    return lt.layout_set(*out, kLtLayoutBatchCount, &count, sizeof count) == kStatusSuccess &&
           lt.layout_set(*out, kLtLayoutBatchStride, &stride, sizeof stride) == kStatusSuccess;
  };
  const bool ta = p.op_a != kOpN, tb = p.op_b != kOpN;
  ok = ok && layout(&plan.a, ta ? p.k : p.rows, ta ? p.rows : p.k, p.lda, p.stride_a);
  ok = ok && layout(&plan.b, tb ? p.cols : p.k, tb ? p.k : p.cols, p.ldb, p.stride_b);
  ok = ok && layout(&plan.d, p.rows, p.cols, p.ldd, p.stride_d);

  LtPreference pref = nullptr;
  ok = ok && lt.pref_create(&pref) == kStatusSuccess;
  const uint64_t max_workspace = workspace_size;
  ok = ok && lt.pref_set(pref, kLtPrefMaxWorkspace, &max_workspace, sizeof max_workspace) ==
                 kStatusSuccess;
  const uint32_t aligned[4] = {alignment(p.a), alignment(p.b), alignment(p.d), alignment(p.d)};
  for (int i = 0; ok && i < 4; ++i) {
    ok = lt.pref_set(pref, kLtPrefAlignA + i, &aligned[i], sizeof aligned[i]) == kStatusSuccess;
  }
  LtHeuristicResult best{};
  int found = 0;
  ok = ok && lt.heuristic(handle_, plan.desc, plan.a, plan.b, plan.d, plan.d, pref, 1, &best,
                          &found) == kStatusSuccess;
  if (pref != nullptr) lt.pref_destroy(pref);
  plan.usable = ok && found > 0 && best.state == kStatusSuccess;
  if (plan.usable) {
    plan.algo = best.algo;
  } else {
    destroy(plan);  // remembered as unusable, holding nothing
  }
  return plan;
}

bool LtPlans::run(const cublas::Api& api, const LtProblem& p, const void* alpha, const void* beta,
                  void* workspace, size_t workspace_size, cudaStream_t stream) {
  if (!api.has_lt) return false;
  const cublas::LtApi& lt = api.lt;
  if (handle_ == nullptr) {
    if (lt.create(&handle_) != cublas::kStatusSuccess) {
      handle_ = nullptr;
      return false;
    }
    lt_ = &lt;
  }
  const Key key = key_of(p, workspace_size);
  auto found = plans_.find(key);
  if (found == plans_.end()) {
    if (plans_.size() >= kMaxPlans) clear();
    found = plans_.emplace(key, make_plan(lt, p, workspace_size)).first;
  }
  Plan& plan = found->second;
  if (!plan.usable) return false;
  // The plan was made for a bias of this alignment; this call's bias is set.
  if (p.bias != nullptr &&
      lt.desc_set(plan.desc, cublas::kLtDescBiasPointer, &p.bias, sizeof p.bias) !=
          cublas::kStatusSuccess) {
    return false;
  }
  ShimTimer timed("matrix product: cublasLtMatmul");  // AOTISHIM_PROFILE_SHIMS=1
  const cublas::Status st =
      lt.matmul(handle_, plan.desc, alpha, p.a, plan.a, p.b, plan.b, beta, p.d, plan.d, p.d,
                plan.d, &plan.algo, workspace, workspace_size, stream);
  if (st == cublas::kStatusSuccess) return true;
  destroy(plan);  // never tried again for this problem
  // Refusals (the problem or device unsupported) queue nothing, so the
  // caller may fall back; any other failure may have written part of the
  // output, which a fallback reading it (beta != 0) would then use.
  constexpr cublas::Status kInvalidValue = 7, kArchMismatch = 8, kNotSupported = 15;
  if (st == kInvalidValue || st == kArchMismatch || st == kNotSupported) return false;
  fail(str("cublasLtMatmul failed: ", cublas::status_text(st)));
}

}  // namespace cuda
}  // namespace aotishim
