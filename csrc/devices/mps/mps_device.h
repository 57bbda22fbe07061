// The `mps` device: Metal (metal.h), with `sim`'s semantics. Plain C++: the
// same code runs over Apple's Metal and over the host Metal on Linux.
//
// Every allocation is one shared-storage Metal buffer whose `contents`
// pointer is the data pointer; any interior pointer finds its buffer through
// the allocation index (by range). A view binds (parent buffer, byte offset),
// so Metal orders work through views with work on the parent: there is never
// a second buffer object over the same bytes. All work goes through the one
// command buffer being encoded; it is committed when the host needs its
// results, at synchronize, or every flush_interval() commands. The host waits
// for the last command buffer that wrote (for reads) or used (for writes) an
// allocation, and only when that one is still pending. A failed command
// buffer's error is kept (the earliest) and raised at the next synchronize or
// host access.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"
#include "devices/mps/metal.h"
#include "ops/gemm.h"

namespace aotishim {

class MpsDevice final : public Device {
 public:
  MpsDevice(int32_t index, std::unique_ptr<metal::Device> metal);
  ~MpsDevice() override;

  void copy(const Tensor& dst, const Tensor& src) override;
  void download(void* host_dst, const Tensor& src_packed) override;
  void upload(const Tensor& dst_packed, const void* host_src) override;
  void synchronize() override;
  DeviceCounters counters() const override;

  // The gemm kernel (registered for ops::gemm; mps_gemm.cpp).
  void gemm(const GemmArgs& args);
  // Before the host touches mps memory directly (the memcpy shims): waits
  // for pending work on the bytes, as a host read or write, and raises a
  // deferred error. Host memory (not mps) passes.
  void prepare_host_access(const void* ptr, size_t nbytes, bool write);
  // Is ptr inside a live mps allocation?
  bool owns(const void* ptr) const;
  // Throws unless [ptr, ptr + nbytes) lies inside one live mps allocation.
  void check_range(const void* ptr, size_t nbytes, const char* what) const;
  // Bytes between two places of mps memory, on the queue.
  void copy_bytes(const void* dst, const void* src, size_t nbytes);
  // An error that happened where no caller could be told (a kernel shim
  // whose error code generated code ignores); raised like a failed command
  // buffer's.
  void defer_error(const std::string& message);
  // ---- for tests of the memory model (the host Metal's controls) ----
  // Binds every tensor of `storage` to `buffer` instead of its allocation's
  // buffer, and records none of their uses: what the old no-copy path did
  // to a view (a second buffer object over the parent's bytes, which
  // nothing orders with the parent's work). Ends when the storage dies.
  void bind_storage(const std::shared_ptr<Storage>& storage, std::shared_ptr<metal::Buffer> buffer);
  // The buffer and offset that [ptr, ptr + nbytes) binds.
  std::pair<std::shared_ptr<metal::Buffer>, size_t> buffer_at(const void* ptr, size_t nbytes) const;
  // The old host path: reads bytes without waiting for the device (the host
  // Metal's checker still sees the access).
  std::vector<uint8_t> read_unsynchronized(const void* ptr, size_t nbytes);
  // Does a command buffer not yet complete write the allocation holding ptr
  // (exact_base: only when ptr is the allocation's base address)?
  bool has_pending_writes(const void* ptr, bool exact_base) const;

  // Compiles MSL for the shims' shader libraries.
  std::shared_ptr<metal::Library> new_library(const std::string& source);
  const metal::Device& metal() const { return *metal_; }

  // ---- the one encode path ----
  // A buffer argument: the allocation's buffer and the byte offset in it.
  struct Binding {
    std::shared_ptr<metal::Buffer> buffer;
    size_t offset = 0;
    uintptr_t base = 0;  // the allocation (key of its state); 0: scratch, not recorded
  };
  // Handed to encode()'s body with the device locked. Every buffer is bound
  // through read()/write()/scratch(), which record the use as they bind, so
  // no command can touch an allocation without the device ordering it.
  class Encoder {
   public:
    void set_pipeline(const std::shared_ptr<metal::Pipeline>& pipeline);
    void set_kernel(const char* name);  // a kernel of the device's own library
    const metal::Pipeline& pipeline() const;
    // A tensor argument at a slot (an empty tensor binds scratch).
    void read(uint32_t index, const Tensor& t, const char* what);
    void write(uint32_t index, const Tensor& t, const char* what);
    // A byte range of mps memory.
    void read(uint32_t index, const void* ptr, size_t nbytes, const char* what);
    void write(uint32_t index, const void* ptr, size_t nbytes, const char* what);
    // A few zero bytes, for an absent optional argument; not recorded.
    void scratch(uint32_t index);
    void bytes(uint32_t index, const void* data, size_t length);
    void threadgroup_memory(uint32_t index, size_t length);
    void dispatch_threads(metal::Size grid, metal::Size group);
    void dispatch_threadgroups(metal::Size groups, metal::Size group);
    // Blit of packed bytes (4-byte aligned), source and destination recorded.
    void copy(const Tensor& dst, const Tensor& src);
    void copy(const void* dst, const void* src, size_t nbytes);
    // MPS matrix product; the matrices' buffers are bound by the device.
    void multiply(const metal::MatrixProduct& product, const Tensor& out, const Tensor& a,
                  const Tensor& b);
    Binding bind(const Tensor& t, const char* what) const;

   private:
    friend class MpsDevice;
    explicit Encoder(MpsDevice& device) : device_(device) {}
    metal::CommandBuffer& cb();
    void use(const Binding& b, bool write);
    MpsDevice& device_;
    std::shared_ptr<metal::Pipeline> pipeline_;
    size_t commands_ = 0;
  };
  // Runs body with the device locked and the open command buffer; counts
  // the commands it encoded and commits every flush_interval().
  void encode(const std::function<void(Encoder&)>& body);
  // Inside encode(): zeros exactly the view's elements, whatever its strides.
  void encode_zero(Encoder& e, const Tensor& dst);

  // AOTISHIM_MPS_FLUSH_INTERVAL, else 64: commands per command buffer
  // before it is committed without the host waiting.
  static size_t flush_interval();

 protected:
  void* raw_allocate(size_t nbytes) override;
  void raw_free(void* base, size_t nbytes) override;

 private:
  struct BufferState {
    std::shared_ptr<metal::Buffer> buffer;
    uint64_t last_write = 0;  // sequence number of a command buffer; 0: none
    uint64_t last_use = 0;
  };

  Binding bind_locked(const void* ptr, size_t nbytes, const char* what) const;
  // Waits as a host access of the binding's bytes needs, then lets the
  // Metal implementation check the access.
  void before_host_access(const Binding& b, size_t nbytes, bool write, const char* what);
  void check_host_access(const Binding& b, size_t nbytes, bool write, const char* what);
  Binding bind_locked(const Tensor& t, const char* what) const;
  metal::CommandBuffer& open_command_buffer();
  void commit_locked();
  // Forgets completed command buffers; the first failure is kept.
  void reap();
  // Waits until command buffer `seq` has completed, if it has not.
  void wait_for(uint64_t seq);
  void host_access(uintptr_t base, bool write);
  void synchronize_locked();
  void raise_deferred();
  std::shared_ptr<metal::Pipeline> builtin_pipeline(const char* name);
  void encode_copy(Encoder& e, const Tensor& dst, const Tensor& src);

  std::unique_ptr<metal::Device> metal_;
  std::shared_ptr<metal::Library> library_;  // our kernels, compiled on first use
  std::map<std::string, std::shared_ptr<metal::Pipeline>> pipelines_;
  std::shared_ptr<metal::Buffer> zeros_;  // a few zero bytes: scratch and fill source

  mutable std::mutex mutex_;
  std::map<uintptr_t, BufferState> buffers_;  // by base address
  struct BoundStorage {
    std::weak_ptr<Storage> storage;
    std::shared_ptr<metal::Buffer> buffer;
  };
  std::map<uint64_t, BoundStorage> bound_storages_;  // by storage id (bind_storage)
  std::shared_ptr<metal::CommandBuffer> open_;  // being encoded, not committed
  uint64_t open_seq_ = 0;
  size_t open_commands_ = 0;
  uint64_t next_seq_ = 1;
  std::deque<std::pair<uint64_t, std::shared_ptr<metal::CommandBuffer>>> in_flight_;
  DeviceCounters counters_;
  std::string deferred_;
  const size_t flush_interval_;
};

// mps:index, created on first use (throws where there is no Metal device).
MpsDevice& mps_device(int32_t index = 0);

}  // namespace aotishim
