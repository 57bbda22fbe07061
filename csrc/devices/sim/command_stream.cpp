#include "devices/sim/command_stream.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_map>

namespace aotishim::sim_detail {

std::string describe(const Binding& b) {
  std::ostringstream os;
  os << (b.write ? "writes " : "reads ") << b.role << " = buffer #" << b.buffer << " bytes ["
     << b.offset << ", " << b.offset + b.nbytes << ") at 0x" << std::hex << b.begin();
  return os.str();
}

std::string describe(const Command& c) {
  std::ostringstream os;
  os << "command #" << c.seq << " '" << c.name << "'";
  return os.str();
}

uint64_t CommandStream::submit(Command command) {
  command.seq = next_seq_++;
  pending_.push_back(std::move(command));
  return pending_.back().seq;
}

std::vector<Command> CommandStream::take_scheduled(sim::Order order, std::mt19937_64& rng) {
  const size_t n = pending_.size();
  // Dependencies per buffer object: a writer waits for the previous writer and
  // every reader since; a reader waits for the previous writer.
  std::vector<std::set<size_t>> deps(n);
  struct Track {
    long last_writer = -1;
    std::vector<size_t> readers;
  };
  std::unordered_map<uint64_t, Track> tracks;
  for (size_t i = 0; i < n; ++i) {
    // A command may bind one buffer several times; it reads what it writes.
    std::unordered_map<uint64_t, bool> writes;
    for (const Binding& b : pending_[i].bindings) writes[b.buffer] = writes[b.buffer] || b.write;
    for (const auto& [buffer, write] : writes) {
      Track& t = tracks[buffer];
      if (t.last_writer >= 0) deps[i].insert(static_cast<size_t>(t.last_writer));
      if (write) {
        for (size_t r : t.readers) deps[i].insert(r);
        t.readers.clear();
        t.last_writer = static_cast<long>(i);
      } else {
        t.readers.push_back(i);
      }
    }
    deps[i].erase(i);
  }

  std::vector<std::vector<size_t>> dependents(n);
  std::vector<size_t> waiting(n);
  for (size_t i = 0; i < n; ++i) {
    waiting[i] = deps[i].size();
    for (size_t d : deps[i]) dependents[d].push_back(i);
  }
  std::vector<size_t> ready;  // kept sorted by submission
  for (size_t i = 0; i < n; ++i)
    if (waiting[i] == 0) ready.push_back(i);

  std::vector<Command> out;
  out.reserve(n);
  while (!ready.empty()) {
    size_t pick = 0;
    switch (order) {
      case sim::Order::Fifo: pick = 0; break;
      case sim::Order::Reverse: pick = ready.size() - 1; break;
      // mt19937_64's output is fixed by the standard (distributions are not),
      // so a seed gives the same order with every standard library.
      case sim::Order::Shuffle: pick = static_cast<size_t>(rng() % ready.size()); break;
    }
    size_t i = ready[pick];
    ready.erase(ready.begin() + static_cast<long>(pick));
    out.push_back(std::move(pending_[i]));
    for (size_t j : dependents[i]) {
      if (--waiting[j] == 0) ready.insert(std::upper_bound(ready.begin(), ready.end(), j), j);
    }
  }
  pending_.clear();
  return out;
}

}  // namespace aotishim::sim_detail
