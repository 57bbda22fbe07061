#include "runner/graph_runs.h"

#include <algorithm>
#include <exception>
#include <numeric>
#include <sstream>
#include <unordered_map>

#include "aotishim/runtime.h"
#include "core/device.h"
#include "core/dtype.h"
#include "core/error.h"
#include "runner/handle_cleanup.h"

namespace aotishim::runner {

namespace {

// Signatures a model records at most; calls with further ones run without.
constexpr size_t kMaxRecordings = 16;

struct Signature {
  int32_t dtype = 0;
  std::string device;
  std::vector<int64_t> sizes, strides;
  bool operator==(const Signature& o) const {
    return dtype == o.dtype && device == o.device && sizes == o.sizes && strides == o.strides;
  }
};

Signature signature_of(AtenTensorHandle h) {
  TensorInfo info = tensor_info(h);
  return Signature{info.dtype, std::move(info.device), std::move(info.sizes),
                   std::move(info.strides)};
}

std::string describe(const std::vector<Signature>& key) {
  std::ostringstream out;
  for (size_t i = 0; i < key.size(); ++i) {
    if (i) out << ", ";
    out << dtype_name(dtype_from_int(key[i].dtype)) << "[";
    for (size_t d = 0; d < key[i].sizes.size(); ++d) out << (d ? "," : "") << key[i].sizes[d];
    out << "]";
  }
  return out.str();
}

// Whether every element has its own address and the addresses fill one
// block: a copy into a tensor of these strides is then exact.
bool dense(const Signature& s) {
  std::vector<size_t> order(s.sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return s.strides[a] < s.strides[b]; });
  int64_t expected = 1;
  for (size_t d : order) {
    if (s.sizes[d] == 0) return true;
    if (s.sizes[d] != 1 && s.strides[d] != expected) return false;
    expected *= s.sizes[d];
  }
  return true;
}

// Fresh handles over `tensors` (the container steals its inputs).
std::vector<AtenTensorHandle> handles_over(const std::vector<AtenTensorHandle>& tensors) {
  std::vector<AtenTensorHandle> out;
  try {
    for (AtenTensorHandle t : tensors) {
      AtenTensorHandle h = nullptr;
      check(aoti_torch_new_tensor_handle(t, &h));
      out.push_back(h);
    }
  } catch (...) {
    consume(out);
    throw;
  }
  return out;
}

}  // namespace

struct GraphRuns::Recording {
  std::vector<Signature> key;
  std::vector<AtenTensorHandle> inputs;   // where the graph reads its inputs
  std::vector<AtenTensorHandle> outputs;  // its output slots (a handle may repeat)
  std::unique_ptr<RecordedWork> work;     // null: not recordable, for `reason`
  std::string reason;
  uint64_t replays = 0;

  // The graph's own output memory is freed by its storage's free (on the
  // replay queue, after the last replay); then the graph goes. After a
  // failed recording only the output handles exist, not their memory.
  void release() {
    consume(outputs);
    outputs.clear();
    consume(inputs);
    inputs.clear();
    work.reset();
  }
};

GraphRuns::GraphRuns(Device& device, std::string model_name)
    : device_(device), model_name_(std::move(model_name)) {}

GraphRuns::~GraphRuns() {
  try {
    clear();
  } catch (...) {
  }
}

GraphRuns::Recording* GraphRuns::find(const std::vector<AtenTensorHandle>& inputs) {
  std::vector<Signature> key;
  for (AtenTensorHandle h : inputs) key.push_back(signature_of(h));
  for (auto& r : recordings_)
    if (r->key == key) return r.get();
  if (recordings_.size() >= kMaxRecordings) return nullptr;
  auto r = std::make_unique<Recording>();
  r->key = std::move(key);
  for (size_t i = 0; i < r->key.size() && r->reason.empty(); ++i) {
    if (!dense(r->key[i])) {
      r->reason = str("input ", i, " is not dense (its strides leave gaps or overlap)");
    }
  }
  recordings_.push_back(std::move(r));
  return recordings_.back().get();
}

std::vector<AtenTensorHandle> GraphRuns::run(std::vector<AtenTensorHandle>& inputs,
                                             const RunFn& run) {
  Recording* r = nullptr;
  try {
    r = find(inputs);
  } catch (...) {
    consume(inputs);
    throw;
  }
  if (r == nullptr || (!r->reason.empty())) return run(inputs);
  std::vector<AtenTensorHandle> result;
  try {
    device_.on_replay_queue([&] {
      if (r->work) {
        replay(*r, inputs, result);
      } else {
        record(*r, inputs, run, result);
      }
    });
  } catch (...) {
    // A first call that failed (a wrong input, say) takes no place from the
    // signatures that will run.
    if (!r->work && r->reason.empty()) {
      recordings_.erase(std::find_if(recordings_.begin(), recordings_.end(),
                                     [&](const auto& kept) { return kept.get() == r; }));
    }
    throw;
  }
  return result;
}

void GraphRuns::record(Recording& r, std::vector<AtenTensorHandle>& inputs, const RunFn& run,
                       std::vector<AtenTensorHandle>& result) {
  // The recording's inputs: this call's, copied to tensors of the same
  // layout that live as long as the recording.
  try {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Signature& s = r.key[i];
      int32_t type = 0, index = 0;
      check(aoti_torch_get_device_type(inputs[i], &type));
      check(aoti_torch_get_device_index(inputs[i], &index));
      AtenTensorHandle copy = nullptr;
      check(aoti_torch_empty_strided(static_cast<int64_t>(s.sizes.size()), s.sizes.data(),
                                     s.strides.data(), s.dtype, type, index, &copy));
      r.inputs.push_back(copy);
      check(aoti_torch_copy_(copy, inputs[i], 0));
    }
  } catch (...) {
    consume(inputs);
    r.release();
    throw;
  }
  consume(inputs);
  // A plain run first: it makes what a recording must not (cuDNN's and
  // cuBLAS's plans, workspaces, the kernels' first loads), and gives this
  // call's outputs should the recording fail.
  std::vector<AtenTensorHandle> warm = handles_over(r.inputs);
  std::vector<AtenTensorHandle> plain;
  try {
    plain = run(warm);
  } catch (...) {
    r.release();  // recorded on the next call of this signature
    throw;
  }
  try {
    r.work = device_.record_graph([&] {
      std::vector<AtenTensorHandle> recorded = handles_over(r.inputs);
      r.outputs = run(recorded);
    });
  } catch (const std::exception& e) {
    r.release();
    r.reason = e.what();
    log(LogLevel::Info, str(model_name_, ": runs on ", describe(r.key),
                            " are not recorded as a CUDA graph: ", r.reason));
    result = std::move(plain);
    return;
  }
  release_outputs(plain.data(), plain.size(), nullptr);
  // The recording has not run: its first replay gives this call's outputs.
  std::vector<AtenTensorHandle> none;
  replay(r, none, result);
}

void GraphRuns::replay(Recording& r, std::vector<AtenTensorHandle>& inputs,
                       std::vector<AtenTensorHandle>& result) {
  try {
    for (size_t i = 0; i < inputs.size(); ++i) check(aoti_torch_copy_(r.inputs[i], inputs[i], 0));
  } catch (...) {
    consume(inputs);
    throw;
  }
  consume(inputs);
  r.work->replay();
  ++r.replays;
  // The graph rewrites its outputs at the next replay: hand out copies, one
  // per distinct output, in every slot that held it.
  std::unordered_map<AtenTensorHandle, AtenTensorHandle> copies;
  result.assign(r.outputs.size(), nullptr);
  try {
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      AtenTensorHandle h = r.outputs[i];
      if (!h) continue;
      auto found = copies.find(h);
      if (found == copies.end()) {
        AtenTensorHandle copy = nullptr;
        check(aoti_torch_clone(h, &copy));
        found = copies.emplace(h, copy).first;
      }
      result[i] = found->second;
    }
  } catch (...) {
    release_outputs(result.data(), result.size(), nullptr);
    throw;
  }
}

std::vector<GraphInfo> GraphRuns::info() const {
  std::vector<GraphInfo> out;
  for (const auto& r : recordings_) {
    GraphInfo g;
    g.inputs = describe(r->key);
    g.recorded = r->work != nullptr;
    g.reason = r->reason;
    g.replays = r->replays;
    out.push_back(std::move(g));
  }
  return out;
}

void GraphRuns::clear() {
  if (recordings_.empty()) return;
  device_.on_replay_queue([&] {
    for (auto& r : recordings_) r->release();
  });
  recordings_.clear();
}

}  // namespace aotishim::runner
