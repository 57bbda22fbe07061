// The random ops on cuda: each op draws one 64-bit key from the process-wide
// generator (so aotishim.manual_seed makes cuda draws reproducible too) and
// a Philox kernel fills the output from it (random_kernels.cu). randperm
// shuffles on the host (Fisher-Yates over the generator, as the cpu kernel)
// and the kernel stores the permutation in the output's dtype. A recording
// CUDA graph is refused: its replays would repeat the recorded key's numbers,
// so such a model runs without a graph.
#include <cuda_runtime_api.h>

#include <numeric>
#include <vector>

#include "core/error.h"
#include "core/generator.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_stream.h"
#include "devices/cuda/random_kernels.h"
#include "ops/random.h"

namespace aotishim {
namespace cuda {

namespace {

DeviceRandomKind device_kind(RandomKind kind) {
  switch (kind) {
    case RandomKind::Uniform: return DeviceRandomKind::Uniform;
    case RandomKind::Normal: return DeviceRandomKind::Normal;
    case RandomKind::Exponential: return DeviceRandomKind::Exponential;
    case RandomKind::Integer: return DeviceRandomKind::Integer;
    case RandomKind::Bernoulli: return DeviceRandomKind::Bernoulli;
    case RandomKind::Permutation: return DeviceRandomKind::Permutation;
    case RandomKind::Dropout: return DeviceRandomKind::Dropout;
  }
  fail("cuda random: unknown kind");
}

void refuse_recording(cudaStream_t stream) {
  cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
  AOTISHIM_CUDA_CHECK(cudaStreamIsCapturing(stream, &capturing));
  AOTISHIM_CHECK(capturing == cudaStreamCaptureStatusNone,
                 "random ops cannot be recorded in a CUDA graph: every replay would draw the "
                 "recorded numbers again");
}

void cuda_random(const RandomArgs& a) {
  auto& device = static_cast<CudaDevice&>(a.out.device());
  DeviceScope on(device.index());
  const cudaStream_t stream = device.stream();
  refuse_recording(stream);

  RandomLaunch L;
  L.kind = device_kind(a.kind);
  L.ndim = static_cast<int>(a.out.dim());
  AOTISHIM_CHECK(L.ndim <= kMaxCopyDims, "cuda random: up to ", kMaxCopyDims,
                 " dimensions, got ", L.ndim);
  for (int d = 0; d < L.ndim; ++d) L.sizes[d] = a.out.sizes[d];
  L.numel = a.out.numel();
  L.out = view_of(a.out);
  L.a = a.a;
  L.b = a.b;
  L.low = a.low;
  L.range = a.range;

  Tensor perm, bad;
  if (a.kind == RandomKind::Bernoulli && a.has_p) {
    AOTISHIM_CHECK(a.p.device().type() == DeviceType::CUDA && a.p.dtype == DType::Float64 &&
                       a.p.is_contiguous() && a.p.sizes == a.out.sizes,
                   "cuda bernoulli_: p must be packed float64 at self's sizes");
    AOTISHIM_CHECK(a.p.device().index() == device.index(), "cuda bernoulli_: p is on ",
                   a.p.device().name(), ", self on ", device.name());
    // torch's check, before self is written: every probability in [0, 1].
    bad = make_empty(device, DType::Int32, {1});
    launch_check_probabilities(reinterpret_cast<const double*>(a.p.data()), a.p.numel(),
                               reinterpret_cast<int32_t*>(bad.data()), stream);
    int32_t found = 0;
    AOTISHIM_CUDA_CHECK(
        cudaMemcpyAsync(&found, bad.data(), sizeof(found), cudaMemcpyDeviceToHost, stream));
    AOTISHIM_CUDA_CHECK(cudaStreamSynchronize(stream));
    AOTISHIM_CHECK(found == 0, "bernoulli_: every p must be in [0, 1]");
    L.p = reinterpret_cast<const double*>(a.p.data());
  }
  if (a.kind == RandomKind::Dropout) {
    AOTISHIM_CHECK(a.input.sizes == a.out.sizes && a.mask.sizes == a.out.sizes &&
                       a.input.dtype == a.out.dtype && a.mask.dtype == DType::Bool,
                   "cuda dropout: input and mask must match the output");
    L.input = view_of(a.input);
    L.mask = view_of(a.mask);
  }

  {
    RandomDraws draws;  // held: the key and a permutation's swaps are consecutive
    L.key = draws.bits();
    if (a.kind == RandomKind::Permutation) {
      AOTISHIM_CHECK(a.out.dim() == 1, "cuda randperm: the output must be 1-d");
      const int64_t n = a.out.numel();
      std::vector<int64_t> host(static_cast<size_t>(n));
      std::iota(host.begin(), host.end(), int64_t{0});
      for (int64_t i = n - 1; i > 0; --i)
        std::swap(host[i], host[draws.below(static_cast<uint64_t>(i) + 1)]);
      perm = make_empty(device, DType::Int64, {n});
      device.upload(perm, host.data());  // pageable: consumed when it returns
      L.perm = reinterpret_cast<const int64_t*>(perm.data());
    }
  }
  device.count_command();
  launch_random(L, stream);
  // perm and bad are released here, stream-ordered after the kernel.
}

AOTISHIM_REGISTER_KERNEL(ops::random_kernel, DeviceType::CUDA, cuda_random);

}  // namespace

}  // namespace cuda
}  // namespace aotishim
