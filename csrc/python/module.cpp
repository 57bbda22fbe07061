// aotishim._core: the Python face of libaotishim. It uses only the public
// C ABI and C++ API, like any native runner.
#include "python/bindings.h"

PYBIND11_MODULE(_core, m) {
  m.doc() = "aotishim native core: AOTInductor C shim ABI runtime";
  aotishim::python::bind_errors(m);
  aotishim::python::bind_shim(m);
  aotishim::python::bind_stats(m);
  aotishim::python::bind_random(m);
  aotishim::python::bind_sim(m);
  aotishim::python::bind_model(m);
  aotishim::python::bind_dlpack(m);
  aotishim::python::bind_custom_ops(m);
#ifdef AOTISHIM_METAL_HOST
  aotishim::python::bind_host_metal(m);
#endif
}
