// index.Tensor and masked_scatter on the host. Elements move as bytes (any
// dtype). index checks every index first (an error must not be raised inside
// a parallel region), then gathers in parallel over the output, by element
// or, where the last dim is a plain run in both, by row.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "devices/cpu/index_values.h"
#include "devices/cpu/parallel.h"
#include "devices/cpu/typed_elements.h"
#include "ops/advanced_index.h"

namespace aotishim {
namespace {

void check_indices(const IndexArgs& a) {
  for (size_t k = 0; k < a.indices.size(); ++k)
    cpu::check_index_values(a.indices[k], a.dims[k], a.self.sizes[a.dims[k]]);
}

void host_index(const IndexArgs& a) {
  check_indices(a);
  const Tensor& out = a.out;
  const int64_t numel = out.numel();
  const size_t item = out.itemsize();
  const char* self = a.self.data();
  char* dst = out.data();
  // Rows (an embedding lookup, x[idx] of a matrix): when no index varies
  // along the last dim and self and out both step by one element there,
  // each row's addresses are found once and the row copied whole.
  int64_t nd = out.dim(), run = 1;
  if (nd >= 2 && out.strides[nd - 1] == 1 && a.self_strides[nd - 1] == 1 &&
      std::all_of(a.indices.begin(), a.indices.end(),
                  [&](const Tensor& t) { return t.strides[nd - 1] == 0; })) {
    run = out.sizes[nd - 1];
    --nd;  // the loop below walks the rows
  }
  if (numel == 0) return;
  const int64_t count = numel / run, bytes = run * static_cast<int64_t>(item);
  cpu::parallel_for(count, std::max<int64_t>(1, 4096 / run), [&](int64_t begin, int64_t end) {
    std::vector<int64_t> pos(static_cast<size_t>(nd));
    for (int64_t e = begin; e < end; ++e) {
      int64_t rest = e, out_off = 0, self_off = 0;
      for (int64_t d = nd - 1; d >= 0; --d) {
        pos[d] = rest % out.sizes[d];
        rest /= out.sizes[d];
        out_off += pos[d] * out.strides[d];
        self_off += pos[d] * a.self_strides[d];
      }
      for (size_t k = 0; k < a.indices.size(); ++k) {
        const Tensor& t = a.indices[k];
        int64_t t_off = 0;
        for (int64_t d = 0; d < nd; ++d) t_off += pos[d] * t.strides[d];
        const int64_t size = a.self.sizes[a.dims[k]];
        int64_t i = cpu::load_index(t, t_off);
        if (i < 0) i += size;
        self_off += i * a.self.strides[a.dims[k]];
      }
      std::memcpy(dst + out_off * static_cast<int64_t>(item),
                  self + self_off * static_cast<int64_t>(item), static_cast<size_t>(bytes));
    }
  });
}

void host_masked_scatter(const MaskedScatterArgs& a) {
  const size_t item = a.out.itemsize();
  const int64_t available = a.source.numel();
  // Row-major offsets of source's elements, read in order as the mask asks.
  std::vector<int64_t> source_offsets;
  source_offsets.reserve(static_cast<size_t>(available));
  cpu::for_each_element(a.source, [&](int64_t off, const std::vector<int64_t>&) {
    source_offsets.push_back(off);
  });
  int64_t needed = 0;
  const uint8_t* mask = cpu::typed<uint8_t>(a.mask);
  cpu::for_each_element(a.mask, [&](int64_t off, const std::vector<int64_t>&) {
    needed += mask[off] != 0;
  });
  AOTISHIM_CHECK(needed <= available, "masked_scatter: expected source to have at least ", needed,
                 " elements (the true elements of mask), but it has ", available);
  const char* self = a.self.data();
  const char* source = a.source.data();
  char* out = a.out.data();
  int64_t next = 0;
  // out is fresh and contiguous: its element e is the e-th in row-major order.
  int64_t e = 0;
  std::vector<int64_t> self_offsets;
  cpu::for_each_element(a.self, [&](int64_t off, const std::vector<int64_t>&) {
    self_offsets.push_back(off);
  });
  cpu::for_each_element(a.mask, [&](int64_t off, const std::vector<int64_t>&) {
    const char* from = mask[off] != 0 ? source + source_offsets[next++] * static_cast<int64_t>(item)
                                      : self + self_offsets[e] * static_cast<int64_t>(item);
    std::memcpy(out + e * static_cast<int64_t>(item), from, item);
    ++e;
  });
}

AOTISHIM_REGISTER_KERNEL(ops::index_kernel, DeviceType::CPU, host_index);
AOTISHIM_REGISTER_KERNEL(ops::masked_scatter_kernel, DeviceType::CPU, host_masked_scatter);

}  // namespace
}  // namespace aotishim
