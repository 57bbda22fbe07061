// The fallback-op entry points on tensor handles: the aoti_torch_cpu_* C shims
// that generated code calls, and the device-generic C++ API of runtime.h.
// Both resolve handles through the registry (stale handles are errors, never
// dereferenced) and leave the work to ops/gemm.cpp.
#include <initializer_list>
#include <memory>
#include <utility>

#include "aotishim/c_shim.h"
#include "aotishim/runtime.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "devices/device.h"
#include "ops/gemm.h"
#include "ops/require_device.h"

namespace aotishim {

// The aoti_torch_<device>_* names promise tensors of that device; anything
// else is the caller's mistake, reported with the device it found.
void require_device(DeviceType type,
                    std::initializer_list<std::pair<const char*, const Tensor*>> args) {
  for (const auto& [name, t] : args) {
    AOTISHIM_CHECK(t->device().type() == type, name, " is on ", t->device().name(),
                   ", but this op runs on the ", device_type_name(type),
                   " device; use the device-generic entry point or a ", device_type_name(type),
                   " tensor");
  }
}

// ---- device-generic C++ API (any device; throws aotishim::Error) ----
// Plain lookup-and-throw like the rest of runtime.h: the C shims that call
// these (aoti_torch_cuda_*) run them inside their own guard(), which records
// and logs an error once; a C++ or Python caller gets the exception.

void mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  auto o = lookup(out, "out"), s = lookup(self, "self"), m = lookup(mat2, "mat2");
  mm_out(*o, *s, *m);
}

void addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1,
               AtenTensorHandle mat2, double beta, double alpha) {
  auto o = lookup(out, "out"), s = lookup(self, "self");
  auto m1 = lookup(mat1, "mat1"), m2 = lookup(mat2, "mat2");
  addmm_out(*o, *s, *m1, *m2, beta, alpha);
}

void bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  auto o = lookup(out, "out"), s = lookup(self, "self"), m = lookup(mat2, "mat2");
  bmm_out(*o, *s, *m);
}

}  // namespace aotishim

// ---- the C shims ----

extern "C" {

AOTITorchError aoti_torch_cpu_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                     AtenTensorHandle mat2) {
  using namespace aotishim;
  return guard(__func__, [&] {
    auto o = lookup(out, "out"), s = lookup(self, "self"), m = lookup(mat2, "mat2");
    require_device(DeviceType::CPU, {{"out", o.get()}, {"self", s.get()}, {"mat2", m.get()}});
    mm_out(*o, *s, *m);
  });
}

AOTITorchError aoti_torch_cpu_addmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                        AtenTensorHandle mat1, AtenTensorHandle mat2,
                                        double beta, double alpha) {
  using namespace aotishim;
  return guard(__func__, [&] {
    auto o = lookup(out, "out"), s = lookup(self, "self");
    auto m1 = lookup(mat1, "mat1"), m2 = lookup(mat2, "mat2");
    require_device(DeviceType::CPU,
                   {{"out", o.get()}, {"self", s.get()}, {"mat1", m1.get()}, {"mat2", m2.get()}});
    addmm_out(*o, *s, *m1, *m2, beta, alpha);
  });
}

AOTITorchError aoti_torch_cpu_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                      AtenTensorHandle mat2) {
  using namespace aotishim;
  return guard(__func__, [&] {
    auto o = lookup(out, "out"), s = lookup(self, "self"), m = lookup(mat2, "mat2");
    require_device(DeviceType::CPU, {{"out", o.get()}, {"self", s.get()}, {"mat2", m.get()}});
    bmm_out(*o, *s, *m);
  });
}

}  // extern "C"
