#include "core/strided.h"

#include <algorithm>

namespace aotishim {

MatrixView row_major_view(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  const int64_t r1 = std::max<int64_t>(rows, 1), c1 = std::max<int64_t>(cols, 1);
  if (cols <= 1 || cs == 1) {  // rows of unit-stride elements
    const int64_t ld = rows <= 1 ? c1 : rs;
    if (ld >= c1) return {true, false, ld};
  }
  if (rows <= 1 || rs == 1) {  // columns of unit-stride elements: the transpose
    const int64_t ld = cols <= 1 ? r1 : cs;
    if (ld >= r1) return {true, true, ld};
  }
  return {};
}

std::vector<WalkDim> coalesce_dims(const std::vector<int64_t>& sizes,
                                   const std::vector<const std::vector<int64_t>*>& strides) {
  std::vector<WalkDim> dims;
  const size_t operands = strides.size();
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 1) continue;
    WalkDim dim{sizes[d], std::vector<int64_t>(operands)};
    for (size_t o = 0; o < operands; ++o) dim.strides[o] = (*strides[o])[d];
    bool mergeable = !dims.empty();
    for (size_t o = 0; mergeable && o < operands; ++o)
      mergeable = dims.back().strides[o] == dim.size * dim.strides[o];
    if (mergeable) {
      dims.back().size *= dim.size;
      dims.back().strides = dim.strides;
    } else {
      dims.push_back(std::move(dim));
    }
  }
  return dims;
}

}  // namespace aotishim
