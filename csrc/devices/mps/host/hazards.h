// The host Metal's hazard checker. Metal orders work only through buffer
// objects (a command buffer runs after the work it depends on because both
// bind the same MTLBuffer), and the host may touch a buffer's contents only
// once the work writing it has completed. What slips past those rules is a
// race a GPU turns into wrong numbers some of the time; the checker turns it
// into an error naming both sides, every time:
//   - a host read of bytes that a command not yet seen complete writes, or a
//     host write of bytes such a command reads or writes;
//   - two commands binding overlapping bytes through different buffer
//     objects over one memory (aliases), one of them writing, while the
//     earlier one is not yet seen complete.
// "Seen complete" is what the host observed (a wait that returned, a status
// that said Completed), never what the worker thread happens to have done,
// so the verdicts do not depend on its timing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "devices/mps/host/buffer.h"

namespace aotishim::mps::host {

// Bytes of a memory (one host Buffer, shared by a buffer object and its
// aliases) that a command or the host touches.
struct Use {
  std::weak_ptr<Buffer> memory;  // expired: the memory is gone, the use is moot
  uint64_t buffer = 0;           // the buffer object's identity
  size_t begin = 0, end = 0;     // byte range of the memory
  size_t object_offset = 0;      // where the buffer object starts in the memory
  bool write = false;
  std::string role;  // "buffer(0) out_ptr0", "copy source", ...
};

struct CommandRecord {
  std::string name;  // "dispatch 'copy_strided'", "blit copy", "matrix product"
  std::vector<Use> uses;
};

// A command buffer the host has not yet seen complete.
struct PendingCommands {
  uint64_t id = 0;
  const char* state = "";  // "not committed", "committed, not yet seen complete"
  const std::vector<CommandRecord>* commands = nullptr;
};

std::string describe(const Use& use);

// The first pending command that `incoming` races through an alias.
std::optional<std::string> find_alias_hazard(const CommandRecord& incoming,
                                             const std::vector<PendingCommands>& pending);

// The latest pending command that the host access `host` races.
std::optional<std::string> find_host_hazard(const Use& host,
                                            const std::vector<PendingCommands>& pending);

}  // namespace aotishim::mps::host
