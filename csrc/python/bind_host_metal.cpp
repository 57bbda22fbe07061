// aotishim._core.host_metal (built with AOTISHIM_METAL_HOST=ON only): the host
// Metal's shader runtime, for tests: compile an MSL library, look up kernels,
// dispatch them over guarded buffers with Metal's grid semantics. The
// parameter structs are the real ones (kernels/params.h), so a test fills
// exactly what the shaders read.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "devices/mps/host/buffer.h"
#include "devices/mps/host/dispatch.h"
#include "devices/mps/host/msl_compile.h"
#include "devices/mps/host/test_controls.h"
#include "devices/mps/kernels/params.h"
#include "devices/mps/kernels/sources.h"
#include "python/bindings.h"
#include "python/handles.h"
#include "python/without_gil.h"

namespace py = pybind11;

namespace aotishim::python {
namespace {

using mps::host::Buffer;
using mps::host::ComputeArguments;
using mps::host::Function;
using mps::host::Library;
using mps::host::Size3;

constexpr size_t kMaxSetBytes = 4096;  // Metal's limit for setBytes

Size3 size3(const std::vector<uint32_t>& v, const char* what) {
  if (v.empty() || v.size() > 3) throw py::value_error(std::string(what) + " takes 1 to 3 sizes");
  Size3 s;
  s.x = v[0];
  if (v.size() > 1) s.y = v[1];
  if (v.size() > 2) s.z = v[2];
  return s;
}

// Buffers given by index: a Buffer, (Buffer, offset) or bytes (setBytes,
// copied into a buffer of its own, guarded like any other).
struct Bound {
  ComputeArguments args;
  std::vector<std::shared_ptr<Buffer>> keep;
};

Bound bind_arguments(const py::dict& buffers, const py::dict& threadgroup_memory) {
  Bound b;
  for (auto item : buffers) {
    const int index = item.first.cast<int>();
    if (index < 0 || index >= AOTISHIM_MSL_MAX_BUFFERS) {
      throw py::value_error("buffer index " + std::to_string(index) + " is out of range (0..30)");
    }
    py::handle v = item.second;
    std::shared_ptr<Buffer> buffer;
    size_t offset = 0;
    if (py::isinstance<py::bytes>(v)) {
      const std::string data = v.cast<std::string>();
      if (data.size() > kMaxSetBytes || data.empty()) {
        throw py::value_error("setBytes takes 1 to 4096 bytes, got " + std::to_string(data.size()));
      }
      buffer = std::make_shared<Buffer>(data.size(), "bytes at index " + std::to_string(index));
      std::memcpy(buffer->contents(), data.data(), data.size());
    } else if (py::isinstance<py::tuple>(v)) {
      auto t = v.cast<py::tuple>();
      if (t.size() != 2) throw py::value_error("a buffer binding is (Buffer, offset)");
      buffer = t[0].cast<std::shared_ptr<Buffer>>();
      offset = t[1].cast<size_t>();
    } else {
      buffer = v.cast<std::shared_ptr<Buffer>>();
    }
    b.args.buffers[index] = {buffer.get(), offset};
    b.keep.push_back(buffer);
  }
  for (auto item : threadgroup_memory) {
    const int index = item.first.cast<int>();
    if (index < 0 || index >= AOTISHIM_MSL_MAX_BUFFERS) {
      throw py::value_error("threadgroup memory index " + std::to_string(index) + " is out of range (0..30)");
    }
    b.args.threadgroup_memory[index] = item.second.cast<size_t>();
  }
  return b;
}

template <typename S, typename T, size_t N>
void array_field(py::class_<S>& c, const char* name, T (S::*field)[N]) {
  c.def_property(
      name, [field](const S& s) { return std::vector<T>(std::begin(s.*field), std::end(s.*field)); },
      [field, name](S& s, const std::vector<T>& v) {
        if (v.size() > N) {
          throw py::value_error(std::string(name) + " holds " + std::to_string(N) + " values, got " +
                                std::to_string(v.size()));
        }
        std::fill(std::begin(s.*field), std::end(s.*field), T(0));
        std::copy(v.begin(), v.end(), std::begin(s.*field));
      });
}

template <typename S>
py::class_<S> params_class(py::module_& m, const char* name) {
  py::class_<S> c(m, name);
  c.def(py::init([]() { return S{}; }));
  c.def("to_bytes", [](const S& s) { return py::bytes(reinterpret_cast<const char*>(&s), sizeof(S)); });
  c.def_property_readonly_static("size", [](py::object) { return sizeof(S); });
  return c;
}

void bind_params(py::module_& m) {
  using mps::ConvParams;
  using mps::CopyParams;
  using mps::GemmParams;
  using mps::SdpaParams;
  auto copy = params_class<CopyParams>(m, "CopyParams");
  array_field(copy, "sizes", &CopyParams::sizes);
  array_field(copy, "dst_strides", &CopyParams::dst_strides);
  array_field(copy, "src_strides", &CopyParams::src_strides);
  copy.def_readwrite("ndim", &CopyParams::ndim)
      .def_readwrite("dst_dtype", &CopyParams::dst_dtype)
      .def_readwrite("src_dtype", &CopyParams::src_dtype);

  auto gemm = params_class<GemmParams>(m, "GemmParams");
  gemm.def_readwrite("batch", &GemmParams::batch)
      .def_readwrite("m", &GemmParams::m)
      .def_readwrite("n", &GemmParams::n)
      .def_readwrite("k", &GemmParams::k)
      .def_readwrite("alpha", &GemmParams::alpha)
      .def_readwrite("beta", &GemmParams::beta);
  array_field(gemm, "out_strides", &GemmParams::out_strides);
  array_field(gemm, "a_strides", &GemmParams::a_strides);
  array_field(gemm, "b_strides", &GemmParams::b_strides);

  auto conv = params_class<ConvParams>(m, "ConvParams");
  conv.def_readwrite("n", &ConvParams::n)
      .def_readwrite("cin", &ConvParams::cin)
      .def_readwrite("cout", &ConvParams::cout)
      .def_readwrite("groups", &ConvParams::groups)
      .def_readwrite("bias_stride", &ConvParams::bias_stride)
      .def_readwrite("transposed", &ConvParams::transposed)
      .def_readwrite("has_bias", &ConvParams::has_bias);
  array_field(conv, "in_size", &ConvParams::in_size);
  array_field(conv, "out_size", &ConvParams::out_size);
  array_field(conv, "k_size", &ConvParams::k_size);
  array_field(conv, "stride", &ConvParams::stride);
  array_field(conv, "pad", &ConvParams::pad);
  array_field(conv, "dil", &ConvParams::dil);
  array_field(conv, "in_strides", &ConvParams::in_strides);
  array_field(conv, "w_strides", &ConvParams::w_strides);
  array_field(conv, "out_strides", &ConvParams::out_strides);

  auto sdpa = params_class<SdpaParams>(m, "SdpaParams");
  sdpa.def_readwrite("b", &SdpaParams::b)
      .def_readwrite("h", &SdpaParams::h)
      .def_readwrite("hkv", &SdpaParams::hkv)
      .def_readwrite("l", &SdpaParams::l)
      .def_readwrite("s", &SdpaParams::s)
      .def_readwrite("e", &SdpaParams::e)
      .def_readwrite("ev", &SdpaParams::ev)
      .def_readwrite("scale", &SdpaParams::scale)
      .def_readwrite("causal", &SdpaParams::causal)
      .def_readwrite("has_mask", &SdpaParams::has_mask)
      .def_readwrite("mask_dtype", &SdpaParams::mask_dtype)
      .def_readwrite("has_probs", &SdpaParams::has_probs);
  array_field(sdpa, "q_strides", &SdpaParams::q_strides);
  array_field(sdpa, "k_strides", &SdpaParams::k_strides);
  array_field(sdpa, "v_strides", &SdpaParams::v_strides);
  array_field(sdpa, "out_strides", &SdpaParams::out_strides);
  array_field(sdpa, "mask_strides", &SdpaParams::mask_strides);
  array_field(sdpa, "probs_strides", &SdpaParams::probs_strides);
  array_field(sdpa, "lse_strides", &SdpaParams::lse_strides);
  m.attr("SDPA_ROWS") = AOTISHIM_SDPA_ROWS;
  m.attr("SDPA_LANES") = AOTISHIM_SDPA_LANES;
  m.attr("SDPA_PER_LANE") = AOTISHIM_SDPA_PER_LANE;
  m.attr("COPY_MAX_DIMS") = AOTISHIM_COPY_MAX_DIMS;
}

}  // namespace

void bind_host_metal(py::module_& parent) {
  py::module_ m = parent.def_submodule(
      "host_metal", "the host Metal shader runtime: MSL compiled as C++ and run on fibers (tests only)");
  m.def("builtin_source", &mps::library_source, "the mps device's kernel library source (MSL)");
  m.def("compiler", &mps::host::host_compiler);
  m.def("cache_dir", &mps::host::cache_dir);

  py::class_<Function, std::shared_ptr<Function>>(m, "Function")
      .def_property_readonly("name", [](const Function& f) { return f.name; })
      .def_property_readonly("params", [](const Function& f) {
        py::list out;
        for (const auto& p : f.params) {
          const char* kind = p.kind == AOTISHIM_MSL_PARAM_BUFFER        ? "buffer"
                             : p.kind == AOTISHIM_MSL_PARAM_THREADGROUP ? "threadgroup"
                                                                        : "position";
          out.append(py::make_tuple(kind, p.index, p.name, p.attribute));
        }
        return out;
      });

  py::class_<Library, std::shared_ptr<Library>>(m, "Library")
      .def(py::init([](const std::string& source) {
             return without_gil([&] { return std::make_shared<Library>(source); });
           }),
           py::arg("source"))
      .def("function",
           [](const Library& lib, const std::string& name) {
             return std::const_pointer_cast<Function>(lib.function(name));
           })
      .def_property_readonly("function_names", &Library::function_names)
      .def_property_readonly("from_cache", &Library::from_cache)
      .def_property_readonly("path", &Library::path);

  py::class_<Buffer, std::shared_ptr<Buffer>>(m, "Buffer")
      .def(py::init([](size_t length, const std::string& label) {
             if (length == 0) throw py::value_error("a Metal buffer has at least one byte");
             return std::make_shared<Buffer>(length, label);
           }),
           py::arg("length"), py::arg("label") = "buffer")
      .def_property_readonly("length", &Buffer::length)
      .def_property_readonly("label", &Buffer::label)
      .def("read", [](const Buffer& b) {
        return py::bytes(static_cast<const char*>(b.contents()), b.length());
      })
      .def("write", [](Buffer& b, py::buffer data, size_t offset) {
        py::buffer_info info = data.request();
        const size_t n = static_cast<size_t>(info.size) * static_cast<size_t>(info.itemsize);
        if (offset > b.length() || n > b.length() - offset) {
          throw py::value_error("writing " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                                " into a buffer of " + std::to_string(b.length()));
        }
        bool contiguous = true;
        py::ssize_t expect = info.itemsize;
        for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
          if (info.shape[d] > 1 && info.strides[d] != expect) contiguous = false;
          expect *= info.shape[d];
        }
        if (!contiguous) throw py::value_error("write takes a C-contiguous buffer");
        std::memcpy(static_cast<char*>(b.contents()) + offset, info.ptr, n);
      }, py::arg("data"), py::arg("offset") = 0);

  m.def(
      "dispatch_threads",
      [](const std::shared_ptr<Function>& fn, const std::vector<uint32_t>& grid,
         const std::vector<uint32_t>& group, const py::dict& buffers, const py::dict& threadgroup_memory) {
        Bound b = bind_arguments(buffers, threadgroup_memory);
        const Size3 g = size3(grid, "grid"), t = size3(group, "group");
        without_gil([&] { mps::host::dispatch_threads(*fn, b.args, g, t); });
      },
      py::arg("function"), py::arg("grid"), py::arg("group"), py::arg("buffers"),
      py::arg("threadgroup_memory") = py::dict());
  m.def(
      "dispatch_threadgroups",
      [](const std::shared_ptr<Function>& fn, const std::vector<uint32_t>& groups,
         const std::vector<uint32_t>& group, const py::dict& buffers, const py::dict& threadgroup_memory) {
        Bound b = bind_arguments(buffers, threadgroup_memory);
        const Size3 g = size3(groups, "groups"), t = size3(group, "group");
        without_gil([&] { mps::host::dispatch_threadgroups(*fn, b.args, g, t); });
      },
      py::arg("function"), py::arg("groups"), py::arg("group"), py::arg("buffers"),
      py::arg("threadgroup_memory") = py::dict());
  // ---- the mps device's host Metal: schedule, checker and probes ----
  m.def(
      "configure",
      [](const std::string& order, uint64_t seed, bool deferred, bool checker) {
        without_gil([&] { host_metal::configure(order, seed, deferred, checker); });
      },
      py::arg("order") = "fifo", py::arg("seed") = 0, py::arg("deferred") = false,
      py::arg("checker") = true,
      "how commands nothing orders are run (fifo, reverse, shuffle with seed), whether "
      "committed work waits for a host wait (deferred), and the hazard checker");
  m.def("settings", [] {
    const host_metal::Settings s = host_metal::settings();
    py::dict d;
    d["order"] = s.order;
    d["seed"] = s.seed;
    d["deferred"] = s.deferred;
    d["checker"] = s.checker;
    return d;
  });
  m.def("hazards", &host_metal::hazards, "hazards reported so far");
  m.def(
      "make_alias",
      [](uintptr_t tensor) { return from_handle(host_metal::make_alias(to_handle(tensor))); },
      py::arg("tensor"), "a tensor over the tensor's bytes through a second buffer object");
  m.def(
      "host_read",
      [](uintptr_t addr, size_t nbytes) {
        std::vector<uint8_t> bytes =
            without_gil([&] { return host_metal::host_read(reinterpret_cast<const void*>(addr), nbytes); });
        return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      },
      py::arg("addr"), py::arg("nbytes"), "a host read of mps memory that does not wait");
  m.def("is_buffer_base", [](uintptr_t addr) { return host_metal::is_buffer_base(reinterpret_cast<const void*>(addr)); });
  m.def(
      "has_pending_writes",
      [](uintptr_t addr, bool exact_base) {
        return host_metal::has_pending_writes(reinterpret_cast<const void*>(addr), exact_base);
      },
      py::arg("addr"), py::arg("exact_base") = false);
  m.attr("MAX_THREADS_PER_THREADGROUP") = mps::host::kMaxThreadsPerThreadgroup;
  bind_params(m);
}

}  // namespace aotishim::python
