// segment_reduce on cuda (reduce_kernels.cu): every segment's bounds are
// found and checked on the device (one thread per row of lengths or
// offsets) and the verdict read back (the one synchronisation; torch cuda
// reads the lengths' minimum and sum back for its own checks); then each
// output element reduces its segment in data's dtype, as torch cuda's
// kernel does, or, for one-dimensional data, CUB's segmented reduce does it
// in the order torch cuda's own call of it gives.
#include <cuda_runtime_api.h>

#include <vector>

#include "core/error.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/reduce_kernels.h"
#include "ops/segment_reduce.h"

namespace aotishim {
namespace cuda {

namespace {

SegmentKind kind_of(SegmentReduce r) {
  switch (r) {
    case SegmentReduce::Max: return SegmentKind::kMax;
    case SegmentReduce::Mean: return SegmentKind::kMean;
    case SegmentReduce::Min: return SegmentKind::kMin;
    case SegmentReduce::Sum: return SegmentKind::kSum;
    case SegmentReduce::Prod: return SegmentKind::kProd;
  }
  fail("cuda segment_reduce: unknown reduction");
}

void segment_reduce(const SegmentReduceArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.data.device());
  DeviceScope on(device.index());
  const cudaStream_t stream = device.stream();
  const DType t = a.data.dtype;
  AOTISHIM_CHECK(t == DType::Float32 || t == DType::Float64 || t == DType::Float16 ||
                     t == DType::BFloat16,
                 "cuda segment_reduce: unsupported dtype ", dtype_name(t));
  AOTISHIM_CHECK(a.data.is_contiguous() && a.segments.is_contiguous() && a.out.is_contiguous(),
                 "cuda segment_reduce: data, segments and out must be packed");
  const char* what = a.offsets ? "offsets" : "lengths";
  Tensor starts = make_empty(device, DType::Int64, {a.outer * a.count});
  Tensor ends = make_empty(device, DType::Int64, {a.outer * a.count});
  Tensor problem = make_empty(device, DType::Int64, {4});
  device.count_command();
  launch_segment_bounds(a.segments.data(), a.segments.dtype == DType::Int32, a.offsets, a.unsafe,
                        a.outer, a.count, a.axis_size, reinterpret_cast<int64_t*>(starts.data()),
                        reinterpret_cast<int64_t*>(ends.data()),
                        reinterpret_cast<SegmentProblem*>(problem.data()), stream);
  SegmentProblem found{};
  device.download(&found, problem);
  switch (found.code) {
    case 0: break;
    case 1: fail(str("segment_reduce(): ", what, " contains negative value!"));
    case 2:
      fail(str("segment_reduce(): segment ", found.segment, " [", found.start, ", ", found.end,
               ") lies outside the axis of size ", a.axis_size));
    default:
      fail("segment_reduce(): Expected all rows of lengths along axis to sum to "
           "data.size(lengths.dim()-1) when !unsafe.");
  }
  if (a.out.numel() == 0) return;
  std::vector<Tensor> scratch;
  ReduceScratch alloc = [&](size_t bytes) {
    scratch.push_back(make_empty(device, DType::UInt8, {static_cast<int64_t>(bytes)}));
    return static_cast<void*>(scratch.back().data());
  };
  device.count_command();
  launch_segment_reduce(t, kind_of(a.reduce), a.data.data(), a.out.data(),
                        reinterpret_cast<const int64_t*>(starts.data()),
                        reinterpret_cast<const int64_t*>(ends.data()), a.outer, a.count, a.inner,
                        a.axis_size, a.data.dim() == 1, a.initial.has_value(),
                        a.initial.value_or(0.0), alloc, stream);
}

AOTISHIM_REGISTER_KERNEL(ops::segment_reduce_kernel, DeviceType::CUDA, segment_reduce);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
