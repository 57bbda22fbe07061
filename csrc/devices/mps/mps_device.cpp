#include "devices/mps/mps_device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "core/strided.h"
#include "devices/mps/mps_kernels.h"

namespace aotishim {

namespace {

int mps_count() { return metal::has_system_device() ? 1 : 0; }

std::unique_ptr<Device> make_mps(int32_t index) {
  std::unique_ptr<metal::Device> metal = metal::create_system_device();
  AOTISHIM_CHECK(metal != nullptr, "mps: this machine has no Metal device");
  return std::make_unique<MpsDevice>(index, std::move(metal));
}
const bool registered = (register_backend(DeviceType::MPS, &make_mps, &mps_count), true);

constexpr size_t kMinBufferBytes = 16;  // Metal rejects zero-length buffers

bool pending(const metal::CommandBuffer& cb) {
  const metal::Status s = cb.status();
  return s != metal::Status::Completed && s != metal::Status::Error;
}

// Dims of size 1 dropped, neighbours merged where both views step evenly
// across them: fewer dims for the copy kernel, and a plain byte range when
// both views are packed.
struct CopyDim {
  int64_t size, dst_stride, src_stride;
};

std::vector<CopyDim> coalesce(const Tensor& dst, const Tensor& src) {
  std::vector<CopyDim> dims;
  for (const WalkDim& d : coalesce_dims(dst.sizes, {&dst.strides, &src.strides}))
    dims.push_back({d.size, d.strides[0], d.strides[1]});
  return dims;
}

mps::CopyParams copy_params(const std::vector<CopyDim>& dims, DType dst, DType src) {
  // The strided copy kernel knows the dtypes up to int64 and the real floats.
  for (DType t : {dst, src})
    AOTISHIM_CHECK(!is_complex(t) && t != DType::UInt16 && t != DType::UInt32 &&
                       t != DType::UInt64,
                   "mps: strided or converting copies of ", dtype_name(t),
                   " are not supported (only packed copies of the same dtype)");
  AOTISHIM_CHECK(dims.size() <= static_cast<size_t>(mps::kMaxCopyDims), "mps: copy of a view with ",
                 dims.size(), " dimensions that do not merge (at most ", mps::kMaxCopyDims,
                 " supported)");
  mps::CopyParams p{};
  p.ndim = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    p.sizes[i] = dims[i].size;
    p.dst_strides[i] = dims[i].dst_stride;
    p.src_strides[i] = dims[i].src_stride;
  }
  p.dst_dtype = static_cast<int32_t>(dst);
  p.src_dtype = static_cast<int32_t>(src);
  return p;
}

// The copy kernel over `numel` elements, one thread each.
void dispatch_copy(MpsDevice::Encoder& e, const mps::CopyParams& p, uint64_t numel) {
  AOTISHIM_CHECK(numel <= std::numeric_limits<uint32_t>::max(), "mps: copy of ", numel,
                 " elements is too large for one dispatch");
  e.bytes(2, &p, sizeof(p));
  const uint64_t width = std::min<uint64_t>(e.pipeline().max_threads_per_group(), numel);
  e.dispatch_threads({numel, 1, 1}, {width, 1, 1});
}

bool aligned(size_t offset) { return offset % metal::kBlitAlignment == 0; }

}  // namespace

MpsDevice& mps_device(int32_t index) {
  return static_cast<MpsDevice&>(get_device(DeviceType::MPS, index));
}

size_t MpsDevice::flush_interval() {
  const char* v = std::getenv("AOTISHIM_MPS_FLUSH_INTERVAL");
  if (v == nullptr || *v == '\0') return 64;
  char* end = nullptr;
  const unsigned long n = std::strtoul(v, &end, 10);
  AOTISHIM_CHECK(end != v && *end == '\0' && n >= 1, "AOTISHIM_MPS_FLUSH_INTERVAL='", v,
                 "' is not a positive number of commands");
  return n;
}

MpsDevice::MpsDevice(int32_t index, std::unique_ptr<metal::Device> metal)
    : Device(DeviceType::MPS, index), metal_(std::move(metal)), flush_interval_(flush_interval()) {
  (void)registered;
  zeros_ = metal_->new_buffer(kMinBufferBytes);
  AOTISHIM_CHECK(zeros_ != nullptr, "mps: could not allocate a scratch buffer");
  std::memset(zeros_->contents(), 0, kMinBufferBytes);
  log(LogLevel::Info, str(name(), " runs on ", metal_->description()));
}

MpsDevice::~MpsDevice() {
  try {
    synchronize();
  } catch (const std::exception& e) {
    log(LogLevel::Error, str("mps: pending work failed at shutdown: ", e.what()));
  }
}

// ---- memory ----

void* MpsDevice::raw_allocate(size_t nbytes) {
  std::shared_ptr<metal::Buffer> buffer = metal_->new_buffer(std::max(nbytes, kMinBufferBytes));
  if (buffer == nullptr) return nullptr;  // Device::allocate reports it as out of memory
  void* base = buffer->contents();
  std::lock_guard<std::mutex> lock(mutex_);
  BufferState s;
  s.buffer = std::move(buffer);
  buffers_[reinterpret_cast<uintptr_t>(base)] = std::move(s);
  return base;
}

void MpsDevice::raw_free(void* base, size_t nbytes) {
  // No wait: a command buffer keeps the buffers it uses, so the memory
  // outlives any work still pending on it and is never reused under it.
  // The buffer is released after unlocking.
  std::shared_ptr<metal::Buffer> released;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = buffers_.find(reinterpret_cast<uintptr_t>(base));
    if (it == buffers_.end()) return;
    released = std::move(it->second.buffer);
    buffers_.erase(it);
  }
}

bool MpsDevice::owns(const void* ptr) const { return allocations().find(ptr).has_value(); }

void MpsDevice::check_range(const void* ptr, size_t nbytes, const char* what) const {
  std::lock_guard<std::mutex> lock(mutex_);
  bind_locked(ptr, nbytes, what);
}

MpsDevice::Binding MpsDevice::bind_locked(const void* ptr, size_t nbytes, const char* what) const {
  auto a = allocations().find(ptr);
  AOTISHIM_CHECK(a.has_value(), "mps: ", what, " at ", ptr,
                 " is not inside a live mps allocation (mps memory comes from mps tensors or "
                 "aoti_torch_mps_malloc)");
  const uintptr_t base = reinterpret_cast<uintptr_t>(a->base);
  const size_t offset = reinterpret_cast<uintptr_t>(ptr) - base;
  AOTISHIM_CHECK(offset <= a->nbytes && nbytes <= a->nbytes - offset, "mps: ", what, " (",
                 nbytes, " bytes at offset ", offset, ") reaches past its allocation of ",
                 a->nbytes, " bytes");
  auto it = buffers_.find(base);
  AOTISHIM_CHECK(it != buffers_.end(), "mps: no buffer for the allocation at ", a->base);
  Binding b;
  b.buffer = it->second.buffer;
  b.offset = offset;
  b.base = base;
  return b;
}

MpsDevice::Binding MpsDevice::bind_locked(const Tensor& t, const char* what) const {
  AOTISHIM_CHECK(&t.device() == this, "mps: ", what, " is on ", t.device().name(), ", not ",
                 name());
  if (t.numel() == 0) {
    Binding b;
    b.buffer = zeros_;
    return b;
  }
  if (!bound_storages_.empty()) {
    auto it = bound_storages_.find(t.storage->id());
    if (it != bound_storages_.end() && !it->second.storage.expired()) {
      Binding b;
      b.buffer = it->second.buffer;
      const auto begin = reinterpret_cast<uintptr_t>(t.data());
      const auto start = reinterpret_cast<uintptr_t>(b.buffer->contents());
      AOTISHIM_CHECK(begin >= start && begin - start + t.extent_bytes() <= b.buffer->length(), "mps: ",
                     what, " reaches outside the buffer its storage is bound to");
      b.offset = begin - start;
      return b;  // base 0: its uses are not recorded
    }
  }
  return bind_locked(t.data(), t.extent_bytes(), what);
}

// ---- the encoder ----

metal::CommandBuffer& MpsDevice::Encoder::cb() { return device_.open_command_buffer(); }

void MpsDevice::Encoder::use(const Binding& b, bool write) {
  if (b.base == 0) return;  // scratch
  auto it = device_.buffers_.find(b.base);
  AOTISHIM_CHECK(it != device_.buffers_.end(), "mps: no buffer for the allocation at 0x",
                 std::hex, b.base);
  it->second.last_use = device_.open_seq_;
  if (write) it->second.last_write = device_.open_seq_;
}

MpsDevice::Binding MpsDevice::Encoder::bind(const Tensor& t, const char* what) const {
  return device_.bind_locked(t, what);
}

void MpsDevice::Encoder::set_pipeline(const std::shared_ptr<metal::Pipeline>& pipeline) {
  pipeline_ = pipeline;
  cb().set_pipeline(pipeline);
}

void MpsDevice::Encoder::set_kernel(const char* name) { set_pipeline(device_.builtin_pipeline(name)); }

const metal::Pipeline& MpsDevice::Encoder::pipeline() const {
  AOTISHIM_CHECK(pipeline_ != nullptr, "mps: no pipeline set");
  return *pipeline_;
}

void MpsDevice::Encoder::read(uint32_t index, const Tensor& t, const char* what) {
  Binding b = bind(t, what);
  cb().set_buffer(index, b.buffer, b.offset);
  use(b, false);
}

void MpsDevice::Encoder::write(uint32_t index, const Tensor& t, const char* what) {
  Binding b = bind(t, what);
  cb().set_buffer(index, b.buffer, b.offset);
  use(b, true);
}

void MpsDevice::Encoder::read(uint32_t index, const void* ptr, size_t nbytes, const char* what) {
  Binding b = device_.bind_locked(ptr, nbytes, what);
  cb().set_buffer(index, b.buffer, b.offset);
  use(b, false);
}

void MpsDevice::Encoder::write(uint32_t index, const void* ptr, size_t nbytes, const char* what) {
  Binding b = device_.bind_locked(ptr, nbytes, what);
  cb().set_buffer(index, b.buffer, b.offset);
  use(b, true);
}

void MpsDevice::Encoder::scratch(uint32_t index) { cb().set_buffer(index, device_.zeros_, 0); }

void MpsDevice::Encoder::bytes(uint32_t index, const void* data, size_t length) {
  cb().set_bytes(index, data, length);
}

void MpsDevice::Encoder::threadgroup_memory(uint32_t index, size_t length) {
  cb().set_threadgroup_memory(index, length);
}

void MpsDevice::Encoder::dispatch_threads(metal::Size grid, metal::Size group) {
  cb().dispatch_threads(grid, group);
  ++commands_;
}

void MpsDevice::Encoder::dispatch_threadgroups(metal::Size groups, metal::Size group) {
  cb().dispatch_threadgroups(groups, group);
  ++commands_;
}

void MpsDevice::Encoder::copy(const void* dst, const void* src, size_t nbytes) {
  Binding d = device_.bind_locked(dst, nbytes, "copy destination");
  Binding s = device_.bind_locked(src, nbytes, "copy source");
  cb().copy(s.buffer, s.offset, d.buffer, d.offset, nbytes);
  use(d, true);
  use(s, false);
  ++commands_;
}

void MpsDevice::Encoder::copy(const Tensor& dst, const Tensor& src) {
  copy(dst.data(), src.data(), static_cast<size_t>(dst.numel()) * dst.itemsize());
}

void MpsDevice::Encoder::multiply(const metal::MatrixProduct& product, const Tensor& out,
                                  const Tensor& a, const Tensor& b) {
  Binding bo = bind(out, "out"), ba = bind(a, "a"), bb = bind(b, "b");
  metal::MatrixProduct p = product;
  p.result.buffer = bo.buffer;
  p.result.offset = bo.offset;
  p.left.buffer = ba.buffer;
  p.left.offset = ba.offset;
  p.right.buffer = bb.buffer;
  p.right.offset = bb.offset;
  cb().multiply(p);
  use(bo, true);
  use(ba, false);
  use(bb, false);
  ++commands_;
}

void MpsDevice::encode(const std::function<void(Encoder&)>& body) {
  std::lock_guard<std::mutex> lock(mutex_);
  Encoder e(*this);
  try {
    body(e);
  } catch (...) {
    counters_.commands += e.commands_;
    open_commands_ += e.commands_;
    throw;
  }
  counters_.commands += e.commands_;
  open_commands_ += e.commands_;
  // The one place that decides to commit without the host waiting.
  if (open_commands_ >= flush_interval_) commit_locked();
}

// ---- command buffers ----

metal::CommandBuffer& MpsDevice::open_command_buffer() {
  if (open_ == nullptr) {
    open_ = metal_->new_command_buffer();
    AOTISHIM_CHECK(open_ != nullptr, "mps: could not create a command buffer");
    open_seq_ = next_seq_++;
    open_commands_ = 0;
  }
  return *open_;
}

void MpsDevice::commit_locked() {
  if (open_ == nullptr) return;
  open_->commit();
  in_flight_.emplace_back(open_seq_, std::move(open_));
  open_ = nullptr;
  open_commands_ = 0;
  reap();
}

void MpsDevice::reap() {
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (pending(*it->second)) {
      ++it;
      continue;
    }
    if (it->second->status() == metal::Status::Error) {
      const std::string message =
          str("mps: command buffer #", it->first, " failed: ", it->second->error());
      log(LogLevel::Error, message);
      if (deferred_.empty()) deferred_ = message;  // the earliest is kept
    }
    it = in_flight_.erase(it);
  }
}

void MpsDevice::wait_for(uint64_t seq) {
  if (seq == 0) return;
  // Counted when the work was still pending at the request (an uncommitted
  // command buffer always is), so the count does not depend on GPU timing.
  bool waited = false;
  if (open_ != nullptr && seq == open_seq_) {
    commit_locked();
    waited = true;
  }
  for (auto& [s, cb] : in_flight_) {
    if (s != seq) continue;
    if (pending(*cb)) {
      waited = true;
      cb->wait();
    }
    break;
  }
  if (waited) ++counters_.synchronizes;
  reap();
}

void MpsDevice::host_access(uintptr_t base, bool write) {
  // Reads wait for the last writer, writes for the last user; a command
  // buffer that already completed costs nothing.
  auto it = buffers_.find(base);
  AOTISHIM_CHECK(it != buffers_.end(), "mps: no buffer for the allocation at 0x", std::hex, base);
  wait_for(write ? it->second.last_use : it->second.last_write);
}

void MpsDevice::defer_error(const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex_);
  log(LogLevel::Error, message);
  if (deferred_.empty()) deferred_ = message;
}

void MpsDevice::raise_deferred() {
  if (deferred_.empty()) return;
  std::string message = std::move(deferred_);
  deferred_.clear();
  fail(message);
}

void MpsDevice::synchronize_locked() {
  ++counters_.synchronizes;
  commit_locked();
  for (auto& entry : in_flight_) entry.second->wait();
  reap();
}

void MpsDevice::synchronize() {
  std::lock_guard<std::mutex> lock(mutex_);
  synchronize_locked();
  raise_deferred();
}

DeviceCounters MpsDevice::counters() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return counters_;
}

// ---- host access ----

void MpsDevice::before_host_access(const Binding& b, size_t nbytes, bool write, const char* what) {
  if (nbytes == 0) return;
  if (b.base != 0) host_access(b.base, write);
  check_host_access(b, nbytes, write, what);
}

void MpsDevice::check_host_access(const Binding& b, size_t nbytes, bool write, const char* what) {
  try {
    metal_->host_access(b.buffer, b.offset, nbytes, write, what);
  } catch (const std::exception& e) {
    fail(str("mps: ", e.what()));
  }
}

void MpsDevice::download(void* host_dst, const Tensor& src_packed) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t n = static_cast<size_t>(src_packed.numel()) * src_packed.itemsize();
  if (n > 0) before_host_access(bind_locked(src_packed, "download source"), n, false, "download source");
  raise_deferred();
  if (n > 0) std::memcpy(host_dst, src_packed.data(), n);
}

void MpsDevice::upload(const Tensor& dst_packed, const void* host_src) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t n = static_cast<size_t>(dst_packed.numel()) * dst_packed.itemsize();
  if (n > 0) before_host_access(bind_locked(dst_packed, "upload destination"), n, true, "upload destination");
  raise_deferred();
  if (n > 0) std::memcpy(dst_packed.data(), host_src, n);
}

void MpsDevice::prepare_host_access(const void* ptr, size_t nbytes, bool write) {
  std::lock_guard<std::mutex> lock(mutex_);
  const char* what = write ? "host write" : "host read";
  if (owns(ptr)) before_host_access(bind_locked(ptr, nbytes, what), nbytes, write, what);
  raise_deferred();
}

// ---- for tests of the memory model ----

void MpsDevice::bind_storage(const std::shared_ptr<Storage>& storage, std::shared_ptr<metal::Buffer> buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = bound_storages_.begin(); it != bound_storages_.end();)
    it = it->second.storage.expired() ? bound_storages_.erase(it) : std::next(it);
  bound_storages_[storage->id()] = {storage, std::move(buffer)};
}

std::pair<std::shared_ptr<metal::Buffer>, size_t> MpsDevice::buffer_at(const void* ptr, size_t nbytes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  Binding b = bind_locked(ptr, nbytes, "buffer_at");
  return {b.buffer, b.offset};
}

std::vector<uint8_t> MpsDevice::read_unsynchronized(const void* ptr, size_t nbytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  Binding b = bind_locked(ptr, nbytes, "raw host read");
  check_host_access(b, nbytes, false, "raw host read");
  const auto* bytes = static_cast<const uint8_t*>(ptr);
  return std::vector<uint8_t>(bytes, bytes + nbytes);
}

bool MpsDevice::has_pending_writes(const void* ptr, bool exact_base) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto a = allocations().find(ptr);
  if (!a || (exact_base && a->base != ptr)) return false;
  auto it = buffers_.find(reinterpret_cast<uintptr_t>(a->base));
  if (it == buffers_.end() || it->second.last_write == 0) return false;
  const uint64_t seq = it->second.last_write;
  if (open_ != nullptr && seq == open_seq_) return true;
  for (const auto& [s, cb] : in_flight_)
    if (s == seq) return pending(*cb);
  return false;
}

// ---- kernels ----

std::shared_ptr<metal::Library> MpsDevice::new_library(const std::string& source) {
  return metal_->new_library(source);
}

std::shared_ptr<metal::Pipeline> MpsDevice::builtin_pipeline(const char* name) {
  auto it = pipelines_.find(name);
  if (it != pipelines_.end()) return it->second;
  if (library_ == nullptr) {
    try {
      library_ = metal_->new_library(mps::library_source());
    } catch (const std::exception& e) {
      fail(str("mps: compiling the device's Metal kernels failed: ", e.what()));
    }
  }
  std::shared_ptr<metal::Pipeline> pso = library_->new_pipeline(name);
  pipelines_[name] = pso;
  return pso;
}

// ---- copies ----

void MpsDevice::encode_copy(Encoder& e, const Tensor& dst, const Tensor& src) {
  AOTISHIM_CHECK(dst.sizes == src.sizes, "mps: copy between views of different sizes");
  AOTISHIM_CHECK(dst.dtype == src.dtype ||
                     (dst.dtype != DType::Float64 && src.dtype != DType::Float64),
                 "mps: cannot convert ", dtype_name(src.dtype), " to ", dtype_name(dst.dtype),
                 " on the GPU (Metal has no float64)");
  const uint64_t numel = static_cast<uint64_t>(dst.numel());
  if (numel == 0) return;
  Binding d = bind_locked(dst, "copy destination");
  Binding s = bind_locked(src, "copy source");
  std::vector<CopyDim> dims = coalesce(dst, src);
  const bool packed =
      dims.empty() || (dims.size() == 1 && dims[0].dst_stride == 1 && dims[0].src_stride == 1);
  const size_t nbytes = numel * dst.itemsize();
  // The blit engine copies bytes; on macOS only at 4-byte granularity.
  if (dst.dtype == src.dtype && packed && aligned(d.offset) && aligned(s.offset) && aligned(nbytes)) {
    e.copy(dst, src);
    return;
  }
  const mps::CopyParams p = copy_params(dims, dst.dtype, src.dtype);
  e.set_kernel(mps::kCopyKernel);
  e.write(0, dst, "copy destination");
  e.read(1, src, "copy source");
  dispatch_copy(e, p, numel);
}

void MpsDevice::encode_zero(Encoder& e, const Tensor& dst) {
  // A copy from a broadcast zero: exactly the view's elements, whatever its
  // strides (a padded row or a piece of a larger buffer keeps its neighbours).
  if (dst.numel() == 0) return;
  Tensor zero = dst;
  zero.strides.assign(dst.sizes.size(), 0);
  std::vector<CopyDim> dims = coalesce(dst, zero);
  for (CopyDim& d : dims) d.src_stride = 0;
  const mps::CopyParams p = copy_params(dims, dst.dtype, dst.dtype);
  e.set_kernel(mps::kCopyKernel);
  e.write(0, dst, "fill destination");
  e.scratch(1);
  dispatch_copy(e, p, static_cast<uint64_t>(dst.numel()));
}

void MpsDevice::copy(const Tensor& dst, const Tensor& src) {
  AOTISHIM_CHECK(&src.device() == this, "mps: copy source is on ", src.device().name());
  encode([&](Encoder& e) { encode_copy(e, dst, src); });
}

void MpsDevice::copy_bytes(const void* dst, const void* src, size_t nbytes) {
  if (nbytes == 0) return;
  const uintptr_t dp = reinterpret_cast<uintptr_t>(dst), sp = reinterpret_cast<uintptr_t>(src);
  encode([&](Encoder& e) {
    Binding d = bind_locked(dst, nbytes, "copy destination");
    Binding s = bind_locked(src, nbytes, "copy source");
    AOTISHIM_CHECK(dp + nbytes <= sp || sp + nbytes <= dp || dp == sp,
                   "mps: copy between overlapping byte ranges");
    if (dp == sp) return;
    if (aligned(d.offset) && aligned(s.offset) && aligned(nbytes)) {
      e.copy(dst, src, nbytes);
      return;
    }
    const mps::CopyParams p =
        copy_params({{static_cast<int64_t>(nbytes), 1, 1}}, DType::UInt8, DType::UInt8);
    e.set_kernel(mps::kCopyKernel);
    e.write(0, dst, nbytes, "copy destination");
    e.read(1, src, nbytes, "copy source");
    dispatch_copy(e, p, nbytes);
  });
}

}  // namespace aotishim
