// A refcounted span of device memory. It either owns a device allocation
// (freed when the last tensor using it dies) or borrows memory it must never
// free (a constants blob, a caller's array). Borrowed storage is not exclusive:
// two storages may borrow the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace aotishim {

class Device;

class Storage {
 public:
  static std::shared_ptr<Storage> allocate(Device& device, size_t nbytes);
  // keepalive (optional) is released when the storage dies, e.g. the Python
  // array whose memory is borrowed; on an asynchronous device, once the work
  // queued there by then has finished (Device::release_after_queued_work).
  static std::shared_ptr<Storage> borrow(Device& device, void* data, size_t nbytes,
                                         std::shared_ptr<void> keepalive = nullptr);

  // Memory allocated elsewhere and owned from now on (counted as owned):
  // freed by dropping `release` when the last tensor using it dies.
  static std::shared_ptr<Storage> adopt(Device& device, void* data, size_t nbytes,
                                        std::shared_ptr<void> release);

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  Device& device() const { return *device_; }
  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  bool owned() const { return owned_; }
  uint64_t id() const { return id_; }

  // Exchanges the memory of two owned storages of one device (their ids
  // stay): how a storage grows in place (torch's storage resize), so every
  // tensor sharing it sees the grown memory; `other` then frees the old.
  void swap_memory(Storage& other);

 private:
  Storage(Device& device, void* data, size_t nbytes, bool owned, std::shared_ptr<void> keepalive);

  Device* device_;
  void* data_;
  size_t nbytes_;
  bool owned_;
  uint64_t id_;
  std::shared_ptr<void> keepalive_;
};

}  // namespace aotishim
