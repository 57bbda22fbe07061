// A weights blob mapped read-only for as long as a model may read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace aotishim::runner {

class WeightsFile {
 public:
  WeightsFile() = default;
  // Throws aotishim::Error when the file cannot be opened or mapped.
  explicit WeightsFile(const std::string& path);
  ~WeightsFile();
  WeightsFile(WeightsFile&& other) noexcept;
  WeightsFile& operator=(WeightsFile&& other) noexcept;
  WeightsFile(const WeightsFile&) = delete;
  WeightsFile& operator=(const WeightsFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void reset();
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace aotishim::runner
