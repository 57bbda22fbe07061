// Failed model checks (aoti_torch_check) that could not fail their run at
// once. Generated CPU kernels check indices inside OpenMP parallel regions,
// and an exception leaving such a region terminates the process; there a
// failed check is recorded instead, and the runner fails every run that was
// in flight when a failure was recorded (the worker thread that failed does
// not know which run it serves, so a run overlapping another's failure fails
// too: an error, never a silently wrong result).
#pragma once

#include <cstdint>
#include <string>

namespace aotishim {

// Records a failure; the message replaces any earlier one.
void record_check_failure(std::string message);
// How many failures were ever recorded (compare before and after a run).
uint64_t check_failure_count();
// The message of the latest recorded failure.
std::string last_check_failure();

}  // namespace aotishim
