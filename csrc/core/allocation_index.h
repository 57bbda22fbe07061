// Live device allocations of one device, ordered by base address, so any
// interior pointer maps to its allocation in O(log n). Nothing here is keyed
// by an exact interior address, and borrowed memory is never registered, so a
// freed-and-reused address can never be mistaken for a live owner.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>

namespace aotishim {

struct Allocation {
  void* base = nullptr;
  size_t nbytes = 0;
  uint64_t id = 0;  // the buffer object's identity (unique per process)
};

class AllocationIndex {
 public:
  // Registers [base, base+nbytes); throws if it overlaps a live allocation.
  Allocation insert(void* base, size_t nbytes);
  // Removes the allocation starting exactly at base; throws if none.
  Allocation erase(void* base);
  // The allocation containing ptr (base <= ptr < base+nbytes), if any.
  std::optional<Allocation> find(const void* ptr) const;
  size_t count() const;
  size_t bytes() const;

 private:
  mutable std::mutex mutex_;
  std::map<uintptr_t, Allocation> by_base_;
  size_t bytes_ = 0;
};

uint64_t next_buffer_id();

}  // namespace aotishim
