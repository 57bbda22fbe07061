// The timer guard() puts around every C entry point (aotishim/shim_profile.h
// says what is recorded and when).
#pragma once

#include <chrono>
#include <cstdint>

#include "aotishim/shim_profile.h"

namespace aotishim {

// Adds the time from construction to destruction under `name` (a string
// that lives for the process: __func__ or a literal) when profiling is on.
class ShimTimer {
 public:
  explicit ShimTimer(const char* name) noexcept
      : name_(shim_profiling() ? name : nullptr),
        start_(name_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{}) {}
  ~ShimTimer() {
    if (name_ == nullptr) return;
    const auto elapsed = std::chrono::steady_clock::now() - start_;
    record_shim_time(name_, static_cast<uint64_t>(
                                std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count()));
  }
  ShimTimer(const ShimTimer&) = delete;
  ShimTimer& operator=(const ShimTimer&) = delete;

 private:
  const char* name_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace aotishim
