// Host-to-device copies from pageable memory through page-locked staging
// buffers of the device's own. The CUDA runtime copies pageable memory
// only after the stream's earlier work is done (the host waits for it);
// from page-locked memory the copy is queued and the host goes on. So the
// host copies each chunk of the source into a free staging buffer and
// queues its DMA from there: the call returns once the source has been
// read, with the copies still queued behind the stream's work, and a buffer
// is reused once its last DMA has run.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <mutex>
#include <vector>

namespace aotishim {
namespace cuda {

class PinnedStaging {
 public:
  // `buffers` page-locked buffers of `chunk` bytes, made at the first upload.
  explicit PinnedStaging(size_t chunk = size_t(4) << 20, int buffers = 3);
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // Queues the copy of n bytes from host memory at src to device memory at
  // dst on stream s (of the current device). Returns false, copying
  // nothing, when no page-locked memory could be had (the caller copies
  // another way); throws on CUDA errors of the copies themselves.
  bool upload(void* dst, const void* src, size_t n, cudaStream_t s);

  // Bytes of page-locked memory held (0 before the first upload).
  size_t pinned_bytes() const;

 private:
  struct Buffer {
    void* host = nullptr;
    cudaEvent_t done = nullptr;  // recorded after the buffer's last DMA
    bool queued = false;
  };
  bool ensure_buffers();  // under mutex_
  void release();

  size_t chunk_;
  int count_;
  mutable std::mutex mutex_;
  std::vector<Buffer> buffers_;
  size_t next_ = 0;
  bool unavailable_ = false;  // cudaHostAlloc failed once: not tried again
};

}  // namespace cuda
}  // namespace aotishim
