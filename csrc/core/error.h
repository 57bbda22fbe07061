// Errors: C++ code throws aotishim::Error; every C entry point converts it to
// an error code and keeps the message as this thread's last error.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "aotishim/c_shim.h"
#include "aotishim/error.h"
#include "aotishim/export.h"
#include "core/shim_profile.h"

namespace aotishim {

template <typename... Args>
std::string str(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

[[noreturn]] AOTISHIM_API void fail(const std::string& message);

#define AOTISHIM_CHECK(cond, ...)                  \
  do {                                             \
    if (!(cond)) ::aotishim::fail(::aotishim::str(__VA_ARGS__)); \
  } while (0)

enum class LogLevel : int { Off = 0, Error = 1, Warn = 2, Info = 3, Debug = 4 };

// Threshold from the AOTISHIM_LOG environment variable
// (off|error|warn|info|debug, default warn); read once.
LogLevel log_threshold();
AOTISHIM_API void log(LogLevel level, const std::string& message);

AOTISHIM_API void set_last_error(std::string message);
const std::string& last_error();
void clear_last_error();

// Runs `body`; on an exception records "<function>: <message>" as the last
// error, logs it (unless `quiet`: for entries whose callers always check the
// code and raise the message themselves), and returns AOTI_TORCH_FAILURE.
// Never lets anything escape.
template <typename Body>
AOTITorchError guard(const char* function, Body&& body, bool quiet = false) noexcept {
  ShimTimer timer(function);
  try {
    body();
    return AOTI_TORCH_SUCCESS;
  } catch (const std::exception& e) {
    std::string message = str(function, ": ", e.what());
    if (!quiet) log(LogLevel::Error, message);
    set_last_error(std::move(message));
  } catch (...) {
    std::string message = str(function, ": unknown error");
    if (!quiet) log(LogLevel::Error, message);
    set_last_error(std::move(message));
  }
  return AOTI_TORCH_FAILURE;
}

// Argument checks shared by the shims.
template <typename T>
T* require_out(T* ptr, const char* name) {
  AOTISHIM_CHECK(ptr != nullptr, "output pointer '", name, "' is null");
  return ptr;
}

}  // namespace aotishim
