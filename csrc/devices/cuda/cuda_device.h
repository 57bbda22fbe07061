// The cuda device: memory from the stream-ordered pool (cudaMallocAsync) or
// cudaMalloc where pools are unsupported, one stream of its own, copies by
// kernels and GEMMs by cuBLAS on the current stream. Every runtime call is
// made with this device current (DeviceScope) and the caller's current
// device restored, so devices of one process never share a stream, event or
// cuBLAS handle.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "devices/cuda/cublas_api.h"
#include "devices/cuda/cublaslt_plans.h"
#include "devices/cuda/deferred_release.h"
#include "core/device.h"
#include "devices/cuda/pinned_staging.h"
#include "ops/gemm.h"

namespace aotishim {
namespace cuda {

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int32_t index);
  ~CudaDevice() override;

  void copy(const Tensor& dst, const Tensor& src) override;
  void download(void* host_dst, const Tensor& src) override;
  void upload(const Tensor& dst, const void* host_src) override;
  void fill_zero(const Tensor& dst) override;
  void synchronize() override;
  DeviceCounters counters() const override;
  int32_t enter() override;
  void leave(int32_t previous) override;
  std::string take_runtime_error() override;
  intptr_t current_stream_handle() override;
  void order_stream_after_device(intptr_t stream) override;
  void order_device_after_stream(intptr_t stream) override;
  void release_after_queued_work(std::shared_ptr<void> keepalive) override;
  // CUDA graphs (cuda_graph.cpp).
  bool can_record_graphs() const override { return true; }
  void on_replay_queue(const std::function<void()>& work) override;
  std::unique_ptr<RecordedWork> record_graph(const std::function<void()>& work) override;

  // The device's own stream (current unless a stream guard says otherwise).
  cudaStream_t own_stream() const { return stream_; }
  // This thread's current stream for this device.
  cudaStream_t stream() const;
  // The cuBLAS handle bound to `stream`, created on this device; callers
  // hold cublas_mutex(). One handle per stream: a handle's workspace must not
  // be shared by GEMMs that may run at once on different streams.
  cublas::Handle cublas_handle(cudaStream_t stream);
  std::mutex& cublas_mutex() { return cublas_mutex_; }
  // cuBLASLt's plans on this device; callers hold cublas_mutex().
  LtPlans& lt_plans() { return lt_plans_; }
  // Scratch memory of at least `bytes` for one op's work on `stream`
  // (cuBLASLt's and cuDNN's workspaces). Ops on one stream run in order, so
  // they all share one buffer per stream; the lease holds it (and its lock)
  // until the op is queued. data is null (size 0) when it cannot be had.
  struct ScratchLease {
    void* data = nullptr;
    size_t size = 0;
    std::unique_lock<std::mutex> lock;
  };
  ScratchLease scratch(cudaStream_t stream, size_t bytes);
  bool gemm_fuses_row_bias() const override;
  void count_command() { commands_.fetch_add(1, std::memory_order_relaxed); }

 protected:
  void* raw_allocate(size_t nbytes) override;
  void raw_free(void* base, size_t nbytes) override;

 private:
  // Later work on `consumer` waits for what is queued on `producer` so far.
  void order_after(cudaStream_t producer, cudaStream_t consumer);
  // The replay queue: a non-blocking stream, made on first use.
  cudaStream_t replay_stream();

  cudaStream_t stream_ = nullptr;
  std::mutex order_mutex_;
  cudaEvent_t order_event_ = nullptr;  // order_after's, created on first use
  bool use_pool_ = false;
  std::mutex cublas_mutex_;
  std::map<cudaStream_t, cublas::Handle> cublas_;  // by stream
  struct Scratch {
    void* data = nullptr;
    size_t size = 0;
  };
  std::mutex scratch_mutex_;
  std::map<cudaStream_t, Scratch> scratch_;  // by stream, like the handles
  // The replay queue's outgrown scratch buffers: recorded graphs hold their
  // addresses, so they are kept until the device goes.
  std::vector<void*> retired_scratch_;
  std::mutex replay_mutex_;
  std::atomic<cudaStream_t> replay_stream_{nullptr};  // set once, under replay_mutex_
  LtPlans lt_plans_;
  DeferredReleases borrowed_;  // producers' memory the GPU may still use
  std::atomic<uint64_t> synchronizes_{0};
  std::atomic<uint64_t> commands_{0};
  PinnedStaging staging_;  // uploads from pageable host memory
};

// The cuda device `index` (created and registered on first use).
CudaDevice& cuda_device(int32_t index);

// Runs GEMM args on `device`'s current stream (cuda_gemm.cpp).
void cuda_gemm(CudaDevice& device, const GemmArgs& args);

// Whether GEMMs go through cuBLASLt's plans first (the default), or only
// through cublasGemmStridedBatchedEx (AOTISHIM_CUBLAS_API=legacy).
bool use_cublaslt();

}  // namespace cuda
}  // namespace aotishim
