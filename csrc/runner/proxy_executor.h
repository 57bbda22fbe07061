// aotishim's proxy executor: what a model's run is given as its
// AOTIProxyExecutorHandle, and what aoti_torch_proxy_executor_call_function
// dispatches to. It holds the package's extern-kernel nodes, each bound at
// load to the implementation registered for its target.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "aotishim/c_shim.h"
#include "runner/custom_op_registry.h"
#include "runner/extern_nodes.h"

namespace aotishim {
class Device;
}

namespace aotishim::runner {

class ProxyExecutor {
 public:
  // Binds every node; throws aotishim::Error naming each op that has no
  // implementation (and how to register one) or that cannot run here.
  ProxyExecutor(std::vector<ExternNode> nodes, Device& device, const std::string& model_path);
  ~ProxyExecutor();
  ProxyExecutor(const ProxyExecutor&) = delete;
  ProxyExecutor& operator=(const ProxyExecutor&) = delete;

  AOTIProxyExecutorHandle handle();
  // The live executor behind a handle; a clear error for null or unknown ones.
  static ProxyExecutor& from_handle(AOTIProxyExecutorHandle handle);

  // One call of node `index` with the generated code's flattened arguments
  // (see ExternNode). Thread-safe: runs may call concurrently.
  void call(int index, int num_ints, const int64_t* ints, int num_tensors,
            AtenTensorHandle* tensors) const;

 private:
  struct Bound {
    ExternNode node;
    CustomOpImpl impl;
  };
  std::vector<Bound> bound_;
  Device& device_;
  std::string model_path_;
};

}  // namespace aotishim::runner
