// The interface between the host Metal runtime and a library it compiled:
// plain C, because it is compiled twice, into the runtime and (as text, ahead
// of msl_prelude.h) into every kernel library.
#ifndef AOTISHIM_MSL_KERNEL_ABI_H
#define AOTISHIM_MSL_KERNEL_ABI_H

#include <stdint.h>

#define AOTISHIM_MSL_ABI_VERSION 2
#define AOTISHIM_MSL_MAX_BUFFERS 31  // Metal's buffer argument table
#define AOTISHIM_MSL_SIMD_WIDTH 32
#define AOTISHIM_MSL_SIMD_VALUE_BYTES 32  // the largest value a SIMD-group function moves

#ifdef __cplusplus
extern "C" {
#endif

struct aotishim_msl_runtime;

// One thread of a dispatch, as its kernel sees it.
struct aotishim_msl_thread {
  const struct aotishim_msl_runtime* runtime;
  void* fiber;  // the runtime's, opaque
  void* const* buffers;             // [AOTISHIM_MSL_MAX_BUFFERS], bound address (base + offset)
  void* const* threadgroup_memory;  // [AOTISHIM_MSL_MAX_BUFFERS]
  uint32_t thread_position_in_grid[3];
  uint32_t threadgroup_position_in_grid[3];
  uint32_t thread_position_in_threadgroup[3];
  uint32_t threads_per_threadgroup[3];
  uint32_t threadgroups_per_grid[3];
  uint32_t threads_per_grid[3];
  uint32_t dispatch_threads_per_threadgroup[3];  // as dispatched; an edge group may be smaller
  uint32_t thread_index_in_threadgroup;
  uint32_t simdgroup_index_in_threadgroup;
  uint32_t thread_index_in_simdgroup;
  uint32_t threads_per_simdgroup;
  uint32_t simdgroups_per_threadgroup;
};

// What a kernel calls back for, from inside its fiber.
struct aotishim_msl_runtime {
  // Returns once every thread of the threadgroup reached a barrier.
  void (*threadgroup_barrier)(const struct aotishim_msl_thread* self);
  // SIMD-group exchange: deposits `value` (`size` bytes) under `op` and
  // returns once every active lane of the SIMD group did, with every lane's
  // value in `lanes` (AOTISHIM_MSL_SIMD_WIDTH slots of
  // AOTISHIM_MSL_SIMD_VALUE_BYTES) and the active lanes' bit mask in `active`.
  void (*simd_exchange)(const struct aotishim_msl_thread* self, uint32_t op, const void* value,
                        uint32_t size, void* lanes, uint32_t* active);
};

typedef void (*aotishim_msl_entry)(const struct aotishim_msl_thread* self);

enum aotishim_msl_param_kind {
  AOTISHIM_MSL_PARAM_BUFFER = 0,       // [[buffer(index)]]
  AOTISHIM_MSL_PARAM_THREADGROUP = 1,  // [[threadgroup(index)]]
  AOTISHIM_MSL_PARAM_POSITION = 2,     // a thread-position attribute
};

struct aotishim_msl_param {
  int32_t kind;
  int32_t index;  // buffer or threadgroup index; -1 for a position
  const char* name;       // the parameter's name
  const char* attribute;  // the attribute as written, e.g. "buffer(2)"
  int32_t writes;         // a buffer the kernel may store to (not `constant`, not `device const`)
};

struct aotishim_msl_kernel {
  const char* name;  // the function name (host_name for a template instance)
  aotishim_msl_entry entry;
  int32_t param_count;
  const struct aotishim_msl_param* params;
};

// Exported by every compiled library.
typedef const struct aotishim_msl_kernel* (*aotishim_msl_kernels_fn)(int32_t* count,
                                                                     int32_t* abi_version);
#define AOTISHIM_MSL_KERNELS_SYMBOL "aotishim_msl_kernels"

#ifdef __cplusplus
}
#endif

#endif  // AOTISHIM_MSL_KERNEL_ABI_H
