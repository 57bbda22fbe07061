// The current stream of each cuda device, per thread: a stream guard (the
// model's stream while it runs) overrides the device's own stream. All of
// the backend's work and stream-ordered allocation goes on the current
// stream, so it is ordered with the kernels the model launches itself.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace aotishim {
namespace cuda {

struct StreamOverride {
  bool set = false;
  cudaStream_t stream = nullptr;
};

// The override for device_index on this thread (set = false when none).
StreamOverride stream_override(int32_t device_index);
// Replaces the override and returns the previous one (for guards to restore).
StreamOverride exchange_stream_override(int32_t device_index, StreamOverride next);

// The stream this thread's work on device_index goes to.
cudaStream_t current_stream(int32_t device_index);

// Makes device_index the calling thread's CUDA device for a scope.
class DeviceScope {
 public:
  explicit DeviceScope(int32_t device_index);
  ~DeviceScope();
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace cuda
}  // namespace aotishim
