// metal.h on the host (Linux, AOTISHIM_METAL_HOST): the mps device's code
// runs unchanged over it, so its allocation, binding, ordering and error
// logic is tested without a Mac. Buffers are exact-size, poisoned and
// guarded (buffer.h); libraries are MSL compiled as C++ by clang
// (msl_compile.h) and dispatched on fibers (dispatch.h); matrix products go
// to BLAS. Command buffers are queued to one worker thread at commit() and
// run there in commit order, while the caller goes on encoding, with Metal's
// status, error and wait semantics; commands no buffer object orders run in
// the configured order (schedule.h), and every command and host access goes
// past the hazard checker (hazards.h; controls.h configures both). Encoding
// what Metal rejects (a slot out of range, a misaligned blit, a threadgroup
// too large, too many setBytes) throws at once, as Metal's validation does.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <random>
#include <array>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/half.h"
#include "devices/cpu/blas.h"
#include "devices/mps/host/buffer.h"
#include "devices/mps/host/controls.h"
#include "devices/mps/host/dispatch.h"
#include "devices/mps/host/hazards.h"
#include "devices/mps/host/msl_compile.h"
#include "devices/mps/host/schedule.h"
#include "devices/mps/metal.h"

namespace aotishim::metal {
namespace {

[[noreturn]] void reject(const std::string& message) {
  throw std::runtime_error("host Metal: " + message);
}

using mps::host::CommandRecord;
using mps::host::PendingCommands;
using mps::host::Use;

// ---- the host Metal's process-wide settings (controls.h) ----

struct Settings {
  std::mutex mutex;
  host::Config config;
  std::mt19937_64 rng{0};
  Settings() {
    const char* v = std::getenv("AOTISHIM_METAL_HOST_CHECKER");
    config.checker = !(v != nullptr && std::string(v) == "0");
  }
};

Settings& settings() {
  static Settings* s = new Settings();  // never destroyed: the worker may outlive statics
  return *s;
}

host::Config current_config() {
  std::lock_guard<std::mutex> lock(settings().mutex);
  return settings().config;
}

std::atomic<uint64_t> next_buffer_id{1};
std::atomic<uint64_t> next_command_buffer_id{1};
std::atomic<uint64_t> next_commit{1};
std::atomic<uint64_t> hazard_count{0};
std::atomic<long> live_aliases{0};  // the alias check on encoding costs nothing without them

[[noreturn]] void hazard(const std::string& message) {
  ++hazard_count;
  throw std::runtime_error(message);
}

// A buffer object: a range of one host memory (the whole of it, or part of
// it for an alias), with an identity of its own.
class HostBuffer final : public Buffer {
 public:
  explicit HostBuffer(size_t length)
      : memory_(std::make_shared<mps::host::Buffer>(length, "mps buffer of " + std::to_string(length) + " bytes")),
        length_(length) {}
  HostBuffer(std::shared_ptr<mps::host::Buffer> memory, size_t offset, size_t length)
      : memory_(std::move(memory)), offset_(offset), length_(length), alias_(true) {
    ++live_aliases;
  }
  ~HostBuffer() override {
    if (alias_) --live_aliases;
  }
  void* contents() override { return static_cast<char*>(memory_->contents()) + offset_; }
  size_t length() const override { return length_; }
  uint64_t id() const { return id_; }
  const std::shared_ptr<mps::host::Buffer>& memory() const { return memory_; }
  size_t offset() const { return offset_; }  // in the memory
  // Bytes [offset, offset + length) of this buffer object, as a use.
  Use use(size_t offset, size_t length, bool write, std::string role) const {
    Use u;
    u.memory = memory_;
    u.buffer = id_;
    u.object_offset = offset_;
    u.begin = offset_ + std::min(offset, length_);
    u.end = offset_ + std::min(offset + length, length_);
    u.write = write;
    u.role = std::move(role);
    return u;
  }

 private:
  std::shared_ptr<mps::host::Buffer> memory_;
  size_t offset_ = 0, length_ = 0;
  bool alias_ = false;
  uint64_t id_ = next_buffer_id++;
};

HostBuffer& host_of(const std::shared_ptr<Buffer>& b) { return static_cast<HostBuffer&>(*b); }

class HostPipeline final : public Pipeline {
 public:
  explicit HostPipeline(std::shared_ptr<const mps::host::Function> fn) : fn_(std::move(fn)) {}
  uint64_t max_threads_per_group() const override { return mps::host::kMaxThreadsPerThreadgroup; }
  uint64_t execution_width() const override { return AOTISHIM_MSL_SIMD_WIDTH; }
  const mps::host::Function& function() const { return *fn_; }

 private:
  std::shared_ptr<const mps::host::Function> fn_;
};

class HostLibrary final : public Library {
 public:
  explicit HostLibrary(const std::string& source) : library_(source) {}
  std::shared_ptr<Pipeline> new_pipeline(const std::string& name) override {
    return std::make_shared<HostPipeline>(library_.function(name));
  }

 private:
  mps::host::Library library_;
};

// ---- matrix products through BLAS ----

float load(const unsigned char* p, Scalar s) {
  if (s == Scalar::Float32) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_to_float(h);
}

void store(unsigned char* p, Scalar s, float v) {
  if (s == Scalar::Float32) {
    std::memcpy(p, &v, 4);
    return;
  }
  const uint16_t h = float_to_f16(v);
  std::memcpy(p, &h, 2);
}

// Matrix `b` of m as packed float rows x cols; the bytes MPSMatrix reads.
std::vector<float> unpack(const Matrix& m, uint64_t b, Scalar s) {
  const size_t item = s == Scalar::Float32 ? 4 : 2;
  const unsigned char* base = static_cast<const unsigned char*>(m.buffer->contents()) + m.offset + b * m.matrix_bytes;
  std::vector<float> out(m.rows * m.cols);
  for (uint64_t r = 0; r < m.rows; ++r)
    for (uint64_t c = 0; c < m.cols; ++c) out[r * m.cols + c] = load(base + r * m.row_bytes + c * item, s);
  return out;
}

void check_matrix(const Matrix& m, uint64_t batch, Scalar s, const char* what) {
  const size_t item = s == Scalar::Float32 ? 4 : 2;
  if (m.buffer == nullptr) reject(std::string("matrix product: no buffer for the ") + what);
  if (m.row_bytes < m.cols * item || m.row_bytes % item != 0)
    reject(std::string("matrix product: the ") + what + "'s rows of " + std::to_string(m.row_bytes) +
           " bytes do not hold " + std::to_string(m.cols) + " elements");
  const uint64_t need = m.offset + (batch - 1) * m.matrix_bytes + m.rows * m.row_bytes;
  if (m.rows > 0 && need > m.buffer->length())
    reject(std::string("matrix product: the ") + what + " reaches byte " + std::to_string(need) +
           " of a buffer of " + std::to_string(m.buffer->length()));
  if (m.rows > INT_MAX || m.cols > INT_MAX) reject("matrix product too large for BLAS");
}

void run_product(const MatrixProduct& p) {
  for (uint64_t b = 0; b < p.batch; ++b) {
    std::vector<float> a = unpack(p.left, b, p.scalar), bm = unpack(p.right, b, p.scalar);
    std::vector<float> c(p.m * p.n, 0.0f);
    if (p.beta != 0.0) c = unpack(p.result, b, p.scalar);
    blas::gemm(p.transpose_left, p.transpose_right, static_cast<int>(p.m), static_cast<int>(p.n),
               static_cast<int>(p.k), static_cast<float>(p.alpha), a.data(), static_cast<int>(p.left.cols),
               bm.data(), static_cast<int>(p.right.cols), static_cast<float>(p.beta), c.data(),
               static_cast<int>(p.n));
    const size_t item = p.scalar == Scalar::Float32 ? 4 : 2;
    unsigned char* out = static_cast<unsigned char*>(p.result.buffer->contents()) + p.result.offset +
                         b * p.result.matrix_bytes;
    for (uint64_t r = 0; r < p.m; ++r)
      for (uint64_t col = 0; col < p.n; ++col) store(out + r * p.result.row_bytes + col * item, p.scalar, c[r * p.n + col]);
  }
}

// ---- command buffers and the worker that runs them ----

class HostCommandBuffer;

class Worker {
 public:
  Worker();
  ~Worker();
  void submit(std::shared_ptr<HostCommandBuffer> cb);
  // Deferred mode: lets the worker run every command buffer up to `seq`.
  void release(uint64_t seq);
  void poke();

 private:
  void run();
  bool runnable() const;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<HostCommandBuffer>> queue_;
  uint64_t released_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

// Workers to wake when the settings change (deferred mode turned off).
std::mutex workers_mutex;
std::vector<Worker*>& workers() {
  static std::vector<Worker*>* w = new std::vector<Worker*>();
  return *w;
}

// The command buffers the host has not yet seen complete, for the checker.
class Unseen {
 public:
  void add(const std::shared_ptr<HostCommandBuffer>& cb) {
    std::lock_guard<std::mutex> lock(mutex_);
    list_.push_back(cb);
  }
  // Live ones, in creation order; the caller keeps them alive while it looks.
  std::vector<std::shared_ptr<HostCommandBuffer>> live();

 private:
  std::mutex mutex_;
  std::vector<std::weak_ptr<HostCommandBuffer>> list_;
};

std::vector<PendingCommands> pending_view(const std::vector<std::shared_ptr<HostCommandBuffer>>& cbs);

class HostCommandBuffer final : public CommandBuffer,
                                public std::enable_shared_from_this<HostCommandBuffer> {
 public:
  HostCommandBuffer(Worker& worker, Unseen& unseen) : worker_(worker), unseen_(unseen) {}

  void set_pipeline(const std::shared_ptr<Pipeline>& pipeline) override {
    encoding();
    pipeline_ = std::static_pointer_cast<HostPipeline>(pipeline);
  }

  void set_buffer(uint32_t index, const std::shared_ptr<Buffer>& buffer, size_t offset) override {
    encoding();
    slot(index, "setBuffer");
    if (buffer == nullptr) reject("setBuffer at index " + std::to_string(index) + ": no buffer");
    if (offset > buffer->length())
      reject("setBuffer at index " + std::to_string(index) + ": offset " + std::to_string(offset) +
             " past the end of a buffer of " + std::to_string(buffer->length()) + " bytes");
    bound_[index] = buffer;
    bound_offset_[index] = offset;
    tracked_[index] = true;
    args_.buffers[index] = {host_of(buffer).memory().get(), host_of(buffer).offset() + offset};
  }

  void set_bytes(uint32_t index, const void* data, size_t length) override {
    encoding();
    slot(index, "setBytes");
    if (length == 0 || length > kMaxSetBytes)
      reject("setBytes takes 1 to " + std::to_string(kMaxSetBytes) + " bytes, got " + std::to_string(length));
    auto bytes = std::make_shared<HostBuffer>(length);
    std::memcpy(bytes->contents(), data, length);
    bound_[index] = bytes;
    bound_offset_[index] = 0;
    tracked_[index] = false;  // a copy of its own: nothing else can touch it
    args_.buffers[index] = {bytes->memory().get(), 0};
  }

  void set_threadgroup_memory(uint32_t index, size_t length) override {
    encoding();
    slot(index, "setThreadgroupMemoryLength");
    args_.threadgroup_memory[index] = length;
  }

  void dispatch_threads(Size grid, Size group) override { dispatch(grid, group, false); }
  void dispatch_threadgroups(Size groups, Size group) override { dispatch(groups, group, true); }

  void copy(const std::shared_ptr<Buffer>& src, size_t src_offset, const std::shared_ptr<Buffer>& dst,
            size_t dst_offset, size_t length) override {
    encoding();
    if (src_offset % kBlitAlignment || dst_offset % kBlitAlignment || length % kBlitAlignment)
      reject("copyFromBuffer: offsets " + std::to_string(src_offset) + ", " + std::to_string(dst_offset) +
             " and size " + std::to_string(length) + " must be multiples of " + std::to_string(kBlitAlignment));
    if (src_offset + length > src->length() || dst_offset + length > dst->length())
      reject("copyFromBuffer: " + std::to_string(length) + " bytes reach past a buffer");
    CommandRecord r;
    r.name = "blit copy";
    r.uses = {host_of(src).use(src_offset, length, false, "source"),
              host_of(dst).use(dst_offset, length, true, "destination")};
    add(std::move(r), [src, src_offset, dst, dst_offset, length] {
      std::memmove(static_cast<char*>(dst->contents()) + dst_offset,
                   static_cast<const char*>(src->contents()) + src_offset, length);
    });
  }

  void multiply(const MatrixProduct& p) override {
    encoding();
    check_matrix(p.left, p.batch, p.scalar, "left matrix");
    check_matrix(p.right, p.batch, p.scalar, "right matrix");
    check_matrix(p.result, p.batch, p.scalar, "result matrix");
    const uint64_t lr = p.transpose_left ? p.left.cols : p.left.rows, lc = p.transpose_left ? p.left.rows : p.left.cols;
    const uint64_t rr = p.transpose_right ? p.right.cols : p.right.rows, rc = p.transpose_right ? p.right.rows : p.right.cols;
    if (lr != p.m || lc != p.k || rr != p.k || rc != p.n || p.result.rows != p.m || p.result.cols != p.n)
      reject("matrix product: operand shapes do not match m, n, k");
    auto use = [&](const Matrix& m, bool write, const char* role) {
      const size_t extent = m.rows == 0 ? 0 : (p.batch - 1) * m.matrix_bytes + m.rows * m.row_bytes;
      return host_of(m.buffer).use(m.offset, extent, write, role);
    };
    CommandRecord r;
    r.name = "matrix product";
    // With beta != 0 the result is read too; the write orders it either way.
    r.uses = {use(p.left, false, "left matrix"), use(p.right, false, "right matrix"),
              use(p.result, true, "result matrix")};
    add(std::move(r), [p] { run_product(p); });
  }

  void commit() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (status_ != Status::NotCommitted) reject("commit of a command buffer committed already");
      status_ = Status::Committed;
      seq_ = next_commit++;  // commit order
    }
    worker_.submit(shared_from_this());
  }

  void wait() override {
    uint64_t seq;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (status_ == Status::NotCommitted) reject("waitUntilCompleted before commit");
      seq = seq_;
    }
    worker_.release(seq);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return status_ == Status::Completed || status_ == Status::Error; });
    seen_ = true;
  }

  Status status() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_ == Status::Completed || status_ == Status::Error) seen_ = true;
    return status_;
  }

  std::string error() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

  uint64_t seq() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return seq_;
  }
  uint64_t id() const { return id_; }
  bool seen() const { return seen_; }
  bool committed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return status_ != Status::NotCommitted;
  }
  const std::vector<CommandRecord>& records() const { return records_; }
  std::vector<std::function<void()>>& commands() { return commands_; }

  // On the worker, once its commands ran (or the first one failed).
  void finish(const std::string& error) {
    commands_.clear();  // releases the buffers it kept alive
    {
      std::lock_guard<std::mutex> lock(mutex_);
      error_ = error;
      status_ = error.empty() ? Status::Completed : Status::Error;
    }
    done_.notify_all();
  }

 private:
  void encoding() const {
    std::lock_guard<std::mutex> lock(mutex_);
    if (status_ != Status::NotCommitted) reject("encoding into a command buffer after commit");
  }
  static void slot(uint32_t index, const char* what) {
    if (index >= kMaxBufferSlots)
      reject(std::string(what) + " at index " + std::to_string(index) + ": Metal has " +
             std::to_string(kMaxBufferSlots) + " buffer slots");
  }

  // Records a command; with the checker on and aliases about, first looks
  // for pending work it races through one.
  void add(CommandRecord record, std::function<void()> run) {
    if (live_aliases > 0 && current_config().checker) {
      std::vector<std::shared_ptr<HostCommandBuffer>> cbs = unseen_.live();
      if (auto h = mps::host::find_alias_hazard(record, pending_view(cbs))) hazard(*h);
    }
    if (records_.empty()) unseen_.add(shared_from_this());
    records_.push_back(std::move(record));
    commands_.push_back(std::move(run));
  }

  void dispatch(Size size, Size group, bool whole_groups) {
    encoding();
    if (pipeline_ == nullptr) reject("dispatch without a compute pipeline");
    const std::string& name = pipeline_->function().name;
    const uint64_t threads = group.x * group.y * group.z;
    if (group.x == 0 || group.y == 0 || group.z == 0 || threads > pipeline_->max_threads_per_group())
      reject("kernel '" + name + "': a threadgroup of " + std::to_string(group.x) + " x " +
             std::to_string(group.y) + " x " + std::to_string(group.z) + " threads (the pipeline allows 1 to " +
             std::to_string(pipeline_->max_threads_per_group()) + ")");
    for (uint64_t v : {size.x, size.y, size.z})
      if (v > UINT32_MAX) reject("kernel '" + name + "': a grid dimension of " + std::to_string(v));
    auto u32 = [](Size s) { return mps::host::Size3{uint32_t(s.x), uint32_t(s.y), uint32_t(s.z)}; };
    CommandRecord r;
    r.name = "dispatch '" + name + "'";
    // A bound buffer is used from its offset to its end (Metal is not told
    // more), read or written as the kernel's parameter declares it.
    for (const aotishim_msl_param& param : pipeline_->function().params) {
      if (param.kind != AOTISHIM_MSL_PARAM_BUFFER || param.index < 0 || param.index >= int(kMaxBufferSlots))
        continue;
      const auto i = static_cast<size_t>(param.index);
      if (bound_[i] == nullptr || !tracked_[i]) continue;
      r.uses.push_back(host_of(bound_[i]).use(bound_offset_[i], bound_[i]->length(), param.writes != 0,
                                           "buffer(" + std::to_string(i) + ") " + param.name));
    }
    std::shared_ptr<HostPipeline> pipeline = pipeline_;
    mps::host::ComputeArguments args = args_;
    std::vector<std::shared_ptr<Buffer>> keep(bound_.begin(), bound_.end());
    const mps::host::Size3 s = u32(size), g = u32(group);
    add(std::move(r), [pipeline, args, keep, s, g, whole_groups] {
      if (whole_groups) mps::host::dispatch_threadgroups(pipeline->function(), args, s, g);
      else mps::host::dispatch_threads(pipeline->function(), args, s, g);
    });
  }

  Worker& worker_;
  Unseen& unseen_;
  const uint64_t id_ = next_command_buffer_id++;  // for messages; seq_ is the commit order
  std::shared_ptr<HostPipeline> pipeline_;
  mps::host::ComputeArguments args_;
  std::array<std::shared_ptr<Buffer>, kMaxBufferSlots> bound_;
  std::array<size_t, kMaxBufferSlots> bound_offset_{};
  std::array<bool, kMaxBufferSlots> tracked_{};
  std::vector<CommandRecord> records_;           // kept until the host has seen it complete
  std::vector<std::function<void()>> commands_;  // aligned with records_; cleared once run
  mutable std::mutex mutex_;
  std::condition_variable done_;
  Status status_ = Status::NotCommitted;
  uint64_t seq_ = 0;
  std::string error_;
  mutable std::atomic<bool> seen_{false};
};

std::vector<std::shared_ptr<HostCommandBuffer>> Unseen::live() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<HostCommandBuffer>> out;
  std::vector<std::weak_ptr<HostCommandBuffer>> keep;
  for (auto& w : list_) {
    std::shared_ptr<HostCommandBuffer> cb = w.lock();
    if (cb == nullptr || cb->seen()) continue;
    keep.push_back(w);
    out.push_back(std::move(cb));
  }
  list_ = std::move(keep);
  return out;
}

std::vector<PendingCommands> pending_view(const std::vector<std::shared_ptr<HostCommandBuffer>>& cbs) {
  std::vector<PendingCommands> out;
  for (const auto& cb : cbs) {
    PendingCommands p;
    p.id = cb->id();
    p.state = cb->committed() ? "committed, not yet seen complete by the host" : "not committed";
    p.commands = &cb->records();
    out.push_back(p);
  }
  return out;
}

Worker::Worker() : thread_([this] { run(); }) {
  std::lock_guard<std::mutex> lock(workers_mutex);
  workers().push_back(this);
}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(workers_mutex);
    auto& w = workers();
    w.erase(std::remove(w.begin(), w.end(), this), w.end());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Worker::submit(std::shared_ptr<HostCommandBuffer> cb) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(cb));
  }
  wake_.notify_all();
}

void Worker::release(uint64_t seq) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    released_ = std::max(released_, seq);
  }
  wake_.notify_all();
}

void Worker::poke() {
  std::lock_guard<std::mutex> lock(mutex_);
  wake_.notify_all();
}

bool Worker::runnable() const {
  if (queue_.empty()) return false;
  return stop_ || !current_config().deferred || queue_.front()->seq() <= released_;
}

void Worker::run() {
  for (;;) {
    std::vector<std::shared_ptr<HostCommandBuffer>> batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || runnable(); });
      if (queue_.empty()) return;  // stopping, nothing left
      // Eager: one command buffer at a time, in commit order. Deferred:
      // every released one together, as a GPU may overlap independent ones.
      const bool deferred = !stop_ && current_config().deferred;
      do {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      } while (deferred && !queue_.empty() && queue_.front()->seq() <= released_);
    }
    std::vector<const CommandRecord*> records;
    std::vector<std::pair<size_t, size_t>> where;  // (command buffer, command)
    for (size_t b = 0; b < batch.size(); ++b) {
      for (size_t i = 0; i < batch[b]->records().size(); ++i) {
        records.push_back(&batch[b]->records()[i]);
        where.emplace_back(b, i);
      }
    }
    std::vector<size_t> order;
    {
      Settings& s = settings();
      std::lock_guard<std::mutex> lock(s.mutex);
      order = mps::host::schedule(records, s.config.order, s.rng);
    }
    // A failed command ends its command buffer (status Error); the others go on.
    std::vector<std::string> errors(batch.size());
    for (size_t j : order) {
      const auto [b, i] = where[j];
      if (!errors[b].empty()) continue;
      try {
        batch[b]->commands()[i]();
      } catch (const std::exception& e) {
        errors[b] = e.what();
        if (errors[b].empty()) errors[b] = "a command failed";
      }
    }
    for (size_t b = 0; b < batch.size(); ++b) batch[b]->finish(errors[b]);
  }
}

class HostDevice final : public Device {
 public:
  std::shared_ptr<Buffer> new_buffer(size_t length) override {
    try {
      return std::make_shared<HostBuffer>(std::max<size_t>(length, 1));
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }
  std::shared_ptr<Library> new_library(const std::string& source) override {
    return std::make_shared<HostLibrary>(source);
  }
  std::shared_ptr<CommandBuffer> new_command_buffer() override {
    return std::make_shared<HostCommandBuffer>(worker_, unseen_);
  }
  bool supports_mps() const override { return true; }  // BLAS stands in for MPS
  std::string description() const override {
    return "the host Metal (not a GPU: MSL compiled as C++ by clang and run on this CPU)";
  }
  void host_access(const std::shared_ptr<Buffer>& buffer, size_t offset, size_t length, bool write,
                   const char* what) override {
    if (buffer == nullptr || length == 0 || !current_config().checker) return;
    const Use u = host_of(buffer).use(offset, length, write, what);
    std::vector<std::shared_ptr<HostCommandBuffer>> cbs = unseen_.live();
    if (auto h = mps::host::find_host_hazard(u, pending_view(cbs))) hazard(*h);
  }

 private:
  Unseen unseen_;  // before worker_: the worker's last command buffers may still refer to it
  Worker worker_;
};

}  // namespace

std::unique_ptr<Device> create_system_device() { return std::make_unique<HostDevice>(); }
bool has_system_device() { return true; }

namespace host {

void configure(const Config& config) {
  {
    Settings& s = settings();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.config = config;
    s.rng.seed(config.seed);
  }
  std::lock_guard<std::mutex> lock(workers_mutex);
  for (Worker* w : workers()) w->poke();  // deferred off: queued work may run now
}

Config config() { return current_config(); }

uint64_t hazards() { return hazard_count; }

std::shared_ptr<Buffer> make_alias(const std::shared_ptr<Buffer>& buffer, size_t offset, size_t length) {
  if (buffer == nullptr || offset > buffer->length() || length > buffer->length() - offset || length == 0)
    reject("an alias of " + std::to_string(length) + " bytes at offset " + std::to_string(offset) +
           " does not fit its buffer");
  const HostBuffer& b = host_of(buffer);
  return std::make_shared<HostBuffer>(b.memory(), b.offset() + offset, length);
}

uint64_t buffer_id(const Buffer& buffer) { return static_cast<const HostBuffer&>(buffer).id(); }

}  // namespace host

}  // namespace aotishim::metal
