// One function per binding topic; module.cpp calls each.
#pragma once

#include <pybind11/pybind11.h>

#include "aotishim/c_shim.h"

namespace aotishim::python {

void bind_errors(pybind11::module_& m);  // ShimError
void bind_shim(pybind11::module_& m);    // tensors and the aoti_torch_* ABI
void bind_stats(pybind11::module_& m);   // devices, scopes, memory_stats
void bind_random(pybind11::module_& m);  // the random generator's seed
void bind_model(pybind11::module_& m);   // the AOTInductor model runner
void bind_sim(pybind11::module_& m);     // sim device controls
void bind_dlpack(pybind11::module_& m);  // DLPack exchange with other libraries
void bind_custom_ops(pybind11::module_& m);  // custom ops written in Python
void bind_host_metal(pybind11::module_& m);  // host Metal shaders (AOTISHIM_METAL_HOST builds)

// A DeviceTensor (bind_dlpack.cpp) holding `handle`'s storage: exported to
// other libraries through DLPack; the caller still deletes the handle.
pybind11::object device_tensor(AtenTensorHandle handle);

}  // namespace aotishim::python
