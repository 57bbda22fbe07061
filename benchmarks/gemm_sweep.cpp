// OpenBLAS's sgemm against oneDNN's dnnl_sgemm over a grid of Linear-layer
// shapes (x[m, k] @ W[n, k]^T, row-major), one thread, called from C++ so
// that the call's own cost is measured too (through Python it hides under
// ctypes'). The grid behind csrc/devices/cpu/onednn_gemm.cpp's
// prefers_onednn. Prints "m k n multiply-adds openblas_us onednn_us ratio".
//
//   g++ -O2 -fopenmp benchmarks/gemm_sweep.cpp -o /tmp/gemm_sweep -ldl
//   OMP_NUM_THREADS=1 /tmp/gemm_sweep path/to/libscipy_openblas.so path/to/libdnnl.so.3
#include <dlfcn.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using DnnlSgemm = int (*)(char, char, long, long, long, float, const float*, long, const float*,
                          long, float, float*, long);
using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                            int, float, float*, int);

template <typename F>
double median_us(F f) {
  for (int i = 0; i < 20; ++i) f();
  std::vector<double> t;
  for (int r = 0; r < 9; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 30; ++i) f();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                    .count() / 30);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s libscipy_openblas.so libdnnl.so.3\n", argv[0]);
    return 2;
  }
  void* openblas = dlopen(argv[1], RTLD_NOW);
  void* onednn = dlopen(argv[2], RTLD_NOW);
  if (openblas == nullptr || onednn == nullptr) {
    std::fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  auto cblas = reinterpret_cast<CblasSgemm>(dlsym(openblas, "scipy_cblas_sgemm"));
  auto dnnl = reinterpret_cast<DnnlSgemm>(dlsym(onednn, "dnnl_sgemm"));
  reinterpret_cast<void (*)(int)>(dlsym(openblas, "scipy_openblas_set_num_threads"))(1);
  omp_set_num_threads(1);
  for (int m : {4, 16, 64, 256})
    for (int k : {32, 64, 128, 256, 512, 1024})
      for (int n : {32, 64, 128, 256, 512, 1000}) {
        std::vector<float> a(static_cast<size_t>(m) * k, 0.5f), w(static_cast<size_t>(n) * k, 0.25f),
            c(static_cast<size_t>(m) * n);
        const double ob = median_us([&] {  // 101 row-major, 111 no-trans, 112 trans
          cblas(101, 111, 112, m, n, k, 1.f, a.data(), k, w.data(), k, 0.f, c.data(), n);
        });
        const double dn = median_us([&] {
          dnnl('N', 'T', m, n, k, 1.f, a.data(), k, w.data(), k, 0.f, c.data(), n);
        });
        std::printf("%d %d %d %ld %.2f %.2f %.2f\n", m, k, n, static_cast<long>(m) * n * k, ob,
                    dn, dn / ob);
      }
  return 0;
}
