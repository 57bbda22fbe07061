// A model's runs recorded as device graphs (CUDA graphs): one recording per
// input signature (dtypes, sizes, strides), replayed for every later call
// with that signature. A replay queues the recorded kernels in one launch,
// without the host work of the run that recorded them (the model's own
// code, the shims, cuDNN's and cuBLAS's host side), so the GPU no longer
// waits between kernels for the host to queue the next one.
//
// The price: the graph reads its inputs from, and writes its outputs to,
// fixed addresses. So each call copies its inputs into the recording's own
// input tensors, and the outputs it returns are copies of the recording's
// outputs (outputs that shared memory in a plain run no longer do). A run
// that cannot be recorded (it waits for the device, reads device memory on
// the host, as nonzero's output size does, or copies from host memory) runs
// as before, for that signature, and says why in info().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aotishim/c_shim.h"
#include "aotishim/runner.h"

namespace aotishim {

class Device;

namespace runner {

class GraphRuns {
 public:
  // Runs the model's container on inputs (stolen) and returns its raw output
  // slots; throws on failure.
  using RunFn = std::function<std::vector<AtenTensorHandle>(std::vector<AtenTensorHandle>&)>;

  GraphRuns(Device& device, std::string model_name);
  ~GraphRuns();
  GraphRuns(const GraphRuns&) = delete;
  GraphRuns& operator=(const GraphRuns&) = delete;

  // Runs on `inputs` (consumed on every path) in the current scope, the
  // model's: by replay when their signature was recorded, else by `run`,
  // recording the signature on its first call. Returns output slots as
  // `run` does (one handle may fill several slots), owned by the scope.
  // Callers serialize calls (the recording's tensors are shared).
  std::vector<AtenTensorHandle> run(std::vector<AtenTensorHandle>& inputs, const RunFn& run);

  std::vector<GraphInfo> info() const;
  // Frees every recording and its tensors (before the model's container
  // and scope go).
  void clear();

 private:
  struct Recording;
  Recording* find(const std::vector<AtenTensorHandle>& inputs);
  void record(Recording& r, std::vector<AtenTensorHandle>& inputs, const RunFn& run,
              std::vector<AtenTensorHandle>& result);
  void replay(Recording& r, std::vector<AtenTensorHandle>& inputs,
              std::vector<AtenTensorHandle>& result);

  Device& device_;
  std::string model_name_;
  std::vector<std::unique_ptr<Recording>> recordings_;
};

}  // namespace runner
}  // namespace aotishim
