// The one small interface every backend implements: memory, copies, host
// transfers and synchronization. Ops are not part of it: a backend registers
// kernels for them in the op registry (ops/op.h). Backends live in their own
// folders under devices/.
// AOTISHIM_API marks what backend plugins (libaotishim_cuda) link against.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aotishim/export.h"
#include "core/allocation_index.h"
#include "core/device_type.h"

namespace aotishim {

struct Tensor;

struct DeviceCounters {
  uint64_t synchronizes = 0;
  uint64_t hazards = 0;
  uint64_t commands = 0;
};

// Device work recorded once and queued again as one launch (a CUDA graph):
// the same kernels on the same addresses, with none of the host work that
// queued them the first time.
class RecordedWork {
 public:
  virtual ~RecordedWork() = default;
  // Queues the recorded work on this thread's current stream (inside the
  // device's on_replay_queue).
  virtual void replay() = 0;
};

class Device {
 public:
  Device(DeviceType type, int32_t index) : type_(type), index_(index) {}
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  DeviceType type() const { return type_; }
  int32_t index() const { return index_; }
  AOTISHIM_API std::string name() const;  // "cpu", "sim:0", "cuda:0"
  bool is_host() const { return type_ == DeviceType::CPU; }

  // Owned memory: allocated here and registered in the allocation index.
  void* allocate(size_t nbytes);
  void free(void* base);
  AllocationIndex& allocations() { return allocations_; }
  const AllocationIndex& allocations() const { return allocations_; }

  // ---- work; tensors passed here live on this device ----
  // dst = src elementwise (same sizes; any strides, dtypes may differ where
  // the backend supports conversion). dst must not partially overlap src.
  virtual void copy(const Tensor& dst, const Tensor& src) = 0;
  // Host <-> device bytes of one storage region. The backend makes the host
  // access safe (waits for pending work that touches those bytes).
  virtual void download(void* host_dst, const Tensor& src_packed) = 0;
  virtual void upload(const Tensor& dst_packed, const void* host_src) = 0;
  // dst's bytes set to zero. By default an upload of host zeros; a device
  // with queues fills on the device instead (no wait for the host).
  virtual void fill_zero(const Tensor& dst_packed) { upload_zeros(dst_packed); }
  virtual void synchronize() {}
  // Whether this device's gemm kernel takes addmm's bias as GemmArgs'
  // row_bias (added in the product's epilogue, no copy into out first).
  virtual bool gemm_fuses_row_bias() const { return false; }
  virtual DeviceCounters counters() const { return {}; }

  // Code outside aotishim that relies on the runtime's implicit per-thread
  // current device (a compiled model creates its events and picks the
  // default stream by it) runs inside a CurrentDevice (below). enter() makes
  // this device current on the calling thread and returns what leave() needs
  // to restore the previous one. Backends without such a notion do nothing.
  virtual int32_t enter() { return -1; }
  virtual void leave(int32_t previous) {}
  // The runtime's own error left on this thread by code outside aotishim
  // (a model's failed CUDA call, which it reports only on stderr), as text,
  // and cleared; "" when there is none.
  virtual std::string take_runtime_error() { return {}; }

  // Streams of other libraries (DLPack exchange), as integers: CUDA's
  // cudaStream_t, 1 and 2 its legacy and per-thread default streams.
  // Devices without streams (cpu, sim, mps) have none and order nothing.
  // The stream this thread's next work on the device goes to.
  virtual intptr_t current_stream_handle() { return 0; }
  // Later work on `stream` waits for the work queued here so far.
  virtual void order_stream_after_device(intptr_t stream) {}
  // Later work queued here waits for the work queued on `stream` so far.
  virtual void order_device_after_stream(intptr_t stream) {}
  // Memory borrowed from another library (a DLPack producer's tensor) goes
  // back to its owner, by releasing `keepalive`, only once the work queued
  // here so far, which may still read or write it, has finished: the owner
  // may reuse it at once on a queue that is not ordered after ours.
  // Synchronous devices have nothing pending and release at once.
  virtual void release_after_queued_work(std::shared_ptr<void> keepalive) {}

  // ---- recorded work (CUDA graphs); other devices cannot record ----
  virtual bool can_record_graphs() const { return false; }
  // Runs `work` with this thread's work for the device going to the
  // device's replay queue: one queue per device, ordered after the current
  // stream before `work` and before it after. Recordings replay there, one
  // after another, so two never share the scratch memory they were recorded
  // with. Devices that cannot record just run `work`.
  virtual void on_replay_queue(const std::function<void()>& work) { work(); }
  // Records the device work `work` queues, without running it (inside
  // on_replay_queue). Throws, saying why, when the work cannot be recorded:
  // it waits for the device, reads device memory on the host, uploads host
  // memory, or the device cannot record at all.
  virtual std::unique_ptr<RecordedWork> record_graph(const std::function<void()>& work) {
    cannot_record();
  }

 protected:
  // fill_zero's default: an upload of host zeros (exported for the backend plugins).
  AOTISHIM_API void upload_zeros(const Tensor& dst_packed);
  // record_graph()'s default: an error naming the device.
  [[noreturn]] AOTISHIM_API void cannot_record() const;
  virtual void* raw_allocate(size_t nbytes) = 0;
  virtual void raw_free(void* base, size_t nbytes) = 0;

 private:
  DeviceType type_;
  int32_t index_;
  AllocationIndex allocations_;
};

// Makes a device current on the calling thread for a scope (Device::enter),
// restoring the previous one when the scope ends, by error too.
class CurrentDevice {
 public:
  explicit CurrentDevice(Device& device) : device_(device), previous_(device.enter()) {}
  ~CurrentDevice() { device_.leave(previous_); }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  Device& device_;
  int32_t previous_;
};

// The device for (type, index); created on first use. Throws a clear error
// for a device that is not built or not present.
AOTISHIM_API Device& get_device(DeviceType type, int32_t index = 0);
// Names of the devices this build can use here ("cpu", "sim", "cuda:0", ...).
std::vector<std::string> available_devices();
// A shim function defined by an optional backend's plugin (e.g. the
// aoti_torch_cuda_* shims), loading the plugins first; null if none has it.
void* find_backend_symbol(const char* name);
// Devices created so far (for memory statistics).
std::vector<Device*> created_devices();

// Backends register a factory at static-initialization time.
using DeviceFactory = std::unique_ptr<Device> (*)(int32_t index);
using DeviceCount = int (*)();
AOTISHIM_API void register_backend(DeviceType type, DeviceFactory factory, DeviceCount count);

}  // namespace aotishim
