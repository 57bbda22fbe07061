// grid_sampler_3d: torch's checks and messages (grid_sampler_3d's own and
// the common ones of grid_sampler), output contiguous as torch's CPU kernel
// makes it.
#include "ops/grid_sampler.h"

#include <vector>

#include "core/device.h"
#include "core/error.h"
#include "core/handle_registry.h"
#include "ops/fallback_ops.h"

namespace aotishim {
namespace ops {

Op<void(const GridSampleArgs&)> grid_sampler_3d_kernel("grid_sampler_3d");

void grid_sampler_3d(const OpCall& call, AtenTensorHandle input_h, AtenTensorHandle grid_h,
                     int64_t interpolation_mode, int64_t padding_mode, int32_t align_corners,
                     AtenTensorHandle* ret0) {
  require_out(ret0, "ret0");
  auto input_p = call.tensor(input_h, "input");
  auto grid_p = call.tensor(grid_h, "grid");
  const Tensor &input = *input_p, &grid = *grid_p;
  AOTISHIM_CHECK(input.dtype == grid.dtype, "grid_sampler(): expected input and grid to have "
                 "same dtype, but input has ", dtype_name(input.dtype), " and grid has ",
                 dtype_name(grid.dtype));
  AOTISHIM_CHECK(input.dim() == 5 && input.dim() == grid.dim(), "grid_sampler(): expected 5D "
                 "input and grid with same number of dimensions, but got input with sizes ",
                 shape_string(input.sizes), " and grid with sizes ", shape_string(grid.sizes));
  AOTISHIM_CHECK(input.sizes[0] == grid.sizes[0], "grid_sampler(): expected grid and input to "
                 "have same batch size, but got input with sizes ", shape_string(input.sizes),
                 " and grid with sizes ", shape_string(grid.sizes));
  AOTISHIM_CHECK(grid.sizes[4] == 3, "grid_sampler(): expected grid to have size 3 in last "
                 "dimension, but got grid with sizes ", shape_string(grid.sizes));
  for (int64_t i = 2; i < 5; ++i)
    AOTISHIM_CHECK(input.sizes[i] > 0, "grid_sampler(): expected input to have non-empty "
                   "spatial dimensions, but input has sizes ", shape_string(input.sizes),
                   " with dimension ", i, " being empty");
  AOTISHIM_CHECK(interpolation_mode != 2, "grid_sampler(): bicubic interpolation only supports "
                 "4D input");
  AOTISHIM_CHECK(interpolation_mode == 0 || interpolation_mode == 1, call.op,
                 ": unknown interpolation mode ", interpolation_mode,
                 " (0: bilinear, 1: nearest)");
  AOTISHIM_CHECK(padding_mode >= 0 && padding_mode <= 2, call.op, ": unknown padding mode ",
                 padding_mode, " (0: zeros, 1: border, 2: reflection)");
  AOTISHIM_CHECK(is_floating(input.dtype), call.op, ": ", dtype_name(input.dtype),
                 " is not supported (the floating types are)");
  Device& device = input.device();
  Tensor out = make_empty(device, input.dtype,
                          {input.sizes[0], input.sizes[1], grid.sizes[1], grid.sizes[2],
                           grid.sizes[3]});
  if (out.numel() > 0) {
    GridSampleArgs a;
    a.input = input;
    a.grid = grid;
    a.out = out;
    a.interpolation = interpolation_mode;
    a.padding = padding_mode;
    a.align_corners = align_corners != 0;
    grid_sampler_3d_kernel.run(device, a);
  }
  *ret0 = register_tensor(out);
}

}  // namespace ops
}  // namespace aotishim
