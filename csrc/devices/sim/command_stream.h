// The sim device's stream: recorded commands and the scheduler that runs them.
//
// A command binds byte ranges of buffer objects for reading or writing.
// Ordering follows Metal's rule and nothing else: two commands are ordered
// (in submission order) only if they bind the same buffer object and at least
// one of them writes it. Everything else may run in any order; the scheduler
// picks one (fifo, reverse or seeded shuffle) so a missing dependency changes
// the result instead of hiding behind submission order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "aotishim/sim.h"

namespace aotishim {

class Storage;

namespace sim_detail {

// A byte range of one buffer object, as a command binds it.
struct Binding {
  uint64_t buffer = 0;   // buffer object identity
  uintptr_t base = 0;    // the buffer object's first byte
  size_t offset = 0;     // from base
  size_t nbytes = 0;
  bool write = false;
  std::string role;      // "out", "a", "src", ... for messages

  uintptr_t begin() const { return base + offset; }
  uintptr_t end() const { return base + offset + nbytes; }
};

struct Command {
  uint64_t seq = 0;  // submission number, for messages and the execution log
  std::string name;  // "gemm", "copy", "pack a", ...
  std::vector<Binding> bindings;
  // Memory a command touches outlives it (the op's tensors may be deleted
  // before the stream runs).
  std::vector<std::shared_ptr<Storage>> keepalive;
  std::function<void()> run;
};

std::string describe(const Command& command);
std::string describe(const Binding& binding);

class CommandStream {
 public:
  // Appends a command; returns its submission number.
  uint64_t submit(Command command);
  size_t pending() const { return pending_.size(); }
  const std::vector<Command>& pending_commands() const { return pending_; }

  // Removes every pending command and returns them in an execution order
  // allowed by the ordering rule, chosen by `order` (and `rng` for Shuffle).
  // The caller runs them (and destroys them outside its lock).
  std::vector<Command> take_scheduled(sim::Order order, std::mt19937_64& rng);

 private:
  std::vector<Command> pending_;
  uint64_t next_seq_ = 1;
};

}  // namespace sim_detail
}  // namespace aotishim
