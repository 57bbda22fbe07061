// A convolution on cuDNN's legacy API, for problems the graph API offers no
// engine for: descriptors and the algorithm kept per problem (timed by
// cuDNN's Find, or its heuristics with AOTISHIM_CUDNN_ALGO=heuristic).
// float32 runs with FMA math only, so without TF32.
#include <climits>
#include <memory>
#include <string>

#include "core/error.h"
#include "core/tensor.h"
#include "devices/cuda/cudnn_conv.h"

namespace aotishim {
namespace cuda {

namespace {

#define CUDNN_CHECK(expr, what)                                                         \
  do {                                                                                  \
    ::aotishim::cuda::cudnn::Status st_ = (expr);                                       \
    AOTISHIM_CHECK(st_ == ::aotishim::cuda::cudnn::kStatusSuccess, "cuDNN ", what,      \
                   " failed: ", ::aotishim::cuda::cudnn::status_text(st_));             \
  } while (0)

// An owned legacy descriptor, made and destroyed by the Api's entries.
template <typename T, cudnn::Status (*cudnn::Api::*create)(T*),
          cudnn::Status (*cudnn::Api::*destroy)(T)>
struct Owned {
  T d = nullptr;
  Owned() { CUDNN_CHECK((cudnn::api().*create)(&d), "creating a descriptor"); }
  ~Owned() { (cudnn::api().*destroy)(d); }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
};
using TensorDesc = Owned<cudnn::TensorDesc, &cudnn::Api::create_tensor_desc,
                         &cudnn::Api::destroy_tensor_desc>;
using FilterDesc = Owned<cudnn::FilterDesc, &cudnn::Api::create_filter_desc,
                         &cudnn::Api::destroy_filter_desc>;
using ConvDesc =
    Owned<cudnn::ConvDesc, &cudnn::Api::create_conv_desc, &cudnn::Api::destroy_conv_desc>;

int to_int(int64_t v, const char* what) {
  AOTISHIM_CHECK(v >= 0 && v <= INT_MAX, "cuda convolution: ", what, " ", v,
                 " exceeds cuDNN's 32-bit limit");
  return static_cast<int>(v);
}

void set_tensor(const TensorDesc& desc, const ConvProblem& p, const std::vector<int64_t>& sizes) {
  const std::vector<int64_t> st = p.strides(sizes);
  int dims[8], strides[8];
  for (size_t d = 0; d < sizes.size(); ++d) {
    dims[d] = to_int(sizes[d], "size");
    strides[d] = to_int(st[d], "stride");
  }
  CUDNN_CHECK(cudnn::api().set_tensor_nd(desc.d, cudnn_data_type(p.dtype),
                                         static_cast<int>(sizes.size()), dims, strides),
              str("cudnnSetTensorNdDescriptor(", shape_string(sizes), ")"));
}

class LegacyPlan final : public ConvPlan {
 public:
  TensorDesc x, y;
  FilterDesc w;
  ConvDesc conv;
  int algo = -1;
  bool transposed = false;
  bool wide = false;  // float64: scaling factors are doubles

  void set_workspace(size_t bytes) { workspace_ = bytes; }

  void run(cudnn::Handle h, const ConvBuffers& b, void* ws) const override {
    const cudnn::Api& api = cudnn::api();
    const double one_d = 1.0, zero_d = 0.0;
    const float one_f = 1.0f, zero_f = 0.0f;
    const void* one = wide ? static_cast<const void*>(&one_d) : &one_f;
    const void* zero = wide ? static_cast<const void*>(&zero_d) : &zero_f;
    CUDNN_CHECK(transposed ? api.backward_data(h, one, w.d, b.w, x.d, b.x, conv.d, algo, ws,
                                               workspace_, zero, y.d, b.y)
                           : api.forward(h, one, x.d, b.x, w.d, b.w, conv.d, algo, ws,
                                         workspace_, zero, y.d, b.y),
                transposed ? "cudnnConvolutionBackwardData" : "cudnnConvolutionForward");
  }
};

}  // namespace

std::unique_ptr<ConvPlan> make_legacy_conv_plan(cudnn::Handle h, const ConvProblem& p) {
  const cudnn::Api& api = cudnn::api();
  auto plan = std::make_unique<LegacyPlan>();
  plan->transposed = p.transposed;
  plan->wide = p.dtype == DType::Float64;
  const int type = cudnn_data_type(p.dtype);
  const int nsp = static_cast<int>(p.stride.size());
  set_tensor(plan->x, p, p.x);
  set_tensor(plan->y, p, p.y);
  int wdims[8], pads[3], strides[3], dils[3];
  for (size_t d = 0; d < p.w.size(); ++d) wdims[d] = to_int(p.w[d], "weight size");
  for (int d = 0; d < nsp; ++d) {
    pads[d] = to_int(p.padding[d], "padding");
    strides[d] = to_int(p.stride[d], "stride");
    dils[d] = to_int(p.dilation[d], "dilation");
  }
  CUDNN_CHECK(api.set_filter_nd(plan->w.d, type,
                                p.channels_last ? cudnn::kFormatNHWC : cudnn::kFormatNCHW,
                                static_cast<int>(p.w.size()), wdims),
              str("cudnnSetFilterNdDescriptor(", shape_string(p.w), ")"));
  const int compute = plan->wide ? cudnn::kDataDouble : cudnn::kDataFloat;
  CUDNN_CHECK(api.set_conv_nd(plan->conv.d, nsp, pads, strides, dils, cudnn::kCrossCorrelation,
                              compute),
              "cudnnSetConvolutionNdDescriptor");
  CUDNN_CHECK(api.set_conv_group_count(plan->conv.d, to_int(p.groups, "groups")),
              "cudnnSetConvolutionGroupCount");
  const bool half = p.dtype == DType::Float16 || p.dtype == DType::BFloat16;
  CUDNN_CHECK(api.set_conv_math_type(plan->conv.d, half ? cudnn::kTensorOpMath : cudnn::kFmaMath),
              "cudnnSetConvolutionMathType");

  cudnn::AlgoPerf perf[16] = {};
  int returned = 0;
  const bool timed = cudnn_time_candidates();
  if (p.transposed) {
    CUDNN_CHECK((timed ? api.find_bwd_data_algos : api.get_bwd_data_algos)(
                    h, plan->w.d, plan->x.d, plan->conv.d, plan->y.d, 16, &returned, perf),
                timed ? "cudnnFindConvolutionBackwardDataAlgorithm" : "algorithm heuristics");
  } else {
    CUDNN_CHECK((timed ? api.find_fwd_algos : api.get_fwd_algos)(
                    h, plan->x.d, plan->w.d, plan->conv.d, plan->y.d, 16, &returned, perf),
                timed ? "cudnnFindConvolutionForwardAlgorithm" : "algorithm heuristics");
  }
  // The first (fastest, or most preferred) whose workspace size is known.
  std::string why;
  for (int i = 0; i < returned && plan->algo < 0; ++i) {
    if (perf[i].status != cudnn::kStatusSuccess) {
      why += str(" algorithm ", perf[i].algo, ": ", cudnn::status_text(perf[i].status), ";");
      continue;
    }
    size_t bytes = 0;
    const cudnn::Status st =
        p.transposed ? api.bwd_data_workspace_size(h, plan->w.d, plan->x.d, plan->conv.d,
                                                   plan->y.d, perf[i].algo, &bytes)
                     : api.fwd_workspace_size(h, plan->x.d, plan->w.d, plan->conv.d, plan->y.d,
                                              perf[i].algo, &bytes);
    if (st == cudnn::kStatusSuccess) {
      plan->algo = perf[i].algo;
      plan->set_workspace(bytes);
    } else {
      why += str(" algorithm ", perf[i].algo, ": ", cudnn::status_text(st), ";");
    }
  }
  AOTISHIM_CHECK(plan->algo >= 0, "cuDNN has no algorithm for this convolution (", p.describe(),
                 "):", why.empty() ? " none offered" : why);
  return plan;
}

}  // namespace cuda
}  // namespace aotishim
