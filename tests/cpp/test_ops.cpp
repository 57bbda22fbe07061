// The op registry and the generated table: kernels per device, lowerings,
// the error for a device without either, and validation reached through the
// generated C entries.
#include <doctest/doctest.h>

#include <cstring>
#include <set>
#include <string>

#include "aotishim/c_shim.h"
#include "aotishim/error.h"
#include "core/device.h"
#include "ops/op.h"

using namespace aotishim;

namespace {

int ran_on_cpu = 0, ran_lowered = 0;
void cpu_kernel(int* x) { ++ran_on_cpu, *x += 1; }
void lowered(int* x) { ++ran_lowered, *x += 10; }

ops::Op<void(int*)> test_op("test_op");

AtenTensorHandle empty(std::initializer_list<int64_t> sizes, int32_t dtype) {
  std::vector<int64_t> s(sizes);
  AtenTensorHandle h = nullptr;
  REQUIRE(aoti_torch_empty_strided(static_cast<int64_t>(s.size()), s.data(), nullptr, dtype,
                                   aoti_torch_device_type_cpu(), 0, &h) == AOTI_TORCH_SUCCESS);
  return h;
}

}  // namespace

TEST_CASE("a kernel runs on its device; others get a clear error, then the lowering") {
  Device& cpu = get_device(DeviceType::CPU, 0);
  Device& sim = get_device(DeviceType::Sim, 0);
  test_op.add_kernel(DeviceType::CPU, cpu_kernel);
  int x = 0;
  test_op.run(cpu, &x);
  CHECK(x == 1);
  CHECK(ran_on_cpu == 1);
  CHECK_FALSE(test_op.has_kernel(DeviceType::Sim));
  try {
    test_op.run(sim, &x);
    FAIL("expected an error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) == "no test_op kernel for sim:0");
  }
  test_op.set_lowering(lowered);
  test_op.run(sim, &x);
  CHECK(x == 11);
  test_op.run(cpu, &x);  // the device's own kernel wins over the lowering
  CHECK(x == 12);
  CHECK(ran_lowered == 1);
}

TEST_CASE("the table lists every op once, with its devices and parameters") {
  size_t count = 0;
  const AotishimFallbackOp* table = aotishim_fallback_ops(&count);
  REQUIRE(count >= 3);
  std::set<std::string> names;
  for (size_t i = 0; i < count; ++i) {
    CHECK(names.insert(table[i].name).second);
    CHECK(table[i].params[0] == '(');
  }
  for (const char* name : {"mm_out", "addmm_out", "bmm_out"}) {
    REQUIRE(names.count(name) == 1);
  }
  CHECK(std::strcmp(table[0].name, "mm_out") == 0);
  CHECK(table[0].cpu == 1);
  CHECK(table[0].cuda == 1);
  CHECK(table[0].mps == 1);
}

TEST_CASE("validation runs behind the generated entries") {
  const int32_t f32 = aoti_torch_dtype_float32(), i32 = aoti_torch_dtype_int32();
  AtenTensorHandle out = empty({2, 2}, f32), a = empty({2, 3}, f32), b = empty({2, 2}, f32);
  CHECK(aotishim_mm_out(out, a, b) == AOTI_TORCH_FAILURE);
  CHECK(std::string(aotishim_last_error()).find("aotishim_mm_out: self [2, 3] and mat2 [2, 2] cannot be multiplied") == 0);
  CHECK(aoti_torch_cpu_mm_out(out, a, b) == AOTI_TORCH_FAILURE);
  CHECK(std::string(aotishim_last_error()).find("aoti_torch_cpu_mm_out: ") == 0);

  AtenTensorHandle wrong = empty({3, 2}, i32);
  CHECK(aoti_torch_cpu_mm_out(out, a, wrong) == AOTI_TORCH_FAILURE);
  CHECK(std::string(aotishim_last_error()).find("dtype mismatch") != std::string::npos);

  AtenTensorHandle good = empty({3, 2}, f32);
  CHECK(aoti_torch_cpu_mm_out(out, a, good) == AOTI_TORCH_SUCCESS);
  // The cuda entry promises cuda tensors: a cpu tensor is the caller's mistake.
  CHECK(aoti_torch_cuda_mm_out(out, a, good) == AOTI_TORCH_FAILURE);
  CHECK(std::string(aotishim_last_error()).find("out is on cpu, but this op runs on the cuda device") !=
        std::string::npos);
  for (AtenTensorHandle h : {out, a, b, wrong, good}) CHECK(aoti_torch_delete_tensor_object(h) == 0);
  // A deleted handle is an error code, never a crash.
  CHECK(aotishim_mm_out(out, a, good) == AOTI_TORCH_FAILURE);
  CHECK(std::string(aotishim_last_error()).find("already deleted") != std::string::npos);
}
