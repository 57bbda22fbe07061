// ConvArgs on cuDNN's convolution API (the cuda kernel of ops::conv). Tensors go to cuDNN in one memory
// format, NCHW or NHWC (channels last): out's, when out is dense in one of
// them, so the common cases copy nothing; inputs in another layout are packed
// on the stream first. A transposed convolution is cuDNN's backward-data of
// the forward one with the same parameters. Descriptors and the algorithm
// (timed once per problem, see time_algorithms) are kept per problem; the
// workspace comes from the device's stream-ordered allocator. float32 runs without TF32, as torch's
// convolutions do with allow_tf32 off.
#include <climits>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/cudnn_api.h"
#include "ops/convolution.h"

namespace aotishim {
namespace cuda {

namespace {

#define CUDNN_CHECK(expr, what)                                                         \
  do {                                                                                  \
    ::aotishim::cuda::cudnn::Status st_ = (expr);                                       \
    AOTISHIM_CHECK(st_ == ::aotishim::cuda::cudnn::kStatusSuccess, "cuDNN ", what,      \
                   " failed: ", ::aotishim::cuda::cudnn::status_text(st_));             \
  } while (0)

struct TensorDesc {
  cudnn::TensorDesc d = nullptr;
  TensorDesc() { CUDNN_CHECK(cudnn::api().create_tensor_desc(&d), "cudnnCreateTensorDescriptor"); }
  ~TensorDesc() { cudnn::api().destroy_tensor_desc(d); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

struct FilterDesc {
  cudnn::FilterDesc d = nullptr;
  FilterDesc() { CUDNN_CHECK(cudnn::api().create_filter_desc(&d), "cudnnCreateFilterDescriptor"); }
  ~FilterDesc() { cudnn::api().destroy_filter_desc(d); }
  FilterDesc(const FilterDesc&) = delete;
  FilterDesc& operator=(const FilterDesc&) = delete;
};

struct ConvDesc {
  cudnn::ConvDesc d = nullptr;
  ConvDesc() { CUDNN_CHECK(cudnn::api().create_conv_desc(&d), "cudnnCreateConvolutionDescriptor"); }
  ~ConvDesc() { cudnn::api().destroy_conv_desc(d); }
  ConvDesc(const ConvDesc&) = delete;
  ConvDesc& operator=(const ConvDesc&) = delete;
};

int to_int(int64_t v, const char* what) {
  AOTISHIM_CHECK(v >= 0 && v <= INT_MAX, "cuda convolution: ", what, " ", v,
                 " exceeds cuDNN's 32-bit limit");
  return static_cast<int>(v);
}

int data_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return cudnn::kDataFloat;
    case DType::Float64: return cudnn::kDataDouble;
    case DType::Float16: return cudnn::kDataHalf;
    case DType::BFloat16: return cudnn::kDataBFloat16;
    default: break;
  }
  fail(str("cuda convolution supports float32, float64, float16 and bfloat16, not ",
           dtype_name(dtype)));
}

// Dimension order, outermost first, of a memory format for `ndim` dims.
std::vector<int> format_order(bool channels_last, int64_t ndim) {
  std::vector<int> order = {0};
  if (!channels_last) order.push_back(1);
  for (int d = 2; d < ndim; ++d) order.push_back(d);
  if (channels_last) order.push_back(1);
  return order;
}

std::vector<int64_t> format_strides(const std::vector<int64_t>& sizes, bool channels_last) {
  std::vector<int> order = format_order(channels_last, static_cast<int64_t>(sizes.size()));
  std::vector<int64_t> strides(sizes.size(), 0);
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = stride;
    stride *= std::max<int64_t>(sizes[*it], 1);
  }
  return strides;
}

// Dense in the format (strides of size-1 dims do not matter).
bool in_format(const Tensor& t, bool channels_last) {
  const std::vector<int64_t> want = format_strides(t.sizes, channels_last);
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.sizes[d] > 1 && t.strides[d] != want[d]) return false;
  return true;
}

// t, or a packed copy of it in the format, made on the stream.
Tensor in_format_copy(CudaDevice& device, const Tensor& t, bool channels_last) {
  if (in_format(t, channels_last)) return t;
  Tensor p = make_empty(device, t.dtype, t.sizes, format_strides(t.sizes, channels_last));
  device.copy(p, t);
  return p;
}

// A 1-D convolution as a 2-D one of height 1 (cuDNN wants 4-D or 5-D).
Tensor with_unit_height(const Tensor& t) {
  std::vector<int64_t> sizes = {t.sizes[0], t.sizes[1], 1, t.sizes[2]};
  std::vector<int64_t> strides = {t.strides[0], t.strides[1], t.strides[2] * t.sizes[2],
                                  t.strides[2]};
  return make_view(t, sizes, strides, t.storage_offset);
}

// `strides` are t's, except that size-1 dims get their format's stride:
// cuDNN infers the layout from all strides, and those of size-1 dims are
// arbitrary in a view.
void set_tensor(const TensorDesc& desc, const Tensor& t, const std::vector<int64_t>& st) {
  int dims[8], strides[8];
  for (int64_t d = 0; d < t.dim(); ++d) {
    dims[d] = to_int(t.sizes[d], "size");
    strides[d] = to_int(std::max<int64_t>(st[d], 1), "stride");
  }
  CUDNN_CHECK(cudnn::api().set_tensor_nd(desc.d, data_type(t.dtype), static_cast<int>(t.dim()),
                                         dims, strides),
              str("cudnnSetTensorNdDescriptor(", shape_string(t.sizes), ", strides ",
                  shape_string(t.strides), ")"));
}

// Everything about one problem that does not change from call to call: the
// descriptors, the algorithm and its workspace size. Built on the first call
// and kept, so a later call is a lookup and the cuDNN calls that do the work.
struct Plan {
  TensorDesc x, y, bias;
  FilterDesc w;
  ConvDesc conv;
  int algo = -1;
  size_t workspace = 0;
};

struct Handles {
  std::mutex mutex;  // a handle is used by one thread at a time
  std::map<int32_t, cudnn::Handle> by_device;
  std::map<std::string, std::unique_ptr<Plan>> plans;  // by problem_key
};

Handles& handles() {
  static Handles* h = new Handles();  // outlives static destruction
  return *h;
}

cudnn::Handle handle_for(int32_t device_index) {
  auto& h = handles();
  auto it = h.by_device.find(device_index);
  if (it != h.by_device.end()) return it->second;
  cudnn::Handle handle = nullptr;
  CUDNN_CHECK(cudnn::api().create(&handle), "cudnnCreate");
  h.by_device[device_index] = handle;
  return handle;
}

std::string problem_key(int32_t device_index, const Tensor& x, const Tensor& w, const Tensor& y,
                        const ConvArgs& c, bool channels_last) {
  return str(device_index, c.transposed ? " T " : " F ", dtype_name(x.dtype),
             channels_last ? " nhwc " : " nchw ", shape_string(x.sizes), shape_string(x.strides),
             shape_string(w.sizes), shape_string(y.sizes), shape_string(y.strides),
             shape_string(c.stride), shape_string(c.padding), shape_string(c.dilation), " g",
             c.groups, c.has_bias ? " b" : "");
}

// How the algorithm is chosen: by timing every candidate once per problem
// (cuDNN's Find; what torch does with cudnn.benchmark), or by cuDNN's
// heuristics alone (AOTISHIM_CUDNN_ALGO=heuristic: no timing run, but it can
// pick a slow algorithm).
bool time_algorithms() {
  static const bool timed = [] {
    const char* v = std::getenv("AOTISHIM_CUDNN_ALGO");
    return v == nullptr || std::string(v) != "heuristic";
  }();
  return timed;
}

// The bias (one value per output channel) as a tensor broadcast over y.
Tensor bias_view(CudaDevice& device, const ConvArgs& c, int64_t ndim) {
  Tensor b = make_view(c.bias, {c.bias.numel()}, {c.bias.dim() > 0 ? c.bias.strides.back() : 1},
                       c.bias.storage_offset);
  if (b.sizes[0] > 1 && b.strides[0] != 1) {
    Tensor packed = make_empty(device, b.dtype, b.sizes);
    device.copy(packed, b);
    b = packed;
  }
  std::vector<int64_t> sizes(ndim, 1), strides(ndim, 1);
  sizes[1] = b.sizes[0];
  strides[0] = b.sizes[0];
  return make_view(b, sizes, strides, b.storage_offset);
}

std::unique_ptr<Plan> make_plan(CudaDevice& device, cudnn::Handle h, const ConvArgs& c,
                                const Tensor& x, const Tensor& w, const Tensor& y,
                                const std::vector<int64_t>& stride,
                                const std::vector<int64_t>& padding,
                                const std::vector<int64_t>& dilation, bool channels_last) {
  const cudnn::Api& api = cudnn::api();
  auto plan = std::make_unique<Plan>();
  const int type = data_type(x.dtype);
  const int nsp = static_cast<int>(stride.size());
  // x and y are dense in the format: its strides are theirs.
  set_tensor(plan->x, x, format_strides(x.sizes, channels_last));
  set_tensor(plan->y, y, format_strides(y.sizes, channels_last));
  int wdims[8], pads[3], strides[3], dils[3];
  for (int64_t d = 0; d < w.dim(); ++d) wdims[d] = to_int(w.sizes[d], "weight size");
  for (int d = 0; d < nsp; ++d) {
    pads[d] = to_int(padding[d], "padding");
    strides[d] = to_int(stride[d], "stride");
    dils[d] = to_int(dilation[d], "dilation");
  }
  CUDNN_CHECK(api.set_filter_nd(plan->w.d, type,
                                channels_last ? cudnn::kFormatNHWC : cudnn::kFormatNCHW,
                                static_cast<int>(w.dim()), wdims),
              str("cudnnSetFilterNdDescriptor(", shape_string(w.sizes), ")"));
  const int compute = x.dtype == DType::Float64 ? cudnn::kDataDouble : cudnn::kDataFloat;
  CUDNN_CHECK(api.set_conv_nd(plan->conv.d, nsp, pads, strides, dils, cudnn::kCrossCorrelation,
                              compute),
              "cudnnSetConvolutionNdDescriptor");
  CUDNN_CHECK(api.set_conv_group_count(plan->conv.d, to_int(c.groups, "groups")),
              "cudnnSetConvolutionGroupCount");
  const bool half = x.dtype == DType::Float16 || x.dtype == DType::BFloat16;
  CUDNN_CHECK(api.set_conv_math_type(plan->conv.d, half ? cudnn::kTensorOpMath : cudnn::kFmaMath),
              "cudnnSetConvolutionMathType");
  if (c.has_bias) {
    Tensor b = bias_view(device, c, y.dim());
    set_tensor(plan->bias, b, b.strides);
  }

  // For a transposed convolution x is the "gradient" dy and y the "input
  // gradient" dx of the forward convolution whose filter is w.
  cudnn::AlgoPerf perf[16] = {};
  int returned = 0;
  const bool timed = time_algorithms();
  if (c.transposed) {
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
        c.transposed ? api.bwd_data_workspace_size(h, plan->w.d, plan->x.d, plan->conv.d,
                                                   plan->y.d, perf[i].algo, &bytes)
                     : api.fwd_workspace_size(h, plan->x.d, plan->w.d, plan->conv.d, plan->y.d,
                                              perf[i].algo, &bytes);
    if (st == cudnn::kStatusSuccess) {
      plan->algo = perf[i].algo;
      plan->workspace = bytes;
    } else {
      why += str(" algorithm ", perf[i].algo, ": ", cudnn::status_text(st), ";");
    }
  }
  AOTISHIM_CHECK(plan->algo >= 0, "cuDNN has no algorithm for this convolution (",
                 c.transposed ? "transposed, " : "", dtype_name(x.dtype), " input ",
                 shape_string(x.sizes), ", weight ", shape_string(w.sizes), ", output ",
                 shape_string(y.sizes), ", groups ", c.groups, "):",
                 why.empty() ? " none offered" : why);
  return plan;
}

void cudnn_convolution(CudaDevice& device, const ConvArgs& c) {
  const cudnn::Api& api = cudnn::api();  // a clear error here when cuDNN is missing
  if (c.out.numel() == 0) return;
  const int64_t spatial = c.input.dim() - 2;
  AOTISHIM_CHECK(spatial >= 1 && spatial <= 3, "cuda convolution takes 1, 2 or 3 spatial dims, got ",
                 spatial);
  Tensor out = c.out, input = c.input, weight = c.weight;
  std::vector<int64_t> stride = c.stride, padding = c.padding, dilation = c.dilation;
  if (spatial == 1) {
    out = with_unit_height(out);
    input = with_unit_height(input);
    weight = with_unit_height(weight);
    stride.insert(stride.begin(), 1);
    padding.insert(padding.begin(), 0);
    dilation.insert(dilation.begin(), 1);
  }
  const bool channels_last = in_format(out, true) && !in_format(out, false);
  Tensor x = in_format_copy(device, input, channels_last);
  Tensor w = in_format_copy(device, weight, channels_last);
  Tensor y = in_format(out, channels_last)
                 ? out
                 : make_empty(device, out.dtype, out.sizes, format_strides(out.sizes, channels_last));

  DeviceScope on(device.index());
  std::lock_guard<std::mutex> lock(handles().mutex);
  cudnn::Handle h = handle_for(device.index());
  CUDNN_CHECK(api.set_stream(h, device.stream()), "cudnnSetStream");

  std::unique_ptr<Plan>& slot =
      handles().plans[problem_key(device.index(), x, w, y, c, channels_last)];
  if (!slot) slot = make_plan(device, h, c, x, w, y, stride, padding, dilation, channels_last);
  const Plan& plan = *slot;

  Tensor workspace;
  void* ws = nullptr;
  if (plan.workspace > 0) {
    workspace = make_empty(device, DType::UInt8, {static_cast<int64_t>(plan.workspace)});
    ws = workspace.data();
  }
  const double one_d = 1.0, zero_d = 0.0;
  const float one_f = 1.0f, zero_f = 0.0f;
  const bool wide = x.dtype == DType::Float64;  // scaling factors are double only for double
  const void* one = wide ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = wide ? static_cast<const void*>(&zero_d) : &zero_f;
  device.count_command();
  CUDNN_CHECK(c.transposed
                  ? api.backward_data(h, one, plan.w.d, w.data(), plan.x.d, x.data(),
                                      plan.conv.d, plan.algo, ws, plan.workspace, zero, plan.y.d,
                                      y.data())
                  : api.forward(h, one, plan.x.d, x.data(), plan.w.d, w.data(), plan.conv.d,
                                plan.algo, ws, plan.workspace, zero, plan.y.d, y.data()),
              c.transposed ? "cudnnConvolutionBackwardData" : "cudnnConvolutionForward");
  if (c.has_bias) {
    const Tensor b = bias_view(device, c, y.dim());
    CUDNN_CHECK(api.add_tensor(h, one, plan.bias.d, b.data(), one, plan.y.d, y.data()),
                "cudnnAddTensor (bias)");
  }
  if (y.data() != out.data() || y.strides != out.strides) device.copy(out, y);
}

void conv_kernel(const ConvArgs& args) {
  CudaDevice& device = static_cast<CudaDevice&>(args.out.device());
  cudnn_convolution(device, args);
}

AOTISHIM_REGISTER_KERNEL(ops::conv, DeviceType::CUDA, conv_kernel);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
