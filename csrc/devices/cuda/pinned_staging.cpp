#include "devices/cuda/pinned_staging.h"

#include <algorithm>
#include <cstring>

#include "devices/cuda/cuda_check.h"

namespace aotishim {
namespace cuda {

PinnedStaging::PinnedStaging(size_t chunk, int buffers) : chunk_(chunk), count_(buffers) {}

PinnedStaging::~PinnedStaging() { release(); }

void PinnedStaging::release() {
  for (Buffer& b : buffers_) {
    // A DMA may still read the buffer: wait for it before freeing.
    if (b.done) {
      if (b.queued) cudaEventSynchronize(b.done);
      cudaEventDestroy(b.done);
    }
    if (b.host) cudaFreeHost(b.host);
  }
  buffers_.clear();
  cudaGetLastError();  // at process exit the runtime may be gone: nothing to report
}

bool PinnedStaging::ensure_buffers() {
  if (!buffers_.empty()) return true;
  if (unavailable_) return false;
  std::vector<Buffer> made(static_cast<size_t>(count_));
  for (Buffer& b : made) {
    // Portable: usable by every device's context, whichever is current.
    if (cudaHostAlloc(&b.host, chunk_, cudaHostAllocPortable) != cudaSuccess ||
        cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming) != cudaSuccess) {
      cudaGetLastError();
      for (Buffer& m : made) {
        if (m.done) cudaEventDestroy(m.done);
        if (m.host) cudaFreeHost(m.host);
      }
      unavailable_ = true;
      return false;
    }
  }
  buffers_ = std::move(made);
  return true;
}

bool PinnedStaging::upload(void* dst, const void* src, size_t n, cudaStream_t s) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!ensure_buffers()) return false;
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  for (size_t off = 0; off < n; off += chunk_) {
    const size_t len = std::min(chunk_, n - off);
    Buffer& b = buffers_[next_];
    next_ = (next_ + 1) % buffers_.size();
    // Its previous DMA, queued by an earlier chunk or call, must have read it.
    if (b.queued) AOTISHIM_CUDA_CHECK(cudaEventSynchronize(b.done));
    b.queued = false;
    std::memcpy(b.host, in + off, len);
    AOTISHIM_CUDA_CHECK(cudaMemcpyAsync(out + off, b.host, len, cudaMemcpyHostToDevice, s));
    AOTISHIM_CUDA_CHECK(cudaEventRecord(b.done, s));
    b.queued = true;
  }
  return true;
}

size_t PinnedStaging::pinned_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return buffers_.size() * chunk_;
}

}  // namespace cuda
}  // namespace aotishim
