// Typed access to host tensor elements for the cpu kernels: one dispatch from
// a DType to an element type that knows how its stored form maps to the value
// kernels compute with (bfloat16 and float16 compute as float), and a walk
// over the 1-D lines of a tensor along one dimension.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/half.h"
#include "core/tensor.h"
#include "devices/cpu/parallel.h"

namespace aotishim {
namespace cpu {

template <typename S, typename V = S>
struct Plain {
  using storage = S;
  using value = V;
  static V load(S s) { return static_cast<V>(s); }
  static S store(V v) { return static_cast<S>(v); }
};
struct BFloat16Elem {
  using storage = uint16_t;
  using value = float;
  static float load(uint16_t s) { return bf16_to_float(s); }
  static uint16_t store(float v) { return float_to_bf16(v); }
};
struct Float16Elem {
  using storage = uint16_t;
  using value = float;
  static float load(uint16_t s) { return f16_to_float(s); }
  static uint16_t store(float v) { return float_to_f16(v); }
};

// Calls f(Elem{}) with the element type of `dtype` (bool as uint8 0/1).
template <typename F>
void visit_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Float32: return f(Plain<float>{});
    case DType::Float64: return f(Plain<double>{});
    case DType::BFloat16: return f(BFloat16Elem{});
    case DType::Float16: return f(Float16Elem{});
    case DType::Int64: return f(Plain<int64_t>{});
    case DType::Int32: return f(Plain<int32_t>{});
    case DType::Int16: return f(Plain<int16_t>{});
    case DType::Int8: return f(Plain<int8_t>{});
    case DType::UInt8: return f(Plain<uint8_t>{});
    case DType::Bool: return f(Plain<uint8_t>{});
    case DType::UInt16: return f(Plain<uint16_t>{});
    case DType::UInt32: return f(Plain<uint32_t>{});
    case DType::UInt64: return f(Plain<uint64_t>{});
    case DType::Complex64: case DType::Complex128: break;  // not ordered: no kernel here takes them
  }
  fail(str("unsupported dtype ", dtype_name(dtype), " for this CPU kernel"));
}

template <typename T>
T* typed(const Tensor& t) {
  return reinterpret_cast<T*>(t.data());
}

template <typename V>
bool is_nan(V v) {
  return v != v;
}

// Calls fn(element offset, multi-index) for every element of t in row-major
// order.
template <typename Fn>
void for_each_element(const Tensor& t, const Fn& fn) {
  const int64_t nd = t.dim(), numel = t.numel();
  std::vector<int64_t> index(static_cast<size_t>(nd), 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < numel; ++i) {
    fn(offset, index);
    for (int64_t d = nd - 1; d >= 0; --d) {  // odometer step
      offset += t.strides[d];
      if (++index[d] < t.sizes[d]) break;
      offset -= t.strides[d] * t.sizes[d];
      index[d] = 0;
    }
  }
}

// t's elements as float, packed row-major (any real dtype). A contiguous t
// is converted by plain loops in parallel (the compiler vectorises them),
// not walked element by element.
inline std::vector<float> packed_floats(const Tensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  visit_dtype(t.dtype, [&](auto elem) {
    using E = decltype(elem);
    const typename E::storage* data = typed<typename E::storage>(t);
    if (t.is_contiguous()) {
      parallel_for(t.numel(), 65536, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) out[i] = static_cast<float>(E::load(data[i]));
      });
      return;
    }
    size_t i = 0;
    for_each_element(t, [&](int64_t off, const std::vector<int64_t>&) {
      out[i++] = static_cast<float>(E::load(data[off]));
    });
  });
  return out;
}

// Writes packed row-major floats into t's elements, converted to t's dtype.
inline void store_floats(const Tensor& t, const float* values) {
  visit_dtype(t.dtype, [&](auto elem) {
    using E = decltype(elem);
    using V = typename E::value;
    typename E::storage* data = typed<typename E::storage>(t);
    if (t.is_contiguous()) {
      const int64_t n = t.numel();
      for (int64_t i = 0; i < n; ++i) data[i] = E::store(static_cast<V>(values[i]));
      return;
    }
    size_t i = 0;
    for_each_element(t, [&](int64_t off, const std::vector<int64_t>&) {
      data[off] = E::store(static_cast<V>(values[i++]));
    });
  });
}

// Calls body(offsets) for every line along `dim` of tensors whose sizes agree
// on all other dims (`sizes` gives them); offsets[i] is the element offset of
// the line's first element in tensor i (strides[i]). Lines run in parallel.
template <typename Body>
void for_each_line(const std::vector<int64_t>& sizes, int64_t dim,
                   std::initializer_list<const std::vector<int64_t>*> strides, int64_t line_cost,
                   const Body& body) {
  std::vector<int64_t> outer_sizes;
  std::vector<std::vector<int64_t>> outer_strides(strides.size());
  int64_t lines = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(sizes.size()); ++d) {
    if (d == dim) continue;
    outer_sizes.push_back(sizes[d]);
    lines *= sizes[d];
    size_t i = 0;
    for (const std::vector<int64_t>* s : strides) outer_strides[i++].push_back((*s)[d]);
  }
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(line_cost, 1));
  parallel_for(lines, grain, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> offsets(outer_strides.size());
    for (int64_t line = begin; line < end; ++line) {
      std::fill(offsets.begin(), offsets.end(), 0);
      int64_t rest = line;
      for (int64_t d = static_cast<int64_t>(outer_sizes.size()) - 1; d >= 0; --d) {
        const int64_t i = rest % outer_sizes[d];
        rest /= outer_sizes[d];
        for (size_t t = 0; t < offsets.size(); ++t) offsets[t] += i * outer_strides[t][d];
      }
      body(offsets);
    }
  });
}

}  // namespace cpu
}  // namespace aotishim
