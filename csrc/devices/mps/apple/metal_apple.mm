// metal.h over Apple's Metal: the only Objective-C++ of the mps device, one
// Metal call (or a few) per method. Encoders are opened and ended as the
// command kind changes; every call runs in an autorelease pool, so objects
// Metal hands back autoreleased are released per call, not per thread.
// MPSMatrixMultiplication serves multiply() where MPSSupportsMTLDevice says
// MPS works; elsewhere the device's own GEMM kernel runs (mps_gemm.cpp).
//
// Objective-C++ with ARC: the strong `id` members below are released by the
// compiler.
#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#import <MetalPerformanceShaders/MetalPerformanceShaders.h>

#include <exception>
#include <stdexcept>
#include <memory>
#include <string>
#include <type_traits>

#include "devices/mps/metal.h"

#if !__has_feature(objc_arc)
#error "the mps device is built with ARC (-fobjc-arc)"
#endif

namespace aotishim::metal {
namespace {

// Runs body inside an autorelease pool; an exception leaves after the pool
// is drained.
template <typename Body>
auto pooled(Body&& body) -> decltype(body()) {
  std::exception_ptr error;
  using Result = decltype(body());
  if constexpr (std::is_void_v<Result>) {
    @autoreleasepool {
      try {
        body();
      } catch (...) {
        error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
  } else {
    Result result{};
    @autoreleasepool {
      try {
        result = body();
      } catch (...) {
        error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    return result;
  }
}

std::string describe(NSError* error) {
  if (error == nil) return "no details given";
  const char* text = [[error localizedDescription] UTF8String];
  return text != nullptr ? std::string(text) : std::string("no details given");
}

[[noreturn]] void fail(const std::string& message) { throw std::runtime_error("mps: " + message); }

MTLSize mtl(Size s) {
  return MTLSizeMake(static_cast<NSUInteger>(s.x), static_cast<NSUInteger>(s.y),
                     static_cast<NSUInteger>(s.z));
}

class AppleBuffer final : public Buffer {
 public:
  explicit AppleBuffer(id<MTLBuffer> buffer) : buffer_(buffer) {}
  void* contents() override { return [buffer_ contents]; }
  size_t length() const override { return static_cast<size_t>([buffer_ length]); }
  id<MTLBuffer> mtl() const { return buffer_; }

 private:
  id<MTLBuffer> buffer_;
};

id<MTLBuffer> mtl_buffer(const std::shared_ptr<Buffer>& b) {
  return static_cast<const AppleBuffer&>(*b).mtl();
}

class ApplePipeline final : public Pipeline {
 public:
  explicit ApplePipeline(id<MTLComputePipelineState> pso) : pso_(pso) {}
  uint64_t max_threads_per_group() const override { return [pso_ maxTotalThreadsPerThreadgroup]; }
  uint64_t execution_width() const override { return [pso_ threadExecutionWidth]; }
  id<MTLComputePipelineState> mtl() const { return pso_; }

 private:
  id<MTLComputePipelineState> pso_;
};

class AppleLibrary final : public Library {
 public:
  AppleLibrary(id<MTLDevice> device, id<MTLLibrary> library) : device_(device), library_(library) {}
  std::shared_ptr<Pipeline> new_pipeline(const std::string& name) override {
    return pooled([&]() -> std::shared_ptr<Pipeline> {
      id<MTLFunction> function = [library_ newFunctionWithName:@(name.c_str())];
      if (function == nil) fail("the library has no kernel named '" + name + "'");
      NSError* error = nil;
      id<MTLComputePipelineState> pso = [device_ newComputePipelineStateWithFunction:function
                                                                               error:&error];
      if (pso == nil) fail("building the pipeline of '" + name + "' failed: " + describe(error));
      return std::make_shared<ApplePipeline>(pso);
    });
  }

 private:
  id<MTLDevice> device_;
  id<MTLLibrary> library_;
};

class AppleCommandBuffer final : public CommandBuffer {
 public:
  AppleCommandBuffer(id<MTLDevice> device, id<MTLCommandBuffer> cb) : device_(device), cb_(cb) {}

  void set_pipeline(const std::shared_ptr<Pipeline>& pipeline) override {
    pooled([&] {
      [compute() setComputePipelineState:static_cast<const ApplePipeline&>(*pipeline).mtl()];
    });
  }
  void set_buffer(uint32_t index, const std::shared_ptr<Buffer>& buffer, size_t offset) override {
    pooled([&] { [compute() setBuffer:mtl_buffer(buffer) offset:offset atIndex:index]; });
  }
  void set_bytes(uint32_t index, const void* data, size_t length) override {
    pooled([&] { [compute() setBytes:data length:length atIndex:index]; });
  }
  void set_threadgroup_memory(uint32_t index, size_t length) override {
    pooled([&] { [compute() setThreadgroupMemoryLength:length atIndex:index]; });
  }
  void dispatch_threads(Size grid, Size group) override {
    pooled([&] { [compute() dispatchThreads:mtl(grid) threadsPerThreadgroup:mtl(group)]; });
  }
  void dispatch_threadgroups(Size groups, Size group) override {
    pooled([&] {
      [compute() dispatchThreadgroups:mtl(groups) threadsPerThreadgroup:mtl(group)];
    });
  }

  void copy(const std::shared_ptr<Buffer>& src, size_t src_offset,
            const std::shared_ptr<Buffer>& dst, size_t dst_offset, size_t length) override {
    pooled([&] {
      [blit() copyFromBuffer:mtl_buffer(src)
                sourceOffset:src_offset
                    toBuffer:mtl_buffer(dst)
           destinationOffset:dst_offset
                        size:length];
    });
  }

  void multiply(const MatrixProduct& p) override {
    pooled([&] {
      const MPSDataType type =
          p.scalar == Scalar::Float32 ? MPSDataTypeFloat32 : MPSDataTypeFloat16;
      auto matrix = [&](const Matrix& m) {
        MPSMatrixDescriptor* desc =
            p.batch == 1
                ? [MPSMatrixDescriptor matrixDescriptorWithRows:m.rows
                                                        columns:m.cols
                                                       rowBytes:m.row_bytes
                                                       dataType:type]
                : [MPSMatrixDescriptor matrixDescriptorWithRows:m.rows
                                                        columns:m.cols
                                                       matrices:p.batch
                                                       rowBytes:m.row_bytes
                                                    matrixBytes:m.matrix_bytes
                                                       dataType:type];
        return [[MPSMatrix alloc] initWithBuffer:mtl_buffer(m.buffer)
                                          offset:m.offset
                                      descriptor:desc];
      };
      MPSMatrix* left = matrix(p.left);
      MPSMatrix* right = matrix(p.right);
      MPSMatrix* result = matrix(p.result);
      MPSMatrixMultiplication* kernel =
          [[MPSMatrixMultiplication alloc] initWithDevice:device_
                                            transposeLeft:p.transpose_left
                                           transposeRight:p.transpose_right
                                               resultRows:p.m
                                            resultColumns:p.n
                                          interiorColumns:p.k
                                                    alpha:p.alpha
                                                     beta:p.beta];
      kernel.batchStart = 0;
      kernel.batchSize = p.batch;
      end_encoder();  // MPS encodes into the command buffer itself
      [kernel encodeToCommandBuffer:cb_ leftMatrix:left rightMatrix:right resultMatrix:result];
    });
  }

  void commit() override {
    pooled([&] {
      end_encoder();
      [cb_ commit];
    });
  }
  void wait() override {
    pooled([&] { [cb_ waitUntilCompleted]; });
  }
  Status status() const override {
    switch ([cb_ status]) {
      case MTLCommandBufferStatusNotEnqueued:
      case MTLCommandBufferStatusEnqueued: return Status::NotCommitted;
      case MTLCommandBufferStatusCommitted:
      case MTLCommandBufferStatusScheduled: return Status::Committed;
      case MTLCommandBufferStatusCompleted: return Status::Completed;
      case MTLCommandBufferStatusError: return Status::Error;
    }
    return Status::Committed;
  }
  std::string error() const override {
    return pooled([&] { return describe([cb_ error]); });
  }

 private:
  // Serial dispatch (the default): each dispatch sees the writes of the
  // ones before it in this encoder.
  id<MTLComputeCommandEncoder> compute() {
    if (compute_ != nil) return compute_;
    end_encoder();
    compute_ = [cb_ computeCommandEncoder];
    if (compute_ == nil) fail("could not create a compute encoder");
    return compute_;
  }
  id<MTLBlitCommandEncoder> blit() {
    if (blit_ != nil) return blit_;
    end_encoder();
    blit_ = [cb_ blitCommandEncoder];
    if (blit_ == nil) fail("could not create a blit encoder");
    return blit_;
  }
  void end_encoder() {
    if (compute_ != nil) {
      [compute_ endEncoding];
      compute_ = nil;
    }
    if (blit_ != nil) {
      [blit_ endEncoding];
      blit_ = nil;
    }
  }

  id<MTLDevice> device_;
  id<MTLCommandBuffer> cb_;
  id<MTLComputeCommandEncoder> compute_ = nil;
  id<MTLBlitCommandEncoder> blit_ = nil;
};

class AppleDevice final : public Device {
 public:
  AppleDevice(id<MTLDevice> device, id<MTLCommandQueue> queue)
      : device_(device), queue_(queue), mps_(MPSSupportsMTLDevice(device)) {}

  std::shared_ptr<Buffer> new_buffer(size_t length) override {
    return pooled([&]() -> std::shared_ptr<Buffer> {
      id<MTLBuffer> buffer = [device_ newBufferWithLength:length
                                                  options:MTLResourceStorageModeShared];
      if (buffer == nil) return nullptr;
      return std::make_shared<AppleBuffer>(buffer);
    });
  }
  std::shared_ptr<Library> new_library(const std::string& source) override {
    return pooled([&]() -> std::shared_ptr<Library> {
      NSString* text = [NSString stringWithUTF8String:source.c_str()];
      if (text == nil) fail("the shader source is not valid UTF-8");
      MTLCompileOptions* options = [MTLCompileOptions new];
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
      options.fastMathEnabled = NO;  // conversions and NaN must be exact
#pragma clang diagnostic pop
      NSError* error = nil;
      id<MTLLibrary> library = [device_ newLibraryWithSource:text options:options error:&error];
      if (library == nil) fail(describe(error));
      return std::make_shared<AppleLibrary>(device_, library);
    });
  }
  std::shared_ptr<CommandBuffer> new_command_buffer() override {
    return pooled([&]() -> std::shared_ptr<CommandBuffer> {
      // Retained references (the default): the command buffer keeps every
      // buffer it uses alive until it completes.
      id<MTLCommandBuffer> cb = [queue_ commandBuffer];
      if (cb == nil) fail("could not create a command buffer");
      return std::make_shared<AppleCommandBuffer>(device_, cb);
    });
  }
  bool supports_mps() const override { return mps_; }
  std::string description() const override {
    return pooled([&] {
      const char* name = [[device_ name] UTF8String];
      return std::string(name != nullptr ? name : "a Metal GPU");
    });
  }

 private:
  id<MTLDevice> device_;
  id<MTLCommandQueue> queue_;
  bool mps_;
};

// The GPU. A process without a window server connection can get nil from
// MTLCreateSystemDefaultDevice on some systems; the device list still has it.
id<MTLDevice> gpu() {
  id<MTLDevice> device = MTLCreateSystemDefaultDevice();
  if (device == nil) {
    NSArray<id<MTLDevice>>* all = MTLCopyAllDevices();
    if ([all count] > 0) device = all[0];
  }
  return device;
}

}  // namespace

std::unique_ptr<Device> create_system_device() {
  return pooled([&]() -> std::unique_ptr<Device> {
    id<MTLDevice> device = gpu();
    if (device == nil) return nullptr;
    id<MTLCommandQueue> queue = [device newCommandQueue];
    if (queue == nil) fail("could not create a Metal command queue");
    return std::make_unique<AppleDevice>(device, queue);
  });
}

bool has_system_device() {
  // Asked by available_devices() often; the answer does not change.
  static const bool present = pooled([] { return gpu() != nil; });
  return present;
}

}  // namespace aotishim::metal
