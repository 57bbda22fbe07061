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

// Pinned (page-locked) host memory only makes host-device copies faster and
// lets them run asynchronously; every copy here is ordered on its device's
// stream whatever the memory, so a plain host allocation has the same meaning.
AOTITorchError aoti_torch_empty_strided_pinned(int64_t ndim, const int64_t* sizes_ptr,
                                               const int64_t* strides_ptr, int32_t dtype,
                                               int32_t device_type, int32_t device_index,
                                               AtenTensorHandle* ret) {
  return guard(__func__, [&] {
    require_out(ret, "ret_new_tensor");
    AOTISHIM_CHECK(device_type_from_int(device_type) == DeviceType::CPU,
                   "only cpu tensors can be pinned, not device type ", device_type);
    std::vector<int64_t> sizes, strides;
    read_shape(ndim, sizes_ptr, strides_ptr, sizes, strides);
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
    auto base = lookup(self, "self");
    AOTISHIM_CHECK(strides_ptr != nullptr || ndim == 0, "strides pointer is null");
    std::vector<int64_t> sizes, strides;
    read_shape(ndim, sizes_ptr, strides_ptr, sizes, strides);
    int64_t storage_offset = 0;
    AOTISHIM_CHECK(!__builtin_add_overflow(base->storage_offset, offset_increment, &storage_offset),
                   "storage offset ", base->storage_offset, " + ", offset_increment,
                   " overflows int64");
    *ret = register_tensor(make_view(*base, std::move(sizes), std::move(strides), storage_offset));
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
