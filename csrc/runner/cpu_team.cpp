#include "runner/cpu_team.h"

#include "aotishim/runtime.h"

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace aotishim {
namespace runner {
namespace {

#if defined(_OPENMP)
int64_t now_ns(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return int64_t{t.tv_sec} * 1000000000 + t.tv_nsec;
}

bool adapting() {
  static const bool on = [] {
    const char* v = std::getenv("AOTISHIM_CPU_TEAM");
    return !(v && std::strcmp(v, "fixed") == 0);
  }();
  return on;
}

#endif

// CPU and wall time of recent runs, decayed so that the last ~50 ms of run
// time dominate: quick to notice other processes arriving or leaving, and not
// swayed by one run's hiccup.
class ShareHistory {
 public:
  double share() {
    std::lock_guard<std::mutex> lock(mutex_);
    return wall_ > 0 ? std::min(1.0, cpu_ / wall_) : 1.0;
  }
  void add(int64_t cpu_ns, int64_t wall_ns) {
    if (wall_ns <= 0) return;
    const double keep = std::exp(-static_cast<double>(wall_ns) / kWindowNs);
    std::lock_guard<std::mutex> lock(mutex_);
    cpu_ = cpu_ * keep + static_cast<double>(std::min(cpu_ns, wall_ns));
    wall_ = wall_ * keep + static_cast<double>(wall_ns);
  }

 private:
  static constexpr double kWindowNs = 50e6;
  std::mutex mutex_;
  double cpu_ = 0, wall_ = 0;
};

ShareHistory& history() {
  static ShareHistory h;
  return h;
}

std::atomic<int> g_last_run_threads{0};
#if defined(_OPENMP)
// Whether the last run that chose a team size chose fewer than its setting.
std::atomic<bool> g_shrunk{false};
#endif

}  // namespace

// Below this share a full team loses more at its barriers than it gains.
static constexpr double kFullTeamShare = 0.7;
// A shrunk team grows back only above this share. Three runnable threads on
// two cores give each about 2/3 of a core, so a one-thread run beside two busy
// processes measures close to kFullTeamShare: with a single threshold the
// team flipped between sizes, and each full-team run stalled at its barriers.
static constexpr double kRegrowShare = 0.9;

int team_size(int setting, double share, bool shrunk) {
  if (setting <= 1 || share >= (shrunk ? kRegrowShare : kFullTeamShare)) return setting;
  return std::clamp(static_cast<int>(setting * share), 1, setting);
}

CpuTeam::CpuTeam() {
#if defined(_OPENMP)
  previous_ = chosen_ = omp_get_max_threads();
  g_last_run_threads.store(chosen_);
  if (!adapting() || previous_ <= 1) return;
  const double share = history().share();
  const bool shrunk = g_shrunk.load(std::memory_order_relaxed);
  chosen_ = team_size(previous_, share, shrunk);
  if (chosen_ != previous_) {
    omp_set_num_threads(chosen_);
    g_last_run_threads.store(chosen_);
  }
  g_shrunk.store(chosen_ < previous_, std::memory_order_relaxed);
  wall_ns_ = now_ns(CLOCK_MONOTONIC);
  cpu_ns_ = now_ns(CLOCK_THREAD_CPUTIME_ID);
#endif
}

CpuTeam::~CpuTeam() {
#if defined(_OPENMP)
  if (!adapting() || previous_ <= 1) return;
  const int64_t cpu = now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu_ns_;
  const int64_t wall = now_ns(CLOCK_MONOTONIC) - wall_ns_;
  history().add(cpu, wall);
  if (chosen_ != previous_) omp_set_num_threads(previous_);
#endif
}

}  // namespace runner

CpuTeamStats cpu_team_stats() {
  CpuTeamStats s;
  s.recent_cpu_share = runner::history().share();
  s.last_run_threads = runner::g_last_run_threads.load();
  return s;
}

}  // namespace aotishim
