#include "devices/cuda/deferred_release.h"

#include <cstddef>
#include <utility>

namespace aotishim {
namespace cuda {

namespace {
// Events kept for reuse; a burst beyond this is destroyed instead.
constexpr size_t kSpareEvents = 64;
}  // namespace

DeferredReleases::~DeferredReleases() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pending_.empty()) new std::vector<Entry>(std::move(pending_));  // leaked on purpose
}

cudaEvent_t DeferredReleases::take_event() {
  if (!spare_.empty()) {
    cudaEvent_t e = spare_.back();
    spare_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return e;
}

void DeferredReleases::add(std::shared_ptr<void> keepalive, cudaStream_t stream) {
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cudaEvent_t event = take_event();
    if (event != nullptr && cudaEventRecord(event, stream) == cudaSuccess) {
      pending_.push_back(Entry{event, std::move(keepalive)});
      queued = true;
    } else if (event != nullptr) {
      cudaGetLastError();
      spare_.push_back(event);
    }
  }
  if (!queued) {
    // No event: wait for the stream itself before letting go.
    if (cudaStreamSynchronize(stream) != cudaSuccess) cudaGetLastError();
    keepalive.reset();
  }
  reap();
}

void DeferredReleases::reap() {
  std::vector<std::shared_ptr<void>> due;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t kept = 0;
    for (size_t i = 0; i < pending_.size(); ++i) {
      Entry& e = pending_[i];
      const cudaError_t status = cudaEventQuery(e.event);
      if (status == cudaErrorNotReady) {
        if (kept != i) pending_[kept] = std::move(e);
        ++kept;
        continue;
      }
      // Any other answer (done, or a failed device that runs nothing more)
      // means no queued work can still touch the memory.
      if (status != cudaSuccess) cudaGetLastError();
      if (spare_.size() < kSpareEvents) {
        spare_.push_back(e.event);
      } else {
        cudaEventDestroy(e.event);
      }
      due.push_back(std::move(e.keepalive));
    }
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(kept), pending_.end());
  }
  // `due` is released here, after the lock.
}

}  // namespace cuda
}  // namespace aotishim
