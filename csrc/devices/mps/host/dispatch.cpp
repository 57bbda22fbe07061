#include "devices/mps/host/dispatch.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#if __has_include(<ucontext.h>) && defined(__linux__)
#define AOTISHIM_MSL_FIBERS 1
#include <sys/mman.h>
#include <ucontext.h>
#endif

// Under AddressSanitizer every switch between the scheduler and a fiber is
// announced, so ASan knows which stack is current (else it takes a fiber's
// frames for the thread stack's and reports false stack errors). ASan's
// swapcontext interceptor clears the shadow of the stack switched to, so a
// group abandoned by an error leaves no stale redzones for the next.
#if defined(__SANITIZE_ADDRESS__)
#define AOTISHIM_ASAN_FIBERS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AOTISHIM_ASAN_FIBERS 1
#endif
#endif
#if defined(AOTISHIM_MSL_FIBERS) && defined(AOTISHIM_ASAN_FIBERS)
#include <sanitizer/common_interface_defs.h>
#endif

namespace aotishim::mps::host {
namespace {

[[noreturn]] void fail(const std::string& message) { throw std::runtime_error("host Metal: " + message); }

struct Grid {
  Size3 group;          // threads per full group
  Size3 groups;         // threadgroups per grid
  Size3 threads;        // threads per grid
  bool uniform = true;  // every group full
};

void check_arguments(const Function& fn, const ComputeArguments& args, Size3 group) {
  const uint64_t threads = uint64_t(group.x) * group.y * group.z;
  if (group.x == 0 || group.y == 0 || group.z == 0 || threads > kMaxThreadsPerThreadgroup) {
    fail("kernel '" + fn.name + "': a threadgroup of " + std::to_string(group.x) + " x " +
         std::to_string(group.y) + " x " + std::to_string(group.z) +
         " threads; Metal allows 1 to " + std::to_string(kMaxThreadsPerThreadgroup) +
         " threads per threadgroup");
  }
  size_t memory = 0;
  for (size_t bytes : args.threadgroup_memory) memory += bytes;
  if (memory > kMaxThreadgroupMemory) {
    fail("kernel '" + fn.name + "': " + std::to_string(memory) + " bytes of threadgroup memory; at most " +
         std::to_string(kMaxThreadgroupMemory));
  }
  for (const aotishim_msl_param& p : fn.params) {
    if (p.kind == AOTISHIM_MSL_PARAM_BUFFER && args.buffers[p.index].buffer == nullptr) {
      fail("kernel '" + fn.name + "': buffer index " + std::to_string(p.index) + " (parameter '" +
           p.name + "') is not bound");
    }
    if (p.kind == AOTISHIM_MSL_PARAM_BUFFER &&
        args.buffers[p.index].offset > args.buffers[p.index].buffer->length()) {
      fail("kernel '" + fn.name + "': buffer index " + std::to_string(p.index) + " bound at offset " +
           std::to_string(args.buffers[p.index].offset) + " past the end of '" +
           args.buffers[p.index].buffer->label() + "' (" +
           std::to_string(args.buffers[p.index].buffer->length()) + " bytes)");
    }
    if (p.kind == AOTISHIM_MSL_PARAM_THREADGROUP && args.threadgroup_memory[p.index] == 0) {
      fail("kernel '" + fn.name + "': threadgroup memory index " + std::to_string(p.index) +
           " (parameter '" + p.name + "') has no length set");
    }
  }
}

#ifdef AOTISHIM_MSL_FIBERS

std::string size3(const uint32_t (&v)[3]) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ")";
}

constexpr size_t kStackBytes = 256 * 1024;

// Fiber stacks, kept for the next dispatch; a guard page below each turns
// an overflow into a fault rather than a corruption.
struct StackPool {
  std::vector<char*> stacks;
  size_t page = 4096;
  char* get(size_t i) {
    while (stacks.size() <= i) {
      void* p = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) fail("cannot allocate a fiber stack");
      mprotect(p, page, PROT_NONE);
      stacks.push_back(static_cast<char*>(p) + page);
    }
    return stacks[i];
  }
  ~StackPool() {
    for (char* s : stacks) munmap(s - page, kStackBytes + page);
  }
};

enum class State { Ready, AtBarrier, AtSimd, Done };

struct Group;

struct Fiber {
  ucontext_t context;
  aotishim_msl_thread thread;
  State state = State::Ready;
  uint32_t op = 0;
  uint32_t size = 0;
  unsigned char value[AOTISHIM_MSL_SIMD_VALUE_BYTES];
  void* lanes_out = nullptr;
  uint32_t* active_out = nullptr;
  Group* group = nullptr;
  aotishim_msl_entry entry = nullptr;
  void* fake_stack = nullptr;  // ASan's, while switched away
};

struct Group {
  ucontext_t scheduler;
  std::vector<Fiber> fibers;
  const void* scheduler_stack = nullptr;  // ASan's view of the thread's stack
  size_t scheduler_stack_size = 0;
  void* scheduler_fake_stack = nullptr;
};

// Scheduler to fiber, back when the fiber yields.
void enter_fiber(Group& g, Fiber& f) {
#ifdef AOTISHIM_ASAN_FIBERS
  __sanitizer_start_switch_fiber(&g.scheduler_fake_stack, f.context.uc_stack.ss_sp, f.context.uc_stack.ss_size);
#endif
  swapcontext(&g.scheduler, &f.context);
#ifdef AOTISHIM_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(g.scheduler_fake_stack, nullptr, nullptr);
#endif
}

// Fiber to scheduler; `done`: the fiber never resumes.
void leave_fiber(Fiber& f, bool done) {
#ifdef AOTISHIM_ASAN_FIBERS
  __sanitizer_start_switch_fiber(done ? nullptr : &f.fake_stack, f.group->scheduler_stack,
                                 f.group->scheduler_stack_size);
#endif
  swapcontext(&f.context, &f.group->scheduler);
#ifdef AOTISHIM_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(f.fake_stack, nullptr, nullptr);
#endif
  (void)done;
}

void runtime_barrier(const aotishim_msl_thread* self) {
  Fiber* f = static_cast<Fiber*>(self->fiber);
  f->state = State::AtBarrier;
  leave_fiber(*f, false);
}

void runtime_simd_exchange(const aotishim_msl_thread* self, uint32_t op, const void* value,
                           uint32_t size, void* lanes, uint32_t* active) {
  Fiber* f = static_cast<Fiber*>(self->fiber);
  f->state = State::AtSimd;
  f->op = op;
  f->size = size;
  std::memcpy(f->value, value, size);
  f->lanes_out = lanes;
  f->active_out = active;
  leave_fiber(*f, false);
}

const aotishim_msl_runtime kRuntime = {runtime_barrier, runtime_simd_exchange};

void fiber_main(unsigned int lo, unsigned int hi) {
  Fiber* f = reinterpret_cast<Fiber*>((static_cast<uintptr_t>(hi) << 32) | lo);
#ifdef AOTISHIM_ASAN_FIBERS
  __sanitizer_finish_switch_fiber(nullptr, &f->group->scheduler_stack, &f->group->scheduler_stack_size);
#endif
  f->entry(&f->thread);
  f->state = State::Done;
  leave_fiber(*f, true);
}

const char* op_name(uint32_t op) {
  static const char* const names[] = {"?",
                                      "simd_sum",
                                      "simd_product",
                                      "simd_max",
                                      "simd_min",
                                      "simd_and",
                                      "simd_or",
                                      "simd_xor",
                                      "simd_shuffle",
                                      "simd_shuffle_xor",
                                      "simd_shuffle_down",
                                      "simd_shuffle_up",
                                      "simd_broadcast",
                                      "simd_prefix_inclusive_sum",
                                      "simd_prefix_exclusive_sum",
                                      "simd_all",
                                      "simd_any",
                                      "simd_ballot",
                                      "simdgroup_barrier",
                                      "simd_is_first"};
  return op < sizeof(names) / sizeof(names[0]) ? names[op] : "a SIMD-group function";
}

class Runner {
 public:
  Runner(const Function& fn, const ComputeArguments& args, const Grid& grid)
      : fn_(fn), grid_(grid) {
    for (size_t i = 0; i < args.buffers.size(); ++i) {
      const BufferBinding& b = args.buffers[i];
      buffers_[i] = b.buffer == nullptr ? nullptr : static_cast<char*>(b.buffer->contents()) + b.offset;
    }
    for (size_t i = 0; i < args.threadgroup_memory.size(); ++i) {
      if (args.threadgroup_memory[i] == 0) continue;
      threadgroup_buffers_[i] = std::make_unique<Buffer>(args.threadgroup_memory[i],
                                                         "threadgroup memory " + std::to_string(i));
      threadgroup_memory_[i] = threadgroup_buffers_[i]->contents();
    }
  }

  void run() {
    for (uint32_t gz = 0; gz < grid_.groups.z; ++gz) {
      for (uint32_t gy = 0; gy < grid_.groups.y; ++gy) {
        for (uint32_t gx = 0; gx < grid_.groups.x; ++gx) run_group(gx, gy, gz);
      }
    }
  }

  // Threadgroup memory stores outside their length.
  void check_threadgroup_memory() {
    for (size_t i = 0; i < threadgroup_buffers_.size(); ++i) {
      if (!threadgroup_buffers_[i]) continue;
      const std::string what = threadgroup_buffers_[i]->check_guards();
      if (!what.empty()) {
        fail("kernel '" + fn_.name + "' wrote outside threadgroup memory " + std::to_string(i) + " (" +
             std::to_string(threadgroup_buffers_[i]->length()) + " bytes): " + what);
      }
    }
  }

 private:
  void run_group(uint32_t gx, uint32_t gy, uint32_t gz) {
    const uint32_t pos[3] = {gx, gy, gz};
    const uint32_t full[3] = {grid_.group.x, grid_.group.y, grid_.group.z};
    const uint32_t total[3] = {grid_.threads.x, grid_.threads.y, grid_.threads.z};
    uint32_t size[3];
    for (int d = 0; d < 3; ++d) {
      size[d] = full[d];
      if (!grid_.uniform) size[d] = std::min(full[d], total[d] - pos[d] * full[d]);
    }
    const uint32_t n = size[0] * size[1] * size[2];
    const uint32_t simdgroups = (n + AOTISHIM_MSL_SIMD_WIDTH - 1) / AOTISHIM_MSL_SIMD_WIDTH;
    for (auto& tg : threadgroup_buffers_) {
      if (tg) std::memset(tg->contents(), Buffer::kPoison, tg->length());
    }
    group_.fibers.assign(n, Fiber{});
    for (uint32_t i = 0; i < n; ++i) {
      Fiber& f = group_.fibers[i];
      f.group = &group_;
      f.entry = fn_.entry;
      aotishim_msl_thread& t = f.thread;
      t.runtime = &kRuntime;
      t.fiber = &f;
      t.buffers = buffers_.data();
      t.threadgroup_memory = threadgroup_memory_.data();
      const uint32_t local[3] = {i % size[0], (i / size[0]) % size[1], i / (size[0] * size[1])};
      for (int d = 0; d < 3; ++d) {
        t.thread_position_in_threadgroup[d] = local[d];
        t.threadgroup_position_in_grid[d] = pos[d];
        t.thread_position_in_grid[d] = pos[d] * full[d] + local[d];
        t.threads_per_threadgroup[d] = size[d];
        t.dispatch_threads_per_threadgroup[d] = full[d];
        t.threadgroups_per_grid[d] = (&grid_.groups.x)[d];
        t.threads_per_grid[d] = total[d];
      }
      t.thread_index_in_threadgroup = i;
      t.simdgroup_index_in_threadgroup = i / AOTISHIM_MSL_SIMD_WIDTH;
      t.thread_index_in_simdgroup = i % AOTISHIM_MSL_SIMD_WIDTH;
      t.threads_per_simdgroup = AOTISHIM_MSL_SIMD_WIDTH;
      t.simdgroups_per_threadgroup = simdgroups;
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = stacks_.get(i);
      f.context.uc_stack.ss_size = kStackBytes;
      f.context.uc_link = nullptr;
      const uintptr_t self = reinterpret_cast<uintptr_t>(&f);
      makecontext(&f.context, reinterpret_cast<void (*)()>(fiber_main), 2,
                  static_cast<unsigned int>(self & 0xffffffffu), static_cast<unsigned int>(self >> 32));
    }
    for (;;) {
      for (Fiber& f : group_.fibers) {
        while (f.state == State::Ready) enter_fiber(group_, f);
      }
      bool all_done = true;
      for (const Fiber& f : group_.fibers) all_done = all_done && f.state == State::Done;
      if (all_done) return;
      bool progressed = false;
      for (uint32_t s = 0; s < simdgroups; ++s) progressed = resolve_simdgroup(s, n) || progressed;
      if (progressed) continue;
      if (release_barrier(pos)) continue;
      deadlock(pos);
    }
  }

  // Completes a SIMD-group exchange every active lane has reached.
  bool resolve_simdgroup(uint32_t s, uint32_t n) {
    const uint32_t first = s * AOTISHIM_MSL_SIMD_WIDTH;
    const uint32_t last = std::min(n, first + AOTISHIM_MSL_SIMD_WIDTH);
    uint32_t active = 0;
    const Fiber* lead = nullptr;
    for (uint32_t i = first; i < last; ++i) {
      const Fiber& f = group_.fibers[i];
      if (f.state == State::Done) continue;
      if (f.state != State::AtSimd) return false;
      if (lead == nullptr) lead = &f;
      if (f.op != lead->op || f.size != lead->size) {
        fail("kernel '" + fn_.name + "': in threadgroup " + size3(f.thread.threadgroup_position_in_grid) +
             ", SIMD group " + std::to_string(s) + " diverged: lane " +
             std::to_string(lead->thread.thread_index_in_simdgroup) + " called " + op_name(lead->op) +
             " while lane " + std::to_string(f.thread.thread_index_in_simdgroup) + " called " +
             op_name(f.op));
      }
      active |= 1u << (i - first);
    }
    if (lead == nullptr) return false;
    unsigned char lanes[AOTISHIM_MSL_SIMD_WIDTH][AOTISHIM_MSL_SIMD_VALUE_BYTES];
    std::memset(lanes, Buffer::kPoison, sizeof(lanes));
    for (uint32_t i = first; i < last; ++i) {
      const Fiber& f = group_.fibers[i];
      if (f.state == State::AtSimd) std::memcpy(lanes[i - first], f.value, f.size);
    }
    for (uint32_t i = first; i < last; ++i) {
      Fiber& f = group_.fibers[i];
      if (f.state != State::AtSimd) continue;
      std::memcpy(f.lanes_out, lanes, sizeof(lanes));
      *f.active_out = active;
      f.state = State::Ready;
    }
    return true;
  }

  // Releases a threadgroup barrier every thread reached; false when some
  // thread is elsewhere (a SIMD-group function).
  bool release_barrier(const uint32_t (&pos)[3]) {
    std::vector<uint32_t> returned;
    for (const Fiber& f : group_.fibers) {
      if (f.state == State::AtSimd) return false;
      if (f.state == State::Done) returned.push_back(f.thread.thread_index_in_threadgroup);
    }
    if (!returned.empty()) {
      std::string which;
      for (size_t i = 0; i < returned.size() && i < 8; ++i) which += (i ? ", " : "") + std::to_string(returned[i]);
      if (returned.size() > 8) which += ", ...";
      fail("kernel '" + fn_.name + "': a threadgroup_barrier in threadgroup " + size3(pos) +
           " was not reached by all " + std::to_string(group_.fibers.size()) + " threads: " +
           std::to_string(returned.size()) + " returned without it (threads " + which + ")");
    }
    for (Fiber& f : group_.fibers) f.state = State::Ready;
    return true;
  }

  [[noreturn]] void deadlock(const uint32_t (&pos)[3]) {
    int at_barrier = 0, at_simd = 0;
    for (const Fiber& f : group_.fibers) {
      at_barrier += f.state == State::AtBarrier;
      at_simd += f.state == State::AtSimd;
    }
    fail("kernel '" + fn_.name + "': threadgroup " + size3(pos) + " cannot go on: " +
         std::to_string(at_barrier) + " threads wait at a threadgroup_barrier while " +
         std::to_string(at_simd) + " wait in a SIMD-group function whose SIMD group has lanes at the barrier");
  }

  const Function& fn_;
  Grid grid_;
  std::array<void*, AOTISHIM_MSL_MAX_BUFFERS> buffers_{};
  std::array<void*, AOTISHIM_MSL_MAX_BUFFERS> threadgroup_memory_{};
  std::array<std::unique_ptr<Buffer>, AOTISHIM_MSL_MAX_BUFFERS> threadgroup_buffers_;
  Group group_;
  static thread_local StackPool stacks_;
};

thread_local StackPool Runner::stacks_;

#endif  // AOTISHIM_MSL_FIBERS

void dispatch(const Function& fn, const ComputeArguments& args, const Grid& grid) {
  check_arguments(fn, args, grid.group);
  if (grid.threads.x == 0 || grid.threads.y == 0 || grid.threads.z == 0) {
    fail("kernel '" + fn.name + "': a dispatch of " + std::to_string(grid.threads.x) + " x " +
         std::to_string(grid.threads.y) + " x " + std::to_string(grid.threads.z) + " threads");
  }
#ifdef AOTISHIM_MSL_FIBERS
  Runner runner(fn, args, grid);
  runner.run();
  runner.check_threadgroup_memory();
#else
  fail("kernel '" + fn.name + "': the host Metal runs kernels on Linux only (ucontext fibers)");
#endif
  // Each buffer once, however many indices bind it.
  std::string errors;
  std::vector<Buffer*> seen;
  for (size_t i = 0; i < args.buffers.size(); ++i) {
    Buffer* b = args.buffers[i].buffer;
    if (b == nullptr || std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
    seen.push_back(b);
    const std::string what = b->check_guards();
    if (what.empty()) continue;
    std::string param;
    for (const aotishim_msl_param& p : fn.params) {
      if (p.kind == AOTISHIM_MSL_PARAM_BUFFER && p.index == static_cast<int>(i)) param = p.name;
    }
    errors += (errors.empty() ? "" : "\n") + std::string("kernel '") + fn.name +
              "' wrote outside buffer '" + b->label() + "' (" + std::to_string(b->length()) +
              " bytes, bound at index " + std::to_string(i) +
              (param.empty() ? "" : " as '" + param + "'") + ", offset " +
              std::to_string(args.buffers[i].offset) + "): " + what;
  }
  if (!errors.empty()) fail(errors);
}

}  // namespace

void dispatch_threads(const Function& fn, const ComputeArguments& args, Size3 grid, Size3 group) {
  Grid g;
  g.group = group;
  g.threads = grid;
  if (group.x == 0 || group.y == 0 || group.z == 0) check_arguments(fn, args, group);
  g.groups = {(grid.x + group.x - 1) / group.x, (grid.y + group.y - 1) / group.y,
              (grid.z + group.z - 1) / group.z};
  g.uniform = grid.x % group.x == 0 && grid.y % group.y == 0 && grid.z % group.z == 0;
  dispatch(fn, args, g);
}

void dispatch_threadgroups(const Function& fn, const ComputeArguments& args, Size3 groups,
                           Size3 group) {
  Grid g;
  g.group = group;
  g.groups = groups;
  const uint64_t tx = uint64_t(groups.x) * group.x, ty = uint64_t(groups.y) * group.y,
                 tz = uint64_t(groups.z) * group.z;
  if (tx > UINT32_MAX || ty > UINT32_MAX || tz > UINT32_MAX) {
    fail("kernel '" + fn.name + "': a grid of more than 2^32 threads in one dimension");
  }
  g.threads = {static_cast<uint32_t>(tx), static_cast<uint32_t>(ty), static_cast<uint32_t>(tz)};
  dispatch(fn, args, g);
}

}  // namespace aotishim::mps::host
