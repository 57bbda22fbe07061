// Getters: everything about a tensor handle, validated.
#include "core/error.h"
#include "core/handle_registry.h"
#include "core/device.h"

using namespace aotishim;

namespace {
// A non-null pointer for 0-d tensors' empty size/stride arrays.
int64_t g_empty_shape[1] = {0};

int64_t* shape_ptr(std::vector<int64_t>& v) { return v.empty() ? g_empty_shape : v.data(); }

int64_t checked_dim(const Tensor& t, int64_t d) {
  int64_t n = t.dim();
  if (d < 0) d += n;
  AOTISHIM_CHECK(d >= 0 && d < n, "dimension ", d, " out of range for a ", n, "-d tensor");
  return d;
}
}  // namespace

extern "C" {

AOTITorchError aoti_torch_get_data_ptr(AtenTensorHandle tensor, void** ret) {
  return guard(__func__, [&] { *require_out(ret, "ret_data_ptr") = lookup(tensor)->data(); });
}

AOTITorchError aoti_torch_get_storage_size(AtenTensorHandle tensor, int64_t* ret) {
  return guard(__func__, [&] {
    *require_out(ret, "ret_size") = static_cast<int64_t>(lookup(tensor)->storage->nbytes());
  });
}

AOTITorchError aoti_torch_get_dim(AtenTensorHandle tensor, int64_t* ret) {
  return guard(__func__, [&] { *require_out(ret, "ret_dim") = lookup(tensor)->dim(); });
}

AOTITorchError aoti_torch_get_numel(AtenTensorHandle tensor, int64_t* ret) {
  return guard(__func__, [&] { *require_out(ret, "ret_numel") = lookup(tensor)->numel(); });
}

AOTITorchError aoti_torch_get_sizes(AtenTensorHandle tensor, int64_t** ret) {
  // The pointer stays valid while the handle lives (the registry owns the tensor).
  return guard(__func__, [&] { *require_out(ret, "ret_sizes") = shape_ptr(lookup(tensor)->sizes); });
}

AOTITorchError aoti_torch_get_size(AtenTensorHandle tensor, int64_t d, int64_t* ret) {
  return guard(__func__, [&] {
    auto t = lookup(tensor);
    *require_out(ret, "ret_size") = t->sizes[checked_dim(*t, d)];
  });
}

AOTITorchError aoti_torch_get_strides(AtenTensorHandle tensor, int64_t** ret) {
  return guard(__func__,
               [&] { *require_out(ret, "ret_strides") = shape_ptr(lookup(tensor)->strides); });
}

AOTITorchError aoti_torch_get_stride(AtenTensorHandle tensor, int64_t d, int64_t* ret) {
  return guard(__func__, [&] {
    auto t = lookup(tensor);
    *require_out(ret, "ret_stride") = t->strides[checked_dim(*t, d)];
  });
}

AOTITorchError aoti_torch_get_dtype(AtenTensorHandle tensor, int32_t* ret) {
  return guard(__func__,
               [&] { *require_out(ret, "ret_dtype") = static_cast<int32_t>(lookup(tensor)->dtype); });
}

AOTITorchError aoti_torch_get_device_type(AtenTensorHandle tensor, int32_t* ret) {
  return guard(__func__, [&] {
    *require_out(ret, "ret_device_type") = static_cast<int32_t>(lookup(tensor)->device().type());
  });
}

AOTITorchError aoti_torch_get_device_index(AtenTensorHandle tensor, int32_t* ret) {
  return guard(__func__, [&] {
    Device& d = lookup(tensor)->device();
    // CPU tensors have no index (-1), as in torch.
    *require_out(ret, "ret_device_index") = d.is_host() ? -1 : d.index();
  });
}

AOTITorchError aoti_torch_get_layout(AtenTensorHandle tensor, int32_t* ret) {
  return guard(__func__, [&] {
    lookup(tensor);
    *require_out(ret, "ret_layout") = aoti_torch_layout_strided();
  });
}

AOTITorchError aoti_torch_get_storage_offset(AtenTensorHandle tensor, int64_t* ret) {
  return guard(__func__,
               [&] { *require_out(ret, "ret_storage_offset") = lookup(tensor)->storage_offset; });
}

AOTITorchError aoti_torch_is_contiguous(AtenTensorHandle tensor, bool* ret) {
  return guard(__func__,
               [&] { *require_out(ret, "ret_is_contiguous") = lookup(tensor)->is_contiguous(); });
}

AOTITorchError aoti_torch_is_defined(AtenTensorHandle tensor, bool* ret) {
  return guard(__func__, [&] {
    *require_out(ret, "ret_is_defined") = lookup(tensor)->defined;
  });
}

}  // extern "C"
