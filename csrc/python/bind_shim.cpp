// The aoti_torch_* ABI, callable from Python on integer handles. The Python
// package wraps these in aotishim.shim.Tensor.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "python/bindings.h"
#include "python/handles.h"

namespace py = pybind11;

namespace aotishim::python {

namespace {

using Shape = std::vector<int64_t>;

const int64_t* strides_or_null(const std::optional<Shape>& strides) {
  return strides ? strides->data() : nullptr;
}

uintptr_t empty_strided(const Shape& sizes, const std::optional<Shape>& strides, int32_t dtype,
                        int32_t device_type, int32_t device_index) {
  if (strides && strides->size() != sizes.size()) throw Error("sizes and strides differ in length");
  AtenTensorHandle h = nullptr;
  check(aoti_torch_empty_strided(static_cast<int64_t>(sizes.size()), sizes.data(),
                                 strides_or_null(strides), dtype, device_type, device_index, &h));
  return from_handle(h);
}

// aoti_torch_create_tensor_from_blob_v2, layout and opaque metadata included
// (so tests can pass bad ones).
uintptr_t from_blob(uintptr_t address, const Shape& sizes, const std::optional<Shape>& strides,
                    int64_t storage_offset, int32_t dtype, int32_t device_type,
                    int32_t device_index, int32_t layout, const py::bytes& opaque_metadata) {
  if (strides && strides->size() != sizes.size()) throw Error("sizes and strides differ in length");
  std::string metadata = opaque_metadata;
  AtenTensorHandle h = nullptr;
  check(aoti_torch_create_tensor_from_blob_v2(
      reinterpret_cast<void*>(address), static_cast<int64_t>(sizes.size()), sizes.data(),
      strides_or_null(strides), storage_offset, dtype, device_type, device_index, &h, layout,
      metadata.empty() ? nullptr : reinterpret_cast<const uint8_t*>(metadata.data()),
      static_cast<int64_t>(metadata.size())));
  return from_handle(h);
}

// aoti_torch_create_tensor_from_blob (v1: no layout, no metadata).
uintptr_t from_blob_v1(uintptr_t address, const Shape& sizes, const std::optional<Shape>& strides,
                       int64_t storage_offset, int32_t dtype, int32_t device_type,
                       int32_t device_index) {
  if (strides && strides->size() != sizes.size()) throw Error("sizes and strides differ in length");
  AtenTensorHandle h = nullptr;
  check(aoti_torch_create_tensor_from_blob(
      reinterpret_cast<void*>(address), static_cast<int64_t>(sizes.size()), sizes.data(),
      strides_or_null(strides), storage_offset, dtype, device_type, device_index, &h));
  return from_handle(h);
}

uintptr_t reinterpret(uintptr_t self, const Shape& sizes, const Shape& strides,
                      int64_t storage_offset) {
  if (strides.size() != sizes.size()) throw Error("sizes and strides differ in length");
  AtenTensorHandle h = nullptr;
  check(aoti_torch__reinterpret_tensor(to_handle(self), static_cast<int64_t>(sizes.size()),
                                       sizes.data(), strides.data(), storage_offset, &h));
  return from_handle(h);
}

template <AOTITorchError (*Fn)(AtenTensorHandle, AtenTensorHandle*)>
uintptr_t make_from(uintptr_t self) {
  AtenTensorHandle h = nullptr;
  check(Fn(to_handle(self), &h));
  return from_handle(h);
}

// One getter shim by name, so tests can reach each one (and its errors).
py::object get(uintptr_t handle, const std::string& what) {
  AtenTensorHandle h = to_handle(handle);
  if (what == "data_ptr") {
    void* p = nullptr;
    check(aoti_torch_get_data_ptr(h, &p));
    return py::int_(reinterpret_cast<uintptr_t>(p));
  }
  if (what == "sizes" || what == "strides") {
    int64_t* p = nullptr;
    int64_t dim = 0;
    check(what == "sizes" ? aoti_torch_get_sizes(h, &p) : aoti_torch_get_strides(h, &p));
    check(aoti_torch_get_dim(h, &dim));
    return py::cast(Shape(p, p + dim));
  }
  auto i64 = [&](AOTITorchError (*fn)(AtenTensorHandle, int64_t*)) {
    int64_t v = 0;
    check(fn(h, &v));
    return py::int_(v);
  };
  auto i32 = [&](AOTITorchError (*fn)(AtenTensorHandle, int32_t*)) {
    int32_t v = 0;
    check(fn(h, &v));
    return py::int_(v);
  };
  if (what == "dim") return i64(aoti_torch_get_dim);
  if (what == "numel") return i64(aoti_torch_get_numel);
  if (what == "storage_offset") return i64(aoti_torch_get_storage_offset);
  if (what == "storage_size") return i64(aoti_torch_get_storage_size);
  if (what == "dtype") return i32(aoti_torch_get_dtype);
  if (what == "device_type") return i32(aoti_torch_get_device_type);
  if (what == "device_index") return i32(aoti_torch_get_device_index);
  if (what == "layout") return i32(aoti_torch_get_layout);
  if (what == "is_contiguous") {
    bool v = false;
    check(aoti_torch_is_contiguous(h, &v));
    return py::bool_(v);
  }
  if (what == "element_size") {
    int32_t dtype = 0;
    check(aoti_torch_get_dtype(h, &dtype));
    return py::int_(aoti_torch_dtype_element_size(dtype));
  }
  throw py::value_error("unknown getter '" + what + "'");
}

py::dict constants() {
  py::dict d;
  d["device_type_cpu"] = aoti_torch_device_type_cpu();
  d["device_type_cuda"] = aoti_torch_device_type_cuda();
  d["device_type_mps"] = aoti_torch_device_type_mps();
  d["device_type_privateuse1"] = aoti_torch_device_type_privateuse1();
  d["dtype_float16"] = aoti_torch_dtype_float16();
  d["dtype_bfloat16"] = aoti_torch_dtype_bfloat16();
  d["dtype_float32"] = aoti_torch_dtype_float32();
  d["dtype_float64"] = aoti_torch_dtype_float64();
  d["dtype_uint8"] = aoti_torch_dtype_uint8();
  d["dtype_int8"] = aoti_torch_dtype_int8();
  d["dtype_int16"] = aoti_torch_dtype_int16();
  d["dtype_int32"] = aoti_torch_dtype_int32();
  d["dtype_int64"] = aoti_torch_dtype_int64();
  d["dtype_bool"] = aoti_torch_dtype_bool();
  d["dtype_uint16"] = aoti_torch_dtype_uint16();
  d["dtype_uint32"] = aoti_torch_dtype_uint32();
  d["dtype_uint64"] = aoti_torch_dtype_uint64();
  d["dtype_complex32"] = aoti_torch_dtype_complex32();
  d["dtype_complex64"] = aoti_torch_dtype_complex64();
  d["dtype_complex128"] = aoti_torch_dtype_complex128();
  d["dtype_float8_e5m2"] = aoti_torch_dtype_float8_e5m2();
  d["dtype_float8_e4m3fn"] = aoti_torch_dtype_float8_e4m3fn();
  d["dtype_float8_e5m2fnuz"] = aoti_torch_dtype_float8_e5m2fnuz();
  d["dtype_float8_e4m3fnuz"] = aoti_torch_dtype_float8_e4m3fnuz();
  d["dtype_float8_e8m0fnu"] = aoti_torch_dtype_float8_e8m0fnu();
  d["dtype_float4_e2m1fn_x2"] = aoti_torch_dtype_float4_e2m1fn_x2();
  d["layout_strided"] = aoti_torch_layout_strided();
  return d;
}

py::dict info(uintptr_t handle) {
  TensorInfo t = tensor_info(to_handle(handle));
  py::dict d;
  d["sizes"] = t.sizes;
  d["strides"] = t.strides;
  d["storage_offset"] = t.storage_offset;
  d["dtype"] = t.dtype;
  d["device"] = t.device;
  d["data_ptr"] = reinterpret_cast<uintptr_t>(t.data_ptr);
  d["storage_nbytes"] = t.storage_nbytes;
  d["owns_storage"] = t.owns_storage;
  return d;
}

// An array's strides in elements; throws `why` for negative or unaligned ones.
Shape element_strides(const py::array& array, const char* why) {
  Shape strides(array.ndim());
  for (py::ssize_t i = 0; i < array.ndim(); ++i) {
    if (array.strides(i) < 0 || array.strides(i) % array.itemsize() != 0) throw Error(why);
    strides[i] = array.strides(i) / array.itemsize();
  }
  return strides;
}

// Borrow a numpy array's memory; the array stays alive while any view of it
// does (the keepalive drops its reference under the GIL).
uintptr_t borrow_array(py::array array, int32_t dtype) {
  if (!array.writeable()) throw Error("cannot borrow a read-only array; pass copy=True");
  Shape sizes(array.shape(), array.shape() + array.ndim());
  Shape strides = element_strides(
      array, "cannot borrow an array with negative or unaligned strides; pass copy=True");
  auto* holder = new py::object(array);
  std::shared_ptr<void> keepalive(holder, [](void* p) {
    py::gil_scoped_acquire gil;
    delete static_cast<py::object*>(p);
  });
  return from_handle(
      borrow_host_memory(array.mutable_data(), sizes, strides, dtype, std::move(keepalive)));
}

uintptr_t copy_array(py::array array, int32_t dtype, const std::string& device) {
  Shape sizes(array.shape(), array.shape() + array.ndim());
  Shape strides = element_strides(array, "array has negative or unaligned strides");
  const void* data = array.data();
  py::gil_scoped_release release;
  return from_handle(copy_from_host(data, sizes, strides, dtype, device));
}

void to_host(uintptr_t handle, py::array out) {
  if (!(out.flags() & py::array::c_style) || !out.writeable())
    throw Error("destination must be a writable C-contiguous array");
  void* dst = out.mutable_data();
  int64_t numel = 0;
  check(aoti_torch_get_numel(to_handle(handle), &numel));
  int32_t dtype = 0;
  check(aoti_torch_get_dtype(to_handle(handle), &dtype));
  if (static_cast<size_t>(out.nbytes()) != static_cast<size_t>(numel) * aoti_torch_dtype_element_size(dtype))
    throw Error("destination array has the wrong size");
  py::gil_scoped_release release;
  copy_to_host(to_handle(handle), dst);
}

}  // namespace

void bind_shim(py::module_& m) {
  m.def("constants", &constants, "The ABI's constant-returning shims.");
  m.def(
      "parse_device",
      [](const std::string& device) {
        AbiDevice d;
        try {
          d = parse_device_abi(device);
        } catch (const Error& e) {
          throw py::value_error(e.what());  // a bad argument, as Python reports one
        }
        return py::make_tuple(d.type, d.index);
      },
      py::arg("device"), "'cpu' -> (0, -1), 'sim' -> (20, 0), 'cuda:1' -> (1, 1).");
  m.def("empty_strided", &empty_strided, py::arg("sizes"), py::arg("strides"), py::arg("dtype"),
        py::arg("device_type"), py::arg("device_index"));
  m.def("create_tensor_from_blob", &from_blob, py::arg("address"), py::arg("sizes"),
        py::arg("strides"), py::arg("storage_offset"), py::arg("dtype"), py::arg("device_type"),
        py::arg("device_index"), py::arg("layout") = aoti_torch_layout_strided(),
        py::arg("opaque_metadata") = py::bytes());
  m.def("create_tensor_from_blob_v1", &from_blob_v1, py::arg("address"), py::arg("sizes"),
        py::arg("strides"), py::arg("storage_offset"), py::arg("dtype"), py::arg("device_type"),
        py::arg("device_index"));
  m.def("reinterpret_tensor", &reinterpret);
  m.def("new_tensor_handle", &make_from<aoti_torch_new_tensor_handle>);
  m.def("assign_tensors_out", &make_from<aoti_torch_assign_tensors_out>);
  m.def("clone", &make_from<aoti_torch_clone>);
  m.def("clone_preserve_strides", &make_from<aoti_torch_clone_preserve_strides>);
  m.def("copy_", [](uintptr_t dst, uintptr_t src) {
    check(aoti_torch_copy_(to_handle(dst), to_handle(src), 0));
  });
  m.def("delete_tensor_object",
        [](uintptr_t h) { check(aoti_torch_delete_tensor_object(to_handle(h))); });
  m.def("get", &get, "Call one aoti_torch_get_* shim by name.");
  m.def("get_size", [](uintptr_t h, int64_t d) {
    int64_t v = 0;
    check(aoti_torch_get_size(to_handle(h), d, &v));
    return v;
  });
  m.def("get_stride", [](uintptr_t h, int64_t d) {
    int64_t v = 0;
    check(aoti_torch_get_stride(to_handle(h), d, &v));
    return v;
  });
  m.def("is_defined", [](uintptr_t h) {
    bool v = false;
    check(aoti_torch_is_defined(to_handle(h), &v));
    return v;
  });
  m.def("tensor_info", &info);
  m.def("is_live", [](uintptr_t h) { return is_live_handle(to_handle(h)); });
  m.def("element_size", [](int32_t dtype) {
    // The C function has no error channel (0 means unknown); Python raises.
    const size_t size = aoti_torch_dtype_element_size(dtype);
    if (size == 0) throw Error(aotishim_last_error());
    return size;
  });
  m.def("last_error", [] { return std::string(aotishim_last_error()); });
  m.def("grad_mode_is_enabled", [] { return aoti_torch_grad_mode_is_enabled(); });
  m.def("grad_mode_set_enabled", [](bool e) { aoti_torch_grad_mode_set_enabled(e); });
  m.def("warn", [](const std::string& msg) { aoti_torch_warn("python", "<python>", 0, msg.c_str()); });

  // The fallback-op table; Python builds its wrappers of the C entries from it.
  m.def("fallback_ops", [] {
    size_t count = 0;
    const AotishimFallbackOp* table = aotishim_fallback_ops(&count);
    py::list rows;
    for (size_t i = 0; i < count; ++i) {
      py::list devices;
      if (table[i].cpu) devices.append("cpu");
      if (table[i].cuda) devices.append("cuda");
      if (table[i].mps) devices.append("mps");
      rows.append(py::make_tuple(table[i].name, table[i].params, devices));
    }
    return rows;
  });
  // The file libaotishim was loaded from (the C entries live there).
  m.def("library_file", [] {
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&aotishim_last_error), &info) == 0 ||
        info.dli_fname == nullptr)
      throw std::runtime_error("cannot locate libaotishim");
    return std::string(info.dli_fname);
  });

  // What this CPU offers torch's oneDNN paths, as our convolution's output
  // layout rule reads it (tests compare it with torch's own checks).
  m.def("cpu_features", [] {
    py::dict d;
    d["onednn_bfloat16"] = aotishim::onednn_takes_bfloat16();
    d["onednn_float16"] = aotishim::onednn_takes_float16();
    return d;
  });

  m.def("borrow_array", &borrow_array, py::arg("array"), py::arg("dtype"));
  m.def("copy_array", &copy_array, py::arg("array"), py::arg("dtype"), py::arg("device"));
  m.def("copy_to_host", &to_host, py::arg("handle"), py::arg("out"));
  m.def("host_malloc", [](size_t n) { return reinterpret_cast<uintptr_t>(std::malloc(n)); },
        "malloc(n): raw host memory, for tests that model a constants blob.");
  m.def("host_free", [](uintptr_t p) { std::free(reinterpret_cast<void*>(p)); });
}

}  // namespace aotishim::python
