// Validation of the FFT ops, as torch's CPU FFT (aten's _fft_*_mkl) takes
// and lays them out: dimensions wrapped and distinct, complex inputs for c2c
// and c2r and real floating ones for r2c, the norm mode's scale over the
// signal's size, and the output strides torch gives: the untransformed
// (batch) dimensions outermost in the input's stride order, then the
// transformed ones in the order torch sorts them (by the input's strides,
// the halved last one kept last), densely. Multi-dimensional c2r runs as
// torch runs it: a backward c2c over all but the last dimension, then a
// one-dimensional c2r; a two-sided r2c is a c2c of the input made complex
// (torch fills the half it does not compute by symmetry: the values agree to
// rounding).
#include "ops/fft.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/copy.h"
#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(const FftArgs&)> fft_kernel("fft");

namespace {

// torch's fft_norm_mode.
constexpr int64_t kNormNone = 0, kNormByRootN = 1, kNormByN = 2;

std::vector<int64_t> wrap_dims(const OpCall& call, const Tensor& self, const int64_t* dim,
                               int64_t dim_len) {
  AOTISHIM_CHECK(dim_len >= 0 && (dim_len == 0 || dim != nullptr), call.op, ": invalid dim list");
  const int64_t nd = self.dim();
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < dim_len; ++i) {
    int64_t d = dim[i];
    AOTISHIM_CHECK(d >= -nd && d < nd, call.op, ": dimension ", d, " is out of range for a ",
                   nd, "-d tensor");
    if (d < 0) d += nd;
    AOTISHIM_CHECK(std::find(dims.begin(), dims.end(), d) == dims.end(), call.op,
                   ": dimension ", d, " appears more than once in dim");
    dims.push_back(d);
  }
  return dims;
}

double norm_scale(const OpCall& call, int64_t normalization, const std::vector<int64_t>& sizes,
                  const std::vector<int64_t>& dims) {
  double n = 1.0;
  for (int64_t d : dims) n *= static_cast<double>(sizes[d]);
  switch (normalization) {
    case kNormNone: return 1.0;
    case kNormByRootN: return n > 0 ? 1.0 / std::sqrt(n) : 1.0;
    case kNormByN: return n > 0 ? 1.0 / n : 1.0;
    default:
      fail(str(call.op, ": normalization must be 0 (none), 1 (by root n) or 2 (by n), got ",
               normalization));
  }
}

// torch's _sort_dims: the transformed dims by decreasing input stride (the
// same std::sort call, so ties fall as torch's fall), the last one left in
// place for a onesided transform.
std::vector<int64_t> sort_dims(const Tensor& in, std::vector<int64_t> dims, bool exclude_last) {
  const auto& s = in.strides;
  std::sort(dims.begin(), dims.end() - (exclude_last ? 1 : 0),
            [&](int64_t a, int64_t b) { return s[a] > s[b]; });
  return dims;
}

// torch's _exec_fft output layout for `in` transformed over `dims`.
std::vector<int64_t> fft_out_strides(const Tensor& in, const std::vector<int64_t>& out_sizes,
                                     const std::vector<int64_t>& dims) {
  const int64_t nd = in.dim();
  std::vector<int64_t> permute(static_cast<size_t>(nd));
  std::iota(permute.begin(), permute.end(), int64_t{0});
  std::vector<bool> transformed(static_cast<size_t>(nd), false);
  for (int64_t d : dims) transformed[d] = true;
  // The same std::partition and std::sort calls as torch: ties in stride
  // (size-1 or broadcast dims) end where torch puts them.
  auto batch_end = std::partition(permute.begin(), permute.end(),
                                  [&](int64_t d) { return !transformed[d]; });
  const auto& s = in.strides;
  std::sort(permute.begin(), batch_end, [&](int64_t a, int64_t b) { return s[a] > s[b]; });
  const int64_t batch_dims = batch_end - permute.begin();

  // Signal dims: contiguous (as torch's resize_), in `dims` order.
  std::vector<int64_t> strides(static_cast<size_t>(nd), 0);
  int64_t step = 1;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    strides[*it] = step;
    step *= std::max<int64_t>(out_sizes[*it], 1);
  }
  // Batch dims: outside the signal, innermost the smallest input stride.
  int64_t batch_numel = 1;
  for (int64_t i = batch_dims - 1; i >= 0; --i) {
    strides[permute[i]] = batch_numel * step;
    batch_numel *= out_sizes[permute[i]];
  }
  return strides;
}

DType complex_of(DType real) { return real == DType::Float64 ? DType::Complex128 : DType::Complex64; }

// One transform into a fresh tensor laid out as torch lays it out.
Tensor run_fft(FftKind kind, const Tensor& in, DType out_dtype, std::vector<int64_t> out_sizes,
               const std::vector<int64_t>& dims, bool forward, double scale) {
  FftArgs args;
  args.kind = kind;
  args.in = in;
  args.out = make_empty(in.device(), out_dtype, out_sizes, fft_out_strides(in, out_sizes, dims));
  args.dims = dims;
  args.forward = forward;
  args.scale = scale;
  if (args.out.numel() > 0) fft_kernel.run(in.device(), args);
  return args.out;
}

void check_complex(const OpCall& call, const Tensor& t) {
  AOTISHIM_CHECK(is_complex(t.dtype), call.op, ": self must be complex (complex64 or "
                 "complex128), got ", dtype_name(t.dtype));
}

}  // namespace

void _fft_c2c(const OpCall& call, AtenTensorHandle self_h, const int64_t* dim, int64_t dim_len_,
              int64_t normalization, int32_t forward, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  check_complex(call, self);
  const std::vector<int64_t> dims = wrap_dims(call, self, dim, dim_len_);
  const double scale = norm_scale(call, normalization, self.sizes, dims);
  if (dims.empty()) {  // torch returns a clone
    *ret0 = register_tensor(clone_preserving_layout(self));
    return;
  }
  *ret0 = register_tensor(run_fft(FftKind::C2C, self, self.dtype, self.sizes,
                                  sort_dims(self, dims, false), forward != 0, scale));
}

void _fft_r2c(const OpCall& call, AtenTensorHandle self_h, const int64_t* dim, int64_t dim_len_,
              int64_t normalization, int32_t onesided, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  AOTISHIM_CHECK(self.dtype == DType::Float32 || self.dtype == DType::Float64, call.op,
                 ": self must be float32 or float64, got ", dtype_name(self.dtype));
  const std::vector<int64_t> dims = wrap_dims(call, self, dim, dim_len_);
  AOTISHIM_CHECK(!dims.empty(), call.op, ": dim must name at least one dimension");
  const double scale = norm_scale(call, normalization, self.sizes, dims);
  const std::vector<int64_t> sorted = sort_dims(self, dims, true);
  std::vector<int64_t> out_sizes = self.sizes;
  if (onesided) {
    out_sizes[dims.back()] = self.sizes[dims.back()] / 2 + 1;
    *ret0 = register_tensor(run_fft(FftKind::R2C, self, complex_of(self.dtype), out_sizes, sorted,
                                    true, scale));
    return;
  }
  // Both halves: the c2c of the input as complex, laid out as torch lays out
  // its r2c (from the real input's strides).
  // (Zeros, then the real parts copied in as reals: the same values as a
  // real-to-complex copy, on devices whose copies convert only real types.)
  Tensor complex = make_empty(self.device(), complex_of(self.dtype), self.sizes);
  if (complex.numel() > 0) {
    complex.device().fill_zero(complex);
    Tensor real_parts = complex;
    real_parts.dtype = self.dtype;
    real_parts.storage_offset *= 2;
    for (int64_t& s : real_parts.strides) s *= 2;
    copy_tensor(real_parts, self);
  }
  FftArgs args;
  args.kind = FftKind::C2C;
  args.in = complex;
  args.out = make_empty(self.device(), complex.dtype, out_sizes,
                        fft_out_strides(self, out_sizes, sorted));
  args.dims = sorted;
  args.forward = true;
  args.scale = scale;
  if (args.out.numel() > 0) fft_kernel.run(self.device(), args);
  *ret0 = register_tensor(std::move(args.out));
}

void _fft_c2r(const OpCall& call, AtenTensorHandle self_h, const int64_t* dim, int64_t dim_len_,
              int64_t normalization, int64_t last_dim_size, AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto self_p = call.tensor(self_h, "self");
  const Tensor& self = *self_p;
  check_complex(call, self);
  std::vector<int64_t> dims = wrap_dims(call, self, dim, dim_len_);
  AOTISHIM_CHECK(!dims.empty(), call.op, ": dim must name at least one dimension");
  AOTISHIM_CHECK(last_dim_size >= 1, call.op, ": last_dim_size must be >= 1, got ",
                 last_dim_size);
  const int64_t last = dims.back();
  const int64_t half = last_dim_size / 2 + 1;
  AOTISHIM_CHECK(self.sizes[last] == half || self.sizes[last] == last_dim_size, call.op,
                 ": self has ", self.sizes[last], " elements along dimension ", last,
                 "; a real signal of ", last_dim_size, " needs ", half);
  Tensor input = self;
  if (dims.size() > 1) {  // torch: a backward c2c over the others first
    const std::vector<int64_t> c2c_dims(dims.begin(), dims.end() - 1);
    input = run_fft(FftKind::C2C, self, self.dtype, self.sizes, sort_dims(self, c2c_dims, false),
                    false, norm_scale(call, normalization, self.sizes, c2c_dims));
    dims = {last};
  }
  if (input.sizes[last] != half) {  // a full-length input: the first half
    std::vector<int64_t> sizes = input.sizes;
    sizes[last] = half;
    input = make_view(input, sizes, input.strides, input.storage_offset);
  }
  std::vector<int64_t> out_sizes = input.sizes;
  out_sizes[last] = last_dim_size;
  *ret0 = register_tensor(run_fft(FftKind::C2R, input, complex_part(self.dtype), out_sizes, dims,
                                  false, norm_scale(call, normalization, out_sizes, dims)));
}

}  // namespace ops
}  // namespace aotishim
