// The random ops (ops/random.cpp): tensors filled from the process-wide
// generator (core/generator.h) with one distribution each.
#pragma once

#include <cstdint>

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

enum class RandomKind {
  Uniform,      // [a, b)
  Normal,       // mean a, standard deviation b
  Exponential,  // rate a
  Integer,      // low + [0, range) (range 0: all 2^64 values)
  Bernoulli,    // 1 with probability a, else 0; or with probability p[i] when p is set
  Permutation,  // out (1-D) a random permutation of 0..n-1
  Dropout,      // mask[i] = 1 with probability 1 - a; out = input * mask * b
};

// out is written in every element, whatever its layout (a view that repeats
// elements gets one of the values drawn for them). Complex outputs draw the
// real and imaginary parts separately (Normal: each with variance b^2 / 2,
// as torch's randn).
struct RandomArgs {
  RandomKind kind = RandomKind::Uniform;
  Tensor out;
  double a = 0.0, b = 1.0;
  int64_t low = 0;
  uint64_t range = 0;
  bool has_p = false;
  Tensor p;            // Bernoulli: probabilities broadcast to out's sizes
  Tensor input, mask;  // Dropout: mask is bool, out's sizes
};

namespace ops {
AOTISHIM_API extern Op<void(const RandomArgs&)> random_kernel;
}  // namespace ops

}  // namespace aotishim
