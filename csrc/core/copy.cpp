#include "core/copy.h"
#include "core/strided.h"

#include "core/error.h"
#include "core/device.h"

namespace aotishim {

namespace {

Tensor host_buffer(DType dtype, const std::vector<int64_t>& sizes) {
  return make_empty(get_device(DeviceType::CPU), dtype, sizes);
}

bool same_geometry(const Tensor& a, const Tensor& b) {
  return a.data() == b.data() && a.sizes == b.sizes && a.strides == b.strides &&
         a.dtype == b.dtype;
}

// True when `host`'s bytes are exactly `t`'s values packed row-major: same
// sizes (no broadcast), same dtype, contiguous; then a transfer needs no
// staging buffer on the host.
bool packed_like(const Tensor& host, const Tensor& t) {
  return host.sizes == t.sizes && host.dtype == t.dtype && host.is_contiguous();
}

// Writes a device tensor's values, packed row-major in its dtype, to host_dst.
void download_packed_into(void* host_dst, const Tensor& src) {
  if (src.numel() == 0) return;
  if (src.is_contiguous()) {
    src.device().download(host_dst, src);
  } else {
    // Packed by a command on the device's stream, ordered after its producer.
    Tensor packed = make_empty(src.device(), src.dtype, src.sizes);
    src.device().copy(packed, src);
    src.device().download(host_dst, packed);
  }
}

// Packs a device tensor's values into a new host tensor of the same dtype.
Tensor download_packed(const Tensor& src) {
  Tensor host = host_buffer(src.dtype, src.sizes);
  download_packed_into(host.data(), src);
  return host;
}

// Writes host_src (dst's values packed row-major in dst's dtype) to dst.
void upload_packed(const Tensor& dst, const void* host_src) {
  Device& dd = dst.device();
  if (dst.is_contiguous()) {
    dd.upload(dst, host_src);
  } else {
    Tensor packed = make_empty(dd, dst.dtype, dst.sizes);
    dd.upload(packed, host_src);
    dd.copy(dst, packed);
  }
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
    // Straight into dst when it takes the packed bytes as they are.
    if (packed_like(dst, src_in)) {
      download_packed_into(dst.data(), src_in);
      return;
    }
    Tensor host = download_packed(src_in);
    dd.copy(dst, broadcast_to(host, dst.sizes));
    return;
  }
  // Destination on a device: upload dst's values packed on the host, straight
  // from the source's bytes when they already are that, else staged (dtype
  // conversion, strides, broadcast) through a host buffer.
  Tensor host = sd.is_host() ? src_in : download_packed(src_in);
  if (packed_like(host, dst)) {
    upload_packed(dst, host.data());
    return;
  }
  Tensor staged = host_buffer(dst.dtype, dst.sizes);
  staged.device().copy(staged, broadcast_to(host, dst.sizes));
  upload_packed(dst, staged.data());
}

void copy_into(const Tensor& dst, const Tensor& src) {
  check_writable_without_overlap(dst, "the destination");
  copy_tensor(dst, src);
}

Tensor clone_contiguous(const Tensor& src) {
  Tensor out = make_empty(src.device(), src.dtype, src.sizes);
  copy_tensor(out, src);
  return out;
}

Tensor clone_preserving_layout(const Tensor& src) {
  if (src.is_non_overlapping_and_dense()) return clone_preserving_strides(src);
  Tensor out = make_empty(src.device(), src.dtype, src.sizes, dense_strides_like(src.sizes, src.strides));
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
