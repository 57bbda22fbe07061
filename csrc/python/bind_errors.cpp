#include <pybind11/pybind11.h>

#include "aotishim/error.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace aotishim::python {

void bind_errors(py::module_& m) {
  // Every shim failure surfaces as ShimError carrying the shim's message.
  auto shim_error = py::register_exception<aotishim::Error>(m, "ShimError", PyExc_RuntimeError);
  // Registered after its base, so pybind11 tries it first.
  py::register_exception<aotishim::InputError>(m, "ShimInputError", shim_error.ptr());
}

}  // namespace aotishim::python
