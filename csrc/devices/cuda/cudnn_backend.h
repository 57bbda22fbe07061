// One cuDNN backend-API descriptor (cudnn_api.h), owned: created in the
// constructor, destroyed with the object. Setting an attribute or finalizing
// throws a ShimError naming the descriptor, the attribute and cuDNN's status;
// try_finalize() reports instead, for descriptors cuDNN may refuse (an
// engine that does not support a problem).
#pragma once

#include <cstdint>
#include <vector>

#include "devices/cuda/cudnn_api.h"

namespace aotishim {
namespace cuda {
namespace cudnn {

class BackendDescriptor {
 public:
  BackendDescriptor() = default;  // empty: holds nothing
  explicit BackendDescriptor(int type);
  ~BackendDescriptor();
  BackendDescriptor(BackendDescriptor&& other) noexcept;
  BackendDescriptor& operator=(BackendDescriptor&& other) noexcept;
  BackendDescriptor(const BackendDescriptor&) = delete;
  BackendDescriptor& operator=(const BackendDescriptor&) = delete;

  BackendDesc get() const { return desc_; }
  int type() const { return type_; }

  BackendDescriptor& set(int name, int attr_type, int64_t count, const void* values);
  BackendDescriptor& set_int64(int name, int64_t value) { return set(name, kTypeInt64, 1, &value); }
  BackendDescriptor& set_int64s(int name, const std::vector<int64_t>& values) {
    return set(name, kTypeInt64, static_cast<int64_t>(values.size()), values.data());
  }
  BackendDescriptor& set_descriptor(int name, const BackendDescriptor& d) {
    BackendDesc raw = d.get();
    return set(name, kTypeBackendDescriptor, 1, &raw);
  }
  BackendDescriptor& set_handle(int name, Handle h) { return set(name, kTypeHandle, 1, &h); }

  void finalize();
  Status try_finalize();

  // Up to `capacity` int-sized values of attribute `name` (notes, enums).
  std::vector<int> get_ints(int name, int attr_type, int64_t capacity) const;
  int64_t get_int64(int name) const;

 private:
  int type_ = -1;
  BackendDesc desc_ = nullptr;
};

}  // namespace cudnn
}  // namespace cuda
}  // namespace aotishim
