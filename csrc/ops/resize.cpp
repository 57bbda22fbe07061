// resize_, resize_as_ and set_.source_Tensor: in-place changes of the tensor
// behind a handle, as torch makes them. resize_ gives new sizes with
// contiguous strides at the same storage offset (the same sizes, without a
// memory format, change nothing) and grows the storage in place when it is
// too small: the old bytes are kept, and every handle sharing the storage
// sees the grown memory, as torch's views of a resized storage do (borrowed
// memory cannot grow: torch's "not resizable" error). A memory format
// restrides afterwards (contiguous or channels-last). set_ makes the handle
// a view of source's storage with source's geometry; the storage it leaves
// lives on while other handles hold it.
#include <string>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"
#include "ops/memory_format.h"

namespace aotishim {
namespace ops {
namespace {

// c10::MemoryFormat numbers.
constexpr int32_t kContiguous = 0, kPreserve = 1, kChannelsLast = 2, kChannelsLast3d = 3;

void grow_storage(Tensor& t, size_t nbytes) {
  Storage& storage = *t.storage;
  if (nbytes <= storage.nbytes()) return;
  AOTISHIM_CHECK(storage.owned(), "Trying to resize storage that is not resizable");
  Device& device = t.device();
  std::shared_ptr<Storage> fresh = Storage::allocate(device, nbytes);
  if (storage.nbytes() > 0) {  // the old bytes, as uint8 tensors over both
    const int64_t n = static_cast<int64_t>(storage.nbytes());
    Tensor from, to;
    from.storage = t.storage;
    to.storage = fresh;
    from.dtype = to.dtype = DType::UInt8;
    from.sizes = to.sizes = {n};
    from.strides = to.strides = {1};
    device.copy(to, from);
  }
  storage.swap_memory(*fresh);  // fresh now holds the old memory and frees it
}

void resize_to(const char* op, Tensor& self, const std::vector<int64_t>& sizes,
               const int32_t* memory_format, bool preserve_from_template,
               const Tensor* the_template) {
  for (int64_t s : sizes)
    AOTISHIM_CHECK(s >= 0, "Trying to create tensor with negative dimension ", s, ": ",
                   shape_string(sizes));
  if (memory_format != nullptr) {
    const int32_t f = *memory_format;
    AOTISHIM_CHECK(f == kContiguous || f == kChannelsLast || f == kChannelsLast3d ||
                       (f == kPreserve && preserve_from_template),
                   op, ": Unsupported memory format ", f);
    AOTISHIM_CHECK(f != kChannelsLast || sizes.size() == 4,
                   "required rank 4 tensor to use channels_last format");
    AOTISHIM_CHECK(f != kChannelsLast3d || sizes.size() == 5,
                   "required rank 5 tensor to use channels_last_3d format");
  }
  if (!(self.sizes == sizes)) {
    self.sizes = sizes;
    self.strides = contiguous_strides(sizes);
  }
  if (memory_format != nullptr) {
    MemoryFormat format = *memory_format == kChannelsLast     ? MemoryFormat::ChannelsLast
                          : *memory_format == kChannelsLast3d ? MemoryFormat::ChannelsLast3d
                                                              : MemoryFormat::Contiguous;
    if (*memory_format == kPreserve) format = suggest_memory_format(*the_template);
    self.strides = strides_for(sizes, format);
  }
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel > 0) {
    const int64_t extent = checked_extent(self.sizes, self.strides);
    grow_storage(self, static_cast<size_t>(self.storage_offset + extent) * self.itemsize());
  }
}

}  // namespace

void resize_(const OpCall& call, AtenTensorHandle self_h, const int64_t* size, int64_t size_len_,
             int32_t* memory_format) {
  Tensor self = *call.tensor(self_h, "self");
  AOTISHIM_CHECK(size_len_ >= 0 && (size_len_ == 0 || size != nullptr), "resize_: size is null");
  resize_to("resize_", self, std::vector<int64_t>(size, size + size_len_), memory_format, false,
            nullptr);
  assign(self_h, self);
}

void resize_as_(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle template_h,
                int32_t* memory_format) {
  Tensor self = *call.tensor(self_h, "self");
  auto the_template = call.tensor(template_h, "the_template");
  resize_to("resize_as_", self, the_template->sizes, memory_format, true, the_template.get());
  assign(self_h, self);
}

void set__source_Tensor(const OpCall& call, AtenTensorHandle self_h, AtenTensorHandle source_h) {
  auto self = call.tensor(self_h, "self");
  auto source = call.tensor(source_h, "source");
  AOTISHIM_CHECK(self->dtype == source->dtype, "Could not set tensor of type ",
                 dtype_name(source->dtype), " to a tensor of type ", dtype_name(self->dtype));
  AOTISHIM_CHECK(&self->device() == &source->device(), "set_: source is on ",
                 source->device().name(), " but self is on ", self->device().name());
  Tensor value = *self;
  value.storage = source->storage;
  value.storage_offset = source->storage_offset;
  value.sizes = source->sizes;
  value.strides = source->strides;
  assign(self_h, value);
}

}  // namespace ops
}  // namespace aotishim
