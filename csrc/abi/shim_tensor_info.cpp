// Getters: everything about a tensor handle, validated (without taking a
// reference: the caller's handle keeps the tensor alive for the call).
#include "core/error.h"
#include "core/handle_registry.h"
#include "core/device.h"

using namespace aotishim;

namespace {
// A non-null pointer for 0-d tensors' empty size/stride arrays.
int64_t g_empty_shape[1] = {0};

// The ABI hands out non-const pointers; callers only read them.
int64_t* shape_ptr(const std::vector<int64_t>& v) {
  return v.empty() ? g_empty_shape : const_cast<int64_t*>(v.data());
}

int64_t checked_dim(const Tensor& t, int64_t d) {
  int64_t n = t.dim();
  if (d < 0) d += n;
  AOTISHIM_CHECK(d >= 0 && d < n, "dimension ", d, " out of range for a ", n, "-d tensor");
  return d;
}
}  // namespace

extern "C" {

AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret) {
  return guard(__func__, [&] { *require_out(ret, "ret_data_ptr") = peek(tensor).data(); });
}

AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret) {
  return guard(__func__, [&] {
    *require_out(ret, "ret_size") = static_cast<int64_t>(peek(tensor).storage->nbytes());
  });
}

AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret) {
  return guard(__func__, [&] { *require_out(ret, "ret_dim") = peek(tensor).dim(); });
}

AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret) {
  return guard(__func__, [&] { *require_out(ret, "ret_numel") = peek(tensor).numel(); });
}

AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret) {
  // The pointer stays valid while the handle lives (the registry owns the tensor).
  return guard(__func__, [&] { *require_out(ret, "ret_sizes") = shape_ptr(peek(tensor).sizes); });
}

AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret) {
  return guard(__func__, [&] {
    const Tensor& t = peek(tensor);
    *require_out(ret, "ret_size") = t.sizes[checked_dim(t, d)];
  });
}

AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret) {
  return guard(__func__,
               [&] { *require_out(ret, "ret_strides") = shape_ptr(peek(tensor).strides); });
}

AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret) {
  return guard(__func__, [&] {
    const Tensor& t = peek(tensor);
    *require_out(ret, "ret_stride") = t.strides[checked_dim(t, d)];
  });
}

AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret) {
  return guard(__func__,
               [&] { *require_out(ret, "ret_dtype") = static_cast<int32_t>(peek(tensor).dtype); });
}

AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret) {
  return guard(__func__, [&] {
    *require_out(ret, "ret_device_type") = static_cast<int32_t>(peek(tensor).device().type());
  });
}

AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret) {
  return guard(__func__, [&] {
    Device& d = peek(tensor).device();
    // CPU tensors have no index (-1), as in torch.
    *require_out(ret, "ret_device_index") = d.is_host() ? -1 : d.index();
  });
}

AOTITorchError aoti_torch_get_layout(AtenTensorHandle tensor, int32_t* ret) {
  return guard(__func__, [&] {
    peek(tensor);
    *require_out(ret, "ret_layout") = aoti_torch_layout_strided();
  });
}

AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret) {
  return guard(__func__,
               [&] { *require_out(ret, "ret_storage_offset") = peek(tensor).storage_offset; });
}

AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret) {
  return guard(__func__,
               [&] { *require_out(ret, "ret_is_contiguous") = peek(tensor).is_contiguous(); });
}

AOTITorchError aoti_torch_is_defined(AtenTensorHandle tensor, bool* ret) {
  return guard(__func__, [&] {
    *require_out(ret, "ret_is_defined") = peek(tensor).defined;
  });
}

}  // extern "C"
