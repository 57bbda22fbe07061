#include "devices/cuda/cuda_device.h"

#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/tensor.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/cuda_stream.h"

namespace aotishim {
namespace cuda {

namespace {

// AOTISHIM_CUDA_ALLOCATOR=malloc forces plain cudaMalloc/cudaFree (each free
// then waits for the whole device), e.g. to rule the pool out when debugging.
bool pool_requested() {
  const char* v = std::getenv("AOTISHIM_CUDA_ALLOCATOR");
  return v == nullptr || std::strcmp(v, "malloc") != 0;
}

}  // namespace

CudaDevice::CudaDevice(int32_t index) : Device(DeviceType::CUDA, index) {
  DeviceScope on(index);
  // A blocking stream: it stays ordered with the legacy default stream, which
  // a model runs on when its caller passes no stream.
  AOTISHIM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamDefault));
  int pools = 0;
  AOTISHIM_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, index));
  use_pool_ = pools != 0 && pool_requested();
  if (use_pool_) {
    // Keep freed memory in the pool (like a caching allocator) instead of
    // returning it to the driver at every synchronization.
    cudaMemPool_t pool;
    AOTISHIM_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, index));
    uint64_t threshold = std::numeric_limits<uint64_t>::max();
    AOTISHIM_CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  }
}

CudaDevice::~CudaDevice() {
  // Best effort: the process may be exiting with the runtime already gone.
  try {
    DeviceScope on(index());
    for (auto& [stream, handle] : cublas_) cublas::api().destroy(handle);
    for (auto& [stream, buffer] : scratch_) {
      if (buffer.data != nullptr) cudaFree(buffer.data);
    }
    for (void* p : retired_scratch_) cudaFree(p);
  } catch (...) {
  }
  if (order_event_ != nullptr) cudaEventDestroy(order_event_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
  if (replay_stream_.load() != nullptr) cudaStreamDestroy(replay_stream_.load());
}

namespace {

// DLPack's stream integers are CUDA's own handles: 1 is cudaStreamLegacy,
// 2 cudaStreamPerThread. 0 is not allowed there (ambiguous); a null handle
// here means the legacy default stream, what a model runs on when its
// caller passes none.
cudaStream_t from_exchange(intptr_t stream) {
  return stream == 0 ? cudaStreamLegacy : reinterpret_cast<cudaStream_t>(stream);
}

}  // namespace

void CudaDevice::order_after(cudaStream_t producer, cudaStream_t consumer) {
  if (producer == consumer) return;
  // The legacy default stream and a blocking stream (ours is one) are
  // ordered with each other by CUDA itself: no event is needed.
  const bool legacy_and_ours = (producer == cudaStreamLegacy && consumer == stream_) ||
                               (producer == stream_ && consumer == cudaStreamLegacy);
  if (legacy_and_ours) return;
  // One event serves every call: a wait captures the record before it, so
  // the event may be recorded again as soon as cudaStreamWaitEvent returns.
  // The lock keeps another thread's record from slipping in between.
  std::lock_guard<std::mutex> lock(order_mutex_);
  if (order_event_ == nullptr) {
    // Created with this device current (the caller's DeviceScope): an event
    // is recorded only on streams of the device it was created on.
    AOTISHIM_CUDA_CHECK(cudaEventCreateWithFlags(&order_event_, cudaEventDisableTiming));
  }
  cudaError_t err = cudaEventRecord(order_event_, producer);
  if (err == cudaSuccess) err = cudaStreamWaitEvent(consumer, order_event_, 0);
  AOTISHIM_CUDA_CHECK(err);
}

intptr_t CudaDevice::current_stream_handle() {
  cudaStream_t s = stream();
  return s == nullptr ? 1 : reinterpret_cast<intptr_t>(s);
}

void CudaDevice::order_stream_after_device(intptr_t stream) {
  DeviceScope on(index());
  order_after(this->stream(), from_exchange(stream));
}

void CudaDevice::order_device_after_stream(intptr_t stream) {
  DeviceScope on(index());
  order_after(from_exchange(stream), this->stream());
}

void CudaDevice::release_after_queued_work(std::shared_ptr<void> keepalive) {
  DeviceScope on(index());
  borrowed_.add(std::move(keepalive), stream());
}

cudaStream_t CudaDevice::stream() const {
  // Hot path (every allocate/free/copy/gemm): only the thread-local override
  // map, no device lookup; current_stream() is for callers without a device.
  StreamOverride o = stream_override(index());
  return o.set ? o.stream : stream_;
}

void* CudaDevice::raw_allocate(size_t nbytes) {
  DeviceScope on(index());
  void* p = nullptr;
  size_t n = nbytes ? nbytes : 1;  // a distinct address even for empty tensors
  cudaError_t err = use_pool_ ? cudaMallocAsync(&p, n, stream()) : cudaMalloc(&p, n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    fail(str("out of memory on ", name(), " allocating ", nbytes, " bytes: ",
             cudaGetErrorString(err)));
  }
  return p;
}

void CudaDevice::raw_free(void* base, size_t) {
  DeviceScope on(index());
  // Stream-ordered: the memory returns to the pool once work queued so far on
  // the current stream (which used it) has finished.
  const cudaStream_t s = stream();
  cudaError_t err = use_pool_ ? cudaFreeAsync(base, s) : cudaFree(base);
  if (err == cudaErrorCudartUnloading) return;  // process exit: the driver reclaims it
  if (err == cudaErrorStreamCaptureInvalidated && s == replay_stream_.load()) {
    // A recording that has already failed frees what it allocated: memory
    // of a graph that will never exist (a recorded run frees nothing older).
    cudaGetLastError();
    return;
  }
  AOTISHIM_CUDA_CHECK(err);
}

void CudaDevice::copy(const Tensor& dst, const Tensor& src) {
  AOTISHIM_CHECK(dst.sizes == src.sizes, "cuda copy: sizes differ");
  DeviceScope on(index());
  launch_copy(view_of(dst), view_of(src), dst.sizes.data(), static_cast<int>(dst.dim()),
              stream());
  count_command();
}

void CudaDevice::download(void* host_dst, const Tensor& src) {
  size_t n = src.extent_bytes();
  if (n == 0) return;
  DeviceScope on(index());
  cudaStream_t s = stream();
  AOTISHIM_CUDA_CHECK(cudaMemcpyAsync(host_dst, src.data(), n, cudaMemcpyDeviceToHost, s));
  AOTISHIM_CUDA_CHECK(cudaStreamSynchronize(s));
  synchronizes_.fetch_add(1, std::memory_order_relaxed);
  count_command();
  borrowed_.reap();
}

void CudaDevice::fill_zero(const Tensor& dst) {
  size_t n = dst.extent_bytes();
  if (n == 0) return;
  DeviceScope on(index());
  AOTISHIM_CUDA_CHECK(cudaMemsetAsync(dst.data(), 0, n, stream()));
  count_command();
}

void CudaDevice::upload(const Tensor& dst, const void* host_src) {
  size_t n = dst.extent_bytes();
  if (n == 0) return;
  DeviceScope on(index());
  cudaStream_t s = stream();
  if (s == replay_stream_.load()) {
    // A recorded copy would read the host memory again at every replay,
    // long after the caller let go of it.
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    AOTISHIM_CUDA_CHECK(cudaStreamIsCapturing(s, &capturing));
    AOTISHIM_CHECK(capturing == cudaStreamCaptureStatusNone,
                   "a copy from host memory cannot be recorded in a CUDA graph");
  }
  cudaPointerAttributes attr{};
  if (cudaPointerGetAttributes(&attr, host_src) != cudaSuccess) {
    cudaGetLastError();
    attr.type = cudaMemoryTypeUnregistered;  // unknown: copied as pageable memory
  }
  count_command();
  if (attr.type != cudaMemoryTypeHost) {
    // Pageable memory: through the page-locked staging buffers, so the copy
    // is queued behind the stream's work instead of waiting for it; the
    // source has been read when this returns (pinned_staging.h).
    if (staging_.upload(dst.data(), host_src, n, s)) return;
    // No page-locked memory to be had: the runtime's own copy, which has
    // also consumed the source when it returns.
    AOTISHIM_CUDA_CHECK(cudaMemcpyAsync(dst.data(), host_src, n, cudaMemcpyHostToDevice, s));
    return;
  }
  // Page-locked memory of the caller's: the copy reads it after this
  // returns, and the caller may free it next, so it is waited for.
  AOTISHIM_CUDA_CHECK(cudaMemcpyAsync(dst.data(), host_src, n, cudaMemcpyHostToDevice, s));
  AOTISHIM_CUDA_CHECK(cudaStreamSynchronize(s));
  synchronizes_.fetch_add(1, std::memory_order_relaxed);
}

void CudaDevice::synchronize() {
  DeviceScope on(index());
  AOTISHIM_CUDA_CHECK(cudaDeviceSynchronize());
  synchronizes_.fetch_add(1, std::memory_order_relaxed);
  borrowed_.reap();  // all of it is due now
}

DeviceCounters CudaDevice::counters() const {
  DeviceCounters c;
  c.synchronizes = synchronizes_.load(std::memory_order_relaxed);
  c.commands = commands_.load(std::memory_order_relaxed);
  return c;
}

int32_t CudaDevice::enter() {
  int previous = -1;
  AOTISHIM_CUDA_CHECK(cudaGetDevice(&previous));
  if (previous != index()) AOTISHIM_CUDA_CHECK(cudaSetDevice(index()));
  return previous;
}

void CudaDevice::leave(int32_t previous) {
  // Restored even when the code in between changed it (a model's
  // constructor sets its device and leaves it set).
  int now = -1;
  if (previous >= 0 && (cudaGetDevice(&now) != cudaSuccess || now != previous)) {
    cudaSetDevice(previous);
  }
}

std::string CudaDevice::take_runtime_error() {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return {};
  return str("CUDA error ", cudaGetErrorName(err), " (", cudaGetErrorString(err), ")");
}

cublas::Handle CudaDevice::cublas_handle(cudaStream_t s) {
  const cublas::Api& api = cublas::api();
  auto found = cublas_.find(s);
  if (found != cublas_.end()) return found->second;
  // A handle belongs to the device current when it is created.
  DeviceScope on(index());
  cublas::Handle h = nullptr;
  cublas::Status st = api.create(&h);
  AOTISHIM_CHECK(st == cublas::kStatusSuccess, "cublasCreate failed on ", name(), ": ",
                 cublas::status_text(st));
  st = api.set_stream(h, s);
  if (st != cublas::kStatusSuccess) {
    api.destroy(h);
    fail(str("cublasSetStream failed on ", name(), ": ", cublas::status_text(st)));
  }
  cublas_.emplace(s, h);
  return h;
}

CudaDevice::ScratchLease CudaDevice::scratch(cudaStream_t s, size_t bytes) {
  std::unique_lock<std::mutex> lock(scratch_mutex_);
  Scratch& buffer = scratch_[s];
  if (buffer.size < bytes) {
    DeviceScope on(index());
    if (buffer.data != nullptr && s == replay_stream_.load()) {
      retired_scratch_.push_back(buffer.data);  // a recorded graph may use it
      buffer = Scratch{};
    } else if (buffer.data != nullptr) {
      // Work queued earlier on the stream may still use the smaller one.
      if (cudaStreamSynchronize(s) != cudaSuccess) cudaGetLastError();
      cudaFree(buffer.data);
      buffer = Scratch{};
    }
    // Not from the pool: it lives as long as the device.
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) == cudaSuccess) {
      buffer = Scratch{p, bytes};
    } else {
      cudaGetLastError();
    }
  }
  return ScratchLease{buffer.data, buffer.size, std::move(lock)};
}

bool CudaDevice::gemm_fuses_row_bias() const { return use_cublaslt(); }

CudaDevice& cuda_device(int32_t index) {
  // Only this backend creates cuda devices, so the cast is exact.
  return static_cast<CudaDevice&>(get_device(DeviceType::CUDA, index));
}

namespace {

int count_cuda() {
  int n = 0;
  // No driver or no GPU: the backend is present but has no devices.
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    cudaGetLastError();
    static std::once_flag once;
    std::call_once(once, [&] {
      log(LogLevel::Info, str("cuda: no devices (cudaGetDeviceCount: ", cudaGetErrorString(err), ")"));
    });
    return 0;
  }
  return n;
}

std::unique_ptr<Device> make_cuda(int32_t index) { return std::make_unique<CudaDevice>(index); }

const bool registered = (register_backend(DeviceType::CUDA, make_cuda, count_cuda), true);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
