#include "devices/mps/host/schedule.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace aotishim::mps::host {

std::vector<size_t> schedule(const std::vector<const CommandRecord*>& commands, Order order,
                             std::mt19937_64& rng) {
  const size_t n = commands.size();
  // Per buffer object: a writer follows the previous writer and the readers
  // since; a reader follows the previous writer.
  std::vector<std::set<size_t>> deps(n);
  struct Track {
    long last_writer = -1;
    std::vector<size_t> readers;
  };
  std::unordered_map<uint64_t, Track> tracks;
  for (size_t i = 0; i < n; ++i) {
    std::unordered_map<uint64_t, bool> writes;  // a command may bind one buffer twice
    for (const Use& u : commands[i]->uses) writes[u.buffer] = writes[u.buffer] || u.write;
    for (const auto& [buffer, write] : writes) {
      Track& t = tracks[buffer];
      if (t.last_writer >= 0) deps[i].insert(static_cast<size_t>(t.last_writer));
      if (write) {
        deps[i].insert(t.readers.begin(), t.readers.end());
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
  std::vector<size_t> ready;  // sorted by submission
  for (size_t i = 0; i < n; ++i)
    if (waiting[i] == 0) ready.push_back(i);
  std::vector<size_t> out;
  out.reserve(n);
  while (!ready.empty()) {
    size_t pick = 0;
    if (order == Order::Reverse) pick = ready.size() - 1;
    // mt19937_64's output is fixed by the standard (distributions are not).
    if (order == Order::Shuffle) pick = static_cast<size_t>(rng() % ready.size());
    const size_t i = ready[pick];
    ready.erase(ready.begin() + static_cast<long>(pick));
    out.push_back(i);
    for (size_t j : dependents[i])
      if (--waiting[j] == 0) ready.insert(std::upper_bound(ready.begin(), ready.end(), j), j);
  }
  return out;
}

}  // namespace aotishim::mps::host
