// The constants API of aotishim::Model from a native program: prints the
// FQNs, runs, doubles every weight into the inactive buffer, swaps, runs
// again, and checks the refusals a caller may meet.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "aotishim/runner.h"
#include "aotishim/runtime.h"

namespace {
void print_run(aotishim::Model& model, const char* label, const std::vector<float>& x,
               int64_t rows, int64_t cols) {
  auto out = model.run_host({{x.data(), {rows, cols}, {}, aoti_torch_dtype_float32()}});
  const float* y = reinterpret_cast<const float*>(out[0].data.data());
  std::printf("%s", label);
  for (size_t i = 0; i < out[0].data.size() / sizeof(float); ++i) std::printf(" %.7g", y[i]);
  std::printf("\n");
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const int64_t rows = std::stoll(argv[2]), cols = std::stoll(argv[3]);
  std::vector<float> x(static_cast<size_t>(rows * cols), 1.0f);
  auto model = aotishim::Model::load(argv[1]);
  std::printf("fqns");
  for (const std::string& f : model->constant_fqns()) std::printf(" %s", f.c_str());
  std::printf("\n");
  print_run(*model, "before", x, rows, cols);

  std::map<std::string, std::vector<float>> doubled;
  std::map<std::string, AtenTensorHandle> given;
  {
    std::map<std::string, AtenTensorHandle> views = model->extract_constants_map();
    for (auto& [fqn, h] : views) {
      const aotishim::TensorInfo info = aotishim::tensor_info(h);
      size_t n = 1;
      for (int64_t s : info.sizes) n *= static_cast<size_t>(s);
      std::vector<float>& data = doubled[fqn];
      data.resize(n);
      aotishim::copy_to_host(h, data.data());
      for (float& v : data) v *= 2;
      given[fqn] = aotishim::borrow_host_memory(data.data(), info.sizes, {}, info.dtype, nullptr);
    }
    try {
      model->close();
      std::printf("close while viewed: allowed\n");
    } catch (const aotishim::Error& e) {
      std::printf("close while viewed: refused\n");
    }
    for (auto& [fqn, h] : views) aoti_torch_delete_tensor_object(h);
  }
  aotishim::ConstantLoadOptions inactive;
  inactive.use_inactive = true;
  inactive.check_full_update = true;
  model->load_constants(given, inactive);
  print_run(*model, "inactive loaded", x, rows, cols);
  model->swap_constant_buffer();
  print_run(*model, "swapped", x, rows, cols);
  model->free_inactive_constant_buffer();
  try {
    model->load_constants({{"no.such", given.begin()->second}});
  } catch (const aotishim::InputError& e) {
    std::printf("unknown fqn: InputError\n");
  }
  for (auto& [fqn, h] : given) aoti_torch_delete_tensor_object(h);
  std::printf("leaks %zu\n", model->close().size());
  std::printf("live %zu\n", aotishim::memory_stats().live_tensors);
  return 0;
}
