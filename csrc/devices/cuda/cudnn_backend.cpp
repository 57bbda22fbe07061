#include "devices/cuda/cudnn_backend.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace aotishim {
namespace cuda {
namespace cudnn {

BackendDescriptor::BackendDescriptor(int type) : type_(type) {
  const Status st = api().backend_create(type, &desc_);
  AOTISHIM_CHECK(st == kStatusSuccess, "cudnnBackendCreateDescriptor(type ", type,
                 ") failed: ", status_text(st));
}

BackendDescriptor::~BackendDescriptor() {
  if (desc_ != nullptr) api().backend_destroy(desc_);
}

BackendDescriptor::BackendDescriptor(BackendDescriptor&& other) noexcept
    : type_(other.type_), desc_(std::exchange(other.desc_, nullptr)) {}

BackendDescriptor& BackendDescriptor::operator=(BackendDescriptor&& other) noexcept {
  if (this != &other) {
    if (desc_ != nullptr) api().backend_destroy(desc_);
    type_ = other.type_;
    desc_ = std::exchange(other.desc_, nullptr);
  }
  return *this;
}

BackendDescriptor& BackendDescriptor::set(int name, int attr_type, int64_t count,
                                          const void* values) {
  const Status st = api().backend_set(desc_, name, attr_type, count, values);
  AOTISHIM_CHECK(st == kStatusSuccess, "cudnnBackendSetAttribute(descriptor type ", type_,
                 ", attribute ", name, ") failed: ", status_text(st));
  return *this;
}

void BackendDescriptor::finalize() {
  const Status st = try_finalize();
  AOTISHIM_CHECK(st == kStatusSuccess, "cudnnBackendFinalize(descriptor type ", type_,
                 ") failed: ", status_text(st));
}

Status BackendDescriptor::try_finalize() { return api().backend_finalize(desc_); }

std::vector<int> BackendDescriptor::get_ints(int name, int attr_type, int64_t capacity) const {
  std::vector<int> values(static_cast<size_t>(capacity));
  int64_t count = 0;
  const Status st = api().backend_get(desc_, name, attr_type, capacity, &count, values.data());
  AOTISHIM_CHECK(st == kStatusSuccess, "cudnnBackendGetAttribute(descriptor type ", type_,
                 ", attribute ", name, ") failed: ", status_text(st));
  values.resize(static_cast<size_t>(std::min(count, capacity)));
  return values;
}

int64_t BackendDescriptor::get_int64(int name) const {
  int64_t value = 0, count = 0;
  const Status st = api().backend_get(desc_, name, kTypeInt64, 1, &count, &value);
  AOTISHIM_CHECK(st == kStatusSuccess && count == 1, "cudnnBackendGetAttribute(descriptor type ",
                 type_, ", attribute ", name, ") failed: ", status_text(st));
  return value;
}

}  // namespace cudnn
}  // namespace cuda
}  // namespace aotishim
