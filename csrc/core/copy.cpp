#include "core/copy.h"

#include "core/error.h"
#include "devices/device.h"

namespace aotishim {

namespace {

Tensor host_buffer(DType dtype, const std::vector<int64_t>& sizes) {
  return make_empty(get_device(DeviceType::CPU), dtype, sizes);
}

bool same_geometry(const Tensor& a, const Tensor& b) {
  return a.data() == b.data() && a.sizes == b.sizes && a.strides == b.strides &&
         a.dtype == b.dtype;
}

// Packs a device tensor's values into a host tensor of the same dtype.
Tensor download_packed(const Tensor& src) {
  Tensor host = host_buffer(src.dtype, src.sizes);
  if (src.numel() == 0) return host;
  if (src.is_contiguous()) {
    src.device().download(host.data(), src);
  } else {
    // Packed by a command on the device's stream, ordered after its producer.
    Tensor packed = make_empty(src.device(), src.dtype, src.sizes);
    src.device().copy(packed, src);
    src.device().download(host.data(), packed);
  }
  return host;
}

}  // namespace

Tensor broadcast_to(const Tensor& t, const std::vector<int64_t>& sizes) {
  AOTISHIM_CHECK(t.sizes.size() <= sizes.size(), "cannot broadcast a ", t.sizes.size(),
                 "-d tensor to ", sizes.size(), " dimensions");
  if (t.sizes == sizes) return t;
  Tensor out = t;
  out.sizes = sizes;
  out.strides.assign(sizes.size(), 0);
  size_t shift = sizes.size() - t.sizes.size();
  for (size_t i = 0; i < t.sizes.size(); ++i) {
    int64_t have = t.sizes[i], want = sizes[i + shift];
    if (have == want) {
      out.strides[i + shift] = t.strides[i];
    } else {
      AOTISHIM_CHECK(have == 1, "cannot broadcast size ", have, " to ", want, " in dimension ",
                     i + shift);
    }
  }
  return out;
}

void copy_tensor(const Tensor& dst, const Tensor& src_in) {
  Tensor src = broadcast_to(src_in, dst.sizes);
  if (dst.numel() == 0) return;
  Device& dd = dst.device();
  Device& sd = src.device();
  if (&dd == &sd) {
    if (same_geometry(dst, src)) return;
    if (may_overlap(dst, src)) {
      Tensor tmp = clone_contiguous(src_in);
      dd.copy(dst, broadcast_to(tmp, dst.sizes));
    } else {
      dd.copy(dst, src);
    }
    return;
  }
  if (dd.is_host()) {
    Tensor host = download_packed(src_in);
    dd.copy(dst, broadcast_to(host, dst.sizes));
    return;
  }
  // Destination on a device: stage packed values on the host, upload.
  Tensor staged = host_buffer(dst.dtype, dst.sizes);
  if (sd.is_host()) {
    get_device(DeviceType::CPU).copy(staged, src);
  } else {
    Tensor host = download_packed(src_in);
    get_device(DeviceType::CPU).copy(staged, broadcast_to(host, dst.sizes));
  }
  if (dst.is_contiguous()) {
    dd.upload(dst, staged.data());
  } else {
    Tensor packed = make_empty(dd, dst.dtype, dst.sizes);
    dd.upload(packed, staged.data());
    dd.copy(dst, packed);
  }
}

Tensor clone_contiguous(const Tensor& src) {
  Tensor out = make_empty(src.device(), src.dtype, src.sizes);
  copy_tensor(out, src);
  return out;
}

Tensor clone_preserving_strides(const Tensor& src) {
  Tensor out = make_empty(src.device(), src.dtype, src.sizes, src.strides);
  copy_tensor(out, src);
  return out;
}

void copy_to_host_packed(const Tensor& src, void* host_dst) {
  if (src.numel() == 0) return;
  copy_tensor(borrowed_tensor(get_device(DeviceType::CPU), host_dst, src.dim(), src.sizes.data(),
                              nullptr, src.dtype),
              src);
}

}  // namespace aotishim
