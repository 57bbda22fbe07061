// Loads libcudnn at run time (library_search.h): the backend loads where
// cuDNN is absent, and only a model that needs a convolution reports it
// missing.
#include <string>

#include "core/error.h"
#include "devices/cuda/cudnn_api.h"
#include "core/library_search.h"

namespace aotishim {
namespace cuda {
namespace cudnn {

namespace {

// cuDNN 9's libcudnn is a front that loads its engines from sibling
// libraries by soname; loading those first from the same folder makes a
// copy found outside the loader's path complete.
const LibrarySearch& search() {
  static const LibrarySearch s{
      "cuDNN",
      "AOTISHIM_CUDNN_PATH",
      {"libcudnn.so.9"},
      {"../nvidia/cudnn/lib/", "../nvidia/cu13/lib/", "../nvidia/cu12/lib/"},
      {"libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9",
       "libcudnn_engines_runtime_compiled.so.9", "libcudnn_heuristic.so.9", "libcudnn_ops.so.9",
       "libcudnn_cnn.so.9", "libcudnn_adv.so.9"}};
  return s;
}

Api load() {
  const FoundLibrary lib = load_library(
      search(), "cuDNN is needed for convolutions on cuda but could not be loaded; install "
                "nvidia-cudnn-cu13 (or -cu12) or set AOTISHIM_CUDNN_PATH to libcudnn.so.9 (or "
                "its folder).");
  Api a{};
  resolve_symbol(lib, search(), "cudnnGetVersion", a.get_version);
  resolve_symbol(lib, search(), "cudnnGetErrorString", a.error_string);
  resolve_symbol(lib, search(), "cudnnCreate", a.create);
  resolve_symbol(lib, search(), "cudnnDestroy", a.destroy);
  resolve_symbol(lib, search(), "cudnnSetStream", a.set_stream);
  resolve_symbol(lib, search(), "cudnnCreateTensorDescriptor", a.create_tensor_desc);
  resolve_symbol(lib, search(), "cudnnDestroyTensorDescriptor", a.destroy_tensor_desc);
  resolve_symbol(lib, search(), "cudnnSetTensorNdDescriptor", a.set_tensor_nd);
  resolve_symbol(lib, search(), "cudnnCreateFilterDescriptor", a.create_filter_desc);
  resolve_symbol(lib, search(), "cudnnDestroyFilterDescriptor", a.destroy_filter_desc);
  resolve_symbol(lib, search(), "cudnnSetFilterNdDescriptor", a.set_filter_nd);
  resolve_symbol(lib, search(), "cudnnCreateConvolutionDescriptor", a.create_conv_desc);
  resolve_symbol(lib, search(), "cudnnDestroyConvolutionDescriptor", a.destroy_conv_desc);
  resolve_symbol(lib, search(), "cudnnSetConvolutionNdDescriptor", a.set_conv_nd);
  resolve_symbol(lib, search(), "cudnnSetConvolutionGroupCount", a.set_conv_group_count);
  resolve_symbol(lib, search(), "cudnnSetConvolutionMathType", a.set_conv_math_type);
  resolve_symbol(lib, search(), "cudnnGetConvolutionForwardAlgorithm_v7", a.get_fwd_algos);
  resolve_symbol(lib, search(), "cudnnGetConvolutionForwardWorkspaceSize",
                 a.fwd_workspace_size);
  resolve_symbol(lib, search(), "cudnnFindConvolutionForwardAlgorithm", a.find_fwd_algos);
  resolve_symbol(lib, search(), "cudnnConvolutionForward", a.forward);
  resolve_symbol(lib, search(), "cudnnGetConvolutionBackwardDataAlgorithm_v7",
                 a.get_bwd_data_algos);
  resolve_symbol(lib, search(), "cudnnGetConvolutionBackwardDataWorkspaceSize",
                 a.bwd_data_workspace_size);
  resolve_symbol(lib, search(), "cudnnFindConvolutionBackwardDataAlgorithm",
                 a.find_bwd_data_algos);
  resolve_symbol(lib, search(), "cudnnConvolutionBackwardData", a.backward_data);
  resolve_symbol(lib, search(), "cudnnBackendCreateDescriptor", a.backend_create);
  resolve_symbol(lib, search(), "cudnnBackendDestroyDescriptor", a.backend_destroy);
  resolve_symbol(lib, search(), "cudnnBackendFinalize", a.backend_finalize);
  resolve_symbol(lib, search(), "cudnnBackendSetAttribute", a.backend_set);
  resolve_symbol(lib, search(), "cudnnBackendGetAttribute", a.backend_get);
  resolve_symbol(lib, search(), "cudnnBackendExecute", a.backend_execute);
  const size_t version = a.get_version();
  AOTISHIM_CHECK(version >= 90000 && version < 100000, "cuDNN at ", lib.path, " is version ",
                 version, "; aotishim needs cuDNN 9");
  return a;
}

}  // namespace

const Api& api() { return load_once(&load); }

std::string search_description() {
  std::string out;
  for (const std::string& p : candidate_paths(search())) out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::string status_text(Status status) {
  const Api* a = nullptr;
  try {
    a = &api();
  } catch (...) {
  }
  if (a != nullptr) return a->error_string(status);
  return str("cudnnStatus ", status);
}

}  // namespace cudnn
}  // namespace cuda
}  // namespace aotishim
