// Constants that borrow the pages of a mapped weights blob instead of a copy
// of it (LoadOptions::mmap_weights, cpu models).
//
// A container fed its blob (AOTInductorModelUpdateConstantsFromBlob) copies
// every constant out of it into memory it allocates and keeps; the blob is
// read only during that call. Borrowing the blob instead needs each
// constant's place in it and its layout (sizes, strides, storage offset),
// which only the model's code knows, and tells only by making its tensors.
// So the layouts are learned from a second, throwaway container of the same
// library, fed a blob of zero pages: the zero pages take no memory and the
// file is not read; the copy that container makes is freed with it, before
// the model's first run pages the file in. Layouts are kept per library (by
// its digest), so later loads of the library make no copy at all.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "aotishim/c_shim.h"
#include "runner/container_api.h"
#include "runner/mapped_file.h"

namespace aotishim::runner {

// One constant as the container reads it from its blob.
struct BlobConstant {
  std::string name;      // the container's name (what the user-managed update takes)
  uint64_t offset = 0;   // where its bytes start in the blob
  uint64_t bytes = 0;    // how many the blob holds for it
  std::vector<int64_t> sizes, strides;
  int64_t storage_offset = 0;  // in elements, from `offset`
  int32_t dtype = 0;
};

// The constants the container reads from a blob of `blob_size` bytes, in
// blob order (see above). Throws naming the entry point a model lacks.
std::vector<BlobConstant> blob_layout(const ContainerApi& api, const std::string& library_digest,
                                      const std::string& device, uint64_t blob_size,
                                      const std::string& model_path);

// Tensors (new handles in the current scope) over `file` where the layout
// puts each constant, by constant name; each keeps the mapping alive. A
// constant whose place in the file is not aligned for its dtype is copied
// into memory of its own instead (`copied` counts those).
struct BlobViews {
  std::vector<std::pair<std::string, AtenTensorHandle>> by_name;
  size_t copied = 0;
};
BlobViews view_blob(const std::vector<BlobConstant>& layout, std::shared_ptr<MappedFile> file);

}  // namespace aotishim::runner
