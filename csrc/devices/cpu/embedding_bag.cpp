// _embedding_bag on the host: the offsets and indices checked as torch
// checks them, then bag by bag (in parallel) the rows gathered, summed in
// float32 (float64 for float64) and rounded once into the output. A maximum
// keeps the first row that reaches it, as torch's kernel does.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "devices/cpu/parallel.h"
#include "devices/cpu/typed_elements.h"
#include "ops/embedding_bag.h"

namespace aotishim {
namespace {

// Element i of a 1-D int32 or int64 tensor.
int64_t int_at(const Tensor& t, int64_t i) {
  const int64_t off = i * t.strides[0];
  return t.dtype == DType::Int32 ? cpu::typed<int32_t>(t)[off] : cpu::typed<int64_t>(t)[off];
}

void set_int(const Tensor& t, int64_t i, int64_t v) {
  if (t.dtype == DType::Int32) cpu::typed<int32_t>(t)[i] = static_cast<int32_t>(v);
  else cpu::typed<int64_t>(t)[i] = v;
}

template <typename E>
void embedding_bag_typed(const EmbeddingBagArgs& a) {
  using S = typename E::storage;
  using V = typename E::value;
  using Acc = std::conditional_t<std::is_same_v<V, double>, double, float>;
  const int64_t n = a.indices.sizes[0], n_offsets = a.offsets.sizes[0];
  const int64_t D = a.weight.sizes[1], rows = a.weight.sizes[0];
  const int64_t ws0 = a.weight.strides[0], ws1 = a.weight.strides[1];

  if (n_offsets > 0) {
    AOTISHIM_CHECK(int_at(a.offsets, 0) == 0, "_embedding_bag: offsets[0] has to be 0, i.e., "
                   "the first sequence in the mini-batch has to start from position 0. However, got ",
                   int_at(a.offsets, 0));
    for (int64_t b = 1; b < n_offsets; ++b)
      AOTISHIM_CHECK(int_at(a.offsets, b) >= int_at(a.offsets, b - 1),
                     "_embedding_bag: offsets must be non-decreasing, but offsets[", b, "] = ",
                     int_at(a.offsets, b), " < offsets[", b - 1, "] = ", int_at(a.offsets, b - 1));
    AOTISHIM_CHECK(int_at(a.offsets, n_offsets - 1) <= n,
                   "_embedding_bag: offsets[-1] can not be greater than input's length ", n,
                   " but got offsets[-1] of ", int_at(a.offsets, n_offsets - 1));
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t idx = int_at(a.indices, i);
    AOTISHIM_CHECK(idx >= 0 && idx < rows, "_embedding_bag: index ", i, " of input takes value ",
                   idx, " which is not in the valid range [0, ", rows, ")");
  }

  const S* weight = cpu::typed<S>(a.weight);
  S* out = cpu::typed<S>(a.output);
  const bool fill_offset2bag = a.offset2bag.numel() > 0;
  if (fill_offset2bag)
    for (int64_t i = 0; i < n; ++i) set_int(a.offset2bag, i, 0);
  for (int64_t i = 0; i < a.bag_size.numel(); ++i) set_int(a.bag_size, i, 0);
  for (int64_t i = 0; i < a.max_indices.numel(); ++i) set_int(a.max_indices, i, 0);

  cpu::parallel_for(a.bags, 1, [&](int64_t begin, int64_t end_bag) {
    std::vector<Acc> acc(static_cast<size_t>(D));
    for (int64_t b = begin; b < end_bag; ++b) {
      const int64_t first = int_at(a.offsets, b);
      const int64_t last = b + 1 < a.bags ? int_at(a.offsets, b + 1) : n;
      std::fill(acc.begin(), acc.end(), Acc(0));
      int64_t count = 0;
      for (int64_t i = first; i < last; ++i) {
        if (fill_offset2bag) set_int(a.offset2bag, i, b);
        const int64_t idx = int_at(a.indices, i);
        if (a.padding_idx >= 0 && idx == a.padding_idx) continue;
        const S* row = weight + idx * ws0;
        if (a.mode == 2) {
          for (int64_t d = 0; d < D; ++d) {
            const Acc v = static_cast<Acc>(E::load(row[d * ws1]));
            if (count == 0 || v > acc[d]) {
              acc[d] = v;
              set_int(a.max_indices, b * D + d, idx);
            }
          }
        } else {
          const Acc scale = a.has_per_sample_weights
                                ? static_cast<Acc>(E::load(cpu::typed<S>(a.per_sample_weights)
                                                              [i * a.per_sample_weights.strides[0]]))
                                : Acc(1);
          for (int64_t d = 0; d < D; ++d) acc[d] += static_cast<Acc>(E::load(row[d * ws1])) * scale;
        }
        ++count;
      }
      if (a.mode == 1 && count > 0)
        for (int64_t d = 0; d < D; ++d) acc[d] /= static_cast<Acc>(count);
      for (int64_t d = 0; d < D; ++d) out[b * D + d] = E::store(static_cast<V>(acc[d]));
      if (a.mode != 0) set_int(a.bag_size, b, count);
      if (a.mode == 1) set_int(a.max_indices, b, count);
    }
  });
}

void host_embedding_bag(const EmbeddingBagArgs& a) {
  switch (a.weight.dtype) {
    case DType::Float32: return embedding_bag_typed<cpu::Plain<float>>(a);
    case DType::Float64: return embedding_bag_typed<cpu::Plain<double>>(a);
    case DType::BFloat16: return embedding_bag_typed<cpu::BFloat16Elem>(a);
    case DType::Float16: return embedding_bag_typed<cpu::Float16Elem>(a);
    default:
      fail(str("_embedding_bag: unsupported weight dtype ", dtype_name(a.weight.dtype)));
  }
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::embedding_bag_kernel, DeviceType::CPU, host_embedding_bag);

}  // namespace aotishim
