// DLPack exchange: tensors of other libraries (torch, numpy, CuPy, ...)
// borrowed as inputs without a copy, and model outputs exported to them
// without a copy (aotishim._core.DeviceTensor).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "aotishim/runtime.h"
#include "python/bindings.h"
#include "python/dlpack.h"
#include "python/handles.h"

namespace py = pybind11;

namespace aotishim::python {

namespace {

[[noreturn]] void buffer_error(const std::string& message) {
  PyErr_SetString(PyExc_BufferError, message.c_str());
  throw py::error_already_set();
}

constexpr const char* kCapsule = "dltensor";
constexpr const char* kUsedCapsule = "used_dltensor";
constexpr const char* kVersionedCapsule = "dltensor_versioned";
constexpr const char* kUsedVersionedCapsule = "used_dltensor_versioned";

// ---- dtypes and devices ----

struct DTypeMap {
  const char* name;
  int32_t abi;  // aoti_torch_dtype_*()
  DLDataType dl;
};

const std::vector<DTypeMap>& dtype_map() {
  static const std::vector<DTypeMap> map = {
      {"uint8", aoti_torch_dtype_uint8(), {kDLUInt, 8, 1}},
      {"int8", aoti_torch_dtype_int8(), {kDLInt, 8, 1}},
      {"int16", aoti_torch_dtype_int16(), {kDLInt, 16, 1}},
      {"int32", aoti_torch_dtype_int32(), {kDLInt, 32, 1}},
      {"int64", aoti_torch_dtype_int64(), {kDLInt, 64, 1}},
      {"float16", aoti_torch_dtype_float16(), {kDLFloat, 16, 1}},
      {"float32", aoti_torch_dtype_float32(), {kDLFloat, 32, 1}},
      {"float64", aoti_torch_dtype_float64(), {kDLFloat, 64, 1}},
      {"bool", aoti_torch_dtype_bool(), {kDLBool, 8, 1}},
      {"bfloat16", aoti_torch_dtype_bfloat16(), {kDLBfloat, 16, 1}},
      {"uint16", aoti_torch_dtype_uint16(), {kDLUInt, 16, 1}},
      {"uint32", aoti_torch_dtype_uint32(), {kDLUInt, 32, 1}},
      {"uint64", aoti_torch_dtype_uint64(), {kDLUInt, 64, 1}},
      {"complex64", aoti_torch_dtype_complex64(), {kDLComplex, 64, 1}},
      {"complex128", aoti_torch_dtype_complex128(), {kDLComplex, 128, 1}},
  };
  return map;
}

int32_t abi_dtype(DLDataType dl) {
  for (const DTypeMap& m : dtype_map()) {
    if (m.dl.code == dl.code && m.dl.bits == dl.bits && m.dl.lanes == dl.lanes) return m.abi;
  }
  throw py::type_error("unsupported DLPack dtype (code " + std::to_string(dl.code) + ", " +
                       std::to_string(dl.bits) + " bits, " + std::to_string(dl.lanes) +
                       " lanes); aotishim takes uint8, int8..int64, float16, bfloat16, "
                       "float32, float64 and bool");
}

DLDataType dl_dtype(int32_t abi) {
  for (const DTypeMap& m : dtype_map()) {
    if (m.abi == abi) return m.dl;
  }
  throw Error("dtype " + std::to_string(abi) + " has no DLPack equivalent");
}

// "cpu" -> (kDLCPU, 0), "cuda:1" -> (kDLCUDA, 1). Devices DLPack cannot name
// for another library (sim; mps, whose buffers are not plain pointers) are refused.
DLDevice dl_device(const std::string& device) {
  const AbiDevice d = parse_device_abi(device);
  if (d.type == aoti_torch_device_type_cpu()) return {kDLCPU, 0};
  if (d.type == aoti_torch_device_type_cuda()) return {kDLCUDA, d.index};
  throw Error("DLPack exchange supports cpu and cuda devices, not '" + device + "'");
}

std::string describe(DLDevice d) {
  switch (d.device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda:" + std::to_string(d.device_id);
    case kDLCUDAHost: return "cuda pinned host memory";
    case kDLCUDAManaged: return "cuda managed memory";
    default: return "DLPack device type " + std::to_string(d.device_type);
  }
}

bool is_cuda(DLDevice d) { return d.device_type == kDLCUDA; }

// ---- inputs: borrowing a producer's capsule ----

// A borrowed capsule's tensor handle with what a model's input checks need.
struct Borrowed {
  uintptr_t handle = 0;
  int32_t dtype = 0;
  std::vector<int64_t> sizes;
};

// A producer's tensor as aotishim will borrow it, checked.
struct DLView {
  char* data = nullptr;
  int64_t offset = 0;  // elements
  int32_t dtype = 0;
  std::vector<int64_t> sizes, strides;
};

DLView read_dltensor(const DLTensor* t, const std::string& device) {
  const DLDevice want = dl_device(device);
  if (t->device.device_type != want.device_type || t->device.device_id != want.device_id) {
    throw py::value_error("is on " + describe(t->device) + ", the model runs on " + device);
  }
  DLView v;
  v.dtype = abi_dtype(t->dtype);
  const int64_t itemsize = static_cast<int64_t>(aoti_torch_dtype_element_size(v.dtype));
  if (t->ndim < 0) throw py::value_error("DLPack tensor has a negative ndim");
  v.sizes.assign(t->shape, t->shape + t->ndim);
  if (t->strides != nullptr && t->ndim > 0) v.strides.assign(t->strides, t->strides + t->ndim);
  for (int64_t s : v.strides) {
    if (s < 0) throw py::value_error("has negative strides, which aotishim cannot borrow; pass a copy");
  }
  if (t->data == nullptr) {
    for (int64_t s : v.sizes) {
      if (s < 0) throw py::value_error("DLPack tensor has a negative size");
    }
  }
  // The offset stays an element offset into the borrowed span when it can,
  // so the storage starts where the producer said its memory does.
  v.data = static_cast<char*>(t->data);
  if (t->byte_offset % static_cast<uint64_t>(itemsize) == 0) {
    v.offset = static_cast<int64_t>(t->byte_offset / static_cast<uint64_t>(itemsize));
  } else {
    v.data += t->byte_offset;
  }
  return v;
}

// `keepalive` owns the producer's managed tensor: the borrowed storage holds
// it, and its deleter runs when the last view of that storage dies (or at
// once, if borrowing fails).
Borrowed borrow_view(DLView v, const std::string& device, std::shared_ptr<void> keepalive) {
  const uintptr_t handle = from_handle(borrow_memory(device, v.data, v.sizes, v.strides, v.offset,
                                                     v.dtype, std::move(keepalive)));
  return Borrowed{handle, v.dtype, std::move(v.sizes)};
}

std::shared_ptr<void> owning(DLManagedTensorVersioned* m) {
  return std::shared_ptr<void>(m, [](void* p) {
    auto* t = static_cast<DLManagedTensorVersioned*>(p);
    if (t->deleter) t->deleter(t);
  });
}

// Reads the tensor of a "dltensor" or "dltensor_versioned" capsule, borrows
// it on `device` and marks the capsule used. Nothing is taken from a
// capsule that is refused.
Borrowed borrow_capsule_info(py::capsule capsule, const std::string& device) {
  const char* name = PyCapsule_GetName(capsule.ptr());
  if (name == nullptr) throw py::error_already_set();
  const std::string kind = name;
  DLTensor* t = nullptr;
  void* managed = nullptr;
  bool versioned = false;
  if (kind == kVersionedCapsule) {
    auto* m = static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule.ptr(), name));
    if (m == nullptr) throw py::error_already_set();
    if (m->version.major > kDLPackMajor) {
      buffer_error("DLPack version " + std::to_string(m->version.major) + "." +
                             std::to_string(m->version.minor) + " is newer than the " +
                             std::to_string(kDLPackMajor) + ".x aotishim reads");
    }
    t = &m->dl_tensor;
    managed = m;
    versioned = true;
  } else if (kind == kCapsule) {
    auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), name));
    if (m == nullptr) throw py::error_already_set();
    t = &m->dl_tensor;
    managed = m;
  } else if (kind == kUsedCapsule || kind == kUsedVersionedCapsule) {
    throw py::value_error("this DLPack capsule was already consumed");
  } else {
    throw py::type_error("not a DLPack capsule (its name is '" + kind + "')");
  }
  DLView v = read_dltensor(t, device);

  // Taken: the storage calls the producer's deleter, also if borrowing fails below.
  if (PyCapsule_SetName(capsule.ptr(), versioned ? kUsedVersionedCapsule : kUsedCapsule) != 0) {
    throw py::error_already_set();
  }
  std::shared_ptr<void> keepalive;
  if (versioned) {
    keepalive = owning(static_cast<DLManagedTensorVersioned*>(managed));
  } else {
    keepalive.reset(managed, [](void* p) {
      auto* m = static_cast<DLManagedTensor*>(p);
      if (m->deleter) m->deleter(m);
    });
  }
  return borrow_view(std::move(v), device, std::move(keepalive));
}

// The C exchange table of `type`, or null when it has none this module can
// use; looked up once per type (the cache holds the type, so its address is
// never reused for another while cached).
const DLPackExchangeAPI* exchange_api(PyTypeObject* type) {
  // Under the GIL; never destroyed, since its references must not be
  // dropped after the interpreter has finalised.
  static auto& cache = *new std::vector<std::pair<py::object, const DLPackExchangeAPI*>>();
  for (const auto& [t, api] : cache) {
    if (t.ptr() == reinterpret_cast<PyObject*>(type)) return api;
  }
  const DLPackExchangeAPI* api = nullptr;
  py::object attr = py::reinterpret_steal<py::object>(
      PyObject_GetAttrString(reinterpret_cast<PyObject*>(type), "__dlpack_c_exchange_api__"));
  if (!attr) {
    PyErr_Clear();
  } else if (PyCapsule_IsValid(attr.ptr(), "dlpack_exchange_api")) {
    auto* a = static_cast<const DLPackExchangeAPI*>(
        PyCapsule_GetPointer(attr.ptr(), "dlpack_exchange_api"));
    if (a != nullptr && a->header.version.major == kDLPackMajor &&
        a->managed_tensor_from_py_object_no_sync != nullptr) {
      api = a;  // the producer keeps its table alive for the process
    }
  }
  if (cache.size() < 64) {
    cache.emplace_back(py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(type)), api);
  }
  return api;
}


uintptr_t borrow_capsule(py::capsule capsule, const std::string& device) {
  return borrow_capsule_info(capsule, device).handle;
}

// Model.run's input path in one call: (handle, dtype code, sizes, packed),
// so no tensor_info round trip is needed to check the input. `packed` says
// whether the handle already has the row-major layout a model takes.
py::tuple input_tuple(Borrowed b) {
  bool contiguous = false;
  const AOTITorchError err = aoti_torch_is_contiguous(to_handle(b.handle), &contiguous);
  if (err != AOTI_TORCH_SUCCESS) aoti_torch_delete_tensor_object(to_handle(b.handle));
  check(err);
  py::tuple sizes(b.sizes.size());
  for (size_t i = 0; i < b.sizes.size(); ++i) sizes[i] = py::int_(b.sizes[i]);
  return py::make_tuple(b.handle, b.dtype, std::move(sizes), contiguous);
}

py::tuple borrow_input(py::capsule capsule, const std::string& device) {
  return input_tuple(borrow_capsule_info(capsule, device));
}

// Model.run's input path for producers with a C exchange table (torch's
// tensors): the managed tensor taken through the table, no Python protocol
// call. For cuda the model's stream is ordered after the producer's current
// work stream first, as DLPack's stream= would have the producer do. None
// when the producer has no table, or its tensor is not on the model's device
// (the caller's __dlpack__ path then copies host data or names the mismatch).
py::object borrow_exchange_input(py::handle obj, const std::string& device) {
  const DLDevice want = dl_device(device);
  const DLPackExchangeAPI* api = exchange_api(Py_TYPE(obj.ptr()));
  if (api == nullptr) return py::none();
  if (is_cuda(want) && api->current_work_stream == nullptr) return py::none();
  DLManagedTensorVersioned* m = nullptr;
  if (api->managed_tensor_from_py_object_no_sync(obj.ptr(), &m) != 0 || m == nullptr) {
    if (PyErr_Occurred()) throw py::error_already_set();
    throw py::value_error("the producer's DLPack exchange table returned no tensor");
  }
  std::shared_ptr<void> keepalive = owning(m);  // from here on, m is released on every path
  if (m->version.major > kDLPackMajor) {
    buffer_error("DLPack version " + std::to_string(m->version.major) + " is newer than the " +
                 std::to_string(kDLPackMajor) + ".x aotishim reads");
  }
  const DLDevice got = m->dl_tensor.device;
  if (got.device_type != want.device_type || got.device_id != want.device_id) return py::none();
  if (is_cuda(want)) {
    void* stream = nullptr;
    if (api->current_work_stream(kDLCUDA, want.device_id, &stream) != 0) {
      if (PyErr_Occurred()) throw py::error_already_set();
      throw py::value_error("the producer's DLPack exchange table named no current stream");
    }
    // A null stream is the legacy default stream (DLPack's 1, our 0).
    order_device_after_stream(device, reinterpret_cast<intptr_t>(stream));
  }
  Borrowed b = borrow_view(read_dltensor(&m->dl_tensor, device), device, std::move(keepalive));
  return input_tuple(std::move(b));
}

// The handle itself if it is packed row-major (what compiled models take);
// otherwise a packed copy made on its device, and the handle deleted.
uintptr_t packed(uintptr_t handle) {
  AtenTensorHandle h = to_handle(handle);
  bool contiguous = false;
  check(aoti_torch_is_contiguous(h, &contiguous));
  if (contiguous) return handle;
  AtenTensorHandle out = nullptr;
  {
    py::gil_scoped_release release;
    const TensorInfo info = tensor_info(h);
    const AbiDevice device = parse_device_abi(info.device);
    // Not aoti_torch_clone: it keeps a dense permutation (a transpose) as it lies.
    check(aoti_torch_empty_strided(static_cast<int64_t>(info.sizes.size()), info.sizes.data(),
                                   nullptr, info.dtype, device.type, device.index, &out));
    const AOTITorchError err = aoti_torch_copy_(out, h, 0);
    // The copy is queued on the device's current stream before the borrowed
    // view (and with it the producer's memory) is let go.
    check(aoti_torch_delete_tensor_object(h));
    if (err != AOTI_TORCH_SUCCESS) aoti_torch_delete_tensor_object(out);
    check(err);
  }
  return from_handle(out);
}

// ---- outputs: DeviceTensor ----

// What an exported capsule owns: the storage and the geometry its DLTensor
// points into.
struct ExportContext {
  std::shared_ptr<void> storage;
  std::vector<int64_t> sizes, strides;
  std::string device;
  bool cuda = false;
  intptr_t consumer_stream = 0;  // 0: none to wait for when freeing
};

void release_context(void* ctx) noexcept {
  auto* c = static_cast<ExportContext*>(ctx);
  if (c->cuda && c->consumer_stream != 0) {
    // The consumer may drop the tensor with its reads still queued on its
    // stream; memory freed now would be reused by our next allocation on
    // ours. Order our later work after theirs first.
    try {
      order_device_after_stream(c->device, c->consumer_stream);
    } catch (...) {
      // A deleter must not throw; the storage is released regardless.
    }
  }
  delete c;
}

void delete_managed(DLManagedTensor* m) {
  release_context(m->manager_ctx);
  delete m;
}

void delete_managed_versioned(DLManagedTensorVersioned* m) {
  release_context(m->manager_ctx);
  delete m;
}

// A capsule nobody consumed still owns its tensor (the spec's rule: a
// consumer renames the capsule when it takes ownership).
void capsule_destructor(PyObject* capsule) {
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);  // may run while an exception is set
  if (PyCapsule_IsValid(capsule, kCapsule)) {
    delete_managed(static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsule)));
  } else if (PyCapsule_IsValid(capsule, kVersionedCapsule)) {
    delete_managed_versioned(
        static_cast<DLManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedCapsule)));
  }
  PyErr_Restore(type, value, traceback);
}

// A model output kept on the model's device. It holds the output's storage,
// not a tensor handle: live tensor counts and scopes do not see it, and the
// memory lives until this object and every consumer of its capsules are gone.
class DeviceTensor {
 public:
  explicit DeviceTensor(uintptr_t handle) {
    AtenTensorHandle h = to_handle(handle);
    const TensorInfo info = tensor_info(h);
    dl_device_ = dl_device(info.device);
    dl_dtype(info.dtype);  // refused here, not at export
    storage_ = retain_storage(h);
    sizes_ = info.sizes;
    strides_ = info.strides;
    dtype_ = info.dtype;
    device_ = info.device;
    data_ = info.data_ptr;
  }

  py::capsule dlpack(py::object stream, py::object max_version, py::object dl_device_arg,
                     py::object copy) const {
    if (!dl_device_arg.is_none()) {
      auto pair = dl_device_arg.cast<std::pair<int32_t, int32_t>>();
      if (pair.first != dl_device_.device_type || pair.second != dl_device_.device_id) {
        buffer_error("this tensor is on " + device_ + "; aotishim does not copy it to " +
                               describe({static_cast<DLDeviceType>(pair.first), pair.second}));
      }
    }
    if (!copy.is_none() && copy.cast<bool>()) {
      buffer_error("aotishim exports its memory without copying (copy=True is not supported)");
    }
    auto ctx = std::make_unique<ExportContext>();
    ctx->storage = storage_;
    ctx->sizes = sizes_;
    ctx->strides = strides_;
    ctx->device = device_;
    ctx->cuda = is_cuda(dl_device_);
    if (ctx->cuda) {
      // The protocol: None means the legacy default stream, -1 "do not
      // synchronize", anything else the consumer's stream.
      const intptr_t s = stream.is_none() ? 1 : stream.cast<intptr_t>();
      if (s == 0) throw py::value_error("stream 0 is ambiguous for cuda; pass 1 for the legacy default stream");
      if (s != -1) {
        py::gil_scoped_release release;
        order_stream_after_device(device_, s);
        ctx->consumer_stream = s;
      }
    } else if (!stream.is_none() && stream.cast<intptr_t>() != -1) {
      throw py::value_error("a cpu tensor takes no stream (pass None)");
    }

    DLTensor t{};
    t.data = data_;
    t.device = dl_device_;
    t.ndim = static_cast<int32_t>(sizes_.size());
    t.dtype = dl_dtype(dtype_);
    t.shape = ctx->sizes.data();
    t.strides = ctx->strides.data();
    t.byte_offset = 0;

    const bool versioned =
        !max_version.is_none() && py::cast<py::tuple>(max_version)[0].cast<int64_t>() >= 1;
    if (versioned) {
      auto* m = new DLManagedTensorVersioned{};
      m->version = {kDLPackMajor, kDLPackMinor};
      m->manager_ctx = ctx.release();
      m->deleter = delete_managed_versioned;
      m->flags = 0;
      m->dl_tensor = t;
      PyObject* cap = PyCapsule_New(m, kVersionedCapsule, capsule_destructor);
      if (cap == nullptr) {
        delete_managed_versioned(m);
        throw py::error_already_set();
      }
      return py::reinterpret_steal<py::capsule>(cap);
    }
    auto* m = new DLManagedTensor{};
    m->dl_tensor = t;
    m->manager_ctx = ctx.release();
    m->deleter = delete_managed;
    PyObject* cap = PyCapsule_New(m, kCapsule, capsule_destructor);
    if (cap == nullptr) {
      delete_managed(m);
      throw py::error_already_set();
    }
    return py::reinterpret_steal<py::capsule>(cap);
  }

  py::tuple dlpack_device() const {
    return py::make_tuple(static_cast<int32_t>(dl_device_.device_type), dl_device_.device_id);
  }

  const std::vector<int64_t>& sizes() const { return sizes_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  int32_t dtype() const { return dtype_; }
  const std::string& device() const { return device_; }
  uintptr_t data_ptr() const { return reinterpret_cast<uintptr_t>(data_); }

 private:
  std::shared_ptr<void> storage_;
  std::vector<int64_t> sizes_, strides_;
  int32_t dtype_ = 0;
  std::string device_;
  DLDevice dl_device_{};
  void* data_ = nullptr;
};

}  // namespace

py::object device_tensor(AtenTensorHandle handle) {
  return py::cast(DeviceTensor(from_handle(handle)));
}

void bind_dlpack(py::module_& m) {
  m.def("borrow_dlpack", &borrow_capsule, py::arg("capsule"), py::arg("device"),
        "Borrows a DLPack capsule's tensor on `device` (no copy); returns a handle.");
  m.def("borrow_dlpack_input", &borrow_input, py::arg("capsule"), py::arg("device"),
        "borrow_dlpack, returning (handle, dtype code, sizes tuple, is packed row-major).");
  m.def("borrow_exchange_input", &borrow_exchange_input, py::arg("obj"), py::arg("device"),
        "borrow_dlpack_input's result for a tensor taken through its type's DLPack C "
        "exchange table (__dlpack_c_exchange_api__), ordered after the producer's current "
        "cuda stream; None where that does not apply.");
  m.def("packed", &packed, py::arg("handle"),
        "The handle if packed row-major, else a packed copy on its device (the handle deleted).");
  m.def("device_stream", [](const std::string& device) { return device_stream(device); },
        py::arg("device"),
        "The stream (DLPack's encoding) this thread's next work on `device` goes to; 0 for none.");
  py::class_<DeviceTensor>(m, "DeviceTensor",
                           "A model output left on its device, exported through DLPack.")
      .def(py::init<uintptr_t>(), py::arg("handle"),
           "Keeps the storage of `handle` (which the caller still deletes).")
      .def("__dlpack__", &DeviceTensor::dlpack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
           py::arg("copy") = py::none())
      .def("__dlpack_device__", &DeviceTensor::dlpack_device)
      .def_property_readonly("shape", [](const DeviceTensor& t) { return py::tuple(py::cast(t.sizes())); })
      .def_property_readonly("strides", [](const DeviceTensor& t) { return py::tuple(py::cast(t.strides())); })
      .def_property_readonly("dtype_code", &DeviceTensor::dtype)
      .def_property_readonly("device", &DeviceTensor::device)
      .def_property_readonly("data_ptr", &DeviceTensor::data_ptr);
}

}  // namespace aotishim::python
