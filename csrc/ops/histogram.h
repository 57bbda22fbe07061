// histogram.bin_ct and _histogramdd_from_bin_cts (ops/histogram.cpp): a
// histogram of self's rows over D dims with equal bins per dim.
#pragma once

#include <vector>

#include "aotishim/export.h"
#include "core/tensor.h"
#include "ops/op.h"

namespace aotishim {

// self holds points of D = bins.size() coordinates, read in row-major order
// (D consecutive elements a point); weight (optional: no storage when absent)
// one value per point, read in row-major order too. Per dim d the outer
// edges are range[2d], range[2d + 1] when range is given, else the points'
// smallest and largest coordinate (0 and 1 without points); equal edges are
// widened by 0.5 each way; edges that are not finite or out of order are an
// error. edges[d] (bins[d] + 1, contiguous, self's dtype) are torch's
// linspace between them; a point counts (or adds its weight) in the bin of
// each coordinate (the last bin includes its right edge), and points with a
// coordinate outside the edges or NaN are left out. density divides by the
// total and each bin's widths. hist is contiguous with sizes bins.
struct HistogramArgs {
  Tensor self, weight, hist;
  std::vector<Tensor> edges;
  std::vector<int64_t> bins;
  std::vector<double> range;  // empty, or two per dim
  bool density = false;
};

namespace ops {
AOTISHIM_API extern Op<void(const HistogramArgs&)> histogram_kernel;
}  // namespace ops

}  // namespace aotishim
