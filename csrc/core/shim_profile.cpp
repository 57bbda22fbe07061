#include "core/shim_profile.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

namespace aotishim {

namespace {
struct Totals {
  std::mutex mutex;
  // Keyed by the name's address: each entry point passes its own constant.
  std::unordered_map<const char*, ShimTiming> by_name;
};

Totals& totals() {
  static Totals* t = new Totals();  // never destroyed: entries may run during exit
  return *t;
}
}  // namespace

bool shim_profiling() {
  static const bool on = [] {
    const char* v = std::getenv("AOTISHIM_PROFILE_SHIMS");
    return v != nullptr && std::strcmp(v, "") != 0 && std::strcmp(v, "0") != 0;
  }();
  return on;
}

void record_shim_time(const char* name, uint64_t nanoseconds) {
  Totals& t = totals();
  std::lock_guard<std::mutex> lock(t.mutex);
  ShimTiming& entry = t.by_name[name];
  if (entry.calls == 0) entry.name = name;
  entry.calls += 1;
  entry.nanoseconds += nanoseconds;
}

std::vector<ShimTiming> shim_profile(bool reset) {
  Totals& t = totals();
  std::vector<ShimTiming> out;
  {
    std::lock_guard<std::mutex> lock(t.mutex);
    out.reserve(t.by_name.size());
    for (const auto& [key, entry] : t.by_name) out.push_back(entry);
    if (reset) t.by_name.clear();
  }
  std::sort(out.begin(), out.end(),
            [](const ShimTiming& a, const ShimTiming& b) { return a.nanoseconds > b.nanoseconds; });
  return out;
}

}  // namespace aotishim
