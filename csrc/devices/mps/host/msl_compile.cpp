#include "devices/mps/host/msl_compile.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "devices/mps/host/embedded.h"
#include "devices/mps/host/msl_translate.h"

namespace aotishim::mps::host {
namespace {

// Metal compiles without fast math here too (MTLCompileOptions.fastMathEnabled
// = NO in both Apple paths); -w: MSL sources are not held to C++'s warnings.
constexpr const char* kCompileFlags = "-std=c++17 -O2 -fPIC -shared -fno-exceptions -w";
constexpr const char* kPreprocessFlags = "-E -P -x c++ -std=c++17 -D__METAL__=1 -D__METAL_VERSION__=310";

[[noreturn]] void fail(const std::string& message) { throw std::runtime_error("host Metal: " + message); }

bool executable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) fail("cannot write '" + path + "'");
}

void make_dirs(const std::string& dir) {
  for (size_t at = 1; at <= dir.size(); ++at) {
    if (at == dir.size() || dir[at] == '/') {
      const std::string part = dir.substr(0, at);
      if (mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) {
        fail("cannot create the cache directory '" + part + "': " + std::strerror(errno));
      }
    }
  }
}

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Runs `command` with stdout and stderr to `log`; returns the exit status.
int run(const std::string& command, const std::string& log) {
  const int status = std::system((command + " >" + shell_quote(log) + " 2>&1").c_str());
  if (status == -1) fail("cannot start '" + command + "'");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Metal's standard headers are the prelude here.
std::string without_metal_includes(const std::string& src) {
  std::stringstream in(src);
  std::string line, out;
  while (std::getline(in, line)) {
    size_t i = line.find_first_not_of(" \t");
    const bool metal_include = i != std::string::npos && line.compare(i, 1, "#") == 0 &&
                               line.find("include", i) != std::string::npos &&
                               line.find("<metal_", i) != std::string::npos;
    out += metal_include ? "" : line;
    out += '\n';
  }
  return out;
}

std::string unique_stem(const std::string& dir) {
  static std::atomic<uint64_t> counter{0};
  return dir + "/tmp-" + std::to_string(getpid()) + "-" + std::to_string(counter++);
}

}  // namespace

std::string host_compiler() {
  std::vector<std::string> tried;
  if (const char* env = std::getenv("AOTISHIM_METAL_HOST_CXX"); env != nullptr && *env != '\0') {
    if (executable(env)) return env;
    fail(std::string("AOTISHIM_METAL_HOST_CXX='") + env + "' is not an executable file");
  }
  tried.push_back("$AOTISHIM_METAL_HOST_CXX (unset)");
  const char* path = std::getenv("PATH");
  std::vector<std::string> dirs;
  std::stringstream ss(path != nullptr ? path : "");
  for (std::string d; std::getline(ss, d, ':');) {
    if (!d.empty()) dirs.push_back(d);
  }
  std::vector<std::string> names;
  for (int v = 30; v >= 14; --v) names.push_back("clang++-" + std::to_string(v));
  names.push_back("clang++");
  for (const std::string& name : names) {
    for (const std::string& d : dirs) {
      const std::string candidate = d + "/" + name;
      if (executable(candidate)) return candidate;
    }
  }
  std::string where;
  for (const std::string& d : dirs) where += (where.empty() ? "" : ":") + d;
  tried.push_back("clang++-30 ... clang++-14 and clang++ in every PATH directory (" +
                  (where.empty() ? std::string("PATH is empty") : where) + ")");
  std::string message = "no C++ compiler for Metal sources; tried:";
  for (const std::string& t : tried) message += "\n  " + t;
  fail(message + "\ninstall clang (e.g. apt-get install clang-19) or set AOTISHIM_METAL_HOST_CXX");
}

std::string cache_dir() {
  if (const char* env = std::getenv("AOTISHIM_METAL_HOST_CACHE"); env != nullptr && *env != '\0') {
    return env;
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return std::string(xdg) + "/aotishim/metal-host";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.cache/aotishim/metal-host";
  }
  return "/tmp/aotishim-metal-host-" + std::to_string(getuid());
}

Library::Library(const std::string& msl_source) {
  const std::string cxx = host_compiler();
  const std::string dir = cache_dir();
  make_dirs(dir);

  // Preprocess the MSL alone (attributes are not macros, so they survive)
  // and translate; the hash covers the translated text, compiler and flags.
  const std::string stem = unique_stem(dir);
  write_text(stem + ".metal", without_metal_includes(msl_source));
  const int pre = run(shell_quote(cxx) + " " + kPreprocessFlags + " " + shell_quote(stem + ".metal") +
                          " -o " + shell_quote(stem + ".ii"),
                      stem + ".log");
  const std::string pre_log = read_text(stem + ".log");
  const std::string preprocessed = read_text(stem + ".ii");
  std::remove((stem + ".metal").c_str());
  std::remove((stem + ".ii").c_str());
  std::remove((stem + ".log").c_str());
  if (pre != 0) fail("preprocessing the Metal source failed (" + cxx + "):\n" + pre_log);
  const Translation translation = translate_msl(preprocessed);
  const std::string cpp = std::string(host_kernel_abi_source()) + host_prelude_source() +
                          "\n#line 1 \"metal-source\"\n" + translation.source;
  // $AOTISHIM_METAL_HOST_CXXFLAGS adds flags (the sanitizer job instruments
  // the kernels with -fsanitize=address).
  const char* extra_env = std::getenv("AOTISHIM_METAL_HOST_CXXFLAGS");
  const std::string flags = std::string(kCompileFlags) + (extra_env != nullptr ? std::string(" ") + extra_env : "");
  const std::string key = hex(fnv1a(cpp, fnv1a(std::string(cxx) + "\n" + flags)));
  path_ = dir + "/" + key + ".so";

  if (executable(path_) || access(path_.c_str(), R_OK) == 0) {
    from_cache_ = true;
  } else {
    const std::string source_path = dir + "/" + key + ".cpp";
    write_text(source_path, cpp);
    const std::string tmp = stem + ".so";
    const int rc = run(shell_quote(cxx) + " " + flags + " -o " + shell_quote(tmp) + " " +
                           shell_quote(source_path),
                       stem + ".log");
    const std::string log = read_text(stem + ".log");
    std::remove((stem + ".log").c_str());
    if (rc != 0) {
      std::remove(tmp.c_str());
      fail("compiling the Metal source as C++ failed (" + cxx + ", translated source kept at " +
           source_path + "):\n" + log);
    }
    if (std::rename(tmp.c_str(), path_.c_str()) != 0) {
      std::remove(tmp.c_str());
      fail("cannot move the compiled library to '" + path_ + "': " + std::strerror(errno));
    }
  }

  void* handle = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) fail("loading '" + path_ + "' failed: " + dlerror());
  handle_ = std::shared_ptr<void>(handle, [](void* h) { dlclose(h); });
  auto kernels = reinterpret_cast<aotishim_msl_kernels_fn>(dlsym(handle, AOTISHIM_MSL_KERNELS_SYMBOL));
  if (kernels == nullptr) fail("'" + path_ + "' has no kernel table");
  int32_t count = 0, abi = 0;
  const aotishim_msl_kernel* table = kernels(&count, &abi);
  if (abi != AOTISHIM_MSL_ABI_VERSION) {
    fail("'" + path_ + "' was built for ABI " + std::to_string(abi) + ", not " +
         std::to_string(AOTISHIM_MSL_ABI_VERSION));
  }
  for (int32_t i = 0; i < count; ++i) {
    auto f = std::make_shared<Function>();
    f->name = table[i].name;
    f->entry = table[i].entry;
    f->params.assign(table[i].params, table[i].params + table[i].param_count);
    f->library = handle_;
    functions_.push_back(std::move(f));
  }
}

Library::~Library() = default;

std::shared_ptr<const Function> Library::function(const std::string& name) const {
  for (const auto& f : functions_) {
    if (f->name == name) return f;
  }
  std::string names;
  for (const auto& f : functions_) names += (names.empty() ? "" : ", ") + f->name;
  fail("the library has no kernel named '" + name + "' (it has: " +
       (names.empty() ? std::string("none") : names) + ")");
}

std::vector<std::string> Library::function_names() const {
  std::vector<std::string> out;
  for (const auto& f : functions_) out.push_back(f->name);
  return out;
}

}  // namespace aotishim::mps::host
