#include "runner/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "aotishim/error.h"

namespace aotishim::runner {

MappedFile::MappedFile(const std::string& path, const std::string& what, bool copy_on_write)
    : copy_on_write_(copy_on_write) {
  // Non-blocking: opening a FIFO must not wait for a writer (it is refused below).
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error("cannot open " + what + " '" + path + "': " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    throw Error(what + " '" + path + "' is not a regular file");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    // Mapped, not read: pages come from the page cache and are shared.
    // MAP_PRIVATE either way: writes (copy_on_write) stay in this process.
    const int protection = copy_on_write ? PROT_READ | PROT_WRITE : PROT_READ;
    void* mapped = mmap(nullptr, size_, protection, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) {
      const int err = errno;
      close(fd);
      throw Error("cannot map " + what + " '" + path + "': " + std::strerror(err));
    }
    data_ = static_cast<const uint8_t*>(mapped);
  }
  close(fd);
}

MappedFile::~MappedFile() { reset(); }

void MappedFile::reset() {
  if (data_) munmap(const_cast<uint8_t*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(other.data_), size_(other.size_), copy_on_write_(other.copy_on_write_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    reset();
    data_ = other.data_;
    size_ = other.size_;
    copy_on_write_ = other.copy_on_write_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

}  // namespace aotishim::runner
