#include "core/allocation_index.h"

#include <atomic>

#include "core/error.h"

namespace aotishim {

uint64_t next_buffer_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1);
}

Allocation AllocationIndex::insert(void* base, size_t nbytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = reinterpret_cast<uintptr_t>(base);
  auto next = by_base_.lower_bound(key);
  AOTISHIM_CHECK(next == by_base_.end() || next->first >= key + (nbytes ? nbytes : 1),
                 "allocation at ", base, " overlaps a live allocation");
  if (next != by_base_.begin()) {
    auto prev = std::prev(next);
    AOTISHIM_CHECK(prev->first + (prev->second.nbytes ? prev->second.nbytes : 1) <= key,
                   "allocation at ", base, " overlaps a live allocation");
  }
  Allocation a{base, nbytes, next_buffer_id()};
  by_base_.emplace(key, a);
  bytes_ += nbytes;
  return a;
}

Allocation AllocationIndex::erase(void* base) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_base_.find(reinterpret_cast<uintptr_t>(base));
  AOTISHIM_CHECK(it != by_base_.end(), "no live allocation starts at ", base);
  Allocation a = it->second;
  bytes_ -= a.nbytes;
  by_base_.erase(it);
  return a;
}

std::optional<Allocation> AllocationIndex::find(const void* ptr) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto key = reinterpret_cast<uintptr_t>(ptr);
  auto it = by_base_.upper_bound(key);
  if (it == by_base_.begin()) return std::nullopt;
  --it;
  const Allocation& a = it->second;
  // A zero-byte allocation still owns its base address.
  if (key == it->first || key < it->first + a.nbytes) return a;
  return std::nullopt;
}

size_t AllocationIndex::count() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return by_base_.size();
}

size_t AllocationIndex::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

}  // namespace aotishim
