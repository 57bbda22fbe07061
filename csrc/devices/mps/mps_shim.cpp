// The aoti_torch_mps_* C shims (see aotishim/c_shim_mps.h): shader
// libraries and kernel functions behind opaque tokens, kernel encoding onto
// the mps device's queue, raw mps memory, and the mm/addmm/bmm fallbacks.
#include <algorithm>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "aotishim/c_shim_mps.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "devices/mps/mps_device.h"

namespace aotishim {
namespace {

constexpr unsigned kMaxKernelArgs = metal::kMaxBufferSlots;

struct KernelArgument {
  enum Kind { kNone, kTensor, kInt } kind = kNone;
  std::shared_ptr<Tensor> tensor;  // keeps the storage alive until dispatch
  int64_t value = 0;
};

struct KernelFunction {
  uintptr_t library = 0;
  std::string name;
  std::shared_ptr<metal::Pipeline> pipeline;
  bool encoding = false;  // start_encoding called
  bool in_block = false;  // inside run_command_block
  std::string block_error;  // first failure inside the current block
  std::vector<KernelArgument> args;
};

struct ShaderLibrary {
  std::shared_ptr<metal::Library> library;
  std::unordered_map<std::string, uintptr_t> functions;  // name -> token
};

// Handles are tokens from a counter, never addresses, so a deleted handle is
// never mistaken for a live one.
struct Registry {
  // Not held while a command block's callback runs: the callback calls the
  // shims, which take it.
  std::mutex mutex;
  uintptr_t next_token = 0x1000;
  std::unordered_map<uintptr_t, std::unique_ptr<ShaderLibrary>> libraries;
  std::unordered_map<uintptr_t, std::unique_ptr<KernelFunction>> functions;
  std::unordered_set<uintptr_t> malloced;  // from aoti_torch_mps_malloc, not yet freed

  uintptr_t token() {
    next_token += 0x10;
    return next_token;
  }
};

Registry& registry() {
  // Never destroyed: models free their libraries from static destructors.
  static Registry* r = new Registry();
  return *r;
}

uintptr_t token_of(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }

ShaderLibrary& library_of(AOTIMetalShaderLibraryHandle handle) {
  AOTISHIM_CHECK(handle != nullptr, "shader library handle is null");
  auto& libs = registry().libraries;
  auto it = libs.find(token_of(handle));
  AOTISHIM_CHECK(it != libs.end(), "shader library handle ", static_cast<const void*>(handle),
                 " is not live (never created, or already deleted)");
  return *it->second;
}

KernelFunction& function_of(AOTIMetalKernelFunctionHandle handle) {
  AOTISHIM_CHECK(handle != nullptr, "kernel function handle is null");
  auto& fns = registry().functions;
  auto it = fns.find(token_of(handle));
  AOTISHIM_CHECK(it != fns.end(), "kernel function handle ", static_cast<const void*>(handle),
                 " is not live (never created, or its library was deleted)");
  return *it->second;
}

KernelFunction& encoding_function(AOTIMetalKernelFunctionHandle handle) {
  KernelFunction& f = function_of(handle);
  AOTISHIM_CHECK(f.encoding, "kernel '", f.name,
                 "': aoti_torch_mps_start_encoding was not called first");
  return f;
}

// Inside a command block, a failing shim also marks the block as failed:
// generated code does not check the codes these shims return.
void note_block_failure(AOTIMetalKernelFunctionHandle handle) {
  std::lock_guard<std::mutex> lock(registry().mutex);
  auto it = registry().functions.find(token_of(handle));
  if (it != registry().functions.end() && it->second->in_block && it->second->block_error.empty())
    it->second->block_error = last_error();
}

// A kernel shim: body runs with the registry locked.
template <typename Body>
AOTITorchError kernel_guard(const char* function, AOTIMetalKernelFunctionHandle handle,
                            Body&& body) noexcept {
  AOTITorchError rc = guard(function, [&] {
    std::lock_guard<std::mutex> lock(registry().mutex);
    body();
  });
  if (rc != AOTI_TORCH_SUCCESS) note_block_failure(handle);
  return rc;
}

metal::Size size3(const uint64_t* values, size_t count, const char* what) {
  AOTISHIM_CHECK(values != nullptr, what, " is null");
  AOTISHIM_CHECK(count >= 1 && count <= 3, what, " has ", count, " entries (1 to 3 expected)");
  uint64_t v[3] = {1, 1, 1};
  for (size_t i = 0; i < count; ++i) v[i] = values[i];
  return {v[0], v[1], v[2]};
}

// Encodes f with its arguments on the mps device. group == nullptr: a
// threadgroup as wide as the pipeline allows along x.
void encode_dispatch(KernelFunction& f, metal::Size threads, const metal::Size* group) {
  if (threads.x == 0 || threads.y == 0 || threads.z == 0) return;
  const uint64_t max_threads = f.pipeline->max_threads_per_group();
  metal::Size g = group != nullptr ? *group : metal::Size{std::min(max_threads, threads.x), 1, 1};
  AOTISHIM_CHECK(g.x >= 1 && g.y >= 1 && g.z >= 1, "kernel '", f.name,
                 "': threadgroup size has a zero dimension");
  AOTISHIM_CHECK(g.x * g.y * g.z <= max_threads, "kernel '", f.name, "': threadgroup of ",
                 g.x * g.y * g.z, " threads exceeds the pipeline's maximum of ", max_threads);
  mps_device().encode([&](MpsDevice::Encoder& e) {
    e.set_pipeline(f.pipeline);
    for (size_t i = 0; i < f.args.size(); ++i) {
      const KernelArgument& a = f.args[i];
      const uint32_t index = static_cast<uint32_t>(i);
      // Which arguments a kernel writes is not known here: all count as written.
      if (a.kind == KernelArgument::kTensor) e.write(index, *a.tensor, "kernel argument");
      else if (a.kind == KernelArgument::kInt) e.bytes(index, &a.value, sizeof(a.value));
    }
    e.dispatch_threads(threads, g);
  });
}

}  // namespace
}  // namespace aotishim

extern "C" {

// ---- shader libraries ----

AOTITorchError aoti_torch_mps_create_shader_library(const char* metal_shader_source,
                                                    AOTIMetalShaderLibraryHandle* library_handle) {
  using namespace aotishim;
  return guard(__func__, [&] {
    require_out(library_handle, "library_handle");
    AOTISHIM_CHECK(metal_shader_source != nullptr, "metal_shader_source is null");
    MpsDevice& device = mps_device();
    std::shared_ptr<metal::Library> library;
    try {
      library = device.new_library(metal_shader_source);
    } catch (const std::exception& e) {
      fail(str("compiling the Metal shader library failed: ", e.what()));
    }
    std::lock_guard<std::mutex> lock(registry().mutex);
    auto entry = std::make_unique<ShaderLibrary>();
    entry->library = std::move(library);
    uintptr_t token = registry().token();
    registry().libraries.emplace(token, std::move(entry));
    *library_handle = reinterpret_cast<AOTIMetalShaderLibraryHandle>(token);
  });
}

AOTITorchError aoti_torch_mps_delete_shader_library(AOTIMetalShaderLibraryHandle library_handle) {
  using namespace aotishim;
  return guard(__func__, [&] {
    std::lock_guard<std::mutex> lock(registry().mutex);
    ShaderLibrary& lib = library_of(library_handle);
    for (const auto& [name, token] : lib.functions) {
      auto it = registry().functions.find(token);
      AOTISHIM_CHECK(it == registry().functions.end() || !it->second->in_block,
                     "kernel '", name, "' of this library is running a command block");
    }
    for (const auto& [name, token] : lib.functions) registry().functions.erase(token);
    registry().libraries.erase(token_of(library_handle));
  });
}

AOTITorchError aoti_torch_mps_get_kernel_function(AOTIMetalShaderLibraryHandle library_handle,
                                                  const char* kernel_name,
                                                  AOTIMetalKernelFunctionHandle* function_handle) {
  using namespace aotishim;
  return guard(__func__, [&] {
    require_out(function_handle, "function_handle");
    AOTISHIM_CHECK(kernel_name != nullptr, "kernel_name is null");
    std::lock_guard<std::mutex> lock(registry().mutex);
    ShaderLibrary& lib = library_of(library_handle);
    auto known = lib.functions.find(kernel_name);
    if (known != lib.functions.end()) {
      *function_handle = reinterpret_cast<AOTIMetalKernelFunctionHandle>(known->second);
      return;
    }
    std::shared_ptr<metal::Pipeline> pso;
    try {
      pso = lib.library->new_pipeline(kernel_name);
    } catch (const std::exception& e) {
      fail(str("building the pipeline of kernel '", kernel_name, "' failed: ", e.what()));
    }
    auto f = std::make_unique<KernelFunction>();
    f->library = token_of(library_handle);
    f->name = kernel_name;
    f->pipeline = std::move(pso);
    uintptr_t token = registry().token();
    registry().functions.emplace(token, std::move(f));
    lib.functions.emplace(kernel_name, token);
    *function_handle = reinterpret_cast<AOTIMetalKernelFunctionHandle>(token);
  });
}

// ---- encoding ----

AOTITorchError aoti_torch_mps_start_encoding(AOTIMetalKernelFunctionHandle func) {
  using namespace aotishim;
  return kernel_guard(__func__, func, [&] {
    KernelFunction& f = function_of(func);
    f.encoding = true;
    f.args.clear();
  });
}

AOTITorchError aoti_torch_mps_set_arg_tensor(AOTIMetalKernelFunctionHandle func, unsigned idx,
                                             AtenTensorHandle tensor) {
  using namespace aotishim;
  return kernel_guard(__func__, func, [&] {
    KernelFunction& f = encoding_function(func);
    AOTISHIM_CHECK(idx < kMaxKernelArgs, "argument index ", idx, " is out of range (Metal has ",
                   kMaxKernelArgs, " buffer slots)");
    std::shared_ptr<Tensor> t = lookup(tensor, "tensor");
    AOTISHIM_CHECK(t->device().type() == DeviceType::MPS, "kernel '", f.name, "' argument ", idx,
                   " is on ", t->device().name(), ", not mps");
    if (f.args.size() <= idx) f.args.resize(idx + 1);
    f.args[idx].kind = KernelArgument::kTensor;
    f.args[idx].tensor = std::move(t);
  });
}

AOTITorchError aoti_torch_mps_set_arg_int(AOTIMetalKernelFunctionHandle func, unsigned idx,
                                          int64_t val) {
  using namespace aotishim;
  return kernel_guard(__func__, func, [&] {
    KernelFunction& f = encoding_function(func);
    AOTISHIM_CHECK(idx < kMaxKernelArgs, "argument index ", idx, " is out of range (Metal has ",
                   kMaxKernelArgs, " buffer slots)");
    if (f.args.size() <= idx) f.args.resize(idx + 1);
    f.args[idx].kind = KernelArgument::kInt;
    f.args[idx].tensor.reset();
    f.args[idx].value = val;
  });
}

AOTITorchError aoti_torch_mps_dispatch_single(AOTIMetalKernelFunctionHandle func,
                                              uint64_t length) {
  using namespace aotishim;
  return kernel_guard(__func__, func, [&] {
    encode_dispatch(encoding_function(func), size3(&length, 1, "length"), nullptr);
  });
}

AOTITorchError aoti_torch_mps_dispatch_single_with_group_size(AOTIMetalKernelFunctionHandle func,
                                                              uint64_t length,
                                                              uint64_t group_size) {
  using namespace aotishim;
  return kernel_guard(__func__, func, [&] {
    metal::Size group = size3(&group_size, 1, "group_size");
    encode_dispatch(encoding_function(func), size3(&length, 1, "length"), &group);
  });
}

AOTITorchError aoti_torch_mps_dispatch_array(AOTIMetalKernelFunctionHandle func,
                                             const uint64_t* length, size_t length_size) {
  using namespace aotishim;
  return kernel_guard(__func__, func, [&] {
    encode_dispatch(encoding_function(func), size3(length, length_size, "length"), nullptr);
  });
}

AOTITorchError aoti_torch_mps_dispatch_array_with_group_size(AOTIMetalKernelFunctionHandle func,
                                                             const uint64_t* length,
                                                             size_t length_size,
                                                             const uint64_t* group_size,
                                                             size_t group_size_size) {
  using namespace aotishim;
  return kernel_guard(__func__, func, [&] {
    metal::Size group = size3(group_size, group_size_size, "group_size");
    encode_dispatch(encoding_function(func), size3(length, length_size, "length"), &group);
  });
}

// ---- command blocks ----

void aoti_torch_mps_shared_callback(AOTIMetalKernelFunctionHandle func, void* user_data) {
  using namespace aotishim;
  // Unlocked: the callback calls the kernel shims.
  AOTITorchError rc = guard(__func__, [&] {
    AOTISHIM_CHECK(user_data != nullptr, "user_data is null (expected a std::function)");
    auto* fn = static_cast<std::function<void(AOTIMetalKernelFunctionHandle)>*>(user_data);
    (*fn)(func);
  });
  if (rc != AOTI_TORCH_SUCCESS) note_block_failure(func);
}

AOTITorchError aoti_torch_mps_run_command_block(AOTIMetalKernelFunctionHandle func,
                                                aoti_torch_mps_command_block_callback_t callback,
                                                void* user_data) {
  using namespace aotishim;
  return guard(__func__, [&] {
    std::string name;
    {
      std::lock_guard<std::mutex> lock(registry().mutex);
      KernelFunction& f = function_of(func);
      AOTISHIM_CHECK(callback != nullptr, "callback is null");
      AOTISHIM_CHECK(!f.in_block, "kernel '", f.name, "' is already running a command block");
      name = f.name;
      f.in_block = true;
      f.block_error.clear();
    }
    // Unlocked: the callback calls the shims. A C function pointer: nothing
    // is thrown through it.
    callback(func, user_data);
    std::string failure;
    std::vector<KernelArgument> released;  // its tensors go after unlocking
    {
      std::lock_guard<std::mutex> lock(registry().mutex);
      auto it = registry().functions.find(token_of(func));
      if (it != registry().functions.end()) {
        KernelFunction& after = *it->second;
        failure = std::move(after.block_error);
        after.block_error.clear();
        after.in_block = false;
        after.encoding = false;
        released.swap(after.args);
      }
    }
    if (!failure.empty()) {
      std::string message = str("kernel '", name, "': ", failure);
      mps_device().defer_error(message);
      fail(message);
    }
  });
}

// ---- memory ----

AOTITorchError aoti_torch_mps_malloc(void** buffer, size_t num_bytes) {
  using namespace aotishim;
  return guard(__func__, [&] {
    require_out(buffer, "buffer");
    std::lock_guard<std::mutex> lock(registry().mutex);
    void* p = mps_device().allocate(num_bytes);
    registry().malloced.insert(reinterpret_cast<uintptr_t>(p));
    *buffer = p;
  });
}

AOTITorchError aoti_torch_mps_free(void* ptr) {
  using namespace aotishim;
  return guard(__func__, [&] {
    if (ptr == nullptr) return;
    std::lock_guard<std::mutex> lock(registry().mutex);
    AOTISHIM_CHECK(registry().malloced.erase(reinterpret_cast<uintptr_t>(ptr)) == 1, ptr,
                   " was not returned by aoti_torch_mps_malloc, or was freed already");
    mps_device().free(ptr);
  });
}

AOTITorchError aoti_torch_mps_memcpy(void* buffer, size_t constant_offset, size_t bytes_read,
                                     size_t data_size, uint8_t* constants_start) {
  using namespace aotishim;
  return guard(__func__, [&] {
    AOTISHIM_CHECK(buffer != nullptr, "buffer is null");
    if (data_size == 0) return;
    AOTISHIM_CHECK(constants_start != nullptr, "constants_start is null");
    MpsDevice& device = mps_device();
    char* dst = static_cast<char*>(buffer) + constant_offset;
    device.check_range(dst, data_size, "constant destination");
    device.prepare_host_access(dst, data_size, true);
    std::memcpy(dst, constants_start + bytes_read, data_size);
  });
}

AOTITorchError aoti_torch_mps_copy_buffer(void* src_buffer, void* dst_buffer, size_t data_size,
                                          size_t src_offset, size_t dst_offset) {
  using namespace aotishim;
  return guard(__func__, [&] {
    AOTISHIM_CHECK(src_buffer != nullptr && dst_buffer != nullptr, "src_buffer or dst_buffer is null");
    if (data_size == 0) return;
    MpsDevice& device = mps_device();
    const char* src = static_cast<const char*>(src_buffer) + src_offset;
    char* dst = static_cast<char*>(dst_buffer) + dst_offset;
    const bool src_on_device = device.owns(src), dst_on_device = device.owns(dst);
    if (src_on_device && dst_on_device) {
      device.copy_bytes(dst, src, data_size);  // ordered on the queue
      return;
    }
    // Host memory on one side: the host copies once the GPU is done with the
    // device side.
    if (src_on_device) device.check_range(src, data_size, "copy source");
    if (dst_on_device) device.check_range(dst, data_size, "copy destination");
    device.prepare_host_access(src, data_size, false);
    device.prepare_host_access(dst, data_size, true);
    std::memmove(dst, src, data_size);
  });
}

}  // extern "C"
