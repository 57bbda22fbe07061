// A file of the given text under /tmp, for tests that read files (the
// caller removes it).
#pragma once

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

inline std::string write_temp_file(const std::string& text) {
  char name[] = "/tmp/aotishim_test_XXXXXX";
  const int fd = mkstemp(name);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(name) << text;
  return name;
}
