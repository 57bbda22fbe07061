// index_put on the host: every index checked first, then written in
// row-major order of the indexing result (accumulation serial, so repeated
// indices sum in that order, as torch's CPU kernel sums them).
#include <cstring>
#include <vector>

#include "core/error.h"
#include "devices/cpu/index_values.h"
#include "devices/cpu/typed_elements.h"
#include "ops/index_put.h"

namespace aotishim {
namespace {

// Calls fn(target offset, values offset) for every position of the result.
template <typename Fn>
void walk(const IndexPutArgs& a, const Fn& fn) {
  const IndexPlan& p = a.plan;
  const int64_t nd = static_cast<int64_t>(p.sizes.size());
  int64_t numel = 1;
  for (int64_t s : p.sizes) numel *= s;
  std::vector<int64_t> pos(static_cast<size_t>(nd), 0);
  for (int64_t e = 0; e < numel; ++e) {
    int64_t target_off = 0, values_off = 0;
    for (int64_t d = 0; d < nd; ++d) {
      target_off += pos[d] * p.self_strides[d];
      values_off += pos[d] * a.values.strides[d];
    }
    for (size_t k = 0; k < p.indices.size(); ++k) {
      const Tensor& t = p.indices[k];
      int64_t t_off = 0;
      for (int64_t d = 0; d < nd; ++d) t_off += pos[d] * t.strides[d];
      const int64_t size = a.target.sizes[p.dims[k]];
      int64_t i = cpu::load_index(t, t_off);
      if (i < 0) i += size;
      target_off += i * a.target.strides[p.dims[k]];
    }
    fn(target_off, values_off);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++pos[d] < p.sizes[d]) break;
      pos[d] = 0;
    }
  }
}

void check_indices(const IndexPutArgs& a) {
  for (size_t k = 0; k < a.plan.indices.size(); ++k) {
    cpu::check_index_values(a.plan.indices[k], a.plan.dims[k],
                            a.target.sizes[a.plan.dims[k]]);
  }
}

void host_index_put(const IndexPutArgs& a) {
  check_indices(a);
  const size_t item = a.target.itemsize();
  char* dst = a.target.data();
  const char* src = a.values.data();
  if (!a.accumulate) {
    walk(a, [&](int64_t t, int64_t v) {
      std::memcpy(dst + t * static_cast<int64_t>(item), src + v * static_cast<int64_t>(item), item);
    });
    return;
  }
  if (a.target.dtype == DType::Bool) {
    walk(a, [&](int64_t t, int64_t v) { dst[t] = static_cast<char>(dst[t] != 0 || src[v] != 0); });
    return;
  }
  cpu::visit_dtype(a.target.dtype, [&](auto elem) {
    using E = decltype(elem);
    using S = typename E::storage;
    using V = typename E::value;
    S* out = cpu::typed<S>(a.target);
    const S* values = cpu::typed<S>(a.values);
    walk(a, [&](int64_t t, int64_t v) {
      out[t] = E::store(static_cast<V>(E::load(out[t]) + E::load(values[v])));
    });
  });
}

AOTISHIM_REGISTER_KERNEL(ops::index_put_kernel, DeviceType::CPU, host_index_put);

}  // namespace
}  // namespace aotishim
