// Device types, numbered as c10::DeviceType. `sim` uses PrivateUse1, the slot
// c10 reserves for out-of-tree backends.
#pragma once

#include <cstdint>
#include <string>

namespace aotishim {

enum class DeviceType : int32_t {
  CPU = 0,
  CUDA = 1,
  MPS = 13,
  Sim = 20,
};

DeviceType device_type_from_int(int32_t value);  // throws on unknown values
const char* device_type_name(DeviceType type);
// Parses "cpu", "sim", "sim:1", "cuda:0", "mps" (the one parser of device
// names; Python uses it through aotishim::parse_device_abi). A cpu index
// other than 0 is an error.
void parse_device(const std::string& text, DeviceType& type, int32_t& index);

}  // namespace aotishim
