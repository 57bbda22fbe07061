#include "runner/proxy_executor.h"

#include <algorithm>
#include <mutex>
#include <set>

#include "aotishim/error.h"
#include "core/check_failures.h"
#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "runner/aten_proxy_ops.h"

namespace aotishim::runner {

namespace {
struct LiveExecutors {
  std::mutex mutex;
  std::set<const ProxyExecutor*> live;
};
LiveExecutors& live_executors() {
  static LiveExecutors* l = new LiveExecutors();  // never destroyed (calls at exit)
  return *l;
}

std::string describe_shape(int32_t dtype, const std::vector<int64_t>& sizes) {
  std::string s = is_supported_dtype(dtype) ? dtype_name(static_cast<DType>(dtype)) : "?";
  s += "[";
  for (size_t i = 0; i < sizes.size(); ++i) {
    s += i ? "," : "";
    s += sizes[i] < 0 ? std::string("?") : std::to_string(sizes[i]);
  }
  return s + "]";
}

// Deletes the handles an implementation returned, whatever happens to the call.
struct OwnedResults {
  std::vector<AtenTensorHandle> handles;
  ~OwnedResults() {
    for (AtenTensorHandle h : handles)
      if (h && is_live(h)) release(h);
  }
};
}  // namespace

ProxyExecutor::ProxyExecutor(std::vector<ExternNode> nodes, Device& device,
                             const std::string& model_path)
    : device_(device), model_path_(model_path) {
  std::vector<std::string> missing, unsupported;
  for (ExternNode& node : nodes) {
    Bound b;
    if (!node.unsupported.empty()) {
      unsupported.push_back(node.target + " (" + node.unsupported + ")");
    } else if (!(b.impl = find_custom_op(node.target)) &&
               !(b.impl = find_aten_proxy_op(node.target))) {
      bool listed = false;
      for (const std::string& m : missing) listed = listed || m == node.target;
      if (!listed) missing.push_back(node.target);
    }
    b.node = std::move(node);
    bound_.push_back(std::move(b));
  }
  if (!missing.empty() || !unsupported.empty()) {
    std::string message = "model '" + model_path + "'";
    if (!missing.empty()) {
      std::string names;
      for (const std::string& m : missing) names += (names.empty() ? "" : ", ") + m;
      message += " calls ops that have no registered implementation: " + names +
                 ". Register each before loading the model: aotishim.register_custom_op(\"" +
                 missing.front() + "\", fn) in Python, aotishim::register_custom_op in C++ " +
                 "(see README, \"Custom ops\")";
    }
    if (!unsupported.empty()) {
      std::string names;
      for (const std::string& u : unsupported) names += (names.empty() ? "" : ", ") + u;
      message += std::string(missing.empty() ? "" : ";") + " calls ops aotishim cannot pass: " + names;
    }
    throw Error(message);
  }
  LiveExecutors& l = live_executors();
  std::lock_guard<std::mutex> lock(l.mutex);
  l.live.insert(this);
}

ProxyExecutor::~ProxyExecutor() {
  LiveExecutors& l = live_executors();
  std::lock_guard<std::mutex> lock(l.mutex);
  l.live.erase(this);
}

AOTIProxyExecutorHandle ProxyExecutor::handle() {
  return reinterpret_cast<AOTIProxyExecutorHandle>(this);
}

ProxyExecutor& ProxyExecutor::from_handle(AOTIProxyExecutorHandle handle) {
  AOTISHIM_CHECK(handle != nullptr,
                 "the model calls an op through the proxy executor, but it was given none: its "
                 "extern-kernel nodes file (<model>.json beside the .so) was not found at load");
  auto* executor = reinterpret_cast<const ProxyExecutor*>(handle);
  LiveExecutors& l = live_executors();
  std::lock_guard<std::mutex> lock(l.mutex);
  AOTISHIM_CHECK(l.live.count(executor) == 1, "proxy executor handle ",
                 static_cast<void*>(handle), " is not a live aotishim proxy executor");
  return *const_cast<ProxyExecutor*>(executor);
}

void ProxyExecutor::call(int index, int num_ints, const int64_t* ints, int num_tensors,
                         AtenTensorHandle* tensors) const {
  try {
    call_checked(index, num_ints, ints, num_tensors, tensors);
  } catch (const std::exception& e) {
    try {
      define_failed_outputs(index, num_tensors, tensors);
    } catch (const std::exception&) {
      // The call's own error is the one to report.
    }
    record_check_failure(e.what());
    throw;
  }
}

void ProxyExecutor::define_failed_outputs(int index, int num_tensors,
                                          AtenTensorHandle* tensors) const {
  if (index < 0 || static_cast<size_t>(index) >= bound_.size() || tensors == nullptr) return;
  const ExternNode& node = bound_[index].node;
  if (num_tensors < 0 || static_cast<size_t>(num_tensors) != node.input_tensors + node.outputs.size())
    return;
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    AtenTensorHandle h = tensors[node.input_tensors + k];
    if (h == nullptr || lookup(h, "output")->defined) continue;
    const OpOutput& want = node.outputs[k];
    // Unknown (dynamic) sizes: an empty tensor, the most that can be said.
    std::vector<int64_t> sizes{0}, strides;
    DType dtype = DType::Float32;
    if (want.known) {
      sizes = want.sizes;
      for (int64_t& d : sizes) d = std::max<int64_t>(d, 0);
      bool static_strides = want.strides.size() == sizes.size();
      for (int64_t st : want.strides) static_strides = static_strides && st >= 0;
      if (static_strides) strides = want.strides;
      dtype = static_cast<DType>(want.dtype);
    }
    Tensor value = make_empty(device_, dtype, sizes, strides);
    // Zero every byte the geometry reaches, as one packed run of bytes.
    const int64_t bytes = static_cast<int64_t>(value.extent_bytes());
    if (bytes > 0) device_.fill_zero(Tensor{value.storage, 0, {bytes}, {1}, DType::UInt8});
    assign(h, std::move(value));
  }
}

void ProxyExecutor::call_checked(int index, int num_ints, const int64_t* ints, int num_tensors,
                                 AtenTensorHandle* tensors) const {
  AOTISHIM_CHECK(index >= 0 && static_cast<size_t>(index) < bound_.size(), "extern-kernel node ",
                 index, " does not exist: the package lists ", bound_.size());
  const Bound& b = bound_[index];
  const ExternNode& node = b.node;
  const std::string op = "op " + node.target + " (node " + std::to_string(index) + ")";
  const size_t slots = node.outputs.size();
  AOTISHIM_CHECK(num_ints >= 0 && static_cast<size_t>(num_ints) == node.input_ints + node.output_ints,
                 op, ": the model passed ", num_ints, " ints, its package node takes ",
                 node.input_ints + node.output_ints);
  AOTISHIM_CHECK(num_tensors >= 0 && static_cast<size_t>(num_tensors) == node.input_tensors + slots,
                 op, ": the model passed ", num_tensors, " tensors, its package node takes ",
                 node.input_tensors + slots);
  AOTISHIM_CHECK(num_ints == 0 || ints != nullptr, op, ": the int arguments are null");
  AOTISHIM_CHECK(num_tensors == 0 || tensors != nullptr, op, ": the tensor arguments are null");

  OpCall call;
  call.op = node.target;
  call.device = device_.name();
  call.returns = node.returns;
  call.outputs = node.outputs;
  std::vector<std::shared_ptr<Tensor>> arguments;  // for the aliasing checks below
  size_t ti = 0, ii = 0;
  auto next_tensor = [&] {
    AtenTensorHandle h = tensors[ti++];
    arguments.push_back(lookup(h, "argument"));
    return h;
  };
  for (const ExternInput& in : node.inputs) {
    OpArg a = in.value;
    switch (a.kind) {
      case OpArg::Kind::Tensor: a.tensor = next_tensor(); break;
      case OpArg::Kind::TensorList:
        for (size_t k = 0; k < in.tensors; ++k) a.tensors.push_back(next_tensor());
        break;
      case OpArg::Kind::OptionalTensorList:
        for (bool present : in.present) a.tensors.push_back(present ? next_tensor() : nullptr);
        break;
      case OpArg::Kind::Int: a.int_value = ints[ii++]; break;
      case OpArg::Kind::IntList:
        for (size_t k = 0; k < in.ints; ++k) a.ints.push_back(ints[ii++]);
        break;
      case OpArg::Kind::Device: a.string_value = device_.name(); break;
      default: break;
    }
    call.args.push_back(std::move(a));
  }

  OwnedResults results;
  try {
    results.handles = (*b.impl)(call);
  } catch (const std::exception& e) {
    fail(str(op, " failed: ", e.what()));
  }
  AOTISHIM_CHECK(results.handles.size() == slots, op, " returned ", results.handles.size(),
                 " tensor(s); the model expects ", slots);
  std::vector<std::shared_ptr<Tensor>> placed;
  for (size_t k = 0; k < slots; ++k) {
    AtenTensorHandle h = results.handles[k];
    const std::string which = op + " output " + std::to_string(k);
    AOTISHIM_CHECK(h != nullptr, which, " is missing (a null handle)");
    for (int j = 0; j < num_tensors; ++j) {
      AOTISHIM_CHECK(h != tensors[j], which, " is one of the call's own handles; return a new "
                     "handle (aoti_torch_new_tensor_handle for the same memory)");
    }
    for (size_t j = 0; j < k; ++j) {
      AOTISHIM_CHECK(h != results.handles[j], which, " is the same handle as output ", j);
    }
    std::shared_ptr<Tensor> t = lookup(h, which.c_str());
    AOTISHIM_CHECK(t->defined, which, " is an uninitialized tensor");
    AOTISHIM_CHECK(&t->device() == &device_, which, " is on ", t->device().name(),
                   "; the model runs on ", device_.name());
    const OpOutput& want = node.outputs[k];
    std::vector<int64_t> strides = t->strides;
    if (want.known) {
      const int32_t got_dtype = static_cast<int32_t>(t->dtype);
      bool same = got_dtype == want.dtype && t->sizes.size() == want.sizes.size();
      for (size_t d = 0; same && d < want.sizes.size(); ++d)
        same = want.sizes[d] < 0 || want.sizes[d] == t->sizes[d];
      AOTISHIM_CHECK(same, which, " is ", describe_shape(got_dtype, t->sizes),
                     "; the model expects ", describe_shape(want.dtype, want.sizes));
      bool static_strides = true;
      for (int64_t s : want.strides) static_strides = static_strides && s >= 0;
      if (static_strides) strides = want.strides;
    }
    // The compiled code reads the result in the layout Inductor planned and
    // may reuse its memory in place, so a result in another layout, one over
    // borrowed memory, or one sharing memory with an argument or another
    // result is copied into memory of its own.
    bool copy = !t->storage->owned() || strides != t->strides;
    for (const auto& other : arguments) copy = copy || other->storage == t->storage;
    for (const auto& other : placed) copy = copy || other->storage == t->storage;
    Tensor value = *t;
    if (copy) {
      value = make_empty(device_, t->dtype, t->sizes, strides);
      copy_into(value, *t);
    }
    value.defined = true;
    placed.push_back(std::make_shared<Tensor>(value));
    assign(tensors[node.input_tensors + k], std::move(value));
  }
}

}  // namespace aotishim::runner
