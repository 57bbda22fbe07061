// aoti_torch_check: the runtime assertions of generated code (bounds checks
// of indirect indexing, shape guards). The ABI gives it no error code and the
// generated code expects a failed check not to return, so it throws: the
// model container's run catches every std::exception and returns a failure
// code, and our last error carries the message to the runner (the container
// only prints what it catches).
//
// Inside an OpenMP parallel region (where generated CPU kernels make their
// checks) nothing may be thrown: an exception leaving the region terminates
// the process. There the failure is recorded and the check returns; the
// runner fails the run when the container returns (core/check_failures.h).
// The kernel finishes its loop with the offending index, as it would in a
// build without checks.
#include <stdexcept>
#include <string>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "core/check_failures.h"
#include "core/error.h"

namespace {

bool in_parallel_region() {
#if defined(_OPENMP)
  // The level counts inactive (one-thread) regions too, which terminate on a
  // throw just the same.
  return omp_get_level() > 0;
#else
  // Without OpenMP here we cannot tell whether the model's kernel runs in a
  // region of its own: never throw.
  return true;
#endif
}

}  // namespace

extern "C" void aoti_torch_check(bool cond, const char* func, const char* file, uint32_t line,
                                 const char* msg) {
  if (cond) return;
  std::string message =
      aotishim::str("check failed: ", msg && *msg ? msg : "(no message)", " (in ",
                    func ? func : "?", " at ", file ? file : "?", ":", line, ")");
  if (in_parallel_region()) {
    aotishim::record_check_failure(std::move(message));
    return;
  }
  aotishim::set_last_error(message);
  throw std::runtime_error(message);
}
