// The process-wide random generator's seed (aotishim.manual_seed).
#include <pybind11/pybind11.h>

#include "aotishim/runtime.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace aotishim::python {

void bind_random(py::module_& m) {
  m.def("manual_seed", &manual_seed, py::arg("seed"));
  m.def("seed", &seed);
  m.def("initial_seed", &initial_seed);
}

}  // namespace aotishim::python
