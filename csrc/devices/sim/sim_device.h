// The `sim` device: host memory behind an asynchronous, Metal-like stream.
// See aotishim/sim.h for what it models and the probes it offers tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aotishim/sim.h"
#include "core/tensor.h"
#include "core/device.h"
#include "devices/sim/command_stream.h"
#include "ops/gemm.h"

namespace aotishim {

class SimDevice final : public Device {
 public:
  explicit SimDevice(int32_t index);
  ~SimDevice() override;

  void copy(const Tensor& dst, const Tensor& src) override;
  // The gemm kernel (registered for ops::gemm): records the product and the
  // packing it needs as commands.
  void gemm(const GemmArgs& args);
  // A host kernel run as one command on the stream (how the cpu kernels of
  // other ops serve sim): every tensor it reads or writes is bound, so the
  // command orders with other work on those buffers, and kept alive until
  // it has run. Empty tensors are not bound.
  using Role = std::pair<const char*, const Tensor*>;
  void host_command(const char* name, const std::vector<Role>& reads,
                    const std::vector<Role>& writes, std::function<void()> run);
  void download(void* host_dst, const Tensor& src_packed) override;
  void upload(const Tensor& dst_packed, const void* host_src) override;
  void synchronize() override;
  DeviceCounters counters() const override;

  void configure(const sim::Config& config);
  sim::Config config() const;
  size_t pending_commands() const;
  std::vector<std::string> last_execution_order() const;
  void reset_counters();
  Tensor make_alias(const Tensor& tensor);
  bool is_buffer_base(const void* addr) const;
  bool has_pending_writes_exact_base(const void* addr) const;
  bool has_pending_writes(const void* addr) const;
  std::vector<uint8_t> host_read(const void* addr, size_t nbytes);

 protected:
  void* raw_allocate(size_t nbytes) override;
  void raw_free(void* base, size_t nbytes) override;

 private:
  // A buffer object: an allocation, a no-copy alias, or (id 0) memory the
  // sim did not allocate, which all counts as one buffer object.
  struct BufferRef {
    uint64_t id = 0;
    uintptr_t base = 0;
    size_t nbytes = 0;
  };
  struct Alias {
    std::weak_ptr<Storage> alias;  // the entry is stale once it expires
    BufferRef buffer;
  };

  BufferRef resolve(const Storage& storage) const;
  BufferRef resolve_pointer(const void* ptr) const;
  sim_detail::Binding bind(const Tensor& t, bool write, const char* role) const;
  sim_detail::Command copy_command(const char* name, const Tensor& dst, const Tensor& src) const;
  bool buffer_busy(uint64_t buffer, bool writes_only) const;
  // Makes a host access to [ptr, ptr + nbytes) of `buffer` safe: waits when
  // that buffer object has pending work the access conflicts with, otherwise
  // lets the checker look for work through other buffer objects.
  void host_access(const std::string& what, uint64_t buffer, const void* ptr, size_t nbytes,
                   bool write);
  void submit(std::vector<sim_detail::Command> commands);
  void drain();
  void prune_aliases();
  [[noreturn]] void report_hazard(const std::string& message);
  static size_t block_size(size_t nbytes);

  mutable std::recursive_mutex mutex_;  // recursive: freeing a storage re-enters
  sim_detail::CommandStream stream_;
  sim::Config config_;
  std::mt19937_64 rng_;
  DeviceCounters counters_;
  std::vector<std::string> last_order_;
  std::unordered_map<uint64_t, Alias> aliases_;  // by alias storage id
  std::unordered_map<size_t, std::vector<void*>> cached_;  // freed blocks by size
  size_t cached_bytes_ = 0;
};

// sim:index, created on first use.
SimDevice& sim_device(int32_t index = 0);

}  // namespace aotishim
