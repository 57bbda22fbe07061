// The allocation index: any interior pointer finds its allocation; nothing is
// keyed by exact interior addresses; overlaps and unknown bases are errors.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "aotishim/error.h"
#include "core/allocation_index.h"

using aotishim::AllocationIndex;

namespace {
void* at(std::vector<char>& arena, size_t offset) { return arena.data() + offset; }
}  // namespace

TEST_CASE("interior pointers map to their allocation by range") {
  std::vector<char> arena(1024);
  AllocationIndex index;
  auto a = index.insert(at(arena, 0), 100);
  auto b = index.insert(at(arena, 200), 50);
  CHECK(a.id != b.id);
  CHECK(index.find(at(arena, 0))->base == at(arena, 0));
  CHECK(index.find(at(arena, 99))->base == at(arena, 0));
  CHECK_FALSE(index.find(at(arena, 100)).has_value());  // one past the end
  CHECK_FALSE(index.find(at(arena, 150)).has_value());  // a gap
  CHECK(index.find(at(arena, 249))->id == b.id);
  CHECK(index.count() == 2);
  CHECK(index.bytes() == 150);
}

TEST_CASE("overlapping inserts and unknown erases are errors") {
  std::vector<char> arena(1024);
  AllocationIndex index;
  index.insert(at(arena, 100), 100);
  CHECK_THROWS_AS(index.insert(at(arena, 150), 10), aotishim::Error);  // inside
  CHECK_THROWS_AS(index.insert(at(arena, 50), 60), aotishim::Error);   // runs into it
  CHECK_NOTHROW(index.insert(at(arena, 200), 10));                     // adjacent is fine
  CHECK_THROWS_AS(index.erase(at(arena, 101)), aotishim::Error);       // interior, not a base
  CHECK_THROWS_AS(index.erase(at(arena, 0)), aotishim::Error);
  CHECK(index.count() == 2);
}

TEST_CASE("a freed and reused address carries no history") {
  std::vector<char> arena(256);
  AllocationIndex index;
  auto first = index.insert(at(arena, 0), 64);
  index.erase(at(arena, 0));
  CHECK_FALSE(index.find(at(arena, 10)).has_value());
  auto second = index.insert(at(arena, 0), 128);  // same base, new buffer object
  CHECK(second.id != first.id);
  CHECK(index.find(at(arena, 100))->nbytes == 128);
  CHECK(index.bytes() == 128);
}
