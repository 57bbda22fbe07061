// A host Metal buffer: an exact-size host allocation with a guard zone of
// canary bytes on each side, so a shader store outside it is found (real Metal
// writes past a buffer silently). Fresh memory is poisoned with all-one bytes
// (NaN in every floating dtype), so a read of memory nobody wrote shows.
// Freed memory is reused last-freed-first for the same size (buffer.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace aotishim::mps::host {

class Buffer {
 public:
  static constexpr size_t kGuardBytes = 64;
  static constexpr unsigned char kPoison = 0xff;
  static constexpr unsigned char kCanary = 0xa5;

  Buffer(size_t length, std::string label);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* contents() { return data_; }
  const void* contents() const { return data_; }
  size_t length() const { return length_; }
  const std::string& label() const { return label_; }

  // Empty when both guard zones are intact; else what changed (offsets
  // relative to the buffer's start). Restores the guards.
  std::string check_guards();

 private:
  unsigned char* block_ = nullptr;  // guard | data | guard
  unsigned char* data_ = nullptr;
  size_t length_ = 0;
  std::string label_;
};

}  // namespace aotishim::mps::host
