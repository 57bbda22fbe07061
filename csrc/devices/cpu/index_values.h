// Integer indices of index.Tensor and index_put on the host: reading one,
// and checking them all before anything is written (an error must not be
// raised inside a parallel region).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "devices/cpu/typed_elements.h"

namespace aotishim {
namespace cpu {

inline int64_t load_index(const Tensor& t, int64_t off) {
  return t.dtype == DType::Int32 ? typed<int32_t>(t)[off] : typed<int64_t>(t)[off];
}

// Fails as torch does unless every value of index `t` lies in [-size, size)
// of self's dim `dim`. t is seen at the result's sizes, broadcast (stride 0)
// along the dims it does not span: each of its own elements is read once,
// not once per result element.
inline void check_index_values(const Tensor& index, int64_t dim, int64_t size) {
  Tensor t = index;
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.strides[d] == 0) t.sizes[d] = std::min<int64_t>(t.sizes[d], 1);
  for_each_element(t, [&](int64_t off, const std::vector<int64_t>&) {
    const int64_t i = load_index(t, off);
    AOTISHIM_CHECK(i >= -size && i < size, "index ", i, " is out of bounds for dimension ", dim,
                   " with size ", size);
  });
}

}  // namespace cpu
}  // namespace aotishim
