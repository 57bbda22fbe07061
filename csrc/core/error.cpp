#include "core/error.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>

namespace aotishim {

namespace {
thread_local std::string t_last_error;

LogLevel parse_level(const char* text) {
  if (text == nullptr) return LogLevel::Warn;
  if (std::strcmp(text, "off") == 0) return LogLevel::Off;
  if (std::strcmp(text, "error") == 0) return LogLevel::Error;
  if (std::strcmp(text, "warn") == 0) return LogLevel::Warn;
  if (std::strcmp(text, "info") == 0) return LogLevel::Info;
  if (std::strcmp(text, "debug") == 0) return LogLevel::Debug;
  return LogLevel::Warn;
}

const char* level_name(LogLevel level) {
  switch (level) {
    case LogLevel::Error: return "error";
    case LogLevel::Warn: return "warning";
    case LogLevel::Info: return "info";
    case LogLevel::Debug: return "debug";
    default: return "";
  }
}
}  // namespace

void fail(const std::string& message) { throw Error(message); }

LogLevel log_threshold() {
  static const LogLevel level = parse_level(std::getenv("AOTISHIM_LOG"));
  return level;
}

void log(LogLevel level, const std::string& message) {
  if (level == LogLevel::Off || static_cast<int>(level) > static_cast<int>(log_threshold())) return;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::cerr << "[aotishim " << level_name(level) << "] " << message << std::endl;
}

void set_last_error(std::string message) { t_last_error = std::move(message); }
const std::string& last_error() { return t_last_error; }
void clear_last_error() { t_last_error.clear(); }

}  // namespace aotishim

extern "C" AOTISHIM_API const char* aotishim_last_error(void) {
  return aotishim::last_error().c_str();
}
