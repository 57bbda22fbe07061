// The ELF reader: a real shared object's exports and imports; unreadable,
// truncated and non-ELF files are errors naming the path.
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "aotishim/error.h"
#include "runner/elf_symbols.h"

using aotishim::runner::read_dynamic_symbols;

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The file of the loaded C math library (where cos lives).
std::string libm_path() {
  Dl_info info{};
  double (*fn)(double) = &std::cos;
  REQUIRE(dladdr(reinterpret_cast<void*>(fn), &info) != 0);
  return info.dli_fname;
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  std::string path = std::string(P_tmpdir) + "/aotishim_elf_test_" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string error_of(const std::string& path) {
  try {
    read_dynamic_symbols(path);
  } catch (const aotishim::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a real shared object's exports and imports") {
  if (!aotishim::runner::elf_platform()) return;
  auto symbols = read_dynamic_symbols(libm_path());
  CHECK(contains(symbols.defined, "cos"));
  CHECK(contains(symbols.defined, "sqrt"));
  CHECK_FALSE(contains(symbols.undefined, "cos"));
}

TEST_CASE("bad files are errors that name the path") {
  if (!aotishim::runner::elf_platform()) return;
  std::string missing = "/nonexistent/dir/model.so";
  CHECK(error_of(missing).find(missing) != std::string::npos);

  std::string text = write_temp("text", "this is not an ELF file at all, just text\n");
  CHECK(error_of(text).find(text) != std::string::npos);

  std::ifstream lib(libm_path(), std::ios::binary);
  std::string head(64, '\0');
  lib.read(&head[0], 64);
  std::string truncated = write_temp("truncated", head);  // a valid header, nothing behind it
  CHECK(error_of(truncated).find(truncated) != std::string::npos);

  std::string empty = write_temp("empty", "");
  CHECK_FALSE(error_of(empty).empty());
  for (const std::string& p : {text, truncated, empty}) std::remove(p.c_str());
}
