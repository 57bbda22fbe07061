// The `mps` device: Metal on Apple silicon, with `sim`'s semantics.
//
// Every allocation is one shared-storage MTLBuffer whose `contents` pointer
// is the data pointer; any interior pointer finds its buffer through the
// allocation index (by range). A view binds (parent buffer, byte offset), so
// Metal orders work through views with work on the parent: there is never a
// second buffer object over the same bytes. All work goes on one command
// queue, through the command buffer being encoded; it is committed when the
// host needs its results, at synchronize, or every kFlushInterval commands.
// The host waits for the last command buffer that wrote (for reads) or used
// (for writes) an allocation, and only when that one is still pending.
//
// Objective-C++ with ARC: the strong `id` members below are released by the
// compiler.
#pragma once

#import <Metal/Metal.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "core/device.h"
#include "ops/gemm.h"

namespace aotishim {

class MpsDevice final : public Device {
 public:
  explicit MpsDevice(int32_t index);
  ~MpsDevice() override;

  void copy(const Tensor& dst, const Tensor& src) override;
  // The gemm kernel (registered for ops::gemm).
  void gemm(const GemmArgs& args);
  void download(void* host_dst, const Tensor& src_packed) override;
  void upload(const Tensor& dst_packed, const void* host_src) override;
  void synchronize() override;
  // Before the host touches mps memory directly (mps_shim.mm's memcpy shims):
  // waits for pending work on the bytes, as a host read or write.
  void prepare_host_access(const void* ptr, size_t nbytes, bool write);
  DeviceCounters counters() const override;

  // A buffer argument of a kernel: the allocation's buffer and the byte
  // offset of `ptr` in it. Throws unless [ptr, ptr + nbytes) lies inside one
  // live mps allocation. An empty tensor binds a scratch buffer (base 0)
  // that nothing records.
  struct Binding {
    id<MTLBuffer> buffer = nil;
    size_t offset = 0;
    uintptr_t base = 0;  // the allocation (key of its state)
  };
  Binding bind_pointer(const void* ptr, size_t nbytes, const char* what) const;
  Binding bind(const Tensor& t, const char* what) const;
  // Is ptr inside a live mps allocation?
  bool owns(const void* ptr) const;

  // Bytes between two places of mps memory, on the queue.
  void copy_bytes(const void* dst, const void* src, size_t nbytes);

  // A kernel dispatch for the aoti_torch_mps_* shims: every buffer argument
  // counts as read and written.
  struct KernelArg {
    enum Kind { kNone, kBuffer, kInt } kind = kNone;
    Binding buffer;
    int64_t value = 0;
  };
  void dispatch(id<MTLComputePipelineState> pso, const std::vector<KernelArg>& args,
                MTLSize threads, MTLSize group);

  // One dispatch of a kernel of the device's library, for the op kernels
  // (mps_conv.mm, mps_sdpa.mm): `buffers` bound at indices 0.. in order and
  // `params` (setBytes) at the next index; each buffer is recorded as read or
  // written, so the dispatch orders with other work on its allocations.
  // `dispatch` issues the dispatch on the encoder with the kernel's pipeline
  // (it may throw before dispatching: nothing is then recorded).
  struct BufferUse {
    Binding binding;
    bool write = false;
  };
  using Dispatch = std::function<void(id<MTLComputeCommandEncoder>, id<MTLComputePipelineState>)>;
  void encode_kernel(const char* name, const std::vector<BufferUse>& buffers, const void* params,
                     size_t params_bytes, const Dispatch& dispatch);
  // What an absent optional buffer argument binds: a few zero bytes that
  // nothing records.
  Binding scratch() const;

  id<MTLDevice> metal() const { return device_; }
  std::recursive_mutex& mutex() const { return mutex_; }
  // An error that happened where no caller could be told (a failed command
  // buffer, a kernel shim whose error code generated code ignores); it is
  // raised by the next synchronize or host access.
  void defer_error(const std::string& message);

  static constexpr size_t kFlushInterval = 64;

 protected:
  void* raw_allocate(size_t nbytes) override;
  void raw_free(void* base, size_t nbytes) override;

 private:
  struct BufferState {
    id<MTLBuffer> buffer = nil;
    uint64_t last_write = 0;  // sequence number of a command buffer; 0: none
    uint64_t last_use = 0;
  };

  BufferState& state(uintptr_t base);
  id<MTLCommandBuffer> command_buffer();
  id<MTLComputeCommandEncoder> compute_encoder();
  id<MTLBlitCommandEncoder> blit_encoder();
  void end_encoder();
  // Records that the open command buffer reads/writes these allocations and
  // counts one command; commits every kFlushInterval commands.
  void record(std::initializer_list<std::pair<uintptr_t, bool>> uses);
  void record_one(uintptr_t base, bool write);
  void finish_command();
  void commit();
  // Forgets completed command buffers; a failed one becomes a deferred error.
  void reap();
  // Waits until command buffer `seq` has completed, if it has not.
  void wait_for(uint64_t seq);
  void host_access(uintptr_t base, bool write);
  void raise_deferred();
  id<MTLComputePipelineState> pipeline(const char* name);
  void encode_copy(const Tensor& dst, const Tensor& src);
  void encode_blit(const Binding& dst, const Binding& src, size_t nbytes);
  void encode_copy_kernel(const Binding& dst, const Binding& src, const void* params,
                          uint64_t numel);
  void encode_zero(const Tensor& dst);
  bool encode_mps_gemm(const GemmArgs& args);
  void encode_kernel_gemm(const GemmArgs& args);

  id<MTLDevice> device_ = nil;
  id<MTLCommandQueue> queue_ = nil;
  id<MTLLibrary> library_ = nil;  // our kernels, compiled on first use
  std::map<std::string, id<MTLComputePipelineState>> pipelines_;
  id<MTLBuffer> zeros_ = nil;  // a few zero bytes, a broadcast source for fills

  mutable std::recursive_mutex mutex_;  // recursive: freeing a storage re-enters
  std::map<uintptr_t, BufferState> buffers_;  // by base address
  id<MTLCommandBuffer> open_ = nil;           // being encoded, not committed
  uint64_t open_seq_ = 0;
  size_t open_commands_ = 0;
  id<MTLComputeCommandEncoder> compute_ = nil;
  id<MTLBlitCommandEncoder> blit_ = nil;
  uint64_t next_seq_ = 1;
  std::deque<std::pair<uint64_t, id<MTLCommandBuffer>>> in_flight_;  // committed
  DeviceCounters counters_;

  std::string deferred_;
};

// mps:index, created on first use (throws where Metal has no device).
MpsDevice& mps_device(int32_t index = 0);

}  // namespace aotishim
