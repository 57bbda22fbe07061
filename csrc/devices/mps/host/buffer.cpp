#include "devices/mps/host/buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace aotishim::mps::host {

Buffer::Buffer(size_t length, std::string label) : length_(length), label_(std::move(label)) {
  // The data starts 64-byte aligned (the guard is 64 bytes), as Metal's are.
  const size_t total = kGuardBytes + length + kGuardBytes;
  block_ = static_cast<unsigned char*>(std::aligned_alloc(64, (total + 63) / 64 * 64));
  if (block_ == nullptr) throw std::bad_alloc();
  data_ = block_ + kGuardBytes;
  std::memset(block_, kCanary, kGuardBytes);
  std::memset(data_, kPoison, length);
  std::memset(data_ + length, kCanary, kGuardBytes);
}

Buffer::~Buffer() { std::free(block_); }

std::string Buffer::check_guards() {
  auto changed = [](const unsigned char* p, size_t n, long first, std::string& out, const char* where) {
    long lo = -1, hi = -1;
    for (size_t i = 0; i < n; ++i) {
      if (p[i] != kCanary) {
        if (lo < 0) lo = static_cast<long>(i);
        hi = static_cast<long>(i);
      }
    }
    if (lo < 0) return;
    if (!out.empty()) out += "; ";
    out += "bytes [" + std::to_string(first + lo) + ", " + std::to_string(first + hi + 1) + ") " + where;
  };
  std::string out;
  changed(block_, kGuardBytes, -static_cast<long>(kGuardBytes), out, "before its start");
  changed(data_ + length_, kGuardBytes, static_cast<long>(length_), out, "past its end");
  if (!out.empty()) {
    std::memset(block_, kCanary, kGuardBytes);
    std::memset(data_ + length_, kCanary, kGuardBytes);
  }
  return out;
}

}  // namespace aotishim::mps::host
