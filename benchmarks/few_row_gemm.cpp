// aotishim's few-row float32 GEMM (csrc/devices/cpu/few_row_gemm.cpp)
// against OpenBLAS's sgemm (and sgemv for one row, which blas::gemm uses
// there), one thread, called from C++. The grid behind few_row_gemm_applies: decoder
// and small-batch Linear layers (x[m, k] @ W[n, k]^T) and GPT-2's Conv1D
// (x[m, k] @ W[k, n]). Prints "layout m k n openblas_us few_row_us ratio"
// and checks each result against a float64 product.
//
//   g++ -O2 -std=c++17 -Icsrc benchmarks/few_row_gemm.cpp csrc/devices/cpu/few_row_gemm.cpp
//       csrc/devices/cpu/vector_isa.cpp -o /tmp/few_row -ldl
//   /tmp/few_row path/to/libscipy_openblas.so   (scipy_openblas32.get_lib_dir())
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "devices/cpu/few_row_gemm.h"

using CblasSgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*,
                            int, float, float*, int);
using CblasSgemv = void (*)(int, int, int, int, float, const float*, int, const float*, int,
                            float, float*, int);
constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

template <typename F>
double median_us(F f) {
  for (int i = 0; i < 20; ++i) f();
  std::vector<double> t;
  for (int r = 0; r < 15; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 30; ++i) f();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0)
                    .count() / 30);
  }
  std::sort(t.begin(), t.end());
  return t[2];  // a low quantile: this VM's noise only adds time
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s libscipy_openblas.so\n", argv[0]);
    return 2;
  }
  void* openblas = dlopen(argv[1], RTLD_NOW);
  if (openblas == nullptr) {
    std::fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  auto sgemm = reinterpret_cast<CblasSgemm>(dlsym(openblas, "scipy_cblas_sgemm"));
  auto sgemv = reinterpret_cast<CblasSgemv>(dlsym(openblas, "scipy_cblas_sgemv"));
  reinterpret_cast<void (*)(int)>(dlsym(openblas, "scipy_openblas_set_num_threads"))(1);
  std::mt19937 rng(0);
  std::normal_distribution<float> normal;
  std::printf("layout m k n openblas_us few_row_us ratio\n");
  int failures = 0;
  for (const bool trans_b : {true, false}) {
    for (const int m : {1, 2, 4, 8, 16, 24, 32}) {
      for (const auto& [k, n] : std::vector<std::pair<int, int>>{
               {64, 64}, {64, 128}, {128, 64}, {64, 1000}, {256, 256}, {768, 768},
               {768, 3072}, {3072, 768}, {1024, 4096}, {4096, 1024}}) {
        std::vector<float> a(size_t(m) * k), w(size_t(n) * k), c1(size_t(m) * n),
            c2(size_t(m) * n);
        for (float& v : a) v = normal(rng);
        for (float& v : w) v = normal(rng);
        const int ldb = trans_b ? k : n;
        auto blas = [&] {
          if (m == 1 && trans_b)
            sgemv(kRowMajor, kNoTrans, n, k, 1.0f, w.data(), k, a.data(), 1, 0.0f, c1.data(), 1);
          else if (m == 1)
            sgemv(kRowMajor, kTrans, k, n, 1.0f, w.data(), n, a.data(), 1, 0.0f, c1.data(), 1);
          else
            sgemm(kRowMajor, kNoTrans, trans_b ? kTrans : kNoTrans, m, n, k, 1.0f, a.data(), k,
                  w.data(), ldb, 0.0f, c1.data(), n);
        };
        auto ours = [&] {
          aotishim::cpu::few_row_sgemm(trans_b, m, n, k, 1.0f, a.data(), k, w.data(), ldb, 0.0f,
                                       c2.data(), n);
        };
        const double t_blas = median_us(blas), t_ours = median_us(ours);
        double worst = 0;  // error against float64, in units of sum |a||w|
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j) {
            double s = 0, mag = 0;
            for (int kk = 0; kk < k; ++kk) {
              const double p = double(a[size_t(i) * k + kk]) *
                               (trans_b ? w[size_t(j) * k + kk] : w[size_t(kk) * n + j]);
              s += p;
              mag += std::fabs(p);
            }
            worst = std::max(worst, std::fabs(c2[size_t(i) * n + j] - s) / mag);
          }
        if (!(worst < 1e-5)) ++failures;
        std::printf("%s %d %d %d %.2f %.2f %.2f%s\n", trans_b ? "x@W^T" : "x@W", m, k, n, t_blas,
                    t_ours, t_ours / t_blas, worst < 1e-5 ? "" : " WRONG");
      }
    }
  }
  return failures == 0 ? 0 : 1;
}
