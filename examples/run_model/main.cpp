// A native runner on aotishim's C++ API (no Python): loads a model, runs it
// on host buffers and on tensor handles, closes it, and prints what it saw.
//   run_model MODEL.so ROWS COLS   (one float32 input of ones)
#include <aotishim/runner.h>
#include <aotishim/runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL.so ROWS COLS\n", argv[0]);
    return 2;
  }
  const int64_t rows = std::atoll(argv[2]), cols = std::atoll(argv[3]);
  try {
    auto model = aotishim::Model::load(argv[1]);
    std::printf("inputs %zu outputs %zu constants %zu\n", model->input_names().size(),
                model->output_names().size(), model->constant_names().size());
    std::vector<float> x(static_cast<size_t>(rows * cols), 1.0f);

    // Host buffers in, host copies out.
    const auto outputs =
        model->run_host({{x.data(), {rows, cols}, {}, aoti_torch_dtype_float32()}});
    for (const auto& out : outputs) {
      const float* v = reinterpret_cast<const float*>(out.data.data());
      std::printf("host");
      for (size_t i = 0; i < out.data.size() / sizeof(float); ++i) std::printf(" %.6g", v[i]);
      std::printf("\n");
    }

    // Tensor handles in (consumed), caller-owned handles out.
    AtenTensorHandle input = aotishim::copy_from_host(x.data(), {rows, cols}, {cols, 1},
                                                      aoti_torch_dtype_float32(), "cpu");
    std::vector<AtenTensorHandle> handles = model->run({input});
    std::printf("input consumed %d\n", aotishim::is_live_handle(input) ? 0 : 1);

    const auto leaks = model->close();
    std::printf("leaks %zu\n", leaks.size());
    for (AtenTensorHandle h : handles) {  // still valid after close
      const auto info = aotishim::tensor_info(h);
      int64_t n = 1;
      for (int64_t s : info.sizes) n *= s;
      std::vector<float> host(static_cast<size_t>(n));
      aotishim::copy_to_host(h, host.data());
      std::printf("handle");
      for (float f : host) std::printf(" %.6g", f);
      std::printf("\n");
      aotishim::check(aoti_torch_delete_tensor_object(h));
    }
    std::printf("live %zu\n", aotishim::memory_stats().live_tensors);

    try {
      aotishim::Model::load("/nonexistent/model.so");
    } catch (const aotishim::Error& e) {
      std::printf("error %s\n", e.what());
    }
  } catch (const aotishim::Error& e) {
    std::fprintf(stderr, "aotishim error: %s\n", e.what());
    return 1;
  }
  return 0;
}
