// ConvArgs on cuDNN (the cuda kernel of ops::conv). Tensors go to cuDNN in
// one memory format, NCHW or NHWC (channels last): out's, when out is dense
// in one of them, so the common cases copy nothing; inputs in another layout
// are packed on the stream first. Each problem gets a plan on its first call
// (cudnn_conv.h: cuDNN's graph API, its legacy API where the graph offers no
// engine), kept for the life of the process; the workspace is the device's
// kept scratch buffer of the stream (a larger one is allocated for the call),
// and the bias is added by our own kernel.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/shim_profile.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/cudnn_api.h"
#include "devices/cuda/cudnn_conv.h"
#include "ops/convolution.h"

namespace aotishim {
namespace cuda {

int cudnn_data_type(DType dtype) {
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

bool cudnn_time_candidates() {
  static const bool timed = [] {
    const char* v = std::getenv("AOTISHIM_CUDNN_ALGO");
    return v == nullptr || std::string(v) != "heuristic";
  }();
  return timed;
}

namespace {

// AOTISHIM_CUDNN_API=legacy skips the graph API (to compare, or to work
// around an engine); read once.
bool graph_api_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("AOTISHIM_CUDNN_API");
    return v == nullptr || std::string(v) != "legacy";
  }();
  return enabled;
}

// Dimension order, outermost first, of a memory format for `ndim` dims.
std::vector<int> format_order(bool channels_last, size_t ndim) {
  std::vector<int> order = {0};
  if (!channels_last) order.push_back(1);
  for (size_t d = 2; d < ndim; ++d) order.push_back(static_cast<int>(d));
  if (channels_last) order.push_back(1);
  return order;
}

std::vector<int64_t> format_strides(const std::vector<int64_t>& sizes, bool channels_last) {
  std::vector<int> order = format_order(channels_last, sizes.size());
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

// The largest power of two, up to 16, that divides every pointer: cuDNN's
// vectorised engines need to know, and a plan is kept per alignment.
int64_t common_alignment(std::initializer_list<const void*> pointers) {
  int64_t a = 16;
  for (const void* p : pointers)
    while (a > 1 && reinterpret_cast<uintptr_t>(p) % static_cast<uintptr_t>(a) != 0) a /= 2;
  return a;
}

// y[n, c, ...] += bias[c], on the stream.
void add_bias(CudaDevice& device, const Tensor& y, const Tensor& bias) {
  AOTISHIM_CHECK(bias.numel() == y.sizes[1], "cuda convolution: bias of ", bias.numel(),
                 " values for ", y.sizes[1], " output channels");
  AOTISHIM_CHECK(bias.dtype == y.dtype, "cuda convolution: ", dtype_name(bias.dtype),
                 " bias with ", dtype_name(y.dtype), " output");
  std::vector<int64_t> strides(y.dim(), 0);
  strides[1] = bias.dim() > 0 ? bias.strides.back() : 1;
  Tensor b = make_view(bias, y.sizes, strides, bias.storage_offset);
  launch_add(view_of(y), view_of(b), y.sizes.data(), static_cast<int>(y.dim()), device.stream());
}

struct Cache {
  std::mutex mutex;  // a handle is used by one thread at a time
  std::map<int32_t, cudnn::Handle> handles;  // by device
  std::map<std::vector<int64_t>, std::unique_ptr<ConvPlan>> plans;  // by ConvProblem::key
};

Cache& cache() {
  static Cache* c = new Cache();  // outlives static destruction
  return *c;
}

cudnn::Handle handle_for(int32_t device_index) {
  auto& handles = cache().handles;
  auto it = handles.find(device_index);
  if (it != handles.end()) return it->second;
  cudnn::Handle handle = nullptr;
  const cudnn::Status st = cudnn::api().create(&handle);
  AOTISHIM_CHECK(st == cudnn::kStatusSuccess, "cudnnCreate failed: ", cudnn::status_text(st));
  handles[device_index] = handle;
  return handle;
}

// Workspaces up to this size come from the device's kept scratch buffer.
constexpr size_t kKeptWorkspaceBytes = size_t{64} << 20;

void cudnn_convolution(CudaDevice& device, const ConvArgs& c) {
  const cudnn::Api& api = cudnn::api();  // a clear error here when cuDNN is missing
  if (c.out.numel() == 0) return;
  const int64_t spatial = c.input.dim() - 2;
  AOTISHIM_CHECK(spatial >= 1 && spatial <= 3, "cuda convolution takes 1, 2 or 3 spatial dims, got ",
                 spatial);
  Tensor out = c.out, input = c.input, weight = c.weight;
  ConvProblem p;
  p.transposed = c.transposed;
  p.dtype = c.input.dtype;
  p.stride = c.stride;
  p.padding = c.padding;
  p.dilation = c.dilation;
  p.groups = c.groups;
  if (spatial == 1) {
    out = with_unit_height(out);
    input = with_unit_height(input);
    weight = with_unit_height(weight);
    p.stride.insert(p.stride.begin(), 1);
    p.padding.insert(p.padding.begin(), 0);
    p.dilation.insert(p.dilation.begin(), 1);
  }
  p.channels_last = in_format(out, true) && !in_format(out, false);
  Tensor x = in_format_copy(device, input, p.channels_last);
  Tensor w = in_format_copy(device, weight, p.channels_last);
  Tensor y = in_format(out, p.channels_last)
                 ? out
                 : make_empty(device, out.dtype, out.sizes, format_strides(out.sizes, p.channels_last));
  p.x = x.sizes;
  p.w = w.sizes;
  p.y = y.sizes;
  const ConvBuffers buffers{x.data(), w.data(), y.data()};
  p.alignment = common_alignment({buffers.x, buffers.w, buffers.y});

  DeviceScope on(device.index());
  std::lock_guard<std::mutex> lock(cache().mutex);
  cudnn::Handle h = handle_for(device.index());
  const cudnn::Status st = api.set_stream(h, device.stream());
  AOTISHIM_CHECK(st == cudnn::kStatusSuccess, "cudnnSetStream failed: ", cudnn::status_text(st));

  std::unique_ptr<ConvPlan>& plan = cache().plans[p.key(device.index())];
  if (!plan) {
    std::string why = " not tried (AOTISHIM_CUDNN_API=legacy)";
    if (graph_api_enabled()) {
      why.clear();
      plan = make_graph_conv_plan(device, h, p, buffers, &why);
      if (plan) log(LogLevel::Info, str("cuda convolution (", p.describe(), "): graph-API plan"));
    }
    if (!plan) {
      log(LogLevel::Info, str("cuda convolution (", p.describe(),
                              "): no graph-API engine, the legacy API runs it:", why));
      try {
        plan = make_legacy_conv_plan(h, p);
      } catch (const std::exception& e) {
        fail(str(e.what(), "; the graph API's engines:", why.empty() ? " none offered" : why));
      }
    }
  }
  // The device's scratch buffer for this stream (shared with cuBLASLt, in
  // stream order) up to a size worth keeping; a larger workspace is
  // allocated for the call.
  const size_t need = plan->workspace_bytes();
  CudaDevice::ScratchLease scratch;
  if (need > 0 && need <= kKeptWorkspaceBytes) scratch = device.scratch(device.stream(), need);
  Tensor workspace;
  void* workspace_ptr = scratch.data;
  if (need > 0 && workspace_ptr == nullptr) {
    workspace = make_empty(device, DType::UInt8, {static_cast<int64_t>(need)});
    workspace_ptr = workspace.data();
  }
  device.count_command();
  {
    ShimTimer timed("convolution: cuDNN run");  // AOTISHIM_PROFILE_SHIMS=1
    plan->run(h, buffers, workspace_ptr);
  }
  if (c.has_bias) add_bias(device, y, c.bias);
  if (y.data() != out.data() || y.strides != out.strides) device.copy(out, y);
}

// cuDNN turns down a transposed convolution whose output padding reaches its
// stride (torch allows it while below the dilation, and runs its own kernel).
bool output_padding_past_stride(const ConvArgs& c) {
  if (!c.transposed) return false;
  for (size_t d = 0; d < c.stride.size(); ++d)
    if (c.output_padding[d] >= c.stride[d]) return true;
  return false;
}

// Such a convolution's output is a window of the full transposed convolution
// (no padding, no output padding): it starts `padding` in, and where the
// output padding reaches past the full result's end the output is zero (then
// the bias). cuDNN runs the full one; a strided copy cuts the window.
void transposed_through_full_output(CudaDevice& device, const ConvArgs& c) {
  const size_t spatial = c.stride.size();
  ConvArgs full = c;
  full.has_bias = false;
  full.padding.assign(spatial, 0);
  full.output_padding.assign(spatial, 0);
  std::vector<int64_t> sizes = c.out.sizes, window = c.out.sizes;
  int64_t offset = 0;
  const bool channels_last = in_format(c.out, true) && !in_format(c.out, false);
  for (size_t d = 0; d < spatial; ++d) {
    const int64_t k = c.weight.sizes[2 + d];
    sizes[2 + d] = (c.input.sizes[2 + d] - 1) * c.stride[d] + c.dilation[d] * (k - 1) + 1;
    window[2 + d] = std::min(c.out.sizes[2 + d], sizes[2 + d] - c.padding[d]);
  }
  full.out = make_empty(device, c.out.dtype, sizes, format_strides(sizes, channels_last));
  for (size_t d = 0; d < spatial; ++d) offset += c.padding[d] * full.out.strides[2 + d];
  cudnn_convolution(device, full);
  device.fill_zero(c.out);
  if (std::all_of(window.begin(), window.end(), [](int64_t n) { return n > 0; })) {
    device.copy(make_view(c.out, window, c.out.strides, c.out.storage_offset),
                make_view(full.out, window, full.out.strides, full.out.storage_offset + offset));
  }
  if (c.has_bias) add_bias(device, c.out, c.bias);
}

void conv_kernel(const ConvArgs& args) {
  CudaDevice& device = static_cast<CudaDevice&>(args.out.device());
  if (output_padding_past_stride(args)) {
    transposed_through_full_output(device, args);
  } else {
    cudnn_convolution(device, args);
  }
}

AOTISHIM_REGISTER_KERNEL(ops::conv, DeviceType::CUDA, conv_kernel);

}  // namespace

std::vector<int64_t> ConvProblem::key(int32_t device) const {
  std::vector<int64_t> k = {device, transposed, channels_last, static_cast<int64_t>(dtype),
                            groups, alignment};
  for (const std::vector<int64_t>* v : {&x, &w, &y, &stride, &padding, &dilation}) {
    k.push_back(static_cast<int64_t>(v->size()));
    k.insert(k.end(), v->begin(), v->end());
  }
  return k;
}

std::string ConvProblem::describe() const {
  return str(transposed ? "transposed, " : "", dtype_name(dtype), " input ", shape_string(x),
             ", weight ", shape_string(w), ", output ", shape_string(y), ", groups ", groups,
             channels_last ? ", channels last" : "");
}

std::vector<int64_t> ConvProblem::strides(const std::vector<int64_t>& sizes) const {
  return format_strides(sizes, channels_last);
}

}  // namespace cuda
}  // namespace aotishim
