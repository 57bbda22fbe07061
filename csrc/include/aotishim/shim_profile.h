// Time spent in each C entry point, for finding where a run's host time
// goes. Off unless AOTISHIM_PROFILE_SHIMS=1 at start-up; then every entry
// point (and a model's whole run) adds its call count and wall time under
// its name. Nested entries count in both (inclusive time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aotishim/export.h"

namespace aotishim {

struct ShimTiming {
  std::string name;
  uint64_t calls = 0;
  uint64_t nanoseconds = 0;
};

AOTISHIM_API bool shim_profiling();
AOTISHIM_API void record_shim_time(const char* name, uint64_t nanoseconds);
// The totals so far, most time first; `reset` starts them again from zero.
AOTISHIM_API std::vector<ShimTiming> shim_profile(bool reset);

}  // namespace aotishim
