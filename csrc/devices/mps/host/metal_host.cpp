// metal.h on the host (Linux, AOTISHIM_METAL_HOST): the mps device's code
// runs unchanged over it, so its allocation, binding, ordering and error
// logic is tested without a Mac. Buffers are exact-size, poisoned and
// guarded (buffer.h); libraries are MSL compiled as C++ by clang
// (msl_compile.h) and dispatched on fibers (dispatch.h); matrix products go
// to BLAS. Command buffers are queued to one worker thread at commit() and
// run there in order, while the caller goes on encoding, with Metal's
// status, error and wait semantics. Encoding what Metal rejects (a slot out
// of range, a misaligned blit, a threadgroup too large, too many setBytes)
// throws at once, as Metal's validation does.
#include <algorithm>
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
#include "devices/mps/host/dispatch.h"
#include "devices/mps/host/msl_compile.h"
#include "devices/mps/metal.h"

namespace aotishim::metal {
namespace {

[[noreturn]] void reject(const std::string& message) {
  throw std::runtime_error("host Metal: " + message);
}

class HostBuffer final : public Buffer {
 public:
  explicit HostBuffer(size_t length) : buffer_(length, "mps buffer of " + std::to_string(length) + " bytes") {}
  void* contents() override { return buffer_.contents(); }
  size_t length() const override { return buffer_.length(); }
  mps::host::Buffer& host() { return buffer_; }

 private:
  mps::host::Buffer buffer_;
};

HostBuffer& host(const std::shared_ptr<Buffer>& b) { return static_cast<HostBuffer&>(*b); }

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
  Worker() : thread_([this] { run(); }) {}
  ~Worker() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }
  void submit(std::shared_ptr<HostCommandBuffer> cb);

 private:
  void run();
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<HostCommandBuffer>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

class HostCommandBuffer final : public CommandBuffer,
                                public std::enable_shared_from_this<HostCommandBuffer> {
 public:
  explicit HostCommandBuffer(Worker& worker) : worker_(worker) {}

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
    args_.buffers[index] = {&host(buffer).host(), offset};
  }

  void set_bytes(uint32_t index, const void* data, size_t length) override {
    encoding();
    slot(index, "setBytes");
    if (length == 0 || length > kMaxSetBytes)
      reject("setBytes takes 1 to " + std::to_string(kMaxSetBytes) + " bytes, got " + std::to_string(length));
    auto bytes = std::make_shared<HostBuffer>(length);
    std::memcpy(bytes->contents(), data, length);
    bound_[index] = bytes;
    args_.buffers[index] = {&bytes->host(), 0};
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
    commands_.push_back([src, src_offset, dst, dst_offset, length] {
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
    commands_.push_back([p] { run_product(p); });
  }

  void commit() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (status_ != Status::NotCommitted) reject("commit of a command buffer committed already");
      status_ = Status::Committed;
    }
    worker_.submit(shared_from_this());
  }

  void wait() override {
    std::unique_lock<std::mutex> lock(mutex_);
    if (status_ == Status::NotCommitted) reject("waitUntilCompleted before commit");
    done_.wait(lock, [&] { return status_ == Status::Completed || status_ == Status::Error; });
  }

  Status status() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return status_;
  }

  std::string error() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

  // On the worker: the commands in order; the first failure ends the
  // command buffer with status Error.
  void execute() {
    std::string error;
    for (auto& command : commands_) {
      try {
        command();
      } catch (const std::exception& e) {
        error = e.what();
        break;
      }
    }
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
    std::shared_ptr<HostPipeline> pipeline = pipeline_;
    mps::host::ComputeArguments args = args_;
    std::vector<std::shared_ptr<Buffer>> keep(bound_.begin(), bound_.end());
    const mps::host::Size3 s = u32(size), g = u32(group);
    commands_.push_back([pipeline, args, keep, s, g, whole_groups] {
      if (whole_groups) mps::host::dispatch_threadgroups(pipeline->function(), args, s, g);
      else mps::host::dispatch_threads(pipeline->function(), args, s, g);
    });
  }

  Worker& worker_;
  std::shared_ptr<HostPipeline> pipeline_;
  mps::host::ComputeArguments args_;
  std::array<std::shared_ptr<Buffer>, kMaxBufferSlots> bound_;
  std::vector<std::function<void()>> commands_;
  mutable std::mutex mutex_;
  std::condition_variable done_;
  Status status_ = Status::NotCommitted;
  std::string error_;
};

void Worker::submit(std::shared_ptr<HostCommandBuffer> cb) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(cb));
  }
  wake_.notify_all();
}

void Worker::run() {
  for (;;) {
    std::shared_ptr<HostCommandBuffer> cb;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, nothing left
      cb = std::move(queue_.front());
      queue_.pop_front();
    }
    cb->execute();
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
    return std::make_shared<HostCommandBuffer>(worker_);
  }
  bool supports_mps() const override { return true; }  // BLAS stands in for MPS
  std::string description() const override {
    return "the host Metal (not a GPU: MSL compiled as C++ by clang and run on this CPU)";
  }

 private:
  Worker worker_;
};

}  // namespace

std::unique_ptr<Device> create_system_device() { return std::make_unique<HostDevice>(); }
bool has_system_device() { return true; }

}  // namespace aotishim::metal
