// A file mapped read-only for as long as it is read: a model's weights blob
// (the model keeps pointers into it) or a library whose symbols are checked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace aotishim::runner {

class MappedFile {
 public:
  MappedFile() = default;
  // Throws aotishim::Error when the file cannot be opened or mapped; `what`
  // names the file in the message ("weights", "model library"). With
  // `copy_on_write` the pages are writable: a write copies the page it
  // touches into memory of the process, and the file never changes.
  explicit MappedFile(const std::string& path, const std::string& what = "file",
                      bool copy_on_write = false);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }  // null when the file is empty
  // The pages as writable memory (only for a copy_on_write mapping).
  uint8_t* writable_data() const { return copy_on_write_ ? const_cast<uint8_t*>(data_) : nullptr; }
  size_t size() const { return size_; }

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool copy_on_write_ = false;
};

}  // namespace aotishim::runner
