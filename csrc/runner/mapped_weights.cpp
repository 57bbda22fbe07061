#include "runner/mapped_weights.h"

#include <sys/mman.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "aotishim/error.h"
#include "aotishim/runtime.h"
#include "core/error.h"
#include "runner/constant_map.h"
#include "runner/handle_cleanup.h"

namespace aotishim::runner {

namespace {

void require(const void* entry_point, const char* name, const std::string& model_path) {
  if (!entry_point) {
    throw Error("model '" + model_path + "' cannot borrow its weights from the mapped blob " +
                "(mmap_weights): its container lacks " + name +
                " (compiled by an older torch?); load it without mmap_weights");
  }
}

// A throwaway container and the zero pages it reads, both gone on return.
class Probe {
 public:
  Probe(const ContainerApi& api, const std::string& device, uint64_t blob_size,
        const std::string& model_path)
      : api_(api), size_(blob_size) {
    // Private anonymous pages read as zeros from the kernel's one zero page:
    // no memory is taken for them however large the blob.
    zeros_ = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (zeros_ == MAP_FAILED) {
      zeros_ = nullptr;
      throw Error("mmap_weights: cannot reserve " + std::to_string(size_) +
                  " bytes of address space to read the layouts of the constants of '" +
                  model_path + "': " + std::strerror(errno));
    }
    clear_last_error();
    const AOTIRuntimeError err = api_.create(&container_, 1, device.c_str(), nullptr);
    if (err != 0) {
      container_ = nullptr;
      api_.check(err, "creating a container to read the layouts of the constants of '" +
                          model_path + "'");
    }
    clear_last_error();
    api_.check(api_.update_constants_from_blob(container_, static_cast<const uint8_t*>(zeros_)),
               "reading the layouts of the constants of '" + model_path + "'");
  }
  ~Probe() {
    if (container_) api_.destroy(container_);  // frees the copy of zeros it made
    if (zeros_) munmap(zeros_, size_);
  }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;

  ContainerHandle container() const { return container_; }

 private:
  const ContainerApi& api_;
  uint64_t size_;
  void* zeros_ = nullptr;
  ContainerHandle container_ = nullptr;
};

std::vector<BlobConstant> probe_layout(const ContainerApi& api, const std::string& device,
                                       uint64_t blob_size, const std::string& model_path) {
  Probe probe(api, device, blob_size, model_path);
  const std::map<std::string, AtenTensorHandle> by_fqn =
      extract_constants(api, probe.container(), false, "reading the constants of '" + model_path + "'");
  size_t n = 0;
  api.check(api.num_constants(probe.container(), &n), "reading the number of constants");
  std::vector<BlobConstant> layout;
  uint64_t offset = 0;
  for (size_t i = 0; i < n; ++i) {
    bool folded = false;
    if (api.constant_from_folded) {
      api.check(api.constant_from_folded(probe.container(), i, &folded),
                "reading a constant's origin");
    }
    if (folded) continue;  // computed by the model at its first run, not in the blob
    const char* name = nullptr;
    const char* fqn = nullptr;
    size_t bytes = 0;
    api.check(api.constant_name(probe.container(), i, &name), "reading a constant's name");
    api.check(api.constant_fqn(probe.container(), i, &fqn), "reading a constant's FQN");
    api.check(api.constant_data_size(probe.container(), i, &bytes), "reading a constant's size");
    BlobConstant c;
    c.name = name ? name : "";
    c.offset = offset;
    c.bytes = bytes;
    // The container reads constants back to back, in this order.
    offset += bytes;
    if (offset > blob_size) {
      throw Error("model '" + model_path + "': its constants take more than the " +
                  std::to_string(blob_size) + " bytes of its weights blob (at '" + c.name + "')");
    }
    const auto it = by_fqn.find(fqn && *fqn ? fqn : c.name);
    if (it == by_fqn.end() || !it->second || !is_live_handle(it->second)) {
      throw Error("model '" + model_path + "': constant '" + c.name +
                  "' was not made from the weights blob; load it without mmap_weights");
    }
    const TensorInfo info = tensor_info(it->second);
    c.sizes = info.sizes;
    c.strides = info.strides;
    c.storage_offset = info.storage_offset;
    c.dtype = info.dtype;
    layout.push_back(std::move(c));
  }
  return layout;
}

}  // namespace

std::vector<BlobConstant> blob_layout(const ContainerApi& api, const std::string& library_digest,
                                      const std::string& device, uint64_t blob_size,
                                      const std::string& model_path) {
  require(reinterpret_cast<const void*>(api.num_constants),
          "AOTInductorModelContainerGetNumConstants", model_path);
  require(reinterpret_cast<const void*>(api.constant_name),
          "AOTInductorModelContainerGetConstantName", model_path);
  require(reinterpret_cast<const void*>(api.constant_fqn),
          "AOTInductorModelContainerGetConstantOriginalFQN", model_path);
  require(reinterpret_cast<const void*>(api.constant_data_size),
          "AOTInductorModelContainerGetConstantDataSize", model_path);
  if (!can_extract_constants(api)) {
    require(nullptr, "AOTInductorModelContainerExtractConstantsMapEntries", model_path);
  }
  require(reinterpret_cast<const void*>(api.update_constants_from_blob),
          "AOTInductorModelUpdateConstantsFromBlob", model_path);
  if (!can_update_user_managed(api)) {
    require(nullptr, "AOTInductorModelContainerUpdateUserManagedConstantBufferPairs", model_path);
  }
  // One library's layouts are fixed by its code; the key includes the device
  // and size so a differently fed container is probed afresh.
  static std::mutex mutex;
  static std::map<std::string, std::vector<BlobConstant>> known;
  const std::string key = library_digest + "|" + device + "|" + std::to_string(blob_size);
  {
    std::lock_guard<std::mutex> lock(mutex);
    const auto it = known.find(key);
    if (it != known.end()) return it->second;
  }
  std::vector<BlobConstant> layout = probe_layout(api, device, blob_size, model_path);
  std::lock_guard<std::mutex> lock(mutex);
  known.emplace(key, layout);
  return layout;
}

BlobViews view_blob(const std::vector<BlobConstant>& layout, std::shared_ptr<MappedFile> file) {
  uint8_t* base = file->writable_data();
  if (!base) throw Error("mmap_weights: the weights are not mapped copy-on-write");
  const std::shared_ptr<void> keep = file;
  BlobViews out;
  try {
    for (const BlobConstant& c : layout) {
      if (c.offset + c.bytes > file->size()) {
        throw Error("weights constant '" + c.name + "' lies past the end of the mapped blob");
      }
      void* data = base + c.offset;
      std::shared_ptr<void> owner = keep;
      const size_t item = aoti_torch_dtype_element_size(c.dtype);
      if (item > 1 && reinterpret_cast<uintptr_t>(data) % item != 0) {
        // Where a constant of an odd size precedes it, the blob leaves a
        // constant unaligned for its elements: that one is copied.
        const size_t rounded = (static_cast<size_t>(c.bytes) + 63) / 64 * 64;
        void* copy = std::aligned_alloc(64, rounded > 0 ? rounded : 64);
        if (!copy) throw Error("out of memory copying weights constant '" + c.name + "'");
        std::memcpy(copy, data, c.bytes);
        owner = std::shared_ptr<void>(copy, [](void* p) { std::free(p); });
        data = copy;
        ++out.copied;
      }
      // Borrowed at the storage's start, viewed at the model's offset.
      out.by_name.emplace_back(c.name, borrow_memory("cpu", data, c.sizes, c.strides,
                                                     c.storage_offset, c.dtype, owner));
    }
  } catch (...) {
    for (auto& [name, h] : out.by_name) delete_if_live(h);
    throw;
  }
  return out;
}

}  // namespace aotishim::runner
