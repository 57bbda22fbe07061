#include "core/storage.h"

#include <atomic>
#include <utility>

#include "core/error.h"
#include "core/device.h"

namespace aotishim {

namespace {
uint64_t next_storage_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}
}  // namespace

Storage::Storage(Device& device, void* data, size_t nbytes, bool owned,
                 std::shared_ptr<void> keepalive)
    : device_(&device),
      data_(data),
      nbytes_(nbytes),
      owned_(owned),
      id_(next_storage_id()),
      keepalive_(std::move(keepalive)) {}

std::shared_ptr<Storage> Storage::allocate(Device& device, size_t nbytes) {
  void* data = device.allocate(nbytes);
  return std::shared_ptr<Storage>(new Storage(device, data, nbytes, true, nullptr));
}

std::shared_ptr<Storage> Storage::borrow(Device& device, void* data, size_t nbytes,
                                         std::shared_ptr<void> keepalive) {
  AOTISHIM_CHECK(data != nullptr || nbytes == 0, "cannot borrow a null pointer for ", nbytes,
                 " bytes");
  return std::shared_ptr<Storage>(new Storage(device, data, nbytes, false, std::move(keepalive)));
}

std::shared_ptr<Storage> Storage::adopt(Device& device, void* data, size_t nbytes,
                                        std::shared_ptr<void> release) {
  AOTISHIM_CHECK(data != nullptr && release != nullptr, "cannot adopt a null block");
  return std::shared_ptr<Storage>(new Storage(device, data, nbytes, true, std::move(release)));
}

void Storage::swap_memory(Storage& other) {
  AOTISHIM_CHECK(owned_ && other.owned_ && device_ == other.device_,
                 "swap_memory: both storages must own memory on one device");
  std::swap(data_, other.data_);
  std::swap(nbytes_, other.nbytes_);
  std::swap(keepalive_, other.keepalive_);  // an adopted block's release goes with its memory
}

Storage::~Storage() {
  if (!owned_) {
    if (keepalive_) {
      try {
        device_->release_after_queued_work(std::move(keepalive_));
      } catch (const std::exception& e) {
        log(LogLevel::Error, str("failed to hand borrowed memory back: ", e.what()));
      }
    }
    return;
  }
  try {
    if (keepalive_) {
      keepalive_.reset();  // adopted: its own release frees it
    } else {
      device_->free(data_);
    }
  } catch (const std::exception& e) {
    log(LogLevel::Error, str("failed to free storage memory: ", e.what()));
  }
}

}  // namespace aotishim
