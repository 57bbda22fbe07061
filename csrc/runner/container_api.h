// The AOTInductorModelContainer* entry points a compiled model exports
// (signatures as in PyTorch's aoti_runtime/interface.h), resolved by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "aotishim/c_shim.h"
#include "runner/shared_library.h"

namespace aotishim::runner {

using AOTIRuntimeError = int32_t;
struct ContainerOpaque;
using ContainerHandle = ContainerOpaque*;

struct ConstantMapEntry {
  const char* name;
  AtenTensorHandle handle;
};

struct ContainerApi {
  // Required.
  AOTIRuntimeError (*create)(ContainerHandle*, size_t num_models, const char* device,
                             const char* cubin_dir) = nullptr;
  AOTIRuntimeError (*destroy)(ContainerHandle) = nullptr;
  AOTIRuntimeError (*run)(ContainerHandle, AtenTensorHandle* inputs, size_t num_inputs,
                          AtenTensorHandle* outputs, size_t num_outputs, void* stream,
                          void* proxy_executor) = nullptr;
  AOTIRuntimeError (*num_inputs)(ContainerHandle, size_t*) = nullptr;
  AOTIRuntimeError (*num_outputs)(ContainerHandle, size_t*) = nullptr;
  AOTIRuntimeError (*input_name)(ContainerHandle, size_t, const char**) = nullptr;
  AOTIRuntimeError (*output_name)(ContainerHandle, size_t, const char**) = nullptr;
  // Optional (older or differently configured models may lack them).
  AOTIRuntimeError (*num_constants)(ContainerHandle, size_t*) = nullptr;
  AOTIRuntimeError (*constant_name)(ContainerHandle, size_t, const char**) = nullptr;
  AOTIRuntimeError (*constants_blob_size)(ContainerHandle, uint64_t*) = nullptr;
  AOTIRuntimeError (*update_constants_from_blob)(ContainerHandle, const uint8_t*) = nullptr;
  AOTIRuntimeError (*constant_entries)(ContainerHandle, const ConstantMapEntry**, size_t*,
                                       bool use_inactive) = nullptr;
  AOTIRuntimeError (*constant_fqn)(ContainerHandle, size_t, const char**) = nullptr;
  AOTIRuntimeError (*constant_from_folded)(ContainerHandle, size_t, bool*) = nullptr;
  AOTIRuntimeError (*constant_data_size)(ContainerHandle, size_t, size_t*) = nullptr;
  // The constants API (torch's load_constants / swap_constant_buffer / ...).
  AOTIRuntimeError (*update_user_managed_constants)(ContainerHandle, const ConstantMapEntry*,
                                                    size_t num_pairs, bool use_inactive,
                                                    bool validate_full_update) = nullptr;
  // The same two through a std::unordered_map<std::string, AtenTensorHandle>
  // (models of torch 2.11 and 2.12 have only these; see constant_map.cpp).
  AOTIRuntimeError (*extract_constants_map)(ContainerHandle, void* map,
                                            bool use_inactive) = nullptr;
  AOTIRuntimeError (*update_user_managed_constants_map)(ContainerHandle, void* map,
                                                        bool use_inactive,
                                                        bool validate_full_update) = nullptr;
  AOTIRuntimeError (*swap_constant_buffer)(ContainerHandle) = nullptr;
  AOTIRuntimeError (*free_inactive_constant_buffer)(ContainerHandle) = nullptr;
  AOTIRuntimeError (*last_error)(const char**) = nullptr;
  // run without the container's per-run CUDA event, which a graph recording
  // would capture and leave unusable; never mixed with `run` on one container.
  AOTIRuntimeError (*run_single_threaded)(ContainerHandle, AtenTensorHandle* inputs,
                                          size_t num_inputs, AtenTensorHandle* outputs,
                                          size_t num_outputs, void* stream,
                                          void* proxy_executor) = nullptr;
  // The device runtime's pending error on this thread, taken (cleared); set
  // by the owner. Models that lack last_error report a failed CUDA call only
  // on stderr, so this is where its message comes from.
  std::function<std::string()> runtime_error;

  // Throws aotishim::Error naming the first required entry point missing.
  static ContainerApi resolve(const SharedLibrary& library);

  // One message from the model's own last error and aotishim's last error.
  std::string error_message(const std::string& what) const;
  // Throws aotishim::Error(error_message(what)) when err is a failure.
  void check(AOTIRuntimeError err, const std::string& what) const;
};

// Names of the required entry points (checked before dlopen too).
const std::vector<const char*>& required_entry_points();

}  // namespace aotishim::runner
