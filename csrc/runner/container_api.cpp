#include "runner/container_api.h"

#include "aotishim/error.h"

namespace aotishim::runner {

namespace {
constexpr const char* kCreate = "AOTInductorModelContainerCreateWithDevice";
constexpr const char* kDelete = "AOTInductorModelContainerDelete";
constexpr const char* kRun = "AOTInductorModelContainerRun";
constexpr const char* kNumInputs = "AOTInductorModelContainerGetNumInputs";
constexpr const char* kNumOutputs = "AOTInductorModelContainerGetNumOutputs";
constexpr const char* kInputName = "AOTInductorModelContainerGetInputName";
constexpr const char* kOutputName = "AOTInductorModelContainerGetOutputName";

template <typename Fn>
void bind(const SharedLibrary& library, const char* name, Fn& slot, bool required) {
  void* address = library.find(name);
  if (!address && required) {
    throw Error("'" + library.path() + "' is not an AOTInductor model: it does not define " + name);
  }
  slot = reinterpret_cast<Fn>(address);
}
}  // namespace

const std::vector<const char*>& required_entry_points() {
  static const std::vector<const char*> names = {kCreate,     kDelete,     kRun,       kNumInputs,
                                                 kNumOutputs, kInputName, kOutputName};
  return names;
}

ContainerApi ContainerApi::resolve(const SharedLibrary& library) {
  ContainerApi api;
  bind(library, kCreate, api.create, true);
  bind(library, kDelete, api.destroy, true);
  bind(library, kRun, api.run, true);
  bind(library, kNumInputs, api.num_inputs, true);
  bind(library, kNumOutputs, api.num_outputs, true);
  bind(library, kInputName, api.input_name, true);
  bind(library, kOutputName, api.output_name, true);
  bind(library, "AOTInductorModelContainerGetNumConstants", api.num_constants, false);
  bind(library, "AOTInductorModelContainerGetConstantName", api.constant_name, false);
  bind(library, "AOTInductorModelContainerGetConstantsBlobSize", api.constants_blob_size, false);
  bind(library, "AOTInductorModelUpdateConstantsFromBlob", api.update_constants_from_blob, false);
  bind(library, "AOTInductorModelContainerExtractConstantsMapEntries", api.constant_entries, false);
  bind(library, "AOTInductorModelContainerGetConstantOriginalFQN", api.constant_fqn, false);
  bind(library, "AOTInductorModelContainerGetConstantFromFolded", api.constant_from_folded, false);
  bind(library, "AOTInductorModelContainerGetConstantDataSize", api.constant_data_size, false);
  bind(library, "AOTInductorModelContainerUpdateUserManagedConstantBufferPairs",
       api.update_user_managed_constants, false);
#if (defined(__APPLE__) && defined(_LIBCPP_VERSION)) || \
    (!defined(__APPLE__) && defined(__GLIBCXX__) && _GLIBCXX_USE_CXX11_ABI)
  // Only where our std::unordered_map is the one the model was built with.
  bind(library, "AOTInductorModelContainerExtractConstantsMap", api.extract_constants_map, false);
  bind(library, "AOTInductorModelContainerUpdateUserManagedConstantBuffer",
       api.update_user_managed_constants_map, false);
#endif
  bind(library, "AOTInductorModelContainerSwapConstantBuffer", api.swap_constant_buffer, false);
  bind(library, "AOTInductorModelContainerFreeInactiveConstantBuffer",
       api.free_inactive_constant_buffer, false);
  bind(library, "AOTInductorGetLastError", api.last_error, false);
  bind(library, "AOTInductorModelContainerRunSingleThreaded", api.run_single_threaded, false);
  return api;
}

std::string ContainerApi::error_message(const std::string& what) const {
  std::string message = what + " failed";
  const char* model_error = nullptr;
  if (last_error && last_error(&model_error) == AOTI_TORCH_SUCCESS && model_error && *model_error) {
    message += ": ";
    message += model_error;
  }
  // The model's message often wraps ours ("... API call failed at ..."), so
  // aotishim's own message is added: it names the shim and the reason.
  const bool model_said = model_error && *model_error;
  const char* shim_error = aotishim_last_error();
  const bool shim_said = shim_error && *shim_error;
  if (shim_said && message.find(shim_error) == std::string::npos) {
    message += std::string(model_said ? " (aotishim: " : ": aotishim: ") + shim_error +
               (model_said ? ")" : "");
  }
  // Taken even when not shown, so it is not blamed on a later call.
  const std::string runtime = runtime_error ? runtime_error() : std::string();
  if (!runtime.empty() && !model_said && !shim_said) message += ": " + runtime;
  // Models of torch before 2.13 have no AOTInductorGetLastError: what they
  // caught (a failed input check, a std::exception) went only to stderr.
  if (!last_error && !shim_said && runtime.empty()) {
    message += " (the model, compiled by a torch before 2.13, keeps no error message: its own "
               "went to stderr)";
  }
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  return message;
}

void ContainerApi::check(AOTIRuntimeError err, const std::string& what) const {
  if (err != AOTI_TORCH_SUCCESS) throw Error(error_message(what));
}

}  // namespace aotishim::runner
