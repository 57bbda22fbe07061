// The op registry. An Op is one fallback operation after validation: a
// kernel slot per device type, plus an optional lowering onto other ops that
// serves every device without a kernel of its own. Devices register kernels
// from their own files (AOTISHIM_REGISTER_KERNEL), so adding a device or a
// kernel never touches the op's validation or the ABI entry points.
//
// Op objects are constant-initialized, so registrations made by static
// initializers in any library (the cuda plugin included) are safe whatever
// the initialization order; slots are atomic because a plugin may register
// while another thread runs ops.
#pragma once

#include <array>
#include <atomic>
#include <string>

#include "aotishim/export.h"
#include "core/device.h"
#include "core/device_type.h"
#include "core/error.h"

namespace aotishim {
namespace ops {

// Slot of a device type in an Op's kernel table.
constexpr int kDeviceSlots = 4;
constexpr int device_slot(DeviceType type) {
  return type == DeviceType::CPU    ? 0
         : type == DeviceType::CUDA ? 1
         : type == DeviceType::MPS  ? 2
                                    : 3;  // Sim
}

template <typename Signature>
class Op;

template <typename... Args>
class Op<void(Args...)> {
 public:
  using Kernel = void (*)(Args...);

  constexpr explicit Op(const char* name) : name_(name) {}
  Op(const Op&) = delete;
  Op& operator=(const Op&) = delete;

  const char* name() const { return name_; }

  void add_kernel(DeviceType type, Kernel kernel) {
    kernels_[device_slot(type)].store(kernel, std::memory_order_release);
  }
  void set_lowering(Kernel kernel) { lowering_.store(kernel, std::memory_order_release); }

  bool has_kernel(DeviceType type) const {
    return kernels_[device_slot(type)].load(std::memory_order_acquire) != nullptr ||
           lowering_.load(std::memory_order_acquire) != nullptr;
  }

  // The device's own kernel, else the lowering; a clear error without either.
  Kernel kernel_for(const Device& device) const {
    Kernel k = kernels_[device_slot(device.type())].load(std::memory_order_acquire);
    if (k == nullptr) k = lowering_.load(std::memory_order_acquire);
    AOTISHIM_CHECK(k != nullptr, "no ", name_, " kernel for ", device.name());
    return k;
  }

  template <typename... CallArgs>
  void run(const Device& device, CallArgs&&... args) const {
    kernel_for(device)(std::forward<CallArgs>(args)...);
  }

 private:
  const char* name_;
  std::array<std::atomic<Kernel>, kDeviceSlots> kernels_{};
  std::atomic<Kernel> lowering_{nullptr};
};

}  // namespace ops
}  // namespace aotishim

#define AOTISHIM_CONCAT_INNER(a, b) a##b
#define AOTISHIM_CONCAT(a, b) AOTISHIM_CONCAT_INNER(a, b)

// Registers `kernel` for `op` on device type `type` at load time, e.g.
//   AOTISHIM_REGISTER_KERNEL(ops::gemm, DeviceType::CPU, host_gemm);
#define AOTISHIM_REGISTER_KERNEL(op, type, kernel)                                      \
  [[maybe_unused]] static const bool AOTISHIM_CONCAT(aotishim_kernel_registered_, __LINE__) =           \
      ((op).add_kernel((type), (kernel)), true)

// Registers `kernel` as `op`'s lowering, used on every device without its own.
#define AOTISHIM_REGISTER_LOWERING(op, kernel)                                          \
  [[maybe_unused]] static const bool AOTISHIM_CONCAT(aotishim_lowering_registered_, __LINE__) =         \
      ((op).set_lowering(kernel), true)
