#import "devices/mps/mps_device.h"

#import <Foundation/Foundation.h>
#import <MetalPerformanceShaders/MetalPerformanceShaders.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

#include "core/error.h"
#include "core/strided.h"
#include "devices/mps/mps_kernels.h"
#include "devices/mps/mps_util.h"

#if !__has_feature(objc_arc)
#error "the mps device is built with ARC (-fobjc-arc)"
#endif

namespace aotishim {

using mps::pooled;

namespace {

// The GPU. A process without a window server connection can get nil from
// MTLCreateSystemDefaultDevice on some systems; the device list still has it.
id<MTLDevice> system_device() {
  id<MTLDevice> device = MTLCreateSystemDefaultDevice();
  if (device == nil) {
    NSArray<id<MTLDevice>>* all = MTLCopyAllDevices();
    if ([all count] > 0) device = all[0];
  }
  return device;
}

int mps_count() {
  // Asked by available_devices() often; the answer does not change.
  static const int count = [] {
    @autoreleasepool {
      return system_device() != nil ? 1 : 0;
    }
  }();
  return count;
}

std::unique_ptr<Device> make_mps(int32_t index) { return std::make_unique<MpsDevice>(index); }
const bool registered = (register_backend(DeviceType::MPS, &make_mps, &mps_count), true);

constexpr size_t kMinBufferBytes = 16;  // Metal rejects zero-length buffers

bool pending(id<MTLCommandBuffer> cb) {
  return cb.status != MTLCommandBufferStatusCompleted && cb.status != MTLCommandBufferStatusError;
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

bool gemm_kernel_forced() {
  // AOTISHIM_MPS_GEMM=kernel runs every GEMM through our own kernel (tests
  // compare it with the MPSMatrixMultiplication path).
  const char* v = std::getenv("AOTISHIM_MPS_GEMM");
  return v != nullptr && std::strcmp(v, "kernel") == 0;
}

// How MPSMatrix sees one (B, R, C) operand: rows of unit-stride elements,
// possibly as the transpose of what is stored.
struct MatrixLayout {
  bool ok = false;
  bool transposed = false;
  NSUInteger rows = 0, cols = 0, row_bytes = 0, matrix_bytes = 0;
};

MatrixLayout matrix_layout(const Tensor& t) {
  MatrixLayout l;
  const int64_t B = t.sizes[0], R = t.sizes[1], C = t.sizes[2];
  const int64_t sb = t.strides[0];
  const MatrixView v = row_major_view(R, C, t.strides[1], t.strides[2]);
  if (!v.ok) return l;
  l.transposed = v.transposed;
  l.rows = static_cast<NSUInteger>(v.transposed ? C : R);
  l.cols = static_cast<NSUInteger>(v.transposed ? R : C);
  const int64_t ld = v.ld;
  const int64_t rows = static_cast<int64_t>(l.rows);
  if (B > 1 && (ld == 0 || sb % ld != 0 || sb < rows * ld)) return l;
  l.row_bytes = static_cast<NSUInteger>(ld) * t.itemsize();
  l.matrix_bytes = static_cast<NSUInteger>(B > 1 ? sb : rows * ld) * t.itemsize();
  l.ok = true;
  return l;
}

}  // namespace

static void mps_gemm(const GemmArgs& args) { static_cast<MpsDevice&>(args.out.device()).gemm(args); }
AOTISHIM_REGISTER_KERNEL(ops::gemm, DeviceType::MPS, mps_gemm);

MpsDevice& mps_device(int32_t index) {
  return static_cast<MpsDevice&>(get_device(DeviceType::MPS, index));
}

MpsDevice::MpsDevice(int32_t index) : Device(DeviceType::MPS, index) {
  (void)registered;
  pooled([&] {
    device_ = system_device();
    AOTISHIM_CHECK(device_ != nil, "mps: this machine has no Metal device");
    queue_ = [device_ newCommandQueue];
    AOTISHIM_CHECK(queue_ != nil, "mps: could not create a Metal command queue");
    zeros_ = [device_ newBufferWithLength:kMinBufferBytes options:MTLResourceStorageModeShared];
    AOTISHIM_CHECK(zeros_ != nil, "mps: could not allocate a scratch buffer");
    std::memset([zeros_ contents], 0, kMinBufferBytes);
  });
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
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  void* base = nullptr;
  pooled([&] {
    id<MTLBuffer> buffer =
        [device_ newBufferWithLength:std::max(nbytes, kMinBufferBytes)
                             options:MTLResourceStorageModeShared];
    if (buffer == nil) return;  // Device::allocate reports it as out of memory
    base = [buffer contents];
    BufferState s;
    s.buffer = buffer;
    buffers_[reinterpret_cast<uintptr_t>(base)] = s;
  });
  return base;
}

void MpsDevice::raw_free(void* base, size_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  // No wait: a command buffer retains the buffers it uses, so the memory
  // outlives any work still pending on it and is never reused under it.
  buffers_.erase(reinterpret_cast<uintptr_t>(base));
}

MpsDevice::BufferState& MpsDevice::state(uintptr_t base) {
  auto it = buffers_.find(base);
  AOTISHIM_CHECK(it != buffers_.end(), "mps: no buffer for the allocation at 0x", std::hex, base);
  return it->second;
}

bool MpsDevice::owns(const void* ptr) const { return allocations().find(ptr).has_value(); }

MpsDevice::Binding MpsDevice::bind_pointer(const void* ptr, size_t nbytes, const char* what) const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
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

MpsDevice::Binding MpsDevice::bind(const Tensor& t, const char* what) const {
  AOTISHIM_CHECK(&t.device() == this, "mps: ", what, " is on ", t.device().name(), ", not ",
                 name());
  if (t.numel() == 0) {
    Binding b;
    b.buffer = zeros_;
    return b;
  }
  return bind_pointer(t.data(), t.extent_bytes(), what);
}

// ---- the command buffer being encoded ----

id<MTLCommandBuffer> MpsDevice::command_buffer() {
  if (open_ == nil) {
    // Retained references (the default): the command buffer keeps every
    // buffer it uses alive until it completes.
    open_ = [queue_ commandBuffer];
    AOTISHIM_CHECK(open_ != nil, "mps: could not create a command buffer");
    open_seq_ = next_seq_++;
    open_commands_ = 0;
  }
  return open_;
}

id<MTLComputeCommandEncoder> MpsDevice::compute_encoder() {
  if (compute_ != nil) return compute_;
  end_encoder();
  // Serial dispatch (the default): each dispatch sees the writes of the ones
  // before it in this encoder.
  compute_ = [command_buffer() computeCommandEncoder];
  AOTISHIM_CHECK(compute_ != nil, "mps: could not create a compute encoder");
  return compute_;
}

id<MTLBlitCommandEncoder> MpsDevice::blit_encoder() {
  if (blit_ != nil) return blit_;
  end_encoder();
  blit_ = [command_buffer() blitCommandEncoder];
  AOTISHIM_CHECK(blit_ != nil, "mps: could not create a blit encoder");
  return blit_;
}

void MpsDevice::end_encoder() {
  if (compute_ != nil) {
    [compute_ endEncoding];
    compute_ = nil;
  }
  if (blit_ != nil) {
    [blit_ endEncoding];
    blit_ = nil;
  }
}

void MpsDevice::record_one(uintptr_t base, bool write) {
  if (base == 0) return;  // the scratch buffer of empty tensors
  BufferState& s = state(base);
  s.last_use = open_seq_;
  if (write) s.last_write = open_seq_;
}

void MpsDevice::record(std::initializer_list<std::pair<uintptr_t, bool>> uses) {
  for (const auto& [base, write] : uses) record_one(base, write);
}

void MpsDevice::finish_command() {
  ++counters_.commands;
  if (++open_commands_ >= kFlushInterval) commit();
}

void MpsDevice::commit() {
  if (open_ == nil) return;
  end_encoder();
  [open_ commit];
  in_flight_.emplace_back(open_seq_, open_);
  open_ = nil;
  open_commands_ = 0;
  reap();
}

void MpsDevice::reap() {
  for (auto it = in_flight_.begin(); it != in_flight_.end();) {
    if (pending(it->second)) {
      ++it;
      continue;
    }
    if (it->second.status == MTLCommandBufferStatusError) {
      defer_error(str("mps: command buffer #", it->first,
                      " failed on the GPU: ", mps::describe(it->second.error)));
    }
    it = in_flight_.erase(it);
  }
}

void MpsDevice::wait_for(uint64_t seq) {
  if (seq == 0) return;
  // Counted when the work was still pending at the request (an uncommitted
  // command buffer always is), so the count does not depend on GPU timing.
  bool waited = false;
  if (open_ != nil && seq == open_seq_) {
    commit();
    waited = true;
  }
  for (auto& [s, cb] : in_flight_) {
    if (s != seq) continue;
    if (pending(cb)) {
      waited = true;
      [cb waitUntilCompleted];
    }
    break;
  }
  if (waited) ++counters_.synchronizes;
  reap();
}

void MpsDevice::host_access(uintptr_t base, bool write) {
  // Reads wait for the last writer, writes for the last user; a command
  // buffer that already completed costs nothing.
  const BufferState& s = state(base);
  wait_for(write ? s.last_use : s.last_write);
}

void MpsDevice::defer_error(const std::string& message) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  log(LogLevel::Error, message);
  if (deferred_.empty()) deferred_ = message;
}

void MpsDevice::raise_deferred() {
  if (deferred_.empty()) return;
  std::string message = std::move(deferred_);
  deferred_.clear();
  fail(message);
}

void MpsDevice::synchronize() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  ++counters_.synchronizes;
  pooled([&] {
    commit();
    for (auto& entry : in_flight_) [entry.second waitUntilCompleted];
    reap();
  });
  raise_deferred();
}

DeviceCounters MpsDevice::counters() const {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  return counters_;
}

// ---- host access ----

void MpsDevice::download(void* host_dst, const Tensor& src_packed) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const size_t n = static_cast<size_t>(src_packed.numel()) * src_packed.itemsize();
  if (n > 0) {
    Binding b = bind(src_packed, "download source");
    pooled([&] { host_access(b.base, false); });
  }
  raise_deferred();
  if (n > 0) std::memcpy(host_dst, src_packed.data(), n);
}

void MpsDevice::upload(const Tensor& dst_packed, const void* host_src) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const size_t n = static_cast<size_t>(dst_packed.numel()) * dst_packed.itemsize();
  if (n > 0) {
    Binding b = bind(dst_packed, "upload destination");
    pooled([&] { host_access(b.base, true); });
  }
  raise_deferred();
  if (n > 0) std::memcpy(dst_packed.data(), host_src, n);
}

void MpsDevice::prepare_host_access(const void* ptr, size_t nbytes, bool write) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (owns(ptr)) {
    Binding b = bind_pointer(ptr, nbytes, write ? "host write" : "host read");
    pooled([&] { host_access(b.base, write); });
  }
  raise_deferred();
}

// ---- kernels ----

id<MTLComputePipelineState> MpsDevice::pipeline(const char* name) {
  auto it = pipelines_.find(name);
  if (it != pipelines_.end()) return it->second;
  if (library_ == nil) {
    MTLCompileOptions* options = [MTLCompileOptions new];
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
    options.fastMathEnabled = NO;  // conversions and NaN must be exact
#pragma clang diagnostic pop
    NSError* error = nil;
    library_ = [device_ newLibraryWithSource:@(mps::library_source().c_str())
                                       options:options
                                         error:&error];
    AOTISHIM_CHECK(library_ != nil, "mps: compiling the device's Metal kernels failed: ",
                   mps::describe(error));
  }
  id<MTLFunction> function = [library_ newFunctionWithName:@(name)];
  AOTISHIM_CHECK(function != nil, "mps: kernel '", name, "' is missing from the device library");
  NSError* error = nil;
  id<MTLComputePipelineState> pso = [device_ newComputePipelineStateWithFunction:function
                                                                            error:&error];
  AOTISHIM_CHECK(pso != nil, "mps: building the pipeline of '", name,
                 "' failed: ", mps::describe(error));
  pipelines_[name] = pso;
  return pso;
}

void MpsDevice::encode_blit(const Binding& dst, const Binding& src, size_t nbytes) {
  [blit_encoder() copyFromBuffer:src.buffer
                    sourceOffset:src.offset
                        toBuffer:dst.buffer
               destinationOffset:dst.offset
                            size:nbytes];
  record({{dst.base, true}, {src.base, false}});
  finish_command();
}

void MpsDevice::encode_copy_kernel(const Binding& dst, const Binding& src, const void* params,
                                   uint64_t numel) {
  AOTISHIM_CHECK(numel <= std::numeric_limits<uint32_t>::max(), "mps: copy of ", numel,
                 " elements is too large for one dispatch");
  id<MTLComputePipelineState> pso = pipeline(mps::kCopyKernel);
  id<MTLComputeCommandEncoder> encoder = compute_encoder();
  [encoder setComputePipelineState:pso];
  [encoder setBuffer:dst.buffer offset:dst.offset atIndex:0];
  [encoder setBuffer:src.buffer offset:src.offset atIndex:1];
  [encoder setBytes:params length:sizeof(mps::CopyParams) atIndex:2];
  const NSUInteger width =
      std::min<NSUInteger>([pso maxTotalThreadsPerThreadgroup], static_cast<NSUInteger>(numel));
  [encoder dispatchThreads:MTLSizeMake(static_cast<NSUInteger>(numel), 1, 1)
      threadsPerThreadgroup:MTLSizeMake(width, 1, 1)];
  record({{dst.base, true}, {src.base, false}});
  finish_command();
}

void MpsDevice::encode_copy(const Tensor& dst, const Tensor& src) {
  AOTISHIM_CHECK(dst.sizes == src.sizes, "mps: copy between views of different sizes");
  AOTISHIM_CHECK(dst.dtype == src.dtype ||
                     (dst.dtype != DType::Float64 && src.dtype != DType::Float64),
                 "mps: cannot convert ", dtype_name(src.dtype), " to ", dtype_name(dst.dtype),
                 " on the GPU (Metal has no float64)");
  const uint64_t numel = static_cast<uint64_t>(dst.numel());
  if (numel == 0) return;
  Binding d = bind(dst, "copy destination");
  Binding s = bind(src, "copy source");
  std::vector<CopyDim> dims = coalesce(dst, src);
  const bool packed =
      dims.empty() || (dims.size() == 1 && dims[0].dst_stride == 1 && dims[0].src_stride == 1);
  const size_t nbytes = numel * dst.itemsize();
  // The blit engine copies bytes; on macOS only at 4-byte granularity.
  if (dst.dtype == src.dtype && packed && d.offset % 4 == 0 && s.offset % 4 == 0 &&
      nbytes % 4 == 0) {
    encode_blit(d, s, nbytes);
    return;
  }
  // The strided copy kernel knows the dtypes up to int64 and the real floats.
  for (DType t : {dst.dtype, src.dtype})
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
  p.dst_dtype = static_cast<int32_t>(dst.dtype);
  p.src_dtype = static_cast<int32_t>(src.dtype);
  encode_copy_kernel(d, s, &p, numel);
}

void MpsDevice::encode_zero(const Tensor& dst) {
  // A copy from a broadcast zero: exactly the view's elements, whatever its
  // strides (a padded row or a piece of a larger buffer keeps its neighbours).
  mps::CopyParams p{};
  Tensor zero = dst;
  zero.strides.assign(dst.sizes.size(), 0);
  std::vector<CopyDim> dims = coalesce(dst, zero);
  AOTISHIM_CHECK(dims.size() <= static_cast<size_t>(mps::kMaxCopyDims),
                 "mps: cannot fill a view with ", dims.size(), " dimensions");
  p.ndim = static_cast<int32_t>(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    p.sizes[i] = dims[i].size;
    p.dst_strides[i] = dims[i].dst_stride;
    p.src_strides[i] = 0;
  }
  p.dst_dtype = p.src_dtype = static_cast<int32_t>(dst.dtype);
  Binding zeros;
  zeros.buffer = zeros_;
  encode_copy_kernel(bind(dst, "fill destination"), zeros, &p,
                     static_cast<uint64_t>(dst.numel()));
}

void MpsDevice::copy(const Tensor& dst, const Tensor& src) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  AOTISHIM_CHECK(&src.device() == this, "mps: copy source is on ", src.device().name());
  pooled([&] { encode_copy(dst, src); });
}

void MpsDevice::copy_bytes(const void* dst, const void* src, size_t nbytes) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  if (nbytes == 0) return;
  Binding d = bind_pointer(dst, nbytes, "copy destination");
  Binding s = bind_pointer(src, nbytes, "copy source");
  const uintptr_t dp = reinterpret_cast<uintptr_t>(dst), sp = reinterpret_cast<uintptr_t>(src);
  AOTISHIM_CHECK(dp + nbytes <= sp || sp + nbytes <= dp || dp == sp,
                 "mps: copy between overlapping byte ranges");
  if (dp == sp) return;
  pooled([&] {
    if (d.offset % 4 == 0 && s.offset % 4 == 0 && nbytes % 4 == 0) {
      encode_blit(d, s, nbytes);
      return;
    }
    mps::CopyParams p{};
    p.ndim = 1;
    p.sizes[0] = static_cast<int64_t>(nbytes);
    p.dst_strides[0] = p.src_strides[0] = 1;
    p.dst_dtype = p.src_dtype = static_cast<int32_t>(DType::UInt8);
    encode_copy_kernel(d, s, &p, nbytes);
  });
}

void MpsDevice::dispatch(id<MTLComputePipelineState> pso, const std::vector<KernelArg>& args,
                         MTLSize threads, MTLSize group) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  pooled([&] {
    id<MTLComputeCommandEncoder> encoder = compute_encoder();
    [encoder setComputePipelineState:pso];
    for (size_t i = 0; i < args.size(); ++i) {
      const KernelArg& arg = args[i];
      if (arg.kind == KernelArg::kBuffer) {
        [encoder setBuffer:arg.buffer.buffer offset:arg.buffer.offset atIndex:i];
      } else if (arg.kind == KernelArg::kInt) {
        [encoder setBytes:&arg.value length:sizeof(arg.value) atIndex:i];
      }
    }
    [encoder dispatchThreads:threads threadsPerThreadgroup:group];
    // Which arguments a kernel writes is not known here: all count as written.
    for (const KernelArg& arg : args)
      if (arg.kind == KernelArg::kBuffer) record_one(arg.buffer.base, true);
    finish_command();
  });
}

MpsDevice::Binding MpsDevice::scratch() const {
  Binding b;
  b.buffer = zeros_;
  return b;
}

void MpsDevice::encode_kernel(const char* name, const std::vector<BufferUse>& buffers,
                              const void* params, size_t params_bytes, const Dispatch& dispatch) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  pooled([&] {
    id<MTLComputePipelineState> pso = pipeline(name);
    id<MTLComputeCommandEncoder> encoder = compute_encoder();
    [encoder setComputePipelineState:pso];
    NSUInteger index = 0;
    for (const BufferUse& use : buffers)
      [encoder setBuffer:use.binding.buffer offset:use.binding.offset atIndex:index++];
    [encoder setBytes:params length:params_bytes atIndex:index];
    dispatch(encoder, pso);
    for (const BufferUse& use : buffers) record_one(use.binding.base, use.write);
    finish_command();
  });
}

// ---- matrix products ----

bool MpsDevice::encode_mps_gemm(const GemmArgs& args) {
  if (args.out.dtype != DType::Float32 && args.out.dtype != DType::Float16) return false;
  const Tensor &out = args.out, &a = args.a, &b = args.b;
  const int64_t B = out.sizes[0], M = out.sizes[1], N = out.sizes[2], K = a.sizes[2];
  if (K == 0) return false;
  MatrixLayout lo = matrix_layout(out), la = matrix_layout(a), lb = matrix_layout(b);
  if (!lo.ok || lo.transposed || !la.ok || !lb.ok) return false;
  Binding bo = bind(out, "out"), ba = bind(a, "a"), bb = bind(b, "b");
  // Where whole padded rows (or matrices) from the view's offset would run
  // past the buffer, as for a narrow view at its end, the strided kernel
  // does it: MPS need not read only the bytes a view reaches.
  auto fits = [&](const Binding& bd, const MatrixLayout& l) {
    return bd.offset + static_cast<size_t>(B) * l.matrix_bytes <= [bd.buffer length];
  };
  if (!fits(bo, lo) || !fits(ba, la) || !fits(bb, lb)) return false;

  const MPSDataType type =
      out.dtype == DType::Float32 ? MPSDataTypeFloat32 : MPSDataTypeFloat16;
  auto matrix = [&](const Binding& bd, const MatrixLayout& l) {
    MPSMatrixDescriptor* desc =
        B == 1 ? [MPSMatrixDescriptor matrixDescriptorWithRows:l.rows
                                                        columns:l.cols
                                                       rowBytes:l.row_bytes
                                                       dataType:type]
               : [MPSMatrixDescriptor matrixDescriptorWithRows:l.rows
                                                        columns:l.cols
                                                       matrices:static_cast<NSUInteger>(B)
                                                       rowBytes:l.row_bytes
                                                    matrixBytes:l.matrix_bytes
                                                       dataType:type];
    return [[MPSMatrix alloc] initWithBuffer:bd.buffer offset:bd.offset descriptor:desc];
  };
  MPSMatrix* mo = matrix(bo, lo);
  MPSMatrix* ma = matrix(ba, la);
  MPSMatrix* mb = matrix(bb, lb);
  // With beta == 0 out must not be read (it may hold NaN): zero it first, so
  // the result does not depend on whether the kernel reads it.
  if (args.beta == 0.0) encode_zero(out);
  MPSMatrixMultiplication* kernel =
      [[MPSMatrixMultiplication alloc] initWithDevice:device_
                                        transposeLeft:la.transposed
                                       transposeRight:lb.transposed
                                           resultRows:static_cast<NSUInteger>(M)
                                        resultColumns:static_cast<NSUInteger>(N)
                                      interiorColumns:static_cast<NSUInteger>(K)
                                                alpha:args.alpha
                                                 beta:args.beta];
  kernel.batchStart = 0;
  kernel.batchSize = static_cast<NSUInteger>(B);
  end_encoder();  // MPS encodes into the command buffer itself
  [kernel encodeToCommandBuffer:command_buffer() leftMatrix:ma rightMatrix:mb resultMatrix:mo];
  record({{bo.base, true}, {ba.base, false}, {bb.base, false}});
  finish_command();
  return true;
}

void MpsDevice::encode_kernel_gemm(const GemmArgs& args) {
  const Tensor &out = args.out, &a = args.a, &b = args.b;
  mps::GemmParams p{};
  p.batch = out.sizes[0];
  p.m = out.sizes[1];
  p.n = out.sizes[2];
  p.k = a.sizes[2];
  for (int i = 0; i < 3; ++i) {
    p.out_strides[i] = out.strides[i];
    p.a_strides[i] = a.strides[i];
    p.b_strides[i] = b.strides[i];
  }
  p.alpha = static_cast<float>(args.alpha);
  p.beta = static_cast<float>(args.beta);
  const char* name = out.dtype == DType::Float32   ? mps::kGemmFloat32
                     : out.dtype == DType::Float16 ? mps::kGemmFloat16
                                                   : mps::kGemmBFloat16;
  Binding bo = bind(out, "out"), ba = bind(a, "a"), bb = bind(b, "b");
  id<MTLComputePipelineState> pso = pipeline(name);
  id<MTLComputeCommandEncoder> encoder = compute_encoder();
  [encoder setComputePipelineState:pso];
  [encoder setBuffer:bo.buffer offset:bo.offset atIndex:0];
  [encoder setBuffer:ba.buffer offset:ba.offset atIndex:1];
  [encoder setBuffer:bb.buffer offset:bb.offset atIndex:2];
  [encoder setBytes:&p length:sizeof(p) atIndex:3];
  const NSUInteger n = static_cast<NSUInteger>(p.n), m = static_cast<NSUInteger>(p.m);
  const NSUInteger width = std::min<NSUInteger>([pso threadExecutionWidth], n);
  const NSUInteger height =
      std::max<NSUInteger>(1, std::min<NSUInteger>([pso maxTotalThreadsPerThreadgroup] / width, m));
  [encoder dispatchThreads:MTLSizeMake(n, m, static_cast<NSUInteger>(p.batch))
      threadsPerThreadgroup:MTLSizeMake(width, height, 1)];
  record({{bo.base, true}, {ba.base, false}, {bb.base, false}});
  finish_command();
}

void MpsDevice::gemm(const GemmArgs& args) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const DType dtype = args.out.dtype;
  AOTISHIM_CHECK(dtype == DType::Float32 || dtype == DType::Float16 || dtype == DType::BFloat16,
                 "mps: matrix products support float32, float16 and bfloat16, not ",
                 dtype_name(dtype), " (Metal has no float64)");
  AOTISHIM_CHECK(args.a.dtype == dtype && args.b.dtype == dtype, "mps: gemm operands differ in dtype");
  AOTISHIM_CHECK(args.out.dim() == 3 && args.a.dim() == 3 && args.b.dim() == 3,
                 "mps: gemm takes 3-D (batch, rows, cols) views");
  if (args.out.numel() == 0) return;
  pooled([&] {
    if (gemm_kernel_forced() || !encode_mps_gemm(args)) encode_kernel_gemm(args);
  });
}

}  // namespace aotishim
