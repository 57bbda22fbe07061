#include "devices/sim/sim_device.h"

#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/strided.h"
#include "devices/sim/hazard_checker.h"
#include "devices/cpu/host_copy.h"
#include "devices/cpu/host_gemm.h"

namespace aotishim {

using sim_detail::Binding;
using sim_detail::Command;

namespace {

// 0xFF bytes are NaN in every float format we support, -1 in signed ints.
constexpr unsigned char kPoison = 0xFF;
constexpr size_t kBlockRound = 256;
constexpr size_t kCacheLimit = size_t{256} << 20;

std::unique_ptr<Device> make_sim(int32_t index) { return std::make_unique<SimDevice>(index); }
int sim_count() { return 1; }
const bool registered = (register_backend(DeviceType::Sim, &make_sim, &sim_count), true);

// The layout a GPU matrix kernel takes as is: rows of unit-stride elements.
bool row_major(const Tensor& t) {
  const MatrixView v = row_major_view(t.sizes[1], t.sizes[2], t.strides[1], t.strides[2]);
  return v.ok && !v.transposed;
}

void sim_gemm(const GemmArgs& args) { static_cast<SimDevice&>(args.out.device()).gemm(args); }
AOTISHIM_REGISTER_KERNEL(ops::gemm, DeviceType::Sim, sim_gemm);

}  // namespace

SimDevice& sim_device(int32_t index) {
  return static_cast<SimDevice&>(get_device(DeviceType::Sim, index));
}

SimDevice::SimDevice(int32_t index) : Device(DeviceType::Sim, index), rng_(0) {
  (void)registered;
}

SimDevice::~SimDevice() {
  // Pending commands hold storages of this device; run them while it exists.
  try {
    std::lock_guard<std::recursive_mutex> lock(mutex_);
    drain();
  } catch (const std::exception& e) {
    log(LogLevel::Error, str("sim: pending work failed at shutdown: ", e.what()));
  }
  for (auto& [size, blocks] : cached_)
    for (void* p : blocks) std::free(p);
}

// ---- memory ----

size_t SimDevice::block_size(size_t nbytes) {
  return (std::max<size_t>(nbytes, 1) + kBlockRound - 1) / kBlockRound * kBlockRound;
}

void* SimDevice::raw_allocate(size_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const size_t n = block_size(nbytes);
  void* p = nullptr;
  auto it = cached_.find(n);
  if (it != cached_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    cached_bytes_ -= n;
  } else {
    p = std::malloc(n);  // 16-byte aligned: enough for every dtype
    AOTISHIM_CHECK(p != nullptr, "sim: out of memory allocating ", nbytes, " bytes");
  }
  std::memset(p, kPoison, n);
  return p;
}

void SimDevice::raw_free(void* base, size_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  // Freeing memory waits for work on it, as cudaFree does.
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  bool busy = false;
  for (const Command& c : stream_.pending_commands())
    for (const Binding& bd : c.bindings)
      busy = busy || (bd.nbytes > 0 && bd.begin() < b + nbytes && b < bd.end());
  if (busy) {
    ++counters_.synchronizes;
    drain();
  }
  // Like a GPU's caching allocator, keep the block for the next request of
  // its size, so freed addresses come back (last freed, first reused).
  const size_t n = block_size(nbytes);
  if (cached_bytes_ + n <= kCacheLimit) {
    cached_[n].push_back(base);
    cached_bytes_ += n;
  } else {
    std::free(base);
  }
}

SimDevice::BufferRef SimDevice::resolve_pointer(const void* ptr) const {
  if (auto a = allocations().find(ptr)) {
    return {a->id, reinterpret_cast<uintptr_t>(a->base), a->nbytes};
  }
  return {0, 0, std::numeric_limits<size_t>::max()};
}

SimDevice::BufferRef SimDevice::resolve(const Storage& storage) const {
  auto it = aliases_.find(storage.id());
  if (it != aliases_.end()) return it->second.buffer;
  // Any storage over sim memory, owned or borrowed at any interior address,
  // binds the allocation that contains it.
  return resolve_pointer(storage.data());
}

Binding SimDevice::bind(const Tensor& t, bool write, const char* role) const {
  AOTISHIM_CHECK(&t.device() == this, "sim: ", role, " is on ", t.device().name(), ", not ",
                 name());
  BufferRef buf = resolve(*t.storage);
  const uintptr_t begin = reinterpret_cast<uintptr_t>(t.data());
  const size_t n = t.extent_bytes();
  AOTISHIM_CHECK(begin >= buf.base && begin - buf.base + n <= buf.nbytes, "sim: ", role,
                 " view at 0x", std::hex, begin, std::dec, " (", n,
                 " bytes) reaches outside its buffer object #", buf.id);
  Binding b;
  b.buffer = buf.id;
  b.base = buf.base;
  b.offset = begin - buf.base;
  b.nbytes = n;
  b.write = write;
  b.role = role;
  return b;
}

bool SimDevice::buffer_busy(uint64_t buffer, bool writes_only) const {
  for (const Command& c : stream_.pending_commands())
    for (const Binding& b : c.bindings)
      if (b.buffer == buffer && (b.write || !writes_only)) return true;
  return false;
}

bool SimDevice::is_buffer_base(const void* addr) const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto a = allocations().find(addr);
  if (a && a->base == addr) return true;
  for (const auto& [id, alias] : aliases_)
    if (!alias.alias.expired() && alias.buffer.base == reinterpret_cast<uintptr_t>(addr)) return true;
  return false;
}

bool SimDevice::has_pending_writes_exact_base(const void* addr) const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto a = allocations().find(addr);
  if (!a || a->base != addr) return false;
  return buffer_busy(a->id, true);
}

bool SimDevice::has_pending_writes(const void* addr) const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto a = allocations().find(addr);
  return a && buffer_busy(a->id, true);
}

// ---- work ----

Command SimDevice::copy_command(const char* name, const Tensor& dst, const Tensor& src) const {
  Command c;
  c.name = name;
  c.bindings = {bind(src, false, "src"), bind(dst, true, "dst")};
  c.keepalive = {src.storage, dst.storage};
  c.run = [dst, src] { host_copy(dst, src); };
  return c;
}

void SimDevice::copy(const Tensor& dst, const Tensor& src) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  std::vector<Command> commands;
  commands.push_back(copy_command("copy", dst, src));
  submit(std::move(commands));
}

void SimDevice::gemm(const GemmArgs& args) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  std::vector<Command> commands;
  GemmArgs run = args;
  // Operands the kernel cannot take as they are get packed by a command on
  // the stream, which binds the source's buffer object and so runs after
  // whatever produces it. The host never packs device memory.
  if (!row_major(args.a)) {
    run.a = make_empty(*this, args.a.dtype, args.a.sizes);
    commands.push_back(copy_command("pack a", run.a, args.a));
  }
  if (!row_major(args.b)) {
    run.b = make_empty(*this, args.b.dtype, args.b.sizes);
    commands.push_back(copy_command("pack b", run.b, args.b));
  }
  const bool stage_out = !row_major(args.out);
  if (stage_out) {
    run.out = make_empty(*this, args.out.dtype, args.out.sizes);
    if (args.beta != 0.0) commands.push_back(copy_command("pack out", run.out, args.out));
  }
  Command g;
  g.name = "gemm";
  g.bindings = {bind(run.a, false, "a"), bind(run.b, false, "b"), bind(run.out, true, "out")};
  // With beta != 0 the kernel also reads out; the write binding orders it.
  g.keepalive = {run.a.storage, run.b.storage, run.out.storage};
  g.run = [run] { host_gemm(run); };
  commands.push_back(std::move(g));
  if (stage_out) commands.push_back(copy_command("unpack out", args.out, run.out));
  submit(std::move(commands));
}

void SimDevice::host_command(const char* name, const std::vector<Role>& reads,
                             const std::vector<Role>& writes, std::function<void()> run) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Command c;
  c.name = name;
  for (bool write : {false, true}) {
    for (const auto& [role, t] : write ? writes : reads) {
      if (t->numel() == 0) continue;
      c.bindings.push_back(bind(*t, write, role));
      c.keepalive.push_back(t->storage);
    }
  }
  c.run = std::move(run);
  std::vector<Command> commands;
  commands.push_back(std::move(c));
  submit(std::move(commands));
}

void SimDevice::submit(std::vector<Command> commands) {
  if (config_.checker) {
    for (size_t i = 0; i < commands.size(); ++i) {
      if (auto hazard = sim_detail::find_command_hazard(commands[i], stream_.pending_commands()))
        report_hazard(*hazard);
    }
  }
  for (Command& c : commands) {
    stream_.submit(std::move(c));
    ++counters_.commands;
  }
  if (config_.flush_interval > 0 && stream_.pending() >= config_.flush_interval) drain();
}

void SimDevice::drain() {
  std::vector<Command> order = stream_.take_scheduled(config_.order, rng_);
  if (order.empty()) return;
  last_order_.clear();
  std::string failure;
  for (Command& c : order) {
    last_order_.push_back(str("#", c.seq, " ", c.name));
    try {
      c.run();
    } catch (const std::exception& e) {
      if (failure.empty()) failure = str("sim: ", sim_detail::describe(c), " failed: ", e.what());
    }
  }
  order.clear();  // releases storages, possibly re-entering raw_free
  AOTISHIM_CHECK(failure.empty(), failure);
}

void SimDevice::synchronize() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  ++counters_.synchronizes;
  drain();
  prune_aliases();
}

void SimDevice::report_hazard(const std::string& message) {
  ++counters_.hazards;
  fail(message);
}

// ---- host access ----

void SimDevice::host_access(const std::string& what, uint64_t buffer, const void* ptr,
                            size_t nbytes, bool write) {
  // Reads wait for writes; writes wait for any use. The decision is per
  // buffer object, as waiting on a Metal command buffer is.
  if (buffer_busy(buffer, !write)) {
    ++counters_.synchronizes;
    drain();
    return;
  }
  if (config_.checker) {
    if (auto hazard = sim_detail::find_host_hazard(what, ptr, nbytes, write, stream_.pending_commands()))
      report_hazard(*hazard);
  }
}

void SimDevice::download(void* host_dst, const Tensor& src_packed) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Binding b = bind(src_packed, false, "download source");
  const size_t n = static_cast<size_t>(src_packed.numel()) * src_packed.itemsize();
  host_access("host read (download)", b.buffer, src_packed.data(), n, false);
  if (n > 0) std::memcpy(host_dst, src_packed.data(), n);
}

void SimDevice::upload(const Tensor& dst_packed, const void* host_src) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Binding b = bind(dst_packed, true, "upload destination");
  const size_t n = static_cast<size_t>(dst_packed.numel()) * dst_packed.itemsize();
  host_access("host write (upload)", b.buffer, dst_packed.data(), n, true);
  if (n > 0) std::memcpy(dst_packed.data(), host_src, n);
}

std::vector<uint8_t> SimDevice::host_read(const void* addr, size_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  auto a = allocations().find(addr);
  const uintptr_t p = reinterpret_cast<uintptr_t>(addr);
  // Compared as a length left, so a huge nbytes cannot wrap p + nbytes around.
  AOTISHIM_CHECK(a && nbytes <= reinterpret_cast<uintptr_t>(a->base) + a->nbytes - p,
                 "sim: raw host read of ", nbytes, " bytes at 0x", std::hex, p, std::dec,
                 " is not inside one live sim allocation");
  if (config_.checker) {
    if (auto hazard = sim_detail::find_host_hazard("raw host read", addr, nbytes, false,
                                                   stream_.pending_commands()))
      report_hazard(*hazard);
  }
  const auto* bytes = static_cast<const uint8_t*>(addr);
  return std::vector<uint8_t>(bytes, bytes + nbytes);
}

// ---- aliases ----

Tensor SimDevice::make_alias(const Tensor& tensor) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  prune_aliases();
  AOTISHIM_CHECK(&tensor.device() == this, "sim: make_alias needs a tensor on ", name(),
                 ", got one on ", tensor.device().name());
  const size_t n = std::max<size_t>(tensor.extent_bytes(), 1);
  Tensor alias;
  // The alias keeps the parent's storage (and so its bytes) alive.
  alias.storage = Storage::borrow(*this, tensor.data(), n, tensor.storage);
  alias.storage_offset = 0;
  alias.sizes = tensor.sizes;
  alias.strides = tensor.strides;
  alias.dtype = tensor.dtype;
  Alias entry;
  entry.alias = alias.storage;
  entry.buffer = {next_buffer_id(), reinterpret_cast<uintptr_t>(tensor.data()), n};
  aliases_[alias.storage->id()] = std::move(entry);
  return alias;
}

void SimDevice::prune_aliases() {
  for (auto it = aliases_.begin(); it != aliases_.end();) {
    if (it->second.alias.expired()) {
      it = aliases_.erase(it);
    } else {
      ++it;
    }
  }
}

// ---- controls ----

void SimDevice::configure(const sim::Config& config) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  AOTISHIM_CHECK(static_cast<int32_t>(config.order) >= 0 && static_cast<int32_t>(config.order) <= 2,
                 "sim: unknown scheduler order ", static_cast<int32_t>(config.order));
  config_ = config;
  rng_.seed(config.seed);
}

sim::Config SimDevice::config() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return config_;
}

size_t SimDevice::pending_commands() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return stream_.pending();
}

std::vector<std::string> SimDevice::last_execution_order() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return last_order_;
}

DeviceCounters SimDevice::counters() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return counters_;
}

void SimDevice::reset_counters() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  counters_ = {};
}

}  // namespace aotishim
