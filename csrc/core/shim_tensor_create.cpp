// Creating, viewing and deleting tensors.
#include "core/copy.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "devices/device.h"

using namespace aotishim;

namespace {

Device& device_for(int32_t device_type, int32_t device_index) {
  DeviceType type = device_type_from_int(device_type);
  // -1 means "the default/current device" (torch uses it for CPU).
  return get_device(type, device_index < 0 ? 0 : device_index);
}

AtenTensorHandle from_blob(void* data, int64_t ndim, const int64_t* sizes_ptr,
                           const int64_t* strides_ptr, int64_t storage_offset, int32_t dtype,
                           int32_t device_type, int32_t device_index) {
  Tensor t;
  t.dtype = dtype_from_int(dtype);
  read_shape(ndim, sizes_ptr, strides_ptr, t.sizes, t.strides);
  AOTISHIM_CHECK(storage_offset >= 0, "negative storage offset ", storage_offset);
  int64_t extent = checked_extent(t.sizes, t.strides);
  AOTISHIM_CHECK(data != nullptr || extent == 0, "data pointer is null");
  // Checked: an offset near INT64_MAX must be an error, not a wrapped size.
  int64_t end_elems = 0, end_bytes = 0;
  AOTISHIM_CHECK(!__builtin_add_overflow(storage_offset, extent, &end_elems) &&
                     !__builtin_mul_overflow(end_elems, static_cast<int64_t>(element_size(t.dtype)),
                                             &end_bytes),
                 "storage offset ", storage_offset, " overflows the tensor's byte range");
  size_t nbytes = extent == 0 ? 0 : static_cast<size_t>(end_bytes);
  // Borrowed memory is never registered by address: two tensors may borrow
  // the same bytes, and a freed-and-reused address carries no history.
  t.storage = Storage::borrow(device_for(device_type, device_index), data, nbytes);
  t.storage_offset = storage_offset;
  return register_tensor(std::move(t));
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

AOTITorchError aoti_torch_delete_tensor_object(AtenTensorHandle tensor) {
  return guard(__func__, [&] { release(tensor); });
}

AOTITorchError aoti_torch__reinterpret_tensor(AtenTensorHandle self, int64_t ndim,
                                              const int64_t* sizes_ptr,
                                              const int64_t* strides_ptr, int64_t storage_offset,
                                              AtenTensorHandle* ret) {
  return guard(__func__, [&] {
    require_out(ret, "ret_new_tensor");
    auto base = lookup(self, "self");
    AOTISHIM_CHECK(strides_ptr != nullptr || ndim == 0, "strides pointer is null");
    std::vector<int64_t> sizes, strides;
    read_shape(ndim, sizes_ptr, strides_ptr, sizes, strides);
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
    *ret = register_tensor(clone_contiguous(*lookup(self, "self")));
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
    copy_tensor(*dst, *source);
  });
}

}  // extern "C"
