// Recording a model's run as a CUDA graph and replaying it. Everything is
// recorded on the device's replay queue, a stream of its own, so the scratch
// buffers a graph was recorded with (cuBLASLt's and cuDNN's workspaces, kept
// per stream) are never used by two graphs at once, and the queue's outgrown
// scratch buffers are kept rather than freed (a graph holds their address).
// Memory the recorded work allocates and frees becomes the graph's own
// (stream-ordered allocation nodes); memory it leaves allocated (the run's
// outputs) is freed again when the graph is next launched
// (cudaGraphInstantiateFlagAutoFreeOnLaunch), so outputs live at fixed
// addresses that each replay rewrites.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "core/error.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"

namespace aotishim {
namespace cuda {

namespace {

class CudaGraph final : public RecordedWork {
 public:
  CudaGraph(CudaDevice& device, cudaGraph_t graph, cudaGraphExec_t exec)
      : device_(device), graph_(graph), exec_(exec) {}
  ~CudaGraph() override {
    DeviceScope on(device_.index());
    // A launch still running finishes first; the driver defers the free.
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
    // Hand the memory no graph uses any more back to the driver.
    if (cudaDeviceGraphMemTrim(device_.index()) != cudaSuccess) cudaGetLastError();
  }
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  void replay() override {
    DeviceScope on(device_.index());
    AOTISHIM_CUDA_CHECK(cudaGraphLaunch(exec_, device_.stream()));
    device_.count_command();
  }

 private:
  CudaDevice& device_;
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
};

}  // namespace

cudaStream_t CudaDevice::replay_stream() {
  std::lock_guard<std::mutex> lock(replay_mutex_);
  if (replay_stream_.load() == nullptr) {
    DeviceScope on(index());
    // Non-blocking: the legacy default stream's implicit synchronization
    // would break a recording in progress.
    cudaStream_t s = nullptr;
    AOTISHIM_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    replay_stream_.store(s);
  }
  return replay_stream_.load();
}

void CudaDevice::on_replay_queue(const std::function<void()>& work) {
  DeviceScope on(index());
  const cudaStream_t caller = stream();
  const cudaStream_t queue = replay_stream();
  order_after(caller, queue);
  const StreamOverride previous = exchange_stream_override(index(), StreamOverride{true, queue});
  // The caller's later work (reading the outputs, freeing what the queue
  // used) waits for the queue, also when `work` failed half-way.
  struct Restore {
    CudaDevice& device;
    StreamOverride previous;
    cudaStream_t queue, caller;
    ~Restore() {
      exchange_stream_override(device.index(), previous);
      try {
        device.order_after(queue, caller);
      } catch (const std::exception& e) {
        log(LogLevel::Error, str("ordering ", device.name(), "'s stream after its replay queue: ",
                                 e.what()));
      }
    }
  } restore{*this, previous, queue, caller};
  work();
}

std::unique_ptr<RecordedWork> CudaDevice::record_graph(const std::function<void()>& work) {
  DeviceScope on(index());
  const cudaStream_t s = stream();
  AOTISHIM_CHECK(s != nullptr && s == replay_stream_.load(),
                 "recording on ", name(), " happens on its replay queue (on_replay_queue)");
  // Thread-local: a call on this thread that could wait for the device or
  // allocate outside the stream's order fails the recording instead of
  // being left out of the graph; other threads are unaffected.
  AOTISHIM_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  std::string failure;
  try {
    work();
  } catch (const std::exception& e) {
    failure = e.what();
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(s, &graph);
  if (failure.empty() && ended != cudaSuccess) {
    failure = str("the recording was invalidated (", cudaGetErrorString(ended), ")");
  }
  // A failed recording's errors are not sticky; the caller's next call
  // must not find them.
  cudaGetLastError();
  if (!failure.empty()) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    fail(failure);
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t made =
      cudaGraphInstantiateWithFlags(&exec, graph, cudaGraphInstantiateFlagAutoFreeOnLaunch);
  if (made != cudaSuccess) {
    cudaGetLastError();
    cudaGraphDestroy(graph);
    fail(str("instantiating the recorded CUDA graph failed: ", cudaGetErrorString(made)));
  }
  return std::make_unique<CudaGraph>(*this, graph, exec);
}

}  // namespace cuda
}  // namespace aotishim
