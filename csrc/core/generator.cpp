#include "core/generator.h"

#include "aotishim/runtime.h"

namespace aotishim {
namespace {

struct Generator {
  std::mutex mutex;
  std::mt19937_64 engine{kDefaultSeed};
  uint64_t seed = kDefaultSeed;
};

Generator& generator() {
  static Generator* g = new Generator;  // never destroyed: static destructors may still draw
  return *g;
}

}  // namespace

RandomDraws::RandomDraws() : lock_(generator().mutex), engine_(generator().engine) {}

uint64_t RandomDraws::below(uint64_t range) {
  if (range == 0) return bits();  // the whole 64-bit range
  // Reject the top partial block of 2^64 so every residue is equally likely.
  const uint64_t limit = (0 - range) % range;  // 2^64 mod range
  for (;;) {
    const uint64_t x = bits();
    if (x >= limit) return x % range;
  }
}

void manual_seed(uint64_t seed) {
  Generator& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.engine.seed(seed);
  g.seed = seed;
}

uint64_t seed() {
  std::random_device device;
  const uint64_t s = (static_cast<uint64_t>(device()) << 32) ^ device();
  manual_seed(s);
  return s;
}

uint64_t initial_seed() {
  Generator& g = generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  return g.seed;
}

}  // namespace aotishim
