// searchsorted on the host: a bisection per value, over the value's line of
// the sequence (through the sorter when given).
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "devices/cpu/typed_elements.h"
#include "ops/searchsorted.h"

namespace aotishim {
namespace {

// torch's bisection: the first position p in [0, n) whose element is not
// "before" v, where "before" is !(x >= v) (left) or !(x > v) (right). Written
// with negations so that NaN compares exactly as torch's does.
template <typename V, typename Read>
int64_t bisect(int64_t n, V v, bool right, const Read& read) {
  int64_t start = 0, end = n;
  while (start < end) {
    const int64_t mid = start + ((end - start) >> 1);
    const V x = read(mid);
    const bool before = right ? !(x > v) : !(x >= v);
    if (before) start = mid + 1;
    else end = mid;
  }
  return start;
}

// Throws (outside any parallel region) unless every sorter entry is in range.
void check_sorter(const SearchsortedArgs& a, int64_t n) {
  const int64_t* sorter = cpu::typed<int64_t>(a.sorter);
  const int64_t last = a.sorter.dim() - 1;
  bool ok = true;
  cpu::for_each_line(a.sorter.sizes, last, {&a.sorter.strides}, n,
                     [&](const std::vector<int64_t>& off) {
    for (int64_t i = 0; i < n; ++i) {
      const int64_t s = sorter[off[0] + i * a.sorter.strides[last]];
      if (s < 0 || s >= n) ok = false;  // benign race: only ever set to false
    }
  });
  AOTISHIM_CHECK(ok, "torch.searchsorted(): sorter index out of range");
}

void host_searchsorted(const SearchsortedArgs& a) {
  const int64_t seq_last = a.sequence.dim() - 1;
  const int64_t n = a.sequence.sizes[seq_last];
  const int64_t seq_step = a.sequence.strides[seq_last];
  if (a.has_sorter) check_sorter(a, n);
  const int64_t sorter_step = a.has_sorter ? a.sorter.strides[seq_last] : 0;

  // Walk self's lines along its last dim; a 0-d self is one line of one.
  std::vector<int64_t> sizes = a.self.sizes, self_strides = a.self.strides,
                       out_strides = a.out.strides;
  if (sizes.empty()) sizes = self_strides = out_strides = {1};
  const int64_t last = static_cast<int64_t>(sizes.size()) - 1;
  // A 1-D sequence serves every line (stride 0); an N-D one has a line per
  // leading index, as does its sorter.
  std::vector<int64_t> seq_strides(sizes.size(), 0), sorter_strides(sizes.size(), 0);
  if (a.sequence.dim() > 1) {
    seq_strides = a.sequence.strides;
    if (a.has_sorter) sorter_strides = a.sorter.strides;
  }
  const int64_t m = sizes[last];
  const int64_t self_step = self_strides[last], out_step = out_strides[last];

  cpu::visit_dtype(a.self.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    const S* seq = cpu::typed<S>(a.sequence);
    const S* self = cpu::typed<S>(a.self);
    const int64_t* sorter = a.has_sorter ? cpu::typed<int64_t>(a.sorter) : nullptr;
    auto write = [&](auto* out) {
      cpu::for_each_line(sizes, last, {&self_strides, &out_strides, &seq_strides, &sorter_strides},
                         m * 8, [&](const std::vector<int64_t>& off) {
        const S* line = seq + off[2];
        const int64_t* order = sorter ? sorter + off[3] : nullptr;
        auto read = [&](int64_t p) {
          return E::load(line[(order ? order[p * sorter_step] : p) * seq_step]);
        };
        for (int64_t j = 0; j < m; ++j) {
          const auto v = E::load(self[off[0] + j * self_step]);
          out[off[1] + j * out_step] =
              static_cast<std::remove_pointer_t<decltype(out)>>(bisect(n, v, a.right, read));
        }
      });
    };
    if (a.out.dtype == DType::Int32) write(cpu::typed<int32_t>(a.out));
    else write(cpu::typed<int64_t>(a.out));
  });
}

AOTISHIM_REGISTER_KERNEL(ops::searchsorted_kernel, DeviceType::CPU, host_searchsorted);

}  // namespace
}  // namespace aotishim
