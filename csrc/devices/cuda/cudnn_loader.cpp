// Finds and loads libcudnn at run time, as cublas_loader.cpp does for
// cuBLAS: the backend loads where cuDNN is absent, and only a model that
// needs a convolution reports it missing.
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/library_path.h"
#include "devices/cuda/cudnn_api.h"

namespace aotishim {
namespace cuda {
namespace cudnn {

namespace {

const char* const kSoname = "libcudnn.so.9";

// cuDNN 9's libcudnn is a front that loads its engines from sibling
// libraries by soname; loading those first from the same folder makes a
// copy found outside the loader's path complete.
const char* const kSiblings[] = {
    "libcudnn_graph.so.9",    "libcudnn_engines_precompiled.so.9",
    "libcudnn_engines_runtime_compiled.so.9", "libcudnn_heuristic.so.9",
    "libcudnn_ops.so.9",      "libcudnn_cnn.so.9",
    "libcudnn_adv.so.9",
};

bool is_directory_like(const std::string& p) {
  return !p.empty() && (p.back() == '/' || p.find(".so") == std::string::npos);
}

// Where to look, in order: the user's override (alone, if set), the loader's
// search path (which also finds a copy already loaded, e.g. by torch), then
// NVIDIA's pip wheels installed beside the aotishim package.
std::vector<std::string> candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("AOTISHIM_CUDNN_PATH"); env && *env) {
    std::string p = env;
    if (is_directory_like(p)) {
      if (p.back() != '/') p += '/';
      out.push_back(p + kSoname);
    } else {
      out.push_back(p);
    }
    return out;
  }
  out.push_back(kSoname);
  std::string dir = directory_of(library_file_of(reinterpret_cast<const void*>(&api)));
  if (!dir.empty()) {
    const char* wheel_dirs[] = {"../nvidia/cudnn/lib/", "../nvidia/cu13/lib/",
                                "../nvidia/cu12/lib/"};
    for (const char* sub : wheel_dirs) out.push_back(dir + sub + kSoname);
  }
  return out;
}

void preload_siblings(const std::string& path) {
  const std::string dir = directory_of(path);
  if (dir.empty()) return;  // found by the loader, which finds the siblings too
  for (const char* name : kSiblings) {
    // Optional: a sibling may be absent or need what this machine lacks
    // (runtime-compiled engines need NVRTC); cuDNN then uses the others.
    dlopen((dir + name).c_str(), RTLD_NOW | RTLD_LOCAL);
  }
}

template <typename Fn>
void resolve(void* lib, const char* symbol, Fn& fn, const std::string& path) {
  fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
  AOTISHIM_CHECK(fn != nullptr, "cuDNN at ", path, " lacks the symbol ", symbol);
}

Api load() {
  std::string tried;
  for (const std::string& path : candidates()) {
    preload_siblings(path);
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      tried += str("\n  ", path, ": ", why ? why : "not loadable");
      continue;
    }
    Api a{};
    resolve(lib, "cudnnGetVersion", a.get_version, path);
    resolve(lib, "cudnnGetErrorString", a.error_string, path);
    resolve(lib, "cudnnCreate", a.create, path);
    resolve(lib, "cudnnDestroy", a.destroy, path);
    resolve(lib, "cudnnSetStream", a.set_stream, path);
    resolve(lib, "cudnnCreateTensorDescriptor", a.create_tensor_desc, path);
    resolve(lib, "cudnnDestroyTensorDescriptor", a.destroy_tensor_desc, path);
    resolve(lib, "cudnnSetTensorNdDescriptor", a.set_tensor_nd, path);
    resolve(lib, "cudnnCreateFilterDescriptor", a.create_filter_desc, path);
    resolve(lib, "cudnnDestroyFilterDescriptor", a.destroy_filter_desc, path);
    resolve(lib, "cudnnSetFilterNdDescriptor", a.set_filter_nd, path);
    resolve(lib, "cudnnCreateConvolutionDescriptor", a.create_conv_desc, path);
    resolve(lib, "cudnnDestroyConvolutionDescriptor", a.destroy_conv_desc, path);
    resolve(lib, "cudnnSetConvolutionNdDescriptor", a.set_conv_nd, path);
    resolve(lib, "cudnnSetConvolutionGroupCount", a.set_conv_group_count, path);
    resolve(lib, "cudnnSetConvolutionMathType", a.set_conv_math_type, path);
    resolve(lib, "cudnnGetConvolutionForwardAlgorithm_v7", a.get_fwd_algos, path);
    resolve(lib, "cudnnGetConvolutionForwardWorkspaceSize", a.fwd_workspace_size, path);
    resolve(lib, "cudnnConvolutionForward", a.forward, path);
    resolve(lib, "cudnnGetConvolutionBackwardDataAlgorithm_v7", a.get_bwd_data_algos, path);
    resolve(lib, "cudnnGetConvolutionBackwardDataWorkspaceSize", a.bwd_data_workspace_size,
            path);
    resolve(lib, "cudnnConvolutionBackwardData", a.backward_data, path);
    resolve(lib, "cudnnAddTensor", a.add_tensor, path);
    const size_t version = a.get_version();
    AOTISHIM_CHECK(version >= 90000 && version < 100000, "cuDNN at ", path, " is version ",
                   version, "; aotishim needs cuDNN 9");
    return a;  // the library stays loaded for the life of the process
  }
  fail(str("cuDNN is needed for convolutions on cuda but could not be loaded; install "
           "nvidia-cudnn-cu13 (or -cu12) or set AOTISHIM_CUDNN_PATH to libcudnn.so.9 (or its "
           "folder). Tried:",
           tried));
}

}  // namespace

const Api& api() {
  // Retried after a failure, so setting AOTISHIM_CUDNN_PATH later works.
  static std::mutex mutex;
  static Api* loaded = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded == nullptr) loaded = new Api(load());
  return *loaded;
}

std::string search_description() {
  std::string out;
  for (const std::string& p : candidates()) out += (out.empty() ? "" : ", ") + p;
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
