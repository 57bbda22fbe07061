// Python bindings of the model runner (aotishim._core.Model and helpers).
// aotishim.model wraps these with numpy dtype handling and input checks.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <tuple>

#include "aotishim/runner.h"
#include "aotishim/runtime.h"
#include "python/bindings.h"
#include "python/without_gil.h"

namespace py = pybind11;

namespace aotishim::python {

namespace {

// A numpy uint8 array that owns the output bytes (no extra copy).
py::array owning_bytes(std::vector<uint8_t>&& bytes) {
  if (bytes.empty()) return py::array_t<uint8_t>(0);
  auto* owned = new std::vector<uint8_t>(std::move(bytes));
  py::capsule free_when_done(owned, [](void* p) { delete static_cast<std::vector<uint8_t>*>(p); });
  return py::array_t<uint8_t>({static_cast<py::ssize_t>(owned->size())}, {1}, owned->data(),
                              free_when_done);
}

// (bytes, sizes, dtype code): one output in run_host's form.
py::tuple host_output(std::vector<uint8_t>&& bytes, const std::vector<int64_t>& sizes,
                      int32_t dtype) {
  py::tuple shape(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) shape[i] = py::int_(sizes[i]);
  return py::make_tuple(owning_bytes(std::move(bytes)), std::move(shape), dtype);
}

HostInput host_input(const py::array& array, int32_t dtype, bool writable) {
  HostInput in;
  in.data = array.data();
  in.dtype = dtype;
  in.writable = writable && array.writeable();  // read-only memory is never written
  const auto itemsize = static_cast<py::ssize_t>(array.itemsize());
  for (py::ssize_t d = 0; d < array.ndim(); ++d) {
    in.sizes.push_back(array.shape(d));
    const py::ssize_t stride = array.strides(d);
    if (stride < 0 || stride % itemsize != 0) {
      throw Error("input strides must be non-negative multiples of the item size");
    }
    in.strides.push_back(stride / itemsize);
  }
  return in;
}

}  // namespace

void bind_model(py::module_& m) {
  py::class_<Model>(m, "Model", "A loaded AOTInductor model (see aotishim.load).")
      .def_static(
          "load",
          [](const std::string& path, const std::string& weights, const std::string& device,
             bool cuda_graphs, bool mmap_weights) {
            LoadOptions options;
            options.cuda_graphs = cuda_graphs;
            options.mmap_weights = mmap_weights;
            return without_gil([&] { return Model::load(path, weights, device, options); });
          },
          py::arg("path"), py::arg("weights") = "", py::arg("device") = "cpu",
          py::arg("cuda_graphs") = false, py::arg("mmap_weights") = false)
      .def(
          "run_host",
          [](Model& self, const std::vector<std::tuple<py::array, int32_t, bool>>& arrays) {
            std::vector<HostInput> inputs;
            inputs.reserve(arrays.size());
            for (const auto& [array, dtype, writable] : arrays) {
              inputs.push_back(host_input(array, dtype, writable));
            }
            // The arrays stay referenced by `arrays` while the GIL is released.
            std::vector<HostOutput> outputs = without_gil([&] { return self.run_host(inputs); });
            py::list result;
            for (HostOutput& out : outputs) {
              if (!out.defined) {
                result.append(py::none());
                continue;
              }
              result.append(host_output(std::move(out.data), out.sizes, out.dtype));
            }
            return result;
          },
          py::arg("inputs"),
          "Runs on (array, dtype code, writable) triples (HostInput.writable: the model may write "
          "the array, which then sees its in-place writes); returns (bytes, sizes, dtype code) "
          "or None per output.")
      .def(
          "run_handles",
          [](Model& self, const std::vector<uintptr_t>& inputs) {
            std::vector<AtenTensorHandle> handles;
            for (uintptr_t h : inputs) handles.push_back(reinterpret_cast<AtenTensorHandle>(h));
            std::vector<AtenTensorHandle> outputs = without_gil([&] { return self.run(handles); });
            std::vector<uintptr_t> result;
            for (AtenTensorHandle h : outputs) result.push_back(reinterpret_cast<uintptr_t>(h));
            return result;
          },
          py::arg("inputs"),
          "Runs on tensor handles (consumed); returns one caller-owned handle per output.")
      .def_property_readonly("constant_fqns", &Model::constant_fqns)
      .def(
          "load_constants",
          [](Model& self, const std::map<std::string, uintptr_t>& constants,
             bool check_full_update, bool user_managed, bool use_inactive) {
            std::map<std::string, AtenTensorHandle> handles;
            for (const auto& [fqn, h] : constants) handles[fqn] = reinterpret_cast<AtenTensorHandle>(h);
            ConstantLoadOptions options;
            options.check_full_update = check_full_update;
            options.user_managed = user_managed;
            options.use_inactive = use_inactive;
            without_gil([&] { self.load_constants(handles, options); });
          },
          py::arg("constants"), py::arg("check_full_update"), py::arg("user_managed"),
          py::arg("use_inactive"), "Model::load_constants on handles by FQN (borrowed).")
      .def(
          "extract_constants_map",
          [](Model& self, bool use_inactive) {
            std::map<std::string, AtenTensorHandle> views =
                without_gil([&] { return self.extract_constants_map(use_inactive); });
            std::map<std::string, uintptr_t> out;
            for (const auto& [fqn, h] : views) out[fqn] = reinterpret_cast<uintptr_t>(h);
            return out;
          },
          py::arg("use_inactive"), "Caller-owned handles viewing the constants, by FQN.")
      .def("swap_constant_buffer",
           [](Model& self) { without_gil([&] { self.swap_constant_buffer(); }); })
      .def("free_inactive_constant_buffer",
           [](Model& self) { without_gil([&] { self.free_inactive_constant_buffer(); }); })
      .def("close",
           [](Model& self) { return without_gil([&] { return self.close(); }); })
      .def_property_readonly("closed", &Model::closed)
      .def_property_readonly("path", &Model::path)
      .def_property_readonly("weights_path", &Model::weights_path)
      .def_property_readonly("device", &Model::device)
      .def_property_readonly("input_names", &Model::input_names)
      .def_property_readonly("output_names", &Model::output_names)
      .def_property_readonly("constant_names", &Model::constant_names)
      .def_property_readonly("scope", &Model::scope)
      .def_property_readonly("constants_blob_size", &Model::constants_blob_size)
      .def_property_readonly("mapped_weights_bytes", &Model::mapped_weights_bytes)
      .def_property_readonly("copied_mapped_constants", &Model::copied_mapped_constants)
      .def_property_readonly("constant_data_ptrs",
                             [](const Model& self) {
                               std::vector<uintptr_t> out;
                               for (const void* p : self.constant_data_ptrs()) {
                                 out.push_back(reinterpret_cast<uintptr_t>(p));
                               }
                               return out;
                             })
      .def_property_readonly("records_graphs", &Model::records_graphs)
      // Waits for a run or close in progress: without the GIL.
      .def_property_readonly("graphs",
                             [](const Model& self) {
                               std::vector<GraphInfo> infos =
                                   without_gil([&] { return self.graphs(); });
                               py::list out;
                               for (const GraphInfo& g : infos) {
                                 py::dict d;
                                 d["inputs"] = g.inputs;
                                 d["recorded"] = g.recorded;
                                 d["reason"] = g.reason;
                                 d["replays"] = g.replays;
                                 out.append(d);
                               }
                               return out;
                             })
      // Waits for a close in progress: without the GIL (see Model::Impl::closed).
      .def_property_readonly("leaks", [](const Model& self) {
        return without_gil([&] { return self.leaks(); });
      });

  m.def(
      "download",
      [](uintptr_t handle) {
        AtenTensorHandle h = reinterpret_cast<AtenTensorHandle>(handle);
        const TensorInfo info = tensor_info(h);
        size_t numel = 1;
        for (int64_t s : info.sizes) numel *= static_cast<size_t>(s);
        std::vector<uint8_t> bytes(numel * aoti_torch_dtype_element_size(info.dtype));
        if (!bytes.empty()) without_gil([&] { copy_to_host(h, bytes.data()); });
        return host_output(std::move(bytes), info.sizes, info.dtype);
      },
      py::arg("handle"),
      "A packed host copy of a tensor in run_host's form: (bytes, sizes, dtype code).");
  m.def(
      "inspect_library",
      [](const std::string& path) {
        const LibraryReport report = inspect_library(path);
        py::dict out;
        out["is_model"] = report.is_model;
        out["needed_shims"] = report.needed_shims;
        out["missing_shims"] = report.missing_shims;
        return out;
      },
      py::arg("path"), "The shims a model library imports and which aotishim lacks (no loading).");
  m.def(
      "release_outputs",
      [](const std::vector<uintptr_t>& slots, py::object convert) {
        std::vector<AtenTensorHandle> handles;
        for (uintptr_t h : slots) handles.push_back(reinterpret_cast<AtenTensorHandle>(h));
        std::function<void(size_t, AtenTensorHandle)> fn;
        if (!convert.is_none()) {
          fn = [&](size_t i, AtenTensorHandle h) {
            convert(i, reinterpret_cast<uintptr_t>(h));
          };
        }
        release_outputs(handles.data(), handles.size(), fn);
      },
      py::arg("slots"), py::arg("convert") = py::none(),
      "The last-slot rule on a list of output handles: convert(slot, handle) for each slot "
      "in order, then delete each distinct handle once, also when a conversion raises.");
}

}  // namespace aotishim::python
