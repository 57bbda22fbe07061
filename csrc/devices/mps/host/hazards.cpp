#include "devices/mps/host/hazards.h"

#include <sstream>

namespace aotishim::mps::host {
namespace {

// Same memory, overlapping bytes, memory still alive.
bool overlap(const Use& a, const Use& b) {
  if (a.begin >= b.end || b.begin >= a.end || a.begin == a.end || b.begin == b.end) return false;
  std::shared_ptr<Buffer> ma = a.memory.lock(), mb = b.memory.lock();
  return ma != nullptr && ma == mb;
}

std::string where(const PendingCommands& p, size_t index, const CommandRecord& c) {
  std::ostringstream os;
  os << "command " << index << " (" << c.name << ") of command buffer #" << p.id << " ("
     << p.state << ")";
  return os.str();
}

}  // namespace

std::string describe(const Use& u) {
  std::ostringstream os;
  os << (u.write ? "writes " : "reads ") << u.role << " = buffer object #" << u.buffer
     << " bytes [" << u.begin - u.object_offset << ", " << u.end - u.object_offset << ")";
  if (u.object_offset != 0) os << " (bytes [" << u.begin << ", " << u.end << ") of its memory)";
  return os.str();
}

std::optional<std::string> find_alias_hazard(const CommandRecord& incoming,
                                             const std::vector<PendingCommands>& pending) {
  for (const PendingCommands& p : pending) {
    for (size_t i = 0; i < p.commands->size(); ++i) {
      const CommandRecord& c = (*p.commands)[i];
      for (const Use& pu : c.uses) {
        for (const Use& iu : incoming.uses) {
          if (pu.buffer == iu.buffer || !(pu.write || iu.write) || !overlap(pu, iu)) continue;
          std::ostringstream os;
          os << "host Metal hazard: " << incoming.name << " " << describe(iu) << ", but pending "
             << where(p, i, c) << " " << describe(pu)
             << "; the bytes overlap through different buffer objects, so nothing orders them";
          return os.str();
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> find_host_hazard(const Use& host,
                                            const std::vector<PendingCommands>& pending) {
  for (auto p = pending.rbegin(); p != pending.rend(); ++p) {
    for (size_t i = p->commands->size(); i-- > 0;) {
      const CommandRecord& c = (*p->commands)[i];
      for (const Use& pu : c.uses) {
        if (!(pu.write || host.write) || !overlap(pu, host)) continue;
        std::ostringstream os;
        os << "host Metal hazard: host " << (host.write ? "write" : "read") << " (" << host.role
           << ") of buffer object #" << host.buffer << " bytes [" << host.begin - host.object_offset
           << ", " << host.end - host.object_offset << "), but " << where(*p, i, c) << " "
           << describe(pu) << "; the host did not wait for it";
        return os.str();
      }
    }
  }
  return std::nullopt;
}

}  // namespace aotishim::mps::host
