// Devices, scopes and memory statistics.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "aotishim/runtime.h"
#include "aotishim/shim_profile.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace aotishim::python {

namespace {
py::dict stats_dict() {
  MemoryStats s = memory_stats();
  py::list scopes, devs;
  for (const ScopeMemory& sc : s.scopes) {
    py::dict d;
    d["id"] = sc.id;
    d["name"] = sc.name;
    d["tensors"] = sc.tensors;
    d["owned_storages"] = sc.owned_storages;
    d["owned_bytes"] = sc.owned_bytes;
    d["borrowed_storages"] = sc.borrowed_storages;
    scopes.append(d);
  }
  for (const DeviceMemory& dm : s.devices) {
    py::dict d;
    d["device"] = dm.device;
    d["allocations"] = dm.allocations;
    d["bytes"] = dm.bytes;
    d["synchronizes"] = dm.synchronizes;
    d["hazards"] = dm.hazards;
    d["commands"] = dm.commands;
    devs.append(d);
  }
  py::dict d;
  d["live_tensors"] = s.live_tensors;
  d["released_handles"] = s.released_handles;
  d["scopes"] = scopes;
  d["devices"] = devs;
  return d;
}
}  // namespace

void bind_stats(py::module_& m) {
  m.def("devices", &devices);
  m.def("synchronize", [](const std::string& d) {
    py::gil_scoped_release release;
    synchronize(d);
  });
  m.def("memory_stats", &stats_dict);
  m.def("cpu_team_stats", [] {
    const CpuTeamStats s = cpu_team_stats();
    py::dict d;
    d["recent_cpu_share"] = s.recent_cpu_share;
    d["last_run_threads"] = s.last_run_threads;
    return d;
  });
  m.def("set_cpu_gemm_library", &set_cpu_gemm_library, py::arg("name"));
  m.def("cpu_gemm_library", &cpu_gemm_library);
  m.def(
      "shim_profile",
      [](bool reset) {
        py::list out;
        for (const ShimTiming& t : shim_profile(reset)) {
          out.append(py::make_tuple(t.name, t.calls, t.nanoseconds));
        }
        return out;
      },
      py::arg("reset") = false);
  m.def("shim_profiling", &shim_profiling);
  m.def("cleanup_memory", &cleanup_memory);
  m.def("create_scope", &create_scope);
  m.def("destroy_scope", &destroy_scope);
  m.def("current_scope", &current_scope_id);
  // Runs fn with `scope` current on this thread.
  m.def("in_scope", [](uint64_t scope, py::function fn) {
    ScopeGuard guard(scope);
    return fn();
  });
}

}  // namespace aotishim::python
