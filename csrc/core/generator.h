// The process-wide random generator behind every random op (rand, randn,
// dropout, ...; Inductor also seeds its own in-kernel generator from it
// through randint_low_out), like torch's default CPU generator: one
// mt19937 engine (64-bit), seeded with torch's default seed until
// manual_seed or seed is called, so a process that never seeds still draws
// the same numbers on every run. The streams are not torch's.
#pragma once

#include <cstdint>
#include <mutex>
#include <random>

#include "aotishim/export.h"


namespace aotishim {

// torch's default_rng_seed_val.
constexpr uint64_t kDefaultSeed = 67280421310721ULL;

// Draws from the generator, holding it: one op's draws are consecutive in the
// stream even while other threads draw too.
// Exported: the device plugins draw their kernels' keys from it too.
class AOTISHIM_API RandomDraws {
 public:
  RandomDraws();
  RandomDraws(const RandomDraws&) = delete;
  RandomDraws& operator=(const RandomDraws&) = delete;

  uint64_t bits() { return engine_(); }
  // [0, 1) with `digits` significant bits (1..53): exact in any floating
  // dtype with that many, so never rounded up to 1.
  double unit(int digits = 53) {
    return static_cast<double>(bits() >> (64 - digits)) * (1.0 / static_cast<double>(1ULL << digits));
  }
  // (0, 1): for logarithms.
  double open_unit() { return (static_cast<double>(bits() >> 11) + 0.5) * (1.0 / 9007199254740992.0); }
  // Uniform in [0, range) without bias (range 0 stands for 2^64).
  uint64_t below(uint64_t range);

 private:
  std::lock_guard<std::mutex> lock_;
  std::mt19937_64& engine_;
};

// manual_seed, seed and initial_seed: aotishim/runtime.h.

}  // namespace aotishim
