// The FFT ops on the host through pocketfft (csrc/third_party/pocketfft, BSD),
// the library torch's own CPU build uses without MKL: strided input and
// output handed over as they lie (pocketfft takes byte strides), plans
// cached across calls (an STFT transforms many frames of one length).
// pocketfft runs on the calling thread here (its own thread pool is off).
#define POCKETFFT_NO_MULTITHREADING
#define POCKETFFT_CACHE_SIZE 16
#include "third_party/pocketfft/pocketfft_hdronly.h"

#include <complex>

#include "core/error.h"
#include "ops/fft.h"

namespace aotishim {
namespace {

pocketfft::shape_t shape_of(const std::vector<int64_t>& sizes) {
  return pocketfft::shape_t(sizes.begin(), sizes.end());
}

pocketfft::stride_t byte_strides(const Tensor& t) {
  pocketfft::stride_t s(t.strides.size());
  for (size_t i = 0; i < s.size(); ++i)
    s[i] = static_cast<ptrdiff_t>(t.strides[i]) * static_cast<ptrdiff_t>(t.itemsize());
  return s;
}

template <typename T>
void fft_typed(const FftArgs& a) {
  const pocketfft::shape_t axes(a.dims.begin(), a.dims.end());
  const T scale = static_cast<T>(a.scale);
  using C = std::complex<T>;
  switch (a.kind) {
    case FftKind::C2C:
      pocketfft::c2c(shape_of(a.in.sizes), byte_strides(a.in), byte_strides(a.out), axes,
                     a.forward, reinterpret_cast<const C*>(a.in.data()),
                     reinterpret_cast<C*>(a.out.data()), scale);
      return;
    case FftKind::R2C:
      pocketfft::r2c(shape_of(a.in.sizes), byte_strides(a.in), byte_strides(a.out), axes, true,
                     reinterpret_cast<const T*>(a.in.data()), reinterpret_cast<C*>(a.out.data()),
                     scale);
      return;
    case FftKind::C2R:
      AOTISHIM_CHECK(axes.size() == 1, "fft: c2r transforms one dimension here");
      pocketfft::c2r(shape_of(a.out.sizes), byte_strides(a.in), byte_strides(a.out), axes[0],
                     false, reinterpret_cast<const C*>(a.in.data()),
                     reinterpret_cast<T*>(a.out.data()), scale);
      return;
  }
}

void host_fft(const FftArgs& a) {
  const DType complex = a.kind == FftKind::C2R ? a.in.dtype : a.out.dtype;
  switch (complex) {
    case DType::Complex64: return fft_typed<float>(a);
    case DType::Complex128: return fft_typed<double>(a);
    default: fail(str("fft: unsupported dtype ", dtype_name(complex), " on the cpu"));
  }
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::fft_kernel, DeviceType::CPU, host_fft);

}  // namespace aotishim
