// aotishim._core.sim: controls and test probes of the sim device.
#include <pybind11/stl.h>

#include "aotishim/sim.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace aotishim::python {

namespace {

const void* address(uintptr_t addr) { return reinterpret_cast<const void*>(addr); }

sim::Order order_from_name(const std::string& name) {
  if (name == "fifo") return sim::Order::Fifo;
  if (name == "reverse") return sim::Order::Reverse;
  if (name == "shuffle") return sim::Order::Shuffle;
  throw Error("sim: unknown scheduler order '" + name + "' (expected fifo, reverse or shuffle)");
}

const char* order_name(sim::Order order) {
  switch (order) {
    case sim::Order::Fifo: return "fifo";
    case sim::Order::Reverse: return "reverse";
    case sim::Order::Shuffle: return "shuffle";
  }
  return "?";
}

}  // namespace

void bind_sim(py::module_& m) {
  py::module_ s = m.def_submodule("sim", "Controls and probes of the sim device");

  s.def(
      "configure",
      [](const std::string& order, uint64_t seed, size_t flush_interval, bool checker) {
        sim::Config c;
        c.order = order_from_name(order);
        c.seed = seed;
        c.flush_interval = flush_interval;
        c.checker = checker;
        sim::configure(c);
      },
      py::arg("order"), py::arg("seed"), py::arg("flush_interval"), py::arg("checker"));
  s.def("config", [] {
    sim::Config c = sim::config();
    py::dict d;
    d["order"] = order_name(c.order);
    d["seed"] = c.seed;
    d["flush_interval"] = c.flush_interval;
    d["checker"] = c.checker;
    return d;
  });
  s.def("pending_commands", &sim::pending_commands);
  s.def("last_execution_order", &sim::last_execution_order);
  s.def("reset_counters", &sim::reset_counters);
  s.def("make_alias", [](uintptr_t handle) {
    return reinterpret_cast<uintptr_t>(sim::make_alias(reinterpret_cast<AtenTensorHandle>(handle)));
  });
  s.def("is_buffer_base", [](uintptr_t addr) { return sim::is_buffer_base(address(addr)); });
  s.def("has_pending_writes_exact_base",
        [](uintptr_t addr) { return sim::has_pending_writes_exact_base(address(addr)); });
  s.def("has_pending_writes", [](uintptr_t addr) { return sim::has_pending_writes(address(addr)); });
  s.def("host_read", [](uintptr_t addr, size_t nbytes) {
    std::vector<uint8_t> bytes = sim::host_read(address(addr), nbytes);
    return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  });
  s.def("raw_alloc", [](size_t nbytes) { return reinterpret_cast<uintptr_t>(sim::raw_alloc(nbytes)); });
  s.def("raw_free", [](uintptr_t addr) { sim::raw_free(reinterpret_cast<void*>(addr)); });
}

}  // namespace aotishim::python
