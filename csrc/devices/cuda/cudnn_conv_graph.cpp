// A convolution as a one-operation cuDNN graph. Built once per problem: the
// graph, cuDNN's ranked engine configurations, and finalized execution plans
// for the first few that obey the numerical rules; with timing on (the
// default) each of those runs on the device and the fastest is kept. A call
// then only binds its pointers (a variant pack) and executes, which costs a
// few microseconds of host time where the legacy API spends tens.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/shim_profile.h"
#include "core/tensor.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/cudnn_backend.h"
#include "devices/cuda/cudnn_conv.h"

namespace aotishim {
namespace cuda {

namespace {

using cudnn::BackendDescriptor;

// Unique ids of the graph's tensors in a variant pack.
constexpr int64_t kUidX = 1, kUidW = 2, kUidY = 3;
// Plans finalized (and, with timing, timed) per problem: cuDNN ranks the
// configurations, and the best is nearly always among its first few.
constexpr size_t kMaxCandidates = 8;

BackendDescriptor tensor(const ConvProblem& p, const std::vector<int64_t>& sizes, int64_t uid) {
  BackendDescriptor t(cudnn::kTensorDescriptor);
  const int type = cudnn_data_type(p.dtype);
  t.set(cudnn::kAttrTensorDataType, cudnn::kTypeDataType, 1, &type);
  t.set_int64s(cudnn::kAttrTensorDimensions, sizes);
  t.set_int64s(cudnn::kAttrTensorStrides, p.strides(sizes));
  t.set_int64(cudnn::kAttrTensorUniqueId, uid);
  t.set_int64(cudnn::kAttrTensorByteAlignment, p.alignment);
  t.finalize();
  return t;
}

class GraphPlan final : public ConvPlan {
 public:
  // Everything the plan was built from stays alive with it.
  std::vector<BackendDescriptor> parts;
  BackendDescriptor plan;

  void set_workspace(size_t bytes) { workspace_ = bytes; }

  // Callers hold the plan cache's lock, which guards the kept packs too.
  void run(cudnn::Handle h, const ConvBuffers& b, void* workspace) const override {
    const Pointers pointers = {const_cast<void*>(b.x), const_cast<void*>(b.w), b.y, workspace};
    const cudnn::Status st = cudnn::api().backend_execute(h, plan.get(), pack_for(pointers));
    AOTISHIM_CHECK(st == cudnn::kStatusSuccess, "cudnnBackendExecute (convolution) failed: ",
                   cudnn::status_text(st));
  }

 private:
  using Pointers = std::array<void*, 4>;  // x, w, y, workspace
  // A model's run allocates in the same order every time, so the stream-
  // ordered pool tends to hand the same addresses to the same convolution,
  // and a model has a few convolutions of one problem (resnet18: up to 4),
  // which share this plan: the last few packs (nothing but these pointers)
  // are kept, most recent first, rather than built again on every call.
  static constexpr size_t kKeptPacks = 8;

  cudnn::BackendDesc pack_for(const Pointers& pointers) const {
    for (size_t i = 0; i < packs_.size(); ++i) {
      if (packs_[i].first != pointers) continue;
      if (i > 0) std::rotate(packs_.begin(), packs_.begin() + i, packs_.begin() + i + 1);
      return packs_.front().second.get();
    }
    ShimTimer timed("convolution: cuDNN variant pack built");  // AOTISHIM_PROFILE_SHIMS=1
    BackendDescriptor pack(cudnn::kVariantPackDescriptor);
    const int64_t uids[3] = {kUidX, kUidW, kUidY};
    pack.set(cudnn::kAttrVariantPackUniqueIds, cudnn::kTypeInt64, 3, uids);
    pack.set(cudnn::kAttrVariantPackDataPointers, cudnn::kTypeVoidPtr, 3, pointers.data());
    pack.set(cudnn::kAttrVariantPackWorkspace, cudnn::kTypeVoidPtr, 1, &pointers[3]);
    pack.finalize();
    if (packs_.size() == kKeptPacks) packs_.pop_back();
    packs_.emplace(packs_.begin(), pointers, std::move(pack));
    return packs_.front().second.get();
  }

  mutable std::vector<std::pair<Pointers, BackendDescriptor>> packs_;
};

// The operation graph of the problem: tensors, convolution, operation, graph.
std::vector<BackendDescriptor> build_graph(cudnn::Handle h, const ConvProblem& p) {
  std::vector<BackendDescriptor> d;
  d.push_back(tensor(p, p.x, kUidX));
  d.push_back(tensor(p, p.w, kUidW));
  d.push_back(tensor(p, p.y, kUidY));

  BackendDescriptor conv(cudnn::kConvolutionDescriptor);
  const bool wide = p.dtype == DType::Float64;
  const int compute = wide ? cudnn::kDataDouble : cudnn::kDataFloat;
  const int mode = cudnn::kCrossCorrelation;
  conv.set(cudnn::kAttrConvCompType, cudnn::kTypeDataType, 1, &compute);
  conv.set(cudnn::kAttrConvMode, cudnn::kTypeConvolutionMode, 1, &mode);
  conv.set_int64(cudnn::kAttrConvSpatialDims, static_cast<int64_t>(p.stride.size()));
  conv.set_int64s(cudnn::kAttrConvDilations, p.dilation);
  conv.set_int64s(cudnn::kAttrConvFilterStrides, p.stride);
  conv.set_int64s(cudnn::kAttrConvPrePaddings, p.padding);
  conv.set_int64s(cudnn::kAttrConvPostPaddings, p.padding);
  conv.finalize();

  // A transposed convolution is the backward-data operation, whose
  // attributes sit at a fixed offset from the forward one's.
  const int at = p.transposed ? cudnn::kAttrConvBwdDataOffset : 0;
  BackendDescriptor op(p.transposed ? cudnn::kConvBackwardDataOpDescriptor
                                    : cudnn::kConvForwardOpDescriptor);
  const double one_d = 1.0, zero_d = 0.0;
  const float one_f = 1.0f, zero_f = 0.0f;
  const int scale_type = wide ? cudnn::kTypeDouble : cudnn::kTypeFloat;
  op.set(cudnn::kAttrConvForwardAlpha + at, scale_type, 1,
         wide ? static_cast<const void*>(&one_d) : &one_f);
  op.set(cudnn::kAttrConvForwardBeta + at, scale_type, 1,
         wide ? static_cast<const void*>(&zero_d) : &zero_f);
  op.set_descriptor(cudnn::kAttrConvForwardConvDesc + at, conv);
  op.set_descriptor(cudnn::kAttrConvForwardW + at, d[1]);
  // Forward: X read, Y written. Backward data: DX written, DY read.
  op.set_descriptor(cudnn::kAttrConvForwardX + at, p.transposed ? d[2] : d[0]);
  op.set_descriptor(cudnn::kAttrConvForwardY + at, p.transposed ? d[0] : d[2]);
  op.finalize();

  BackendDescriptor graph(cudnn::kOperationGraphDescriptor);
  graph.set_handle(cudnn::kAttrOperationGraphHandle, h);
  graph.set_descriptor(cudnn::kAttrOperationGraphOps, op);
  graph.finalize();

  d.push_back(std::move(conv));
  d.push_back(std::move(op));
  d.push_back(std::move(graph));
  return d;
}

// The engine configurations cuDNN ranks for the graph in one heuristic mode.
std::vector<BackendDescriptor> ranked_configs(const BackendDescriptor& graph, int mode) {
  BackendDescriptor heur(cudnn::kEngineHeurDescriptor);
  heur.set_descriptor(cudnn::kAttrEngineHeurOperationGraph, graph);
  heur.set(cudnn::kAttrEngineHeurMode, cudnn::kTypeHeurMode, 1, &mode);
  if (heur.try_finalize() != cudnn::kStatusSuccess) return {};
  int64_t count = 0;
  if (cudnn::api().backend_get(heur.get(), cudnn::kAttrEngineHeurResults,
                               cudnn::kTypeBackendDescriptor, 0, &count,
                               nullptr) != cudnn::kStatusSuccess ||
      count <= 0)
    return {};
  std::vector<BackendDescriptor> configs;
  std::vector<cudnn::BackendDesc> raw;
  for (int64_t i = 0; i < count; ++i) {
    configs.emplace_back(cudnn::kEngineCfgDescriptor);
    raw.push_back(configs.back().get());
  }
  int64_t got = 0;
  if (cudnn::api().backend_get(heur.get(), cudnn::kAttrEngineHeurResults,
                               cudnn::kTypeBackendDescriptor, count, &got,
                               raw.data()) != cudnn::kStatusSuccess)
    return {};
  configs.resize(static_cast<size_t>(std::min(got, count)));
  return configs;
}

bool has(const std::vector<int>& notes, int note) {
  return std::find(notes.begin(), notes.end(), note) != notes.end();
}

// Why an engine configuration is not used, or "" when it may be. float32
// and float64 refuse engines on tensor cores (TF32) or that convert their
// inputs down, so results match torch's with TF32 off; engines compiled at
// run time are left for a second pass (their first build takes seconds).
std::string refusal(const BackendDescriptor& config, const ConvProblem& p, bool allow_compiled) {
  BackendDescriptor engine(cudnn::kEngineDescriptor);
  cudnn::BackendDesc raw = engine.get();
  int64_t count = 0;
  if (cudnn::api().backend_get(config.get(), cudnn::kAttrEngineCfgEngine,
                               cudnn::kTypeBackendDescriptor, 1, &count,
                               &raw) != cudnn::kStatusSuccess)
    return "engine not readable";
  const bool full_precision = p.dtype == DType::Float32 || p.dtype == DType::Float64;
  const std::vector<int> numerical =
      engine.get_ints(cudnn::kAttrEngineNumericalNote, cudnn::kTypeNumericalNote, 16);
  if (full_precision && has(numerical, cudnn::kNoteTensorCore)) return "tensor cores (TF32)";
  if (full_precision && has(numerical, cudnn::kNoteDownConvertInputs)) return "down-converts inputs";
  const std::vector<int> behavior =
      engine.get_ints(cudnn::kAttrEngineBehaviorNote, cudnn::kTypeBehaviorNote, 16);
  if (!allow_compiled && has(behavior, cudnn::kNoteRuntimeCompilation)) return "compiled at run time";
  return "";
}

// Device time of one run of `plan`, in ms (infinite when it fails to run).
// The timed runs are queued behind a busy-wait, so they run back to back
// and the events time the engine: a small convolution takes less device
// time than the host needs to queue it, so timing it as it is queued would
// measure the host and rank every engine alike.
float time_plan(CudaDevice& device, cudnn::Handle h, const GraphPlan& plan, const ConvBuffers& b,
                void* workspace) {
  cudaStream_t stream = device.stream();
  cudaEvent_t start = nullptr, stop = nullptr;
  AOTISHIM_CUDA_CHECK(cudaEventCreate(&start));
  AOTISHIM_CUDA_CHECK(cudaEventCreate(&stop));
  float ms = std::numeric_limits<float>::infinity();
  try {
    plan.run(h, b, workspace);  // warm-up: first launches load kernels
    constexpr int kRuns = 5;
    launch_busy_wait(40.0 * kRuns + 100.0, stream);
    AOTISHIM_CUDA_CHECK(cudaEventRecord(start, stream));
    for (int i = 0; i < kRuns; ++i) plan.run(h, b, workspace);
    AOTISHIM_CUDA_CHECK(cudaEventRecord(stop, stream));
    AOTISHIM_CUDA_CHECK(cudaEventSynchronize(stop));
    float total = 0;
    AOTISHIM_CUDA_CHECK(cudaEventElapsedTime(&total, start, stop));
    ms = total / kRuns;
  } catch (const std::exception&) {
    // A candidate cuDNN finalized but cannot execute: not chosen.
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ms;
}

}  // namespace

std::unique_ptr<ConvPlan> make_graph_conv_plan(CudaDevice& device, cudnn::Handle h,
                                               const ConvProblem& p, const ConvBuffers& b,
                                               std::string* why) {
  std::vector<BackendDescriptor> graph = build_graph(h, p);
  const bool timed = cudnn_time_candidates();
  std::vector<std::unique_ptr<GraphPlan>> candidates;
  // cuDNN's ranked engines first, then its fallback list; engines compiled
  // at run time only when nothing else runs the problem.
  for (int pass = 0; pass < 3 && candidates.empty(); ++pass) {
    const int mode = pass == 1 ? cudnn::kHeurModeFallback : cudnn::kHeurModeA;
    const bool allow_compiled = pass == 2;
    std::vector<BackendDescriptor> configs = ranked_configs(graph.back(), mode);
    for (size_t i = 0; i < configs.size() && candidates.size() < (timed ? kMaxCandidates : 1);
         ++i) {
      const std::string no = refusal(configs[i], p, allow_compiled);
      if (!no.empty()) {
        *why += str(" engine config ", i, ": ", no, ";");
        continue;
      }
      auto plan = std::make_unique<GraphPlan>();
      plan->plan = BackendDescriptor(cudnn::kExecutionPlanDescriptor);
      plan->plan.set_handle(cudnn::kAttrExecutionPlanHandle, h);
      plan->plan.set_descriptor(cudnn::kAttrExecutionPlanEngineConfig, configs[i]);
      const cudnn::Status st = plan->plan.try_finalize();
      if (st != cudnn::kStatusSuccess) {
        *why += str(" engine config ", i, ": ", cudnn::status_text(st), ";");
        continue;
      }
      plan->set_workspace(
          static_cast<size_t>(plan->plan.get_int64(cudnn::kAttrExecutionPlanWorkspaceSize)));
      plan->parts.push_back(std::move(configs[i]));
      candidates.push_back(std::move(plan));
    }
  }
  if (candidates.empty()) return nullptr;

  size_t best = 0;
  if (candidates.size() > 1) {
    size_t most = 0;
    for (const auto& c : candidates) most = std::max(most, c->workspace_bytes());
    Tensor workspace;
    if (most > 0) workspace = make_empty(device, DType::UInt8, {static_cast<int64_t>(most)});
    float fastest = std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < candidates.size(); ++i) {
      const float ms = time_plan(device, h, *candidates[i], b, most > 0 ? workspace.data() : nullptr);
      if (ms < fastest) {
        fastest = ms;
        best = i;
      }
    }
    if (!(fastest < std::numeric_limits<float>::infinity())) {
      *why += " no candidate ran;";
      return nullptr;
    }
  }
  std::unique_ptr<GraphPlan> chosen = std::move(candidates[best]);
  for (BackendDescriptor& d : graph) chosen->parts.push_back(std::move(d));
  return chosen;
}

}  // namespace cuda
}  // namespace aotishim
