// Creating, viewing and deleting tensors.
#include "core/copy.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "core/device.h"

using namespace aotishim;

namespace {

Device& device_for(int32_t device_type, int32_t device_index) {
  DeviceType type = device_type_from_int(device_type);
  // -1 means "the default/current device" (torch uses it for CPU); any other
  // negative index is a caller's mistake, not device 0.
  AOTISHIM_CHECK(device_index >= -1, "invalid device index ", device_index,
                 " (expected -1 for the current device, or 0 and up)");
  return get_device(type, device_index < 0 ? 0 : device_index);
}

AtenTensorHandle from_blob(void* data, int64_t ndim, const int64_t* sizes_ptr,
                           const int64_t* strides_ptr, int64_t storage_offset, int32_t dtype,
                           int32_t device_type, int32_t device_index) {
  DType dt = dtype_from_int(dtype);
  Device& device = device_for(device_type, device_index);
  return register_tensor(
      borrowed_tensor(device, data, ndim, sizes_ptr, strides_ptr, dt, storage_offset));
}

// The cuda plugin's page-locked allocator (pinned_host.cpp), found once;
// both null where no plugin is present.
struct PinnedAllocator {
  int (*alloc)(size_t, void**) = nullptr;
  void (*free)(void*) = nullptr;
};

const PinnedAllocator& pinned_allocator() {
  static const PinnedAllocator found = [] {
    PinnedAllocator a;
    a.alloc = reinterpret_cast<int (*)(size_t, void**)>(
        find_backend_symbol("aotishim_cuda_host_alloc"));
    a.free = reinterpret_cast<void (*)(void*)>(find_backend_symbol("aotishim_cuda_host_free"));
    if (!a.alloc || !a.free) a = PinnedAllocator{};
    return a;
  }();
  return found;
}

}  // namespace

extern "C" {

AOTITorchError aoti_torch_create_tensor_from_blob(void* data, int64_t ndim,
                                                  const int64_t* sizes_ptr,
                                                  const int64_t* strides_ptr,
                                                  int64_t storage_offset, int32_t dtype,
                                                  int32_t device_type, int32_t device_index,
                                                  AtenTensorHandle* ret) {
  return guard(__func__, [&] {
    require_out(ret, "ret");
    *ret = from_blob(data, ndim, sizes_ptr, strides_ptr, storage_offset, dtype, device_type,
                     device_index);
  });
}

AOTITorchError aoti_torch_create_tensor_from_blob_v2(
    void* data, int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
    int64_t storage_offset, int32_t dtype, int32_t device_type, int32_t device_index,
    AtenTensorHandle* ret, int32_t layout, const uint8_t* opaque_metadata,
    int64_t opaque_metadata_size) {
  return guard(__func__, [&] {
    require_out(ret, "ret");
    AOTISHIM_CHECK(layout == aoti_torch_layout_strided(), "unsupported layout ", layout,
                   " (only strided tensors are supported)");
    AOTISHIM_CHECK(opaque_metadata_size == 0, "opaque metadata (mkldnn tensors) is not supported");
    *ret = from_blob(data, ndim, sizes_ptr, strides_ptr, storage_offset, dtype, device_type,
                     device_index);
  });
}

AOTITorchError aoti_torch_empty_strided(int64_t ndim, const int64_t* sizes_ptr,
                                        const int64_t* strides_ptr, int32_t dtype,
                                        int32_t device_type, int32_t device_index,
                                        AtenTensorHandle* ret) {
  return guard(__func__, [&] {
    require_out(ret, "ret_new_tensor");
    std::vector<int64_t> sizes, strides;
    read_shape(ndim, sizes_ptr, strides_ptr, sizes, strides);
    Tensor t = make_empty(device_for(device_type, device_index), dtype_from_int(dtype),
                          std::move(sizes), std::move(strides));
    *ret = register_tensor(std::move(t));
  });
}

// Pinned (page-locked) host memory from the cuda plugin's runtime
// (cudaHostAlloc) when the plugin is present and gives it: copies between it
// and a GPU are queued without the host waiting. Elsewhere (no plugin, no
// GPU) plain host memory, which means the same to every copy here (each is
// ordered on its device's stream whatever the memory), only slower.
AOTITorchError aoti_torch_empty_strided_pinned(int64_t ndim, const int64_t* sizes_ptr,
                                               const int64_t* strides_ptr, int32_t dtype,
                                               int32_t device_type, int32_t device_index,
                                               AtenTensorHandle* ret) {
  return guard(__func__, [&] {
    require_out(ret, "ret_new_tensor");
    AOTISHIM_CHECK(device_type_from_int(device_type) == DeviceType::CPU,
                   "only cpu tensors can be pinned, not device type ", device_type);
    std::vector<int64_t> sizes, strides;
    const int64_t extent = read_shape(ndim, sizes_ptr, strides_ptr, sizes, strides);
    const DType dt = dtype_from_int(dtype);
    const PinnedAllocator& pinned = pinned_allocator();
    void* data = nullptr;
    if (pinned.alloc && extent > 0 &&
        pinned.alloc(static_cast<size_t>(extent) * element_size(dt), &data) == 0) {
      // The tensor owns the page-locked block, freed with its last view.
      std::shared_ptr<void> block(data, pinned.free);
      Tensor t = borrowed_tensor(device_for(device_type, device_index), data, ndim, sizes_ptr,
                                 strides_ptr, dt, 0);
      t.storage = Storage::adopt(t.storage->device(), data, t.storage->nbytes(), std::move(block));
      *ret = register_tensor(std::move(t));
      return;
    }
    Tensor t = make_empty(device_for(device_type, device_index), dtype_from_int(dtype),
                          std::move(sizes), std::move(strides));
    *ret = register_tensor(std::move(t));
  });
}

AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor) {
  return guard(__func__, [&] { release(tensor); });
}

// The offset is added to self's own storage offset, as torch's
// _reinterpret_tensor does: generated code reinterprets a weight that is a
// view into a shared buffer (an RNN's flattened parameters) with offset 0,
// meaning "where self starts", not "where the storage starts".
AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim,
                                              const int64_t* sizes_ptr,
                                              const int64_t* strides_ptr,
                                              int64_t offset_increment, AtenTensorHandle* ret) {
  return guard(__func__, [&] {
    require_out(ret, "ret_new_tensor");
    const Tensor& base = peek(self, "self");
    AOTISHIM_CHECK(strides_ptr != nullptr || ndim == 0, "strides pointer is null");
    std::vector<int64_t> sizes, strides;
    read_shape(ndim, sizes_ptr, strides_ptr, sizes, strides);
    int64_t storage_offset = 0;
    AOTISHIM_CHECK(!__builtin_add_overflow(base.storage_offset, offset_increment, &storage_offset),
                   "storage offset ", base.storage_offset, " + ", offset_increment,
                   " overflows int64");
    *ret = register_tensor(make_view(base, std::move(sizes), std::move(strides), storage_offset));
  });
}

AOTITorchError aoti_torch_new_tensor_handle(AtenTensorHandle orig, AtenTensorHandle* ret) {
  return guard(__func__, [&] {
    require_out(ret, "new_handle");
    *ret = register_tensor(*lookup(orig, "orig_handle"));
  });
}

AOTITorchError aoti_torch_assign_tensors_out(AtenTensorHandle src, AtenTensorHandle* ret) {
  return guard(__func__, [&] {
    require_out(ret, "ret_dst");
    *ret = register_tensor(*lookup(src, "src"));
  });
}

AOTITorchError aoti_torch_clone(AtenTensorHandle self, AtenTensorHandle* ret) {
  return guard(__func__, [&] {
    require_out(ret, "ret");
    *ret = register_tensor(clone_preserving_layout(*lookup(self, "self")));
  });
}

AOTITorchError aoti_torch_clone_preserve_strides(AtenTensorHandle self, AtenTensorHandle* ret) {
  return guard(__func__, [&] {
    require_out(ret, "ret");
    *ret = register_tensor(clone_preserving_strides(*lookup(self, "self")));
  });
}

AOTITorchError aoti_torch_copy_(AtenTensorHandle self, AtenTensorHandle src, int32_t) {
  // non_blocking only allows asynchrony; every copy here is ordered on its
  // device's stream, and host reads wait for the bytes they touch.
  return guard(__func__, [&] {
    auto dst = lookup(self, "self");
    auto source = lookup(src, "src");
    copy_into(*dst, *source);
  });
}

}  // extern "C"
