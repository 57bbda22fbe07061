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
// rounding). On cuda the output strides are torch cuda's instead, which
// follow cuFFT's stages (cuda_c2c_strides and the ones after it): c2r's from a
// contiguous copy of the input, r2c's in the given dim order.
#include "ops/fft.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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

// torch's _exec_fft output layout for an input of strides `s` transformed
// over `dims` (the same on cpu and cuda).
std::vector<int64_t> fft_out_strides(const std::vector<int64_t>& s,
                                     const std::vector<int64_t>& out_sizes,
                                     const std::vector<int64_t>& dims) {
  const int64_t nd = static_cast<int64_t>(s.size());
  std::vector<int64_t> permute(static_cast<size_t>(nd));
  std::iota(permute.begin(), permute.end(), int64_t{0});
  std::vector<bool> transformed(static_cast<size_t>(nd), false);
  for (int64_t d : dims) transformed[d] = true;
  // The same std::partition and std::sort calls as torch: ties in stride
  // (size-1 or broadcast dims) end where torch puts them.
  auto batch_end = std::partition(permute.begin(), permute.end(),
                                  [&](int64_t d) { return !transformed[d]; });
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

// torch cuda's layouts (cuFFT; aten/native/cuda/SpectralOps): a transform
// runs in stages of at most three dims, and which stages run, and from what
// input, differs from the cpu's single transform.
constexpr size_t kCufftMaxDims = 3;

bool on_cuda(const Tensor& t) { return t.device().type() == DeviceType::CUDA; }

// torch cuda's one-stage path: up to three dims, unless they start with 0, 1.
bool cuda_single_stage(const std::vector<int64_t>& dims) {
  return dims.size() <= kCufftMaxDims && !(dims.size() >= 2 && dims[0] == 0 && dims[1] == 1);
}

// Stages of c2c over `dims` from an input of strides `s`: each takes the
// (up to) three innermost of the dims left, sorted by the current strides.
std::vector<int64_t> cuda_c2c_strides(std::vector<int64_t> s, const std::vector<int64_t>& sizes,
                                      std::vector<int64_t> dims) {
  while (true) {
    std::sort(dims.begin(), dims.end(), [&](int64_t a, int64_t b) { return s[a] > s[b]; });
    const size_t take = std::min(kCufftMaxDims, dims.size());
    const std::vector<int64_t> stage(dims.end() - static_cast<std::ptrdiff_t>(take), dims.end());
    s = fft_out_strides(s, sizes, stage);
    dims.resize(dims.size() - take);
    if (dims.empty()) return s;
  }
}

// torch cuda's r2c: from the input, or (data not aligned as a complex) from a
// copy dense with `last` innermost; one stage in `dims` order, or the last dim
// and then c2c stages; a two-sided result longer than the half is contiguous.
std::vector<int64_t> cuda_r2c_strides(const Tensor& self, const std::vector<int64_t>& dims,
                                      bool onesided) {
  const int64_t last = dims.back();
  std::vector<int64_t> s = self.strides;
  if (reinterpret_cast<std::uintptr_t>(self.data()) % (2 * self.itemsize()) != 0) {
    std::vector<int64_t> moved;  // sizes with `last` moved innermost
    for (int64_t d = 0; d < self.dim(); ++d)
      if (d != last) moved.push_back(self.sizes[d]);
    moved.push_back(self.sizes[last]);
    const std::vector<int64_t> c = contiguous_strides(moved);
    for (int64_t d = 0, i = 0; d < self.dim(); ++d)
      s[d] = d == last ? c.back() : c[static_cast<size_t>(i++)];
  }
  std::vector<int64_t> half = self.sizes;
  half[last] = self.sizes[last] / 2 + 1;
  if (cuda_single_stage(dims)) return fft_out_strides(s, onesided ? half : self.sizes, dims);
  if (!onesided && half[last] != self.sizes[last]) return contiguous_strides(self.sizes);
  s = fft_out_strides(s, half, {last});
  return cuda_c2c_strides(s, half, std::vector<int64_t>(dims.begin(), dims.end() - 1));
}

// torch cuda's c2r: one stage in `dims` order from a contiguous copy, or c2c
// stages over all but the last dim and then the last.
std::vector<int64_t> cuda_c2r_strides(const Tensor& self, const std::vector<int64_t>& out_sizes,
                                      const std::vector<int64_t>& dims) {
  if (cuda_single_stage(dims))
    return fft_out_strides(contiguous_strides(self.sizes), out_sizes, dims);
  const std::vector<int64_t> c2c = cuda_c2c_strides(
      self.strides, self.sizes, std::vector<int64_t>(dims.begin(), dims.end() - 1));
  return fft_out_strides(c2c, out_sizes, {dims.back()});
}

DType complex_of(DType real) { return real == DType::Float64 ? DType::Complex128 : DType::Complex64; }

// One transform into a fresh tensor of strides `out_strides`.
Tensor run_fft(FftKind kind, const Tensor& in, DType out_dtype, const std::vector<int64_t>& out_sizes,
               const std::vector<int64_t>& out_strides, const std::vector<int64_t>& dims,
               bool forward, double scale) {
  FftArgs args;
  args.kind = kind;
  args.in = in;
  args.out = make_empty(in.device(), out_dtype, out_sizes, out_strides);
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
  const std::vector<int64_t> sorted = sort_dims(self, dims, false);
  const std::vector<int64_t> strides = on_cuda(self)
                                           ? cuda_c2c_strides(self.strides, self.sizes, dims)
                                           : fft_out_strides(self.strides, self.sizes, sorted);
  *ret0 = register_tensor(run_fft(FftKind::C2C, self, self.dtype, self.sizes, strides, sorted,
                                  forward != 0, scale));
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
  if (onesided) out_sizes[dims.back()] = self.sizes[dims.back()] / 2 + 1;
  const std::vector<int64_t> out_strides = on_cuda(self)
                                               ? cuda_r2c_strides(self, dims, onesided != 0)
                                               : fft_out_strides(self.strides, out_sizes, sorted);
  if (onesided) {
    *ret0 = register_tensor(run_fft(FftKind::R2C, self, complex_of(self.dtype), out_sizes,
                                    out_strides, sorted, true, scale));
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
  args.out = make_empty(self.device(), complex.dtype, out_sizes, out_strides);
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
  std::vector<int64_t> out_sizes = self.sizes;
  out_sizes[last] = last_dim_size;
  // torch cuda lays its result out from its own stages (cuda_c2r_strides).
  const std::vector<int64_t> cuda_strides =
      on_cuda(self) ? cuda_c2r_strides(self, out_sizes, dims) : std::vector<int64_t>{};
  Tensor input = self;
  if (dims.size() > 1) {  // torch's cpu: a backward c2c over the others first
    const std::vector<int64_t> c2c_dims(dims.begin(), dims.end() - 1);
    const std::vector<int64_t> sorted = sort_dims(self, c2c_dims, false);
    input = run_fft(FftKind::C2C, self, self.dtype, self.sizes,
                    fft_out_strides(self.strides, self.sizes, sorted), sorted, false,
                    norm_scale(call, normalization, self.sizes, c2c_dims));
    dims = {last};
  }
  if (input.sizes[last] != half) {  // a full-length input: the first half
    std::vector<int64_t> sizes = input.sizes;
    sizes[last] = half;
    input = make_view(input, sizes, input.strides, input.storage_offset);
  }
  const std::vector<int64_t> out_strides =
      on_cuda(self) ? cuda_strides : fft_out_strides(input.strides, out_sizes, dims);
  *ret0 = register_tensor(run_fft(FftKind::C2R, input, complex_part(self.dtype), out_sizes,
                                  out_strides, dims, false,
                                  norm_scale(call, normalization, out_sizes, dims)));
}

}  // namespace ops
}  // namespace aotishim
