// index.Tensor (x[mask], x[:, idx]) and masked_scatter
// (ops/advanced_index.cpp); devices register the kernels.
#pragma once

#include <vector>

#include "aotishim/c_shim.h"
#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// out[o] = self[the element o names]: validation has turned masks into
// integer indices and broadcast them, so the kernel only reads, per output
// dim d, how far self moves (self_strides[d]; 0 in the dims the indices
// span), and per index k its strides over the output dims (0 outside the
// dims it spans), the self dim it indexes and that dim's size (negative
// indices count from the end; out of range is an error). Elements are copied
// as bytes, so every dtype works.
struct IndexArgs {
  Tensor self, out;
  std::vector<int64_t> self_strides;  // per out dim
  std::vector<Tensor> indices;        // int64 or int32, seen at out's sizes
  std::vector<int64_t> dims;          // the self dim each index indexes
};

// out = self (broadcast to the mask's shape) with the elements where mask is
// true replaced, in row-major order, by source's first elements (read
// row-major). mask (bool) is seen at out's sizes; source has self's dtype.
struct MaskedScatterArgs {
  Tensor self, mask, source, out;
};

// How index.Tensor's indices address self: the result's sizes, how far self
// moves per result dim (0 in the dims the indices span), and each index (int64
// or int32, masks turned into the integer indices of their true elements)
// seen at the result's sizes, with the self dim it indexes. index_put writes
// where index reads.
struct IndexPlan {
  std::vector<int64_t> sizes;
  std::vector<int64_t> self_strides;
  std::vector<Tensor> indices;
  std::vector<int64_t> dims;
};

namespace ops {
struct OpCall;
// torch's rules for the indices: masks match the dims they cover, integer
// indices broadcast together, their dims in place when adjacent, else first.
IndexPlan plan_index(const OpCall& call, const Tensor& self, const AtenTensorHandle** indices,
                     int64_t indices_len);

AOTISHIM_API extern Op<void(const IndexArgs&)> index_kernel;
AOTISHIM_API extern Op<void(const MaskedScatterArgs&)> masked_scatter_kernel;
}  // namespace ops

}  // namespace aotishim
