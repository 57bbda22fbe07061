// The two shims generated code uses for ops without a C shim of their own
// (part of the runner: the executor is what the runner hands the model):
// an output placeholder, and the call through the proxy executor the runner
// gave the model (runner/proxy_executor.h).
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "runner/proxy_executor.h"

using namespace aotishim;

extern "C" {

AOTITorchError aoti_torch_new_uninitialized_tensor(AtenTensorHandle* ret) {
  return guard(__func__, [&] {
    require_out(ret, "ret");
    Tensor placeholder = make_empty(get_device(DeviceType::CPU, 0), DType::Float32, {0});
    placeholder.defined = false;
    *ret = register_tensor(std::move(placeholder));
  });
}

AOTITorchError aoti_torch_proxy_executor_call_function(AOTIProxyExecutorHandle proxy_executor,
                                                       int extern_node_index, int num_ints,
                                                       int64_t* flatten_int_args, int num_tensors,
                                                       AtenTensorHandle* flatten_tensor_args) {
  return guard(__func__, [&] {
    runner::ProxyExecutor::from_handle(proxy_executor)
        .call(extern_node_index, num_ints, flatten_int_args, num_tensors, flatten_tensor_args);
  });
}

}  // extern "C"
