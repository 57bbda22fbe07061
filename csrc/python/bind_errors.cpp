#include <pybind11/pybind11.h>

#include "aotishim/error.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace aotishim::python {

void bind_errors(py::module_& m) {
  // Every shim failure surfaces as ShimError carrying the shim's message.
  py::register_exception<aotishim::Error>(m, "ShimError", PyExc_RuntimeError);
}

}  // namespace aotishim::python
