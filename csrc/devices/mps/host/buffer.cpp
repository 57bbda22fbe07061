#include "devices/mps/host/buffer.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace aotishim::mps::host {
namespace {

// Freed blocks by size, reused last-freed-first: a buffer of a size freed
// before gets the same address back, as Metal's heaps often give it, so
// code that keys anything by address meets reused addresses here too.
class BlockCache {
 public:
  static constexpr size_t kMaxCachedBytes = size_t(1) << 30;

  unsigned char* take(size_t total) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(total);
    if (it == free_.end() || it->second.empty()) return nullptr;
    unsigned char* block = it->second.back();
    it->second.pop_back();
    cached_ -= total;
    return block;
  }
  void give(unsigned char* block, size_t total) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_ + total <= kMaxCachedBytes) {
        free_[total].push_back(block);
        cached_ += total;
        return;
      }
    }
    std::free(block);
  }

 private:
  std::mutex mutex_;
  std::map<size_t, std::vector<unsigned char*>> free_;
  size_t cached_ = 0;
};

BlockCache& cache() {
  static BlockCache* c = new BlockCache();  // never destroyed: buffers outlive statics
  return *c;
}

size_t block_bytes(size_t length) { return (Buffer::kGuardBytes * 2 + length + 63) / 64 * 64; }

}  // namespace

Buffer::Buffer(size_t length, std::string label) : length_(length), label_(std::move(label)) {
  // The data starts 64-byte aligned (the guard is 64 bytes), as Metal's are.
  block_ = cache().take(block_bytes(length));
  if (block_ == nullptr) block_ = static_cast<unsigned char*>(std::aligned_alloc(64, block_bytes(length)));
  if (block_ == nullptr) throw std::bad_alloc();
  data_ = block_ + kGuardBytes;
  std::memset(block_, kCanary, kGuardBytes);
  std::memset(data_, kPoison, length);
  std::memset(data_ + length, kCanary, kGuardBytes);
}

Buffer::~Buffer() { cache().give(block_, block_bytes(length_)); }

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
