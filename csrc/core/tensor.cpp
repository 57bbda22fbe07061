#include "core/tensor.h"

#include <algorithm>
#include <limits>

#include "core/error.h"
#include "core/device.h"

namespace aotishim {

namespace {
constexpr int64_t kMaxDims = 64;

int64_t mul_checked(int64_t a, int64_t b) {
  int64_t r;
  AOTISHIM_CHECK(!__builtin_mul_overflow(a, b, &r), "tensor size overflows int64");
  return r;
}
int64_t add_checked(int64_t a, int64_t b) {
  int64_t r;
  AOTISHIM_CHECK(!__builtin_add_overflow(a, b, &r), "tensor size overflows int64");
  return r;
}
}  // namespace

int64_t Tensor::numel() const {
  // With a zero size the other sizes' product need not fit (checked_extent
  // only bounds it for non-empty tensors), so look for the zero first.
  for (int64_t s : sizes)
    if (s == 0) return 0;
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

char* Tensor::data() const { return static_cast<char*>(storage->data()) + byte_offset(); }

bool Tensor::is_contiguous() const {
  // Empty tensors are contiguous; returning first also keeps `expected`
  // (a product of sizes) from overflowing when another size is huge.
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (int64_t d = dim() - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

bool Tensor::is_non_overlapping_and_dense() const {
  if (numel() == 0) return true;  // no elements: nothing overlaps, as torch says
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of dims that step
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1) dims.emplace_back(strides[d], sizes[d]);
  std::sort(dims.begin(), dims.end());
  int64_t expected = 1;
  for (const auto& [stride, size] : dims) {
    if (size == 0) return true;
    if (stride != expected) return false;
    expected *= size;
  }
  return true;
}

size_t Tensor::extent_bytes() const {
  return static_cast<size_t>(checked_extent(sizes, strides)) * itemsize();
}

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& sizes) {
  std::vector<int64_t> strides(sizes.size());
  int64_t running = 1;
  for (size_t i = sizes.size(); i-- > 0;) {
    strides[i] = running;
    running = mul_checked(running, sizes[i] > 0 ? sizes[i] : 1);
  }
  return strides;
}

int64_t checked_extent(const std::vector<int64_t>& sizes, const std::vector<int64_t>& strides) {
  AOTISHIM_CHECK(sizes.size() == strides.size(), "sizes and strides differ in length");
  int64_t extent = 1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    AOTISHIM_CHECK(sizes[i] >= 0, "negative size ", sizes[i], " in dimension ", i);
    AOTISHIM_CHECK(strides[i] >= 0, "negative stride ", strides[i], " in dimension ", i);
    if (sizes[i] == 0) return 0;
    extent = add_checked(extent, mul_checked(sizes[i] - 1, strides[i]));
  }
  // numel itself must fit too
  int64_t n = 1;
  for (int64_t s : sizes) n = mul_checked(n, s);
  return extent;
}

int64_t read_shape(int64_t ndim, const int64_t* sizes_ptr, const int64_t* strides_ptr,
                   std::vector<int64_t>& sizes, std::vector<int64_t>& strides) {
  AOTISHIM_CHECK(ndim >= 0 && ndim <= kMaxDims, "invalid number of dimensions ", ndim);
  AOTISHIM_CHECK(ndim == 0 || sizes_ptr != nullptr, "sizes pointer is null for ndim ", ndim);
  sizes.assign(sizes_ptr, sizes_ptr + ndim);
  for (int64_t i = 0; i < ndim; ++i)
    AOTISHIM_CHECK(sizes[i] >= 0, "negative size ", sizes[i], " in dimension ", i);
  if (strides_ptr == nullptr) {
    strides = contiguous_strides(sizes);
  } else {
    strides.assign(strides_ptr, strides_ptr + ndim);
  }
  return checked_extent(sizes, strides);
}

Tensor borrowed_tensor(Device& device, void* data, int64_t ndim, const int64_t* sizes,
                       const int64_t* strides, DType dtype, int64_t storage_offset,
                       std::shared_ptr<void> keepalive) {
  Tensor t;
  t.dtype = dtype;
  int64_t extent = read_shape(ndim, sizes, strides, t.sizes, t.strides);
  AOTISHIM_CHECK(storage_offset >= 0, "negative storage offset ", storage_offset);
  AOTISHIM_CHECK(data != nullptr || extent == 0, "data pointer is null");
  // Checked: an offset near INT64_MAX must be an error, not a wrapped size.
  int64_t end_elems = 0, end_bytes = 0;
  AOTISHIM_CHECK(!__builtin_add_overflow(storage_offset, extent, &end_elems) &&
                     !__builtin_mul_overflow(end_elems, static_cast<int64_t>(element_size(dtype)),
                                             &end_bytes),
                 "storage offset ", storage_offset, " overflows the tensor's byte range");
  size_t nbytes = extent == 0 ? 0 : static_cast<size_t>(end_bytes);
  t.storage = Storage::borrow(device, data, nbytes, std::move(keepalive));
  t.storage_offset = storage_offset;
  return t;
}

void check_in_bounds(const Tensor& t) {
  AOTISHIM_CHECK(t.storage_offset >= 0, "negative storage offset ", t.storage_offset);
  int64_t extent = checked_extent(t.sizes, t.strides);
  if (extent == 0) return;
  int64_t end_elems = add_checked(t.storage_offset, extent);
  int64_t end_bytes = mul_checked(end_elems, static_cast<int64_t>(t.itemsize()));
  AOTISHIM_CHECK(static_cast<uint64_t>(end_bytes) <= t.storage->nbytes(),
                 "view reaches outside its storage: offset ", t.storage_offset, " + extent ",
                 extent, " elements of ", t.itemsize(), " bytes needs ", end_bytes,
                 " bytes but the storage has ", t.storage->nbytes());
}

Tensor make_view(const Tensor& base, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                 int64_t storage_offset) {
  Tensor v;
  v.storage = base.storage;
  v.dtype = base.dtype;
  v.sizes = std::move(sizes);
  v.strides = std::move(strides);
  v.storage_offset = storage_offset;
  check_in_bounds(v);
  return v;
}

Tensor make_empty(Device& device, DType dtype, std::vector<int64_t> sizes,
                  std::vector<int64_t> strides) {
  if (strides.empty() && !sizes.empty()) strides = contiguous_strides(sizes);
  Tensor t;
  t.dtype = dtype;
  t.sizes = std::move(sizes);
  t.strides = std::move(strides);
  int64_t extent = checked_extent(t.sizes, t.strides);
  t.storage = Storage::allocate(device, static_cast<size_t>(mul_checked(extent, element_size(dtype))));
  return t;
}

void check_writable_without_overlap(const Tensor& t, const char* what) {
  if (t.numel() == 0) return;
  std::vector<std::pair<int64_t, int64_t>> dims;  // (stride, size) of dims that step
  for (size_t d = 0; d < t.sizes.size(); ++d)
    if (t.sizes[d] > 1) dims.emplace_back(t.strides[d], t.sizes[d]);
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;
  for (const auto& [stride, size] : dims) {
    AOTISHIM_CHECK(stride > reach, what, "'s elements overlap in memory (sizes ", shape_string(t.sizes),
                   ", strides ", shape_string(t.strides), "); it cannot be written");
    reach += stride * (size - 1);
  }
}

bool may_overlap(const Tensor& a, const Tensor& b) {
  if (a.storage->data() == nullptr || b.storage->data() == nullptr) return false;
  size_t ea = a.extent_bytes(), eb = b.extent_bytes();
  if (ea == 0 || eb == 0) return false;
  auto a0 = reinterpret_cast<uintptr_t>(a.data()), b0 = reinterpret_cast<uintptr_t>(b.data());
  return a0 < b0 + eb && b0 < a0 + ea;
}

}  // namespace aotishim
