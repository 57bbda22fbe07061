// The DLPack exchange structures (the data-interchange spec that torch,
// numpy, CuPy and JAX implement), declared from the spec's field list.
// Layouts must match the spec exactly: producers and consumers of other
// libraries read these bytes.
#pragma once

#include <cstdint>

extern "C" {

// Where the memory lives. Only the values aotishim exchanges are named.
enum DLDeviceType : int32_t {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,  // pinned host memory
  kDLMetal = 8,
  kDLCUDAManaged = 13,
};

struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};

enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLOpaqueHandle = 3,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};

struct DLDataType {
  uint8_t code;    // a DLDataTypeCode
  uint8_t bits;    // bits per lane
  uint16_t lanes;  // 1 for scalars
};

struct DLTensor {
  void* data;  // element [0, ..., 0] lies at data + byte_offset
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null: packed row-major
  uint64_t byte_offset;
};

// The unversioned protocol: capsule name "dltensor", "used_dltensor" once taken.
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

// The versioned protocol (DLPack 1.x): capsule name "dltensor_versioned",
// "used_dltensor_versioned" once taken.
struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
};

constexpr uint64_t DLPACK_FLAG_BITMASK_READ_ONLY = 1ull << 0;
constexpr uint64_t DLPACK_FLAG_BITMASK_IS_COPIED = 1ull << 1;

struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
};

// The C exchange table (DLPack 1.2+): a framework's tensor type carries it
// as `type(t).__dlpack_c_exchange_api__`, a capsule named
// "dlpack_exchange_api", so a consumer reaches the tensor without Python
// calls. Only the header and the member order matter to aotishim, which
// calls managed_tensor_from_py_object_no_sync.
struct DLPackExchangeAPIHeader {
  DLPackVersion version;
  DLPackExchangeAPIHeader* prev_api;
};

struct DLPackExchangeAPI {
  DLPackExchangeAPIHeader header;
  int (*managed_tensor_allocator)(DLTensor* prototype, DLManagedTensorVersioned** out,
                                  void* error_ctx,
                                  void (*set_error)(void* error_ctx, const char* kind,
                                                    const char* message));
  // No stream ordering: the caller orders itself after the producer's
  // current work stream (current_work_stream) where there is one.
  int (*managed_tensor_from_py_object_no_sync)(void* py_object, DLManagedTensorVersioned** out);
  int (*managed_tensor_to_py_object_no_sync)(DLManagedTensorVersioned* tensor,
                                             void** out_py_object);
  int (*dltensor_from_py_object_no_sync)(void* py_object, DLTensor* out);
  int (*current_work_stream)(int32_t device_type, int32_t device_id, void** out_current_stream);
};

}  // extern "C"

namespace aotishim::python {
// The DLPack version this module produces and the newest major it reads.
constexpr uint32_t kDLPackMajor = 1;
constexpr uint32_t kDLPackMinor = 0;
}  // namespace aotishim::python
