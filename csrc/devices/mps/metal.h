// The part of the Metal API the mps device uses, as plain C++: the device
// logic (mps_device.cpp and the op and shim files beside it) is written
// against this and nothing else, so the same code runs over Apple's Metal
// (apple/metal_apple.mm) and over the host Metal on Linux
// (host/metal_host.cpp). Each method is one Metal call or close to it.
//
// Semantics are Metal's: buffers are shared storage whose contents the host
// may touch once the work using them has completed; a command buffer encodes
// compute dispatches, blit copies and matrix products, serially ordered, and
// runs them after commit(), asynchronously; a command buffer keeps every
// buffer bound to it alive until it has completed. Encoding a call Metal
// would reject (a slot out of range, a misaligned blit, a threadgroup too
// large) throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace aotishim::metal {

constexpr uint32_t kMaxBufferSlots = 31;  // Metal's buffer argument table
constexpr size_t kMaxSetBytes = 4096;     // setBytes' limit
constexpr size_t kBlitAlignment = 4;      // copyFromBuffer offsets and sizes on macOS

struct Size {
  uint64_t x = 1, y = 1, z = 1;
};

class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* contents() = 0;
  virtual size_t length() const = 0;
};

class Pipeline {
 public:
  virtual ~Pipeline() = default;
  virtual uint64_t max_threads_per_group() const = 0;
  virtual uint64_t execution_width() const = 0;  // SIMD width
};

class Library {
 public:
  virtual ~Library() = default;
  // The compute pipeline of the kernel `name`; throws when there is none.
  virtual std::shared_ptr<Pipeline> new_pipeline(const std::string& name) = 0;
};

// One (batch of) row-major matrices in a buffer, as MPSMatrix describes it.
struct Matrix {
  std::shared_ptr<Buffer> buffer;
  size_t offset = 0;
  uint64_t rows = 0, cols = 0;
  uint64_t row_bytes = 0, matrix_bytes = 0;
};

enum class Scalar { Float32, Float16 };

// MPSMatrixMultiplication: result = alpha * op(left) @ op(right) + beta * result,
// for `batch` matrices.
struct MatrixProduct {
  Matrix left, right, result;
  bool transpose_left = false, transpose_right = false;
  uint64_t m = 0, n = 0, k = 0, batch = 1;
  double alpha = 1.0, beta = 0.0;
  Scalar scalar = Scalar::Float32;
};

enum class Status { NotCommitted, Committed, Completed, Error };

class CommandBuffer {
 public:
  virtual ~CommandBuffer() = default;
  // ---- compute: set the pipeline and every argument before each dispatch
  // (Apple's bindings do not outlive the encoder, which a blit ends) ----
  virtual void set_pipeline(const std::shared_ptr<Pipeline>& pipeline) = 0;
  virtual void set_buffer(uint32_t index, const std::shared_ptr<Buffer>& buffer, size_t offset) = 0;
  virtual void set_bytes(uint32_t index, const void* data, size_t length) = 0;
  virtual void set_threadgroup_memory(uint32_t index, size_t length) = 0;
  virtual void dispatch_threads(Size grid, Size group) = 0;
  virtual void dispatch_threadgroups(Size groups, Size group) = 0;
  // ---- blit ----
  virtual void copy(const std::shared_ptr<Buffer>& src, size_t src_offset,
                    const std::shared_ptr<Buffer>& dst, size_t dst_offset, size_t length) = 0;
  // ---- MPS; only where Device::supports_mps() ----
  virtual void multiply(const MatrixProduct& product) = 0;
  // ---- execution ----
  virtual void commit() = 0;
  virtual void wait() = 0;  // until Completed or Error; after commit only
  virtual Status status() const = 0;
  virtual std::string error() const = 0;  // why it failed, once status() is Error
};

class Device {
 public:
  virtual ~Device() = default;
  // Shared storage of exactly `length` bytes (at least 1); null when out of memory.
  virtual std::shared_ptr<Buffer> new_buffer(size_t length) = 0;
  // Compiles MSL (fast math off); throws with the compiler's message.
  virtual std::shared_ptr<Library> new_library(const std::string& source) = 0;
  // Command buffers run in the order they are committed.
  virtual std::shared_ptr<CommandBuffer> new_command_buffer() = 0;
  // Whether CommandBuffer::multiply works here (MPSSupportsMTLDevice).
  virtual bool supports_mps() const = 0;
  // What runs the work, for messages: the GPU's name, or the host Metal.
  virtual std::string description() const = 0;
  // Called before the host reads or writes bytes [offset, offset + length)
  // of `buffer` through contents(), after the device waited for what it
  // believes it must. Apple's Metal has nothing to do; the host Metal's
  // hazard checker throws when work not yet seen complete still writes
  // those bytes (or, for a write, uses them). `what` names the access.
  virtual void host_access(const std::shared_ptr<Buffer>& /*buffer*/, size_t /*offset*/,
                           size_t /*length*/, bool /*write*/, const char* /*what*/) {}
};

// The system's Metal device; null where there is none. Defined by the one
// implementation the build links (apple/ or host/).
std::unique_ptr<Device> create_system_device();
// Whether create_system_device() would give one (asked often: cheap).
bool has_system_device();

}  // namespace aotishim::metal
