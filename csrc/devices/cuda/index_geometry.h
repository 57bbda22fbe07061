// Host helpers shared by index.Tensor and index_put on cuda: an index plan
// as the kernels' IndexGeometry, and the read-back of a device-side index
// check turned into torch's error.
#pragma once

#include <cstdint>
#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/tensor.h"
#include "devices/cuda/index_kernels.h"

namespace aotishim {
namespace cuda {

// The plan's result sizes, self's stride per result dim, and every index
// (seen at the result's sizes) with the dim of `self` it indexes.
inline IndexGeometry index_geometry(const Tensor& self, const std::vector<int64_t>& sizes,
                                    const std::vector<int64_t>& self_strides,
                                    const std::vector<Tensor>& indices,
                                    const std::vector<int64_t>& dims) {
  AOTISHIM_CHECK(sizes.size() <= static_cast<size_t>(kMaxCopyDims) &&
                     indices.size() <= static_cast<size_t>(kMaxCopyDims),
                 "cuda indexing supports results of up to ", kMaxCopyDims, " dimensions and up to ",
                 kMaxCopyDims, " indices, got ", sizes.size(), " and ", indices.size());
  IndexGeometry g;
  g.ndim = static_cast<int>(sizes.size());
  for (size_t d = 0; d < sizes.size(); ++d) {
    g.sizes[d] = sizes[d];
    g.self_strides[d] = self_strides[d];
  }
  g.count = static_cast<int>(indices.size());
  for (size_t k = 0; k < indices.size(); ++k) {
    const Tensor& t = indices[k];
    AOTISHIM_CHECK(t.dtype == DType::Int64 || t.dtype == DType::Int32,
                   "cuda indexing: indices must be int64 or int32, got ", dtype_name(t.dtype));
    AOTISHIM_CHECK(t.sizes == sizes, "cuda indexing: an index is not seen at the result's sizes");
    IndexOperand& ix = g.indices[k];
    ix.data = t.data();
    ix.is32 = t.dtype == DType::Int32;
    for (size_t d = 0; d < sizes.size(); ++d) ix.strides[d] = t.strides[d];
    ix.dim = dims[k];
    ix.size = self.sizes[dims[k]];
    ix.self_stride = self.strides[dims[k]];
  }
  return g;
}

// Reads back an IndexProblem (the one synchronisation) and fails as torch
// does for an index out of range.
inline void raise_index_problem(Device& device, const Tensor& problem,
                                const std::vector<int64_t>& self_sizes) {
  IndexProblem found{};
  device.download(&found, problem);
  if (found.found == 0) return;
  AOTISHIM_CHECK(found.where >= 0 && found.where < static_cast<int64_t>(self_sizes.size()),
                 "cuda indexing: an index out of range for dimension ", found.where);
  fail(str("index ", found.value, " is out of bounds for dimension ", found.where, " with size ",
           self_sizes[found.where]));
}

}  // namespace cuda
}  // namespace aotishim
