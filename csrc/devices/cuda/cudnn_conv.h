// The cuda convolution on cuDNN, as its parts see it (cudnn_conv.cpp is the
// op's kernel): one problem, and a plan that runs it. A plan is built once
// per problem by cuDNN's graph API (cudnn_conv_graph.cpp: an execution plan
// kept ready, so a call costs little host time) or, where that offers no
// engine, its legacy API (cudnn_conv_legacy.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "devices/cuda/cudnn_api.h"

namespace aotishim {
namespace cuda {

class CudaDevice;

// x, w and y are dense in one memory format (NCHW, or NHWC when
// channels_last), 4-D or 5-D. y is written; for a transposed convolution x
// is the "output gradient" dy and y the "input gradient" dx of the forward
// convolution whose filter is w.
struct ConvProblem {
  bool transposed = false;
  bool channels_last = false;
  DType dtype = DType::Float32;
  std::vector<int64_t> x, w, y;  // sizes
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups = 1;
  int64_t alignment = 16;  // bytes: a power of two every data pointer is a multiple of

  std::vector<int64_t> key(int32_t device) const;
  std::string describe() const;  // for messages
  // The strides of a tensor of these sizes, dense in the problem's format
  // (size-1 dims get their format stride, as cuDNN infers layouts from them).
  std::vector<int64_t> strides(const std::vector<int64_t>& sizes) const;
};

// Device memory of one call, for a plan to run on (and, while it is built,
// to time its candidates on).
struct ConvBuffers {
  const void* x;
  const void* w;
  void* y;
};

class ConvPlan {
 public:
  virtual ~ConvPlan() = default;
  size_t workspace_bytes() const { return workspace_; }
  // Queues the convolution on the handle's stream.
  virtual void run(cudnn::Handle h, const ConvBuffers& b, void* workspace) const = 0;

 protected:
  size_t workspace_ = 0;
};

// How candidates are chosen: timed on the device once per problem (the
// default, like torch's cudnn.benchmark), or cuDNN's heuristics alone
// (AOTISHIM_CUDNN_ALGO=heuristic).
bool cudnn_time_candidates();

// A graph-API plan, or null (with the reasons in *why) when cuDNN offers no
// engine for the problem that passes the numerical rules (no TF32 for float32).
std::unique_ptr<ConvPlan> make_graph_conv_plan(CudaDevice& device, cudnn::Handle h,
                                               const ConvProblem& p, const ConvBuffers& b,
                                               std::string* why);
// A legacy-API plan; throws when cuDNN has no algorithm.
std::unique_ptr<ConvPlan> make_legacy_conv_plan(cudnn::Handle h, const ConvProblem& p);

int cudnn_data_type(DType dtype);  // throws for dtypes cuDNN convolutions do not take

}  // namespace cuda
}  // namespace aotishim
