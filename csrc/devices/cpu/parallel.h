// Work splitting for the cpu kernels. OpenMP where the build has it (the same
// runtime AOTInductor's generated CPU code uses, so the two share one thread
// pool instead of oversubscribing the cores); serial otherwise.
#pragma once

#include <algorithm>
#include <cstdint>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace aotishim {
namespace cpu {

// Whether this thread already runs inside a parallel region (where work is
// not split again).
inline bool in_parallel_region() {
#if defined(_OPENMP)
  return omp_in_parallel() != 0;
#else
  return false;
#endif
}

// While alive, parallel regions this thread opens get one thread (a library
// that threads itself over OpenMP, such as oneDNN, then runs on the caller).
class OneThread {
 public:
#if defined(_OPENMP)
  OneThread() : saved_(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneThread() { omp_set_num_threads(saved_); }
#else
  OneThread() = default;
#endif
  OneThread(const OneThread&) = delete;
  OneThread& operator=(const OneThread&) = delete;

 private:
#if defined(_OPENMP)
  int saved_;
#endif
};

// Calls body(begin, end) over [0, n) in chunks of at least `grain` items,
// on several threads when there is enough work.
template <typename Body>
void parallel_for(int64_t n, int64_t grain, const Body& body) {
  if (n <= 0) return;
#if defined(_OPENMP)
  const int64_t chunks = std::min<int64_t>(omp_get_max_threads(), (n + grain - 1) / std::max<int64_t>(grain, 1));
  if (chunks > 1 && !omp_in_parallel()) {
#pragma omp parallel for num_threads(static_cast<int>(chunks)) schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t begin = n * c / chunks, end = n * (c + 1) / chunks;
      if (begin < end) body(begin, end);
    }
    return;
  }
#endif
  body(int64_t{0}, n);
}

}  // namespace cpu
}  // namespace aotishim
