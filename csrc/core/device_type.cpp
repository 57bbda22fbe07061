#include "core/device_type.h"

#include <cstdlib>

#include "core/error.h"

namespace aotishim {

DeviceType device_type_from_int(int32_t value) {
  switch (value) {
    case 0: return DeviceType::CPU;
    case 1: return DeviceType::CUDA;
    case 13: return DeviceType::MPS;
    case 20: return DeviceType::Sim;
    default:
      fail(str("unsupported device type ", value, " (supported: cpu=0, cuda=1, mps=13, sim=20)"));
  }
}

const char* device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::CPU: return "cpu";
    case DeviceType::CUDA: return "cuda";
    case DeviceType::MPS: return "mps";
    case DeviceType::Sim: return "sim";
  }
  return "?";
}

void parse_device(const std::string& text, DeviceType& type, int32_t& index) {
  std::string kind = text;
  index = 0;
  auto colon = text.find(':');
  if (colon != std::string::npos) {
    kind = text.substr(0, colon);
    std::string digits = text.substr(colon + 1);
    AOTISHIM_CHECK(!digits.empty() && digits.size() < 6 &&
                       digits.find_first_not_of("0123456789") == std::string::npos,
                   "invalid device '", text, "' (expected e.g. cpu, sim, cuda:0, mps)");
    index = std::atoi(digits.c_str());
  }
  if (kind == "cpu") type = DeviceType::CPU;
  else if (kind == "cuda") type = DeviceType::CUDA;
  else if (kind == "mps") type = DeviceType::MPS;
  else if (kind == "sim") type = DeviceType::Sim;
  else fail(str("invalid device '", text, "' (expected e.g. cpu, sim, cuda:0, mps)"));
  AOTISHIM_CHECK(type != DeviceType::CPU || index == 0, "invalid device '", text,
                 "' (there is one cpu device: cpu or cpu:0)");
}

}  // namespace aotishim
