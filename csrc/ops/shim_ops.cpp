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

namespace aotishim {
namespace {

// The aoti_torch_cpu_* names promise CPU tensors; anything else is the
// caller's mistake, reported with the device it found.
// Checked in argument order, so the message names the first offender.
void require_cpu(std::initializer_list<std::pair<const char*, const Tensor*>> args) {
  for (const auto& [name, t] : args) {
    AOTISHIM_CHECK(t->device().type() == DeviceType::CPU, name, " is on ", t->device().name(),
                   ", but this op runs on the cpu; use the device-generic entry point or a "
                   "cpu tensor");
  }
}

}  // namespace

// ---- device-generic C++ API (any device; throws aotishim::Error) ----
// Run through guard() so the message is also this thread's last error, as it
// is for the C shims.

void mm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  check(guard("mm_out", [&] {
    auto o = lookup(out, "out"), s = lookup(self, "self"), m = lookup(mat2, "mat2");
    mm_out(*o, *s, *m);
  }));
}

void addmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat1,
               AtenTensorHandle mat2, double beta, double alpha) {
  check(guard("addmm_out", [&] {
    auto o = lookup(out, "out"), s = lookup(self, "self");
    auto m1 = lookup(mat1, "mat1"), m2 = lookup(mat2, "mat2");
    addmm_out(*o, *s, *m1, *m2, beta, alpha);
  }));
}

void bmm_out(AtenTensorHandle out, AtenTensorHandle self, AtenTensorHandle mat2) {
  check(guard("bmm_out", [&] {
    auto o = lookup(out, "out"), s = lookup(self, "self"), m = lookup(mat2, "mat2");
    bmm_out(*o, *s, *m);
  }));
}

}  // namespace aotishim

// ---- the C shims ----

extern "C" {

AOTITorchError aoti_torch_cpu_mm_out(AtenTensorHandle out, AtenTensorHandle self,
                                     AtenTensorHandle mat2) {
  using namespace aotishim;
  return guard(__func__, [&] {
    auto o = lookup(out, "out"), s = lookup(self, "self"), m = lookup(mat2, "mat2");
    require_cpu({{"out", o.get()}, {"self", s.get()}, {"mat2", m.get()}});
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
    require_cpu({{"out", o.get()}, {"self", s.get()}, {"mat1", m1.get()}, {"mat2", m2.get()}});
    addmm_out(*o, *s, *m1, *m2, beta, alpha);
  });
}

AOTITorchError aoti_torch_cpu_bmm_out(AtenTensorHandle out, AtenTensorHandle self,
                                      AtenTensorHandle mat2) {
  using namespace aotishim;
  return guard(__func__, [&] {
    auto o = lookup(out, "out"), s = lookup(self, "self"), m = lookup(mat2, "mat2");
    require_cpu({{"out", o.get()}, {"self", s.get()}, {"mat2", m.get()}});
    bmm_out(*o, *s, *m);
  });
}

}  // extern "C"
