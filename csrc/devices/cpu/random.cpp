// The random ops on the host. Values are drawn in row-major order of the
// output (one op's draws consecutive in the generator's stream), then stored:
// uniform floats carry exactly the dtype's significant bits (rand never
// rounds up to 1), normals come from Box-Muller pairs, exponentials from
// -log(u) with u in (0, 1), integers without modulo bias, permutations by
// Fisher-Yates. Bernoulli with p of 0 or 1 draws nothing.
#include <cmath>
#include <numeric>
#include <vector>

#include "core/generator.h"
#include "devices/cpu/typed_elements.h"
#include "ops/random.h"

namespace aotishim {
namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

int significant_digits(DType t) {
  switch (t) {
    case DType::Float16: return 11;
    case DType::BFloat16: return 8;
    case DType::Float32: case DType::Complex64: return 24;
    default: return 53;
  }
}

// n standard normal values (Box-Muller; an odd count drops the last of a pair).
void standard_normals(RandomDraws& draws, double* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(draws.open_unit()));
    const double angle = kTwoPi * draws.unit();
    out[i] = radius * std::cos(angle);
    if (i + 1 < n) out[i + 1] = radius * std::sin(angle);
  }
}

// The real values of `count` draws of a.kind (Uniform, Normal, Exponential),
// for a dtype with `digits` significant bits; uniform values at or above b
// once rounded to the dtype are drawn again (`rounds` gives the dtype's value).
template <typename Round>
std::vector<double> real_values(const RandomArgs& a, int64_t count, int digits, double part_std,
                                const Round& rounds) {
  std::vector<double> v(static_cast<size_t>(count));
  RandomDraws draws;
  switch (a.kind) {
    case RandomKind::Uniform:
      for (double& x : v) {
        do {
          x = a.a + draws.unit(digits) * (a.b - a.a);
        } while (a.b > a.a && rounds(x) >= a.b);
      }
      break;
    case RandomKind::Normal:
      standard_normals(draws, v.data(), count);
      for (double& x : v) x = a.a + part_std * x;
      break;
    case RandomKind::Exponential:
      for (double& x : v) x = -std::log(draws.open_unit()) / a.a;
      break;
    default: fail("random: not a real-valued distribution");
  }
  return v;
}

template <typename E>
void store_packed(const Tensor& out, const std::vector<double>& values) {
  using V = typename E::value;
  auto* data = cpu::typed<typename E::storage>(out);
  size_t i = 0;
  cpu::for_each_element(out, [&](int64_t off, const std::vector<int64_t>&) {
    data[off] = E::store(static_cast<V>(values[i++]));
  });
}

template <typename Part>
void complex_fill(const RandomArgs& a) {
  const int64_t n = a.out.numel();
  const double part_std = a.b / std::sqrt(2.0);
  const auto values = real_values(a, 2 * n, significant_digits(a.out.dtype), part_std,
                                  [](double x) { return static_cast<double>(static_cast<Part>(x)); });
  Part* data = cpu::typed<Part>(a.out);
  size_t i = 0;
  cpu::for_each_element(a.out, [&](int64_t off, const std::vector<int64_t>&) {
    data[2 * off] = static_cast<Part>(values[i++]);
    data[2 * off + 1] = static_cast<Part>(values[i++]);
  });
}

template <typename E>
void typed_fill(const RandomArgs& a) {
  using S = typename E::storage;
  using V = typename E::value;
  const Tensor& out = a.out;
  const int64_t n = out.numel();
  switch (a.kind) {
    case RandomKind::Uniform:
    case RandomKind::Normal:
    case RandomKind::Exponential: {
      const auto rounds = [](double x) { return static_cast<double>(E::load(E::store(static_cast<V>(x)))); };
      return store_packed<E>(out, real_values(a, n, significant_digits(out.dtype), a.b, rounds));
    }
    case RandomKind::Integer: {
      S* data = cpu::typed<S>(out);
      RandomDraws draws;
      cpu::for_each_element(out, [&](int64_t off, const std::vector<int64_t>&) {
        // low + draw wraps in 64 bits: the result lies in [low, high).
        const auto value = static_cast<int64_t>(static_cast<uint64_t>(a.low) + draws.below(a.range));
        data[off] = E::store(static_cast<V>(value));
      });
      return;
    }
    case RandomKind::Bernoulli: {
      S* data = cpu::typed<S>(out);
      if (a.has_p) {
        const double* p = cpu::typed<double>(a.p);  // packed, row-major, float64
        for (int64_t i = 0; i < n; ++i)
          AOTISHIM_CHECK(p[i] >= 0.0 && p[i] <= 1.0, "bernoulli_: every p must be in [0, 1], got ",
                         p[i]);
        RandomDraws draws;
        int64_t i = 0;
        cpu::for_each_element(out, [&](int64_t off, const std::vector<int64_t>&) {
          data[off] = E::store(static_cast<V>(draws.unit() < p[i++] ? 1 : 0));
        });
        return;
      }
      if (a.a == 0.0 || a.a == 1.0) {
        const S value = E::store(static_cast<V>(a.a == 1.0 ? 1 : 0));
        cpu::for_each_element(out, [&](int64_t off, const std::vector<int64_t>&) { data[off] = value; });
        return;
      }
      RandomDraws draws;
      cpu::for_each_element(out, [&](int64_t off, const std::vector<int64_t>&) {
        data[off] = E::store(static_cast<V>(draws.unit() < a.a ? 1 : 0));
      });
      return;
    }
    case RandomKind::Permutation: {
      std::vector<int64_t> perm(static_cast<size_t>(n));
      std::iota(perm.begin(), perm.end(), int64_t{0});
      {
        RandomDraws draws;
        for (int64_t i = n - 1; i > 0; --i)
          std::swap(perm[i], perm[draws.below(static_cast<uint64_t>(i) + 1)]);
      }
      S* data = cpu::typed<S>(out);
      for (int64_t i = 0; i < n; ++i) data[i * out.strides[0]] = E::store(static_cast<V>(perm[i]));
      return;
    }
    case RandomKind::Dropout: {
      // out = input * mask * scale, in the dtype's computation type (float
      // for the half types), as torch's input.mul(mask).mul_(scale).
      std::vector<uint8_t> keep(static_cast<size_t>(n));
      {
        RandomDraws draws;
        const double p_keep = 1.0 - a.a;
        for (uint8_t& k : keep) k = draws.unit() < p_keep ? 1 : 0;
      }
      const S* in = cpu::typed<S>(a.input);
      S* data = cpu::typed<S>(out);
      uint8_t* mask = cpu::typed<uint8_t>(a.mask);
      const V scale = static_cast<V>(a.b);
      size_t i = 0;
      cpu::for_each_element(out, [&](int64_t off, const std::vector<int64_t>& index) {
        int64_t in_off = 0, mask_off = 0;
        for (size_t d = 0; d < index.size(); ++d) {
          in_off += index[d] * a.input.strides[d];
          mask_off += index[d] * a.mask.strides[d];
        }
        const uint8_t k = keep[i++];
        mask[mask_off] = k;
        data[off] = E::store(E::load(in[in_off]) * static_cast<V>(k) * scale);
      });
      return;
    }
  }
}

void host_random(const RandomArgs& a) {
  if (a.out.dtype == DType::Complex64) return complex_fill<float>(a);
  if (a.out.dtype == DType::Complex128) return complex_fill<double>(a);
  cpu::visit_dtype(a.out.dtype, [&](auto elem) { typed_fill<decltype(elem)>(a); });
}

}  // namespace

AOTISHIM_REGISTER_KERNEL(ops::random_kernel, DeviceType::CPU, host_random);

}  // namespace aotishim
