// The cpu team's size rule: shrink under load, grow back only with room to
// spare. The single threshold it replaced (0.7 both ways) regrew a shrunk
// team at a share of 0.8, which two busy processes on two cores give a
// one-thread run, and the next full-team run stalled at its barriers.
#include <doctest/doctest.h>

#include "runner/cpu_team.h"

using aotishim::runner::team_size;

TEST_CASE("a full team keeps its size until its share falls below 0.7") {
  CHECK(team_size(2, 1.0, false) == 2);
  CHECK(team_size(2, 0.75, false) == 2);
  CHECK(team_size(2, 0.6, false) == 1);
  CHECK(team_size(8, 0.5, false) == 4);
  CHECK(team_size(4, 0.01, false) == 1);  // never below one thread
}

TEST_CASE("a shrunk team stays shrunk between 0.7 and 0.9, and grows back above") {
  CHECK(team_size(2, 0.8, true) == 1);   // the old rule gave 2 here
  CHECK(team_size(2, 0.89, true) == 1);
  CHECK(team_size(2, 0.95, true) == 2);
  CHECK(team_size(8, 0.8, true) == 6);
}

TEST_CASE("one thread is never changed") {
  CHECK(team_size(1, 0.1, false) == 1);
  CHECK(team_size(1, 0.1, true) == 1);
}
