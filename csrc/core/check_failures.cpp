#include "core/check_failures.h"

#include <atomic>
#include <mutex>
#include <utility>

namespace aotishim {
namespace {
std::atomic<uint64_t> g_count{0};
std::mutex g_mutex;
std::string g_message;
}  // namespace

void record_check_failure(std::string message) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_message = std::move(message);
  }
  // After the message, so a reader that sees the new count reads its message.
  g_count.fetch_add(1, std::memory_order_release);
}

uint64_t check_failure_count() { return g_count.load(std::memory_order_acquire); }

std::string last_check_failure() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_message;
}

}  // namespace aotishim
