// The sim device's hazard checker. The stream orders commands only by buffer
// object, and the device waits before a host access only for the buffer
// object that access resolves to; whatever slips past both is a race that a
// real GPU would turn into wrong numbers some of the time. The checker turns
// it into an error naming both sides, every time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "devices/sim/command_stream.h"

namespace aotishim::sim_detail {

// (b) `incoming` binds bytes that a pending command binds through a different
// buffer object, and at least one of the two writes them. Returns the message
// of the first such pair.
std::optional<std::string> find_command_hazard(const Command& incoming,
                                               const std::vector<Command>& pending);

// (a) The host reads (write = false) or writes [ptr, ptr + nbytes) while a
// pending command writes those bytes (or, for a host write, touches them at all).
// `what` names the host side ("host read (download)", ...); the message
// names the latest such pending command.
std::optional<std::string> find_host_hazard(const std::string& what, const void* ptr,
                                            size_t nbytes, bool write,
                                            const std::vector<Command>& pending);

}  // namespace aotishim::sim_detail
