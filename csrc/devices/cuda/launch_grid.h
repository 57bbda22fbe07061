// The launch shape every elementwise cuda kernel here uses: 256 threads a
// block, one thread an element with grid-stride loops, at most 65535 * 4
// blocks (the loops cover the rest).
#pragma once

#include <cstdint>

namespace aotishim {
namespace cuda {

constexpr int kThreads = 256;

inline int blocks_for(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(b < 1 ? 1 : (b > 65535 * 4 ? 65535 * 4 : b));
}

}  // namespace cuda
}  // namespace aotishim
