// The handle registry: a deleted handle's slot is given out again, never its
// value; foreign values are told apart from deleted handles; scopes list
// their tensors in creation order; creation, lookup and deletion from many
// threads at once lose and double-count nothing.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "aotishim/c_shim.h"
#include "aotishim/runtime.h"

using namespace aotishim;

namespace {

AtenTensorHandle empty(int64_t n) {
  AtenTensorHandle h = nullptr;
  REQUIRE(aoti_torch_empty_strided(1, &n, nullptr, aoti_torch_dtype_float32(),
                                   aoti_torch_device_type_cpu(), 0, &h) == AOTI_TORCH_SUCCESS);
  return h;
}

bool live(AtenTensorHandle h) {
  int64_t* sizes = nullptr;
  return aoti_torch_get_sizes(h, &sizes) == AOTI_TORCH_SUCCESS;
}

std::string error_of(AtenTensorHandle h) {
  int64_t dim = 0;
  REQUIRE(aoti_torch_get_dim(h, &dim) != AOTI_TORCH_SUCCESS);
  return aotishim_last_error();
}

}  // namespace

TEST_CASE("a deleted handle stays deleted while its slot serves newer tensors") {
  std::vector<AtenTensorHandle> gone;
  for (int i = 0; i < 100; ++i) {
    AtenTensorHandle h = empty(i + 1);
    for (AtenTensorHandle old : gone) CHECK(h != old);
    REQUIRE(aoti_torch_delete_tensor_object(h) == AOTI_TORCH_SUCCESS);
    gone.push_back(h);
  }
  AtenTensorHandle now = empty(7);
  for (AtenTensorHandle old : gone) {
    CHECK(!live(old));
    CHECK(error_of(old).find("already deleted") != std::string::npos);
  }
  int64_t* sizes = nullptr;
  REQUIRE(aoti_torch_get_sizes(now, &sizes) == AOTI_TORCH_SUCCESS);
  CHECK(sizes[0] == 7);
  CHECK(aoti_torch_delete_tensor_object(now) == AOTI_TORCH_SUCCESS);
  CHECK(aoti_torch_delete_tensor_object(now) != AOTI_TORCH_SUCCESS);
}

TEST_CASE("small integers and pointers are not handles") {
  int local = 0;
  for (uintptr_t v : {uintptr_t{1}, uintptr_t{0x1234}, uintptr_t{1} << 40,
                      reinterpret_cast<uintptr_t>(&local), reinterpret_cast<uintptr_t>(&empty)}) {
    CHECK(error_of(reinterpret_cast<AtenTensorHandle>(v)).find("not a tensor handle") !=
          std::string::npos);
  }
}

TEST_CASE("a scope describes its tensors in creation order, deleted ones left out") {
  const uint64_t scope = create_scope("registry-order");
  std::vector<AtenTensorHandle> hs;
  {
    ScopeGuard in(scope);
    for (int64_t n = 1; n <= 5; ++n) hs.push_back(empty(n));
  }
  REQUIRE(aoti_torch_delete_tensor_object(hs[1]) == AOTI_TORCH_SUCCESS);
  REQUIRE(aoti_torch_delete_tensor_object(hs[4]) == AOTI_TORCH_SUCCESS);
  const std::vector<std::string> described = destroy_scope(scope);
  REQUIRE(described.size() == 3);
  CHECK(described[0].find("float32[1]") == 0);
  CHECK(described[1].find("float32[3]") == 0);
  CHECK(described[2].find("float32[4]") == 0);
  for (AtenTensorHandle h : hs) CHECK(!live(h));
}

TEST_CASE("threads creating, reading and deleting at once lose nothing") {
  const MemoryStats before = memory_stats();
  constexpr int kThreads = 4, kRounds = 5000;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      std::vector<AtenTensorHandle> mine;
      for (int i = 0; i < kRounds; ++i) {
        const int64_t n = 1 + (i + t) % 9;
        AtenTensorHandle h = nullptr, view = nullptr;
        const int64_t one = 1;
        if (aoti_torch_empty_strided(1, &n, nullptr, aoti_torch_dtype_float32(),
                                     aoti_torch_device_type_cpu(), 0, &h) != AOTI_TORCH_SUCCESS ||
            aoti_torch__reinterpret_tensor(h, 1, &one, &one, n - 1, &view) != AOTI_TORCH_SUCCESS) {
          ++failures[t];
          continue;
        }
        int64_t* sizes = nullptr;
        if (aoti_torch_get_sizes(h, &sizes) != AOTI_TORCH_SUCCESS || sizes[0] != n) ++failures[t];
        aoti_torch_delete_tensor_object(h);  // the view keeps the storage
        mine.push_back(view);
        if (mine.size() > 16) {  // deleted out of creation order
          if (aoti_torch_delete_tensor_object(mine[i % 16]) != AOTI_TORCH_SUCCESS) ++failures[t];
          mine.erase(mine.begin() + i % 16);
        }
      }
      for (AtenTensorHandle h : mine)
        if (aoti_torch_delete_tensor_object(h) != AOTI_TORCH_SUCCESS) ++failures[t];
    });
  }
  for (std::thread& th : threads) th.join();
  for (int f : failures) CHECK(f == 0);
  const MemoryStats after = memory_stats();
  CHECK(after.live_tensors == before.live_tensors);
  // Each round deletes its tensor and its view exactly once.
  CHECK(after.released_handles - before.released_handles == uint64_t{2} * kThreads * kRounds);
}
