// Custom ops implemented in C++ through aotishim/custom_ops.h: the ops of
// tests/custom_op_models.py (aotishim_test::scale_shift, split_stats) as
// registered functions, a model that calls them run from its inputs
// (argv[2], argv[3]: two float32 4x5 files), its outputs printed; then an
// implementation that throws, and a load without registrations.
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "aotishim/custom_ops.h"
#include "aotishim/runner.h"
#include "aotishim/runtime.h"

namespace {

// A tensor argument's elements, packed row-major, as float32.
std::vector<float> read_floats(AtenTensorHandle h, std::vector<int64_t>* sizes) {
  const aotishim::TensorInfo info = aotishim::tensor_info(h);
  if (info.dtype != aoti_torch_dtype_float32()) throw std::runtime_error("expected float32");
  size_t n = 1;
  for (int64_t s : info.sizes) n *= static_cast<size_t>(s);
  std::vector<float> v(n);
  aotishim::copy_to_host(h, v.data());
  *sizes = info.sizes;
  return v;
}

// aotishim_test::scale_shift(x, y, alpha, n, dims, bias=None, negate=False)
// for 2-D x, y and dims [1]: x * alpha + y.flip(1) + n, negated if asked.
std::vector<AtenTensorHandle> scale_shift(const aotishim::OpCall& call) {
  const auto& a = call.args;
  if (a.size() != 7 || a[0].kind != aotishim::OpArg::Kind::Tensor ||
      a[2].kind != aotishim::OpArg::Kind::Float || a[3].kind != aotishim::OpArg::Kind::Int ||
      a[4].kind != aotishim::OpArg::Kind::IntList || a[5].kind != aotishim::OpArg::Kind::None ||
      a[6].kind != aotishim::OpArg::Kind::Bool || a[6].name != "negate") {
    throw std::runtime_error("unexpected arguments");
  }
  std::vector<int64_t> sizes, y_sizes;
  const std::vector<float> x = read_floats(a[0].tensor, &sizes);
  const std::vector<float> y = read_floats(a[1].tensor, &y_sizes);
  if (sizes.size() != 2 || a[4].ints != std::vector<int64_t>{1}) {
    throw std::runtime_error("this implementation flips dimension 1 of 2-D tensors");
  }
  const int64_t rows = sizes[0], cols = sizes[1];
  std::vector<float> out(x.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float v = x[r * cols + c] * static_cast<float>(a[2].float_value) + y[r * cols + (cols - 1 - c)] +
                static_cast<float>(a[3].int_value);
      out[r * cols + c] = a[6].bool_value ? -v : v;
    }
  }
  return {aotishim::copy_from_host(out.data(), sizes, {}, aoti_torch_dtype_float32(), call.device)};
}

// aotishim_test::split_stats(x) -> (x + 1, x.sum(0) as float64)
std::vector<AtenTensorHandle> split_stats(const aotishim::OpCall& call) {
  std::vector<int64_t> sizes;
  const std::vector<float> x = read_floats(call.args.at(0).tensor, &sizes);
  std::vector<float> plus(x.size());
  std::vector<double> sums(static_cast<size_t>(sizes[1]), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    plus[i] = x[i] + 1.0f;
    sums[i % sums.size()] += x[i];
  }
  return {aotishim::copy_from_host(plus.data(), sizes, {}, aoti_torch_dtype_float32(), call.device),
          aotishim::copy_from_host(sums.data(), {sizes[1]}, {}, aoti_torch_dtype_float64(),
                                   call.device)};
}

std::vector<float> read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<float> v(20);
  f.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  if (!f) throw std::runtime_error(std::string("cannot read ") + path);
  return v;
}

void print_outputs(const std::vector<aotishim::HostOutput>& outputs) {
  for (size_t k = 0; k < outputs.size(); ++k) {
    const aotishim::HostOutput& o = outputs[k];
    std::printf("output%zu %s", k, o.dtype == aoti_torch_dtype_float64() ? "float64" : "float32");
    if (o.dtype == aoti_torch_dtype_float64()) {
      const double* d = reinterpret_cast<const double*>(o.data.data());
      for (size_t i = 0; i < o.data.size() / sizeof(double); ++i) std::printf(" %.17g", d[i]);
    } else {
      const float* d = reinterpret_cast<const float*>(o.data.data());
      for (size_t i = 0; i < o.data.size() / sizeof(float); ++i) std::printf(" %.9g", d[i]);
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  const std::vector<float> x = read_file(argv[2]), y = read_file(argv[3]);
  const int32_t f32 = aoti_torch_dtype_float32();
  const std::vector<aotishim::HostInput> inputs = {{x.data(), {4, 5}, {}, f32},
                                                   {y.data(), {4, 5}, {}, f32}};

  try {
    aotishim::Model::load(argv[1]);
    std::printf("unregistered: loaded\n");
  } catch (const aotishim::Error& e) {
    std::printf("unregistered: %s\n", e.what());
  }

  aotishim::register_custom_op("aotishim_test::scale_shift", scale_shift);
  aotishim::register_custom_op("aotishim_test::split_stats", split_stats);
  {
    auto model = aotishim::Model::load(argv[1]);
    print_outputs(model->run_host(inputs));
    std::printf("leaks %zu\n", model->close().size());
  }

  aotishim::register_custom_op("aotishim_test::split_stats", [](const aotishim::OpCall&)
                                   -> std::vector<AtenTensorHandle> {
    throw std::runtime_error("refusing to split");
  });
  auto failing = aotishim::Model::load(argv[1]);
  try {
    failing->run_host(inputs);
    std::printf("throwing: ran\n");
  } catch (const aotishim::Error& e) {
    std::printf("throwing: %s\n", e.what());
  }
  std::printf("leaks %zu\n", failing->close().size());
  std::printf("live %zu\n", aotishim::memory_stats().live_tensors);
  return 0;
}
