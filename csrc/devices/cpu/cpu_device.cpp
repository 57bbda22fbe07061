// The host device: synchronous, memory from the C heap (64-byte aligned for
// vectorised kernels), work runs immediately. Its op kernels register here.
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/tensor.h"
#include "core/device.h"
#include "devices/cpu/host_copy.h"
#include "devices/cpu/host_gemm.h"
#include "ops/gemm.h"

namespace aotishim {

namespace {

class CpuDevice final : public Device {
 public:
  CpuDevice() : Device(DeviceType::CPU, 0) {}

  void copy(const Tensor& dst, const Tensor& src) override { host_copy(dst, src); }
  void download(void* host_dst, const Tensor& src) override {
    std::memcpy(host_dst, src.data(), src.extent_bytes());
  }
  void upload(const Tensor& dst, const void* host_src) override {
    std::memcpy(dst.data(), host_src, dst.extent_bytes());
  }

 protected:
  void* raw_allocate(size_t nbytes) override {
    void* p = nullptr;
    if (posix_memalign(&p, 64, nbytes ? nbytes : 1) != 0) return nullptr;
    return p;
  }
  void raw_free(void* base, size_t) override { std::free(base); }
};

std::unique_ptr<Device> make_cpu(int32_t) { return std::make_unique<CpuDevice>(); }
int count_cpu() { return 1; }

const bool registered = (register_backend(DeviceType::CPU, make_cpu, count_cpu), true);
AOTISHIM_REGISTER_KERNEL(ops::gemm, DeviceType::CPU, host_gemm);

}  // namespace
}  // namespace aotishim
