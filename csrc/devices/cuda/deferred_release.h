// Borrowed memory handed back to its owner once the GPU is done with it.
//
// A model reads (and may write) a DLPack producer's memory on aotishim's
// stream. The borrowed storage dies when the model deletes its input
// handles, which is when the last kernel that reads them has been queued,
// not run. Releasing the producer's capsule then lets it free the memory at
// once: torch's caching allocator hands the block to the next allocation on
// the producer's stream, which is not ordered after ours, and that writer
// can overwrite the input before our kernels read it. So each release
// records an event on the stream and waits, off the host's critical path,
// until the event has completed.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <mutex>
#include <vector>

namespace aotishim {
namespace cuda {

class DeferredReleases {
 public:
  DeferredReleases() = default;
  // Pending owners are never released at process exit: their runtimes
  // (Python, another framework) may be gone by then.
  ~DeferredReleases();
  DeferredReleases(const DeferredReleases&) = delete;
  DeferredReleases& operator=(const DeferredReleases&) = delete;

  // Releases `keepalive` once the work queued on `stream` so far has
  // finished (at once if that point cannot be marked: after waiting for the
  // stream). The caller has the stream's device current.
  void add(std::shared_ptr<void> keepalive, cudaStream_t stream);
  // Releases every entry whose work has finished; never waits. Owners'
  // release code runs here, outside the lock, so it may call back in.
  void reap();

 private:
  struct Entry {
    cudaEvent_t event;
    std::shared_ptr<void> keepalive;
  };
  cudaEvent_t take_event();  // under mutex_

  mutable std::mutex mutex_;
  std::vector<Entry> pending_;
  std::vector<cudaEvent_t> spare_;  // completed events, reused
};

}  // namespace cuda
}  // namespace aotishim
