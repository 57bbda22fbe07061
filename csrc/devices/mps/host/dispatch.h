// Host Metal compute dispatch with Metal's grid semantics: the threads of
// each threadgroup run as cooperative fibers on one host thread, so a
// threadgroup_barrier waits for the whole group and SIMD-group functions see
// the values of their 32 lanes; threadgroups run one after another. A
// barrier not every thread reaches, or lanes that part ways at SIMD-group
// functions, is an error naming the threads. After the dispatch every bound
// buffer's guard zones are checked, so a store outside a buffer is an error
// naming the kernel and the buffer.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "devices/mps/host/buffer.h"
#include "devices/mps/host/kernel_abi.h"
#include "devices/mps/host/msl_compile.h"

namespace aotishim::mps::host {

constexpr uint32_t kMaxThreadsPerThreadgroup = 1024;
constexpr size_t kMaxThreadgroupMemory = 32768;

struct Size3 {
  uint32_t x = 1, y = 1, z = 1;
};

struct BufferBinding {
  Buffer* buffer = nullptr;  // null: unbound
  size_t offset = 0;
};

struct ComputeArguments {
  std::array<BufferBinding, AOTISHIM_MSL_MAX_BUFFERS> buffers{};
  std::array<size_t, AOTISHIM_MSL_MAX_BUFFERS> threadgroup_memory{};  // bytes; 0: unset
};

// dispatchThreads: `grid` threads in groups of `group`; the groups at the far
// edges are smaller where the grid does not divide (non-uniform threadgroups).
void dispatch_threads(const Function& fn, const ComputeArguments& args, Size3 grid, Size3 group);
// dispatchThreadgroups: `groups` whole threadgroups of `group` threads.
void dispatch_threadgroups(const Function& fn, const ComputeArguments& args, Size3 groups,
                           Size3 group);

}  // namespace aotishim::mps::host
