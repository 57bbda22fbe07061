// SHA-256 of a file's bytes: the identity of a model library's content, so
// one model reached through many paths (copies, .pt2 extractions) is loaded
// once, and two different models are never taken for one another.
#pragma once

#include <string>

namespace aotishim::runner {

// Hex SHA-256 of the file at `path`; throws aotishim::Error if unreadable.
std::string file_sha256(const std::string& path);

// Hex SHA-256 of a byte string (tests, small inputs).
std::string sha256_hex(const void* data, size_t size);

}  // namespace aotishim::runner
