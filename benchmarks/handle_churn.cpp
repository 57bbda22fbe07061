// The cost of the tensor-handle entry points that generated code calls
// between kernels (allocate, reinterpret, read sizes and data pointers,
// delete), called from C++ through the C ABI on one thread, for one library
// or several side by side: aotishim's libaotishim.so and torch's
// libtorch_cpu.so export the same `aoti_torch_*` symbols. A compiled GRU
// makes about 160 of these calls per run and a small decoder about 150, so
// their cost is a fixed part of every call. Prints ns per operation and, for
// each library after the first, its ratio to the first.
//
//   g++ -O2 benchmarks/handle_churn.cpp -o /tmp/handle_churn -ldl
//   /tmp/handle_churn python/aotishim/libaotishim.so .../torch/lib/libtorch_cpu.so
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

using Handle = void*;
using EmptyStrided = int32_t (*)(int64_t, const int64_t*, const int64_t*, int32_t, int32_t,
                                 int32_t, Handle*);
using Reinterpret = int32_t (*)(Handle, int64_t, const int64_t*, const int64_t*, int64_t, Handle*);
using Delete = int32_t (*)(Handle);
using DataPtr = int32_t (*)(Handle, void**);
using Sizes = int32_t (*)(Handle, int64_t**);
using Enum = int32_t (*)();

struct Shims {
  std::string path;
  EmptyStrided empty_strided;
  Reinterpret reinterpret;
  Delete del;
  DataPtr data_ptr;
  Sizes sizes;
  int32_t float32;
  int32_t cpu;
};

template <typename F>
F symbol(void* lib, const char* name) {
  void* s = dlsym(lib, name);
  if (s == nullptr) {
    std::fprintf(stderr, "missing %s: %s\n", name, dlerror());
    std::exit(2);
  }
  return reinterpret_cast<F>(s);
}

Shims open_shims(const char* path) {
  // RTLD_LOCAL: two libraries exporting the same names stay apart.
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "cannot load %s: %s\n", path, dlerror());
    std::exit(2);
  }
  Shims s;
  s.path = path;
  s.empty_strided = symbol<EmptyStrided>(lib, "aoti_torch_empty_strided");
  s.reinterpret = symbol<Reinterpret>(lib, "aoti_torch__reinterpret_tensor");
  s.del = symbol<Delete>(lib, "aoti_torch_delete_tensor_object");
  s.data_ptr = symbol<DataPtr>(lib, "aoti_torch_get_data_ptr");
  s.sizes = symbol<Sizes>(lib, "aoti_torch_get_sizes");
  s.float32 = symbol<Enum>(lib, "aoti_torch_dtype_float32")();
  s.cpu = symbol<Enum>(lib, "aoti_torch_device_type_cpu")();
  return s;
}

void ok(int32_t rc, const char* what) {
  if (rc != 0) {
    std::fprintf(stderr, "%s failed (%d)\n", what, rc);
    std::exit(1);
  }
}

// Median over 15 batches of ns per repetition of f (after a warm-up batch).
template <typename F>
double median_ns(F f, int reps = 20000) {
  std::vector<double> t;
  for (int b = 0; b < 16; ++b) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) f();
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    if (b > 0) t.push_back(ns / reps);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Row {
  const char* name;
  std::vector<double> ns;  // per library
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s LIB.so [LIB.so ...]\n", argv[0]);
    return 2;
  }
  std::vector<Shims> libs;
  for (int i = 1; i < argc; ++i) libs.push_back(open_shims(argv[i]));
  // OpenBLAS (loaded with aotishim) starts its thread pool at load, and the
  // pool spins for about 0.1 s before it sleeps: wait that out, or it takes
  // a core from what is measured.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));

  const int64_t sizes[2] = {2, 192}, strides[2] = {192, 1};
  const int64_t view_sizes[2] = {2, 64}, view_strides[2] = {192, 1};
  std::vector<Row> rows = {{"empty_strided + delete", {}},
                           {"reinterpret + delete", {}},
                           {"get_data_ptr + get_sizes", {}},
                           {"a step: 1 alloc, 3 views, 8 reads, 4 deletes", {}}};
  for (const Shims& s : libs) {
    Handle base = nullptr;
    ok(s.empty_strided(2, sizes, strides, s.float32, s.cpu, 0, &base), "empty_strided");
    rows[0].ns.push_back(median_ns([&] {
      Handle h = nullptr;
      ok(s.empty_strided(2, sizes, strides, s.float32, s.cpu, 0, &h), "empty_strided");
      ok(s.del(h), "delete");
    }));
    rows[1].ns.push_back(median_ns([&] {
      Handle h = nullptr;
      ok(s.reinterpret(base, 2, view_sizes, view_strides, 64, &h), "reinterpret");
      ok(s.del(h), "delete");
    }));
    rows[2].ns.push_back(median_ns([&] {
      void* p = nullptr;
      int64_t* sz = nullptr;
      ok(s.data_ptr(base, &p), "get_data_ptr");
      ok(s.sizes(base, &sz), "get_sizes");
    }));
    // The shape of one recurrent step of generated code: a buffer, three
    // gate views of it, their pointers and sizes read, everything deleted.
    rows[3].ns.push_back(median_ns([&] {
      Handle buf = nullptr, v[3] = {};
      ok(s.empty_strided(2, sizes, strides, s.float32, s.cpu, 0, &buf), "empty_strided");
      for (int g = 0; g < 3; ++g)
        ok(s.reinterpret(buf, 2, view_sizes, view_strides, 64 * g, &v[g]), "reinterpret");
      void* p = nullptr;
      int64_t* sz = nullptr;
      for (int g = 0; g < 3; ++g) {
        ok(s.data_ptr(v[g], &p), "get_data_ptr");
        ok(s.sizes(v[g], &sz), "get_sizes");
      }
      ok(s.data_ptr(buf, &p), "get_data_ptr");
      ok(s.sizes(buf, &sz), "get_sizes");
      for (int g = 0; g < 3; ++g) ok(s.del(v[g]), "delete");
      ok(s.del(buf), "delete");
    }));
    ok(s.del(base), "delete");
  }

  std::printf("%-46s", "ns per operation");
  for (size_t i = 0; i < libs.size(); ++i) {
    const std::string& p = libs[i].path;
    std::printf(" %18s", p.substr(p.find_last_of('/') + 1).c_str());
    if (i > 0) std::printf(" %8s", "ratio");
  }
  std::printf("\n");
  for (const Row& r : rows) {
    std::printf("%-46s", r.name);
    for (size_t i = 0; i < r.ns.size(); ++i) {
      std::printf(" %18.1f", r.ns[i]);
      if (i > 0) std::printf(" %8.2f", r.ns[i] / r.ns[0]);
    }
    std::printf("\n");
  }
  return 0;
}
