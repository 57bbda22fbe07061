// Custom-op implementations written in Python (aotishim.register_custom_op).
// A model's run releases the GIL, and may run on any thread; each call
// takes the GIL and hands the op its tensors: cpu ones as read-only numpy
// arrays over the model's memory, cuda ones as DeviceTensors exported
// through DLPack (ordered after the model's stream by the protocol). What
// the Python function returns is copied into new tensors on the model's
// device: host arrays uploaded, device tensors borrowed through DLPack and
// copied on the device. Converting arguments and results to and from
// Python values is aotishim.custom_ops' work; this file moves them across.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>
#include <vector>

#include "aotishim/custom_ops.h"
#include "aotishim/runtime.h"
#include "python/bindings.h"
#include "python/handles.h"
#include "python/without_gil.h"

namespace py = pybind11;

namespace aotishim::python {

namespace {

// A Python object that may be released on any thread: its last owner takes
// the GIL to drop it (and leaves it alone once the interpreter is gone).
class PyHeld {
 public:
  explicit PyHeld(py::object object) : object_(std::move(object)) {}
  ~PyHeld() {
    if (!Py_IsInitialized() || interpreter_finalizing()) {
      (void)object_.release();  // nothing may touch Python any more
      return;
    }
    py::gil_scoped_acquire gil;
    object_ = py::object();
  }
  const py::object& get() const { return object_; }

 private:
  py::object object_;
};

const char* kind_name(OpArg::Kind kind) {
  switch (kind) {
    case OpArg::Kind::None: return "none";
    case OpArg::Kind::Tensor: return "tensor";
    case OpArg::Kind::TensorList: return "tensors";
    case OpArg::Kind::OptionalTensorList: return "optional_tensors";
    case OpArg::Kind::Int: return "int";
    case OpArg::Kind::IntList: return "ints";
    case OpArg::Kind::Float: return "float";
    case OpArg::Kind::FloatList: return "floats";
    case OpArg::Kind::Bool: return "bool";
    case OpArg::Kind::BoolList: return "bools";
    case OpArg::Kind::String: return "string";
    case OpArg::Kind::StringList: return "strings";
    case OpArg::Kind::ScalarType: return "scalar_type";
    case OpArg::Kind::MemoryFormat: return "memory_format";
    case OpArg::Kind::Layout: return "layout";
    case OpArg::Kind::Device: return "device";
  }
  return "?";
}

// A cpu tensor as a read-only numpy array over its memory, keeping it
// alive; a tensor of another device as a DeviceTensor, for DLPack consumers
// (torch.from_dlpack, cupy.from_dlpack) to read on their own stream.
py::object tensor_value(AtenTensorHandle handle, const py::object& numpy_dtype) {
  if (handle == nullptr) return py::none();
  const TensorInfo info = tensor_info(handle);
  if (info.device != "cpu") return device_tensor(handle);
  auto keep = new std::shared_ptr<void>(retain_storage(handle));
  py::capsule owner(keep, [](void* p) { delete static_cast<std::shared_ptr<void>*>(p); });
  const py::dtype dtype = py::dtype::from_args(numpy_dtype(info.dtype));
  std::vector<py::ssize_t> shape(info.sizes.begin(), info.sizes.end()), strides;
  for (int64_t s : info.strides) strides.push_back(static_cast<py::ssize_t>(s) * dtype.itemsize());
  py::array array(dtype, shape, strides, info.data_ptr, owner);
  array.attr("flags").attr("writeable") = false;
  return std::move(array);
}

// A packed copy, on `device`, of a result the implementation lent through
// DLPack (a borrowed handle, deleted here). The copy is waited for before
// the borrow ends: the lender may reuse that memory, on a stream of its own,
// as soon as its tensor is dropped.
AtenTensorHandle owned_copy(AtenTensorHandle borrowed, const std::string& device) {
  const TensorInfo info = tensor_info(borrowed);
  const AbiDevice where = parse_device_abi(device);
  AtenTensorHandle out = nullptr;
  AOTITorchError err = aoti_torch_empty_strided(static_cast<int64_t>(info.sizes.size()),
                                                info.sizes.data(), nullptr, info.dtype,
                                                where.type, where.index, &out);
  if (err == AOTI_TORCH_SUCCESS) err = aoti_torch_copy_(out, borrowed, 0);
  try {
    check(err);
    synchronize(device);
  } catch (...) {
    if (out != nullptr) aoti_torch_delete_tensor_object(out);
    aoti_torch_delete_tensor_object(borrowed);
    throw;
  }
  aoti_torch_delete_tensor_object(borrowed);
  return out;
}

py::object arg_value(const OpArg& a, const py::object& numpy_dtype) {
  switch (a.kind) {
    case OpArg::Kind::None: return py::none();
    case OpArg::Kind::Tensor: return tensor_value(a.tensor, numpy_dtype);
    case OpArg::Kind::TensorList:
    case OpArg::Kind::OptionalTensorList: {
      py::list items;
      for (AtenTensorHandle h : a.tensors) items.append(tensor_value(h, numpy_dtype));
      return std::move(items);
    }
    case OpArg::Kind::Int: return py::int_(a.int_value);
    case OpArg::Kind::IntList: return py::cast(a.ints);
    case OpArg::Kind::Float: return py::float_(a.float_value);
    case OpArg::Kind::FloatList: return py::cast(a.floats);
    case OpArg::Kind::Bool: return py::bool_(a.bool_value);
    case OpArg::Kind::BoolList: return py::cast(a.bools);
    case OpArg::Kind::String:
    case OpArg::Kind::MemoryFormat:
    case OpArg::Kind::Layout:
    case OpArg::Kind::Device: return py::str(a.string_value);
    case OpArg::Kind::StringList: return py::cast(a.strings);
    case OpArg::Kind::ScalarType: return py::int_(a.int_value);
  }
  return py::none();
}

const char* return_kind(OpReturn::Kind kind) {
  switch (kind) {
    case OpReturn::Kind::Tensor: return "tensor";
    case OpReturn::Kind::TensorList: return "tensors";
    case OpReturn::Kind::None: return "none";
  }
  return "?";
}

// One call: Python values in; out, per result, (host array, dtype code) or
// (borrowed device handle, dtype code), made into new tensors on the
// model's device. Runs with the GIL held.
std::vector<AtenTensorHandle> call_python(const py::object& bridge, const OpCall& call) {
  const py::object numpy_dtype = py::module_::import("aotishim._dtypes").attr("numpy_dtype");
  py::list args;
  for (const OpArg& a : call.args) {
    args.append(py::make_tuple(a.name, a.keyword, kind_name(a.kind), arg_value(a, numpy_dtype)));
  }
  py::list returns;
  for (const OpReturn& r : call.returns) returns.append(py::make_tuple(return_kind(r.kind), r.count));
  py::list outputs;
  for (const OpOutput& o : call.outputs) {
    outputs.append(o.known ? py::object(py::make_tuple(o.dtype, o.sizes)) : py::object(py::none()));
  }
  py::list results = bridge(call.op, args, returns, outputs, call.device);

  // Borrowed handles are ours from here: each is copied or deleted.
  std::vector<AtenTensorHandle> borrowed;
  for (py::handle item : results) {
    py::object payload = py::reinterpret_borrow<py::tuple>(item)[0];
    if (py::isinstance<py::int_>(payload)) borrowed.push_back(to_handle(payload.cast<uintptr_t>()));
  }
  std::vector<AtenTensorHandle> handles;
  size_t next_borrowed = 0;
  try {
    for (py::handle item : results) {
      auto pair = py::reinterpret_borrow<py::tuple>(item);
      if (py::isinstance<py::int_>(pair[0])) {
        AtenTensorHandle lent = borrowed[next_borrowed];
        borrowed[next_borrowed++] = nullptr;
        py::gil_scoped_release release;  // the copy is waited for
        handles.push_back(owned_copy(lent, call.device));
        continue;
      }
      py::array array = pair[0].cast<py::array>();
      const int32_t dtype = pair[1].cast<int32_t>();
      std::vector<int64_t> sizes(array.shape(), array.shape() + array.ndim());
      // The bridge hands over C-contiguous arrays: packed, empty strides.
      handles.push_back(copy_from_host(array.data(), sizes, {}, dtype, call.device));
    }
  } catch (...) {
    for (AtenTensorHandle h : handles) aoti_torch_delete_tensor_object(h);
    for (AtenTensorHandle h : borrowed) {
      if (h != nullptr) aoti_torch_delete_tensor_object(h);
    }
    throw;
  }
  return handles;
}

}  // namespace

void bind_custom_ops(py::module_& m) {
  m.def(
      "register_custom_op",
      [](const std::string& name, py::object bridge) {
        auto held = std::make_shared<PyHeld>(std::move(bridge));
        register_custom_op(name, [held](const OpCall& call) -> std::vector<AtenTensorHandle> {
          // Retaking the GIL while the interpreter finalizes would end this
          // thread in the middle of a model's run.
          if (!Py_IsInitialized() || interpreter_finalizing()) {
            throw Error("the Python interpreter is shutting down; a Python custom op cannot run");
          }
          py::gil_scoped_acquire gil;
          try {
            return call_python(held->get(), call);
          } catch (py::error_already_set& e) {
            // "TypeName: text" (pybind11's what() adds a traceback); the
            // exception itself is dropped here, with the GIL held.
            std::string message;
            try {
              message = py::str(e.type().attr("__name__")).cast<std::string>() + ": " +
                        py::str(e.value()).cast<std::string>();
            } catch (...) {
              message = e.what();
            }
            throw Error(message);
          }
        });
      },
      py::arg("name"), py::arg("bridge"),
      "Registers bridge(op, args, returns, outputs, device) -> [(array or borrowed device "
      "handle, dtype code), ...] for an op "
      "(aotishim.register_custom_op wraps the user's function).");
  m.def("unregister_custom_op", [](const std::string& name) { return unregister_custom_op(name); },
        py::arg("name"));
  m.def("registered_custom_ops", [] { return registered_custom_ops(); });
}

}  // namespace aotishim::python
