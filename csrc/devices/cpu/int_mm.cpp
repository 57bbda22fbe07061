// _int_mm on the host: exact int32 sums of int8 products (no BLAS has them),
// rows of out in parallel, mat2's columns packed once so the inner loop is
// unit-stride.
#include <algorithm>
#include <vector>

#include "devices/cpu/parallel.h"
#include "devices/cpu/typed_elements.h"
#include "ops/int_mm.h"

namespace aotishim {
namespace {

void host_int_mm(const IntMmArgs& a) {
  const int64_t M = a.self.sizes[0], K = a.self.sizes[1], N = a.mat2.sizes[1];
  const int8_t* self = cpu::typed<int8_t>(a.self);
  const int8_t* mat2 = cpu::typed<int8_t>(a.mat2);
  int32_t* out = cpu::typed<int32_t>(a.out);
  std::vector<int8_t> columns(static_cast<size_t>(N * K));  // mat2^T, packed
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      columns[n * K + k] = mat2[k * a.mat2.strides[0] + n * a.mat2.strides[1]];
  cpu::parallel_for(M, std::max<int64_t>(1, 4096 / std::max<int64_t>(N * K, 1)),
                    [&](int64_t begin, int64_t end) {
    std::vector<int8_t> row(static_cast<size_t>(K));
    for (int64_t m = begin; m < end; ++m) {
      for (int64_t k = 0; k < K; ++k) row[k] = self[m * a.self.strides[0] + k * a.self.strides[1]];
      for (int64_t n = 0; n < N; ++n) {
        const int8_t* col = columns.data() + n * K;
        int32_t sum = 0;
        for (int64_t k = 0; k < K; ++k) sum += static_cast<int32_t>(row[k]) * col[k];
        out[m * a.out.strides[0] + n * a.out.strides[1]] = sum;
      }
    }
  });
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::int_mm_kernel, DeviceType::CPU, host_int_mm);

}  // namespace aotishim
