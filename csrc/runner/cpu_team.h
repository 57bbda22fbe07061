// How many OpenMP threads one cpu run uses: all of this thread's setting
// while the runs get the CPU they ask for, fewer while other processes hold
// the cores.
//
// Generated CPU kernels fork a team per parallel loop and join it at a
// barrier, so a loop takes as long as its slowest thread. With other
// CPU-bound processes on the cores, each team thread runs only part of the
// time, and rarely all at once: a two-thread GPT-2 call on two busy cores took
// 3-7x its quiet time where one thread took about 2x (benchmarks/
// contention.py). So each run measures the CPU share its calling thread got
// (thread CPU time over wall time, which drops both when the thread waits for
// a core and when it sleeps at a barrier for a team member that waits for
// one), and the next runs use that share of the threads, never more than the
// caller's own OpenMP setting (generated reductions size per-thread buffers
// by the thread count they were compiled for).
//
// A parallel reduction's last bits can depend on the team size. For runs that
// must repeat bit for bit under any load, AOTISHIM_CPU_TEAM=fixed turns this off.
#pragma once

#include <cstdint>

namespace aotishim {
namespace runner {

// The team size for a run: `setting` threads (the thread's OpenMP setting),
// or fewer while the runs' recent CPU share is low. A full team shrinks below
// a share of 0.7; a shrunk one (`shrunk`) grows back only above 0.9, so a
// share hovering between the two keeps the team's size rather than flipping it.
int team_size(int setting, double share, bool shrunk);

class CpuTeam {
 public:
  CpuTeam();  // sets this thread's team size for the run
  ~CpuTeam();  // records the run's CPU share, restores the thread's setting
  CpuTeam(const CpuTeam&) = delete;
  CpuTeam& operator=(const CpuTeam&) = delete;

  int threads() const { return chosen_; }

 private:
  // Unused where the build has no OpenMP (a run is one thread there).
  [[maybe_unused]] int previous_ = 1;
  int chosen_ = 1;
  [[maybe_unused]] int64_t wall_ns_ = 0;
  [[maybe_unused]] int64_t cpu_ns_ = 0;
};


}  // namespace runner
}  // namespace aotishim
