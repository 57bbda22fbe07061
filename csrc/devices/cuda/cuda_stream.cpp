#include "devices/cuda/cuda_stream.h"

#include <unordered_map>

#include "devices/cuda/cuda_check.h"
#include "devices/cuda/cuda_device.h"

namespace aotishim {
namespace cuda {

namespace {
std::unordered_map<int32_t, StreamOverride>& overrides() {
  thread_local std::unordered_map<int32_t, StreamOverride> map;
  return map;
}
}  // namespace

StreamOverride stream_override(int32_t device_index) {
  auto& map = overrides();
  auto it = map.find(device_index);
  return it == map.end() ? StreamOverride{} : it->second;
}

StreamOverride exchange_stream_override(int32_t device_index, StreamOverride next) {
  StreamOverride previous = stream_override(device_index);
  if (next.set) overrides()[device_index] = next;
  else overrides().erase(device_index);
  return previous;
}

cudaStream_t current_stream(int32_t device_index) {
  StreamOverride o = stream_override(device_index);
  return o.set ? o.stream : cuda_device(device_index).own_stream();
}

DeviceScope::DeviceScope(int32_t device_index) {
  AOTISHIM_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ == device_index) {
    previous_ = -1;  // nothing to restore
    return;
  }
  AOTISHIM_CUDA_CHECK(cudaSetDevice(device_index));
}

DeviceScope::~DeviceScope() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

}  // namespace cuda
}  // namespace aotishim
