// Expand (numpy broadcast to a shape) and Tile (repeat along each axis): both
// are one strided copy whose source strides repeat elements (stride 0) or
// whole tensor extents.
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class ExpandKernel final : public Kernel {
 public:
  explicit ExpandKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "input"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* shape_t, required_input(ctx, 1, "shape"));
    if (shape_t->rank() != 1) {
      return invalid_argument(ctx.label(), ": input shape has rank ", shape_t->rank(), ", expected 1");
    }
    ONYX_ASSIGN_OR_RETURN(auto shape, read_ints(*shape_t, ctx.label(), "shape"));
    const size_t rank = std::max(shape.size(), static_cast<size_t>(data->rank()));
    Shape out_shape(rank);
    std::vector<int64_t> src_strides(rank, 0);
    const std::vector<int64_t> in_strides = contiguous_strides(data->shape());
    for (size_t i = 0; i < rank; ++i) {
      // Right-aligned: position i of the output matches dim i - (rank - n) of each side.
      const int64_t in_pos = static_cast<int64_t>(i) - static_cast<int64_t>(rank - data->shape().size());
      const int64_t sh_pos = static_cast<int64_t>(i) - static_cast<int64_t>(rank - shape.size());
      const int64_t a = in_pos >= 0 ? data->dim(in_pos) : 1;
      const int64_t b = sh_pos >= 0 ? shape[static_cast<size_t>(sh_pos)] : 1;
      if (b < 0) return invalid_argument(ctx.label(), ": shape ", shape_to_string(shape), " has a negative dim");
      if (a != b && a != 1 && b != 1) {
        return invalid_argument(ctx.label(), ": cannot broadcast input ", data->describe(), " to shape ",
                                shape_to_string(shape), " (dim ", a, " vs ", b, ")");
      }
      out_shape[i] = a == 1 ? b : a;
      src_strides[i] = (in_pos >= 0 && a != 1) ? in_strides[static_cast<size_t>(in_pos)] : 0;
    }
    Tensor& out = ctx.allocate_output(0, data->dtype(), out_shape);
    strided_copy(data->dtype(), out.raw_data(), contiguous_strides(out_shape), data->raw_data(), src_strides, out_shape,
                 ctx.thread_pool());
    return Status::ok();
  }
};

// Tile v1: inputs (input, tiles, axis) repeat one axis; v6+: repeats per axis.
class TileKernel final : public Kernel {
 public:
  explicit TileKernel(const KernelInfo& info) : v1_(info.version() < 6) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "input"));
    const int64_t rank = data->rank();
    std::vector<int64_t> repeats;
    if (v1_) {
      ONYX_ASSIGN_OR_RETURN(const Tensor* tiles_t, required_input(ctx, 1, "tiles"));
      ONYX_ASSIGN_OR_RETURN(const Tensor* axis_t, required_input(ctx, 2, "axis"));
      ONYX_ASSIGN_OR_RETURN(auto tiles, read_ints(*tiles_t, ctx.label(), "tiles"));
      ONYX_ASSIGN_OR_RETURN(auto axes, read_ints(*axis_t, ctx.label(), "axis"));
      if (tiles.size() != 1 || axes.size() != 1) {
        return invalid_argument(ctx.label(), ": tiles and axis must hold one value each");
      }
      ONYX_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axes[0], rank, ctx.label()));
      repeats.assign(static_cast<size_t>(rank), 1);
      repeats[static_cast<size_t>(axis)] = tiles[0];
    } else {
      ONYX_ASSIGN_OR_RETURN(const Tensor* repeats_t, required_input(ctx, 1, "repeats"));
      ONYX_ASSIGN_OR_RETURN(repeats, read_ints(*repeats_t, ctx.label(), "repeats"));
    }
    if (static_cast<int64_t>(repeats.size()) != rank) {
      return invalid_argument(ctx.label(), ": repeats has ", repeats.size(), " entries, expected ", rank,
                              " (the rank of input ", data->describe(), ")");
    }
    Shape out_shape(static_cast<size_t>(rank));
    for (size_t i = 0; i < repeats.size(); ++i) {
      if (repeats[i] < 0) return invalid_argument(ctx.label(), ": repeats ", shape_to_string(repeats), " has a negative entry");
      // Huge repeats must be an error, not a signed overflow.
      if (__builtin_mul_overflow(data->shape()[i], repeats[i], &out_shape[i])) {
        return invalid_argument(ctx.label(), ": repeats ", shape_to_string(repeats), " on input ", data->describe(),
                                " give an output too large to index");
      }
    }
    Tensor& out = ctx.allocate_output(0, data->dtype(), out_shape);
    // View the output as [r0, d0, r1, d1, ...]: the repeat dims step over a
    // whole input extent in the output and restart the input (stride 0).
    const std::vector<int64_t> in_strides = contiguous_strides(data->shape());
    const std::vector<int64_t> out_strides = contiguous_strides(out_shape);
    Shape box;
    std::vector<int64_t> dst_strides, src_strides;
    for (size_t i = 0; i < repeats.size(); ++i) {
      box.push_back(repeats[i]);
      dst_strides.push_back(data->shape()[i] * out_strides[i]);
      src_strides.push_back(0);
      box.push_back(data->shape()[i]);
      dst_strides.push_back(out_strides[i]);
      src_strides.push_back(in_strides[i]);
    }
    strided_copy(data->dtype(), out.raw_data(), dst_strides, data->raw_data(), src_strides, box, ctx.thread_pool());
    return Status::ok();
  }

 private:
  bool v1_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "Expand", 8, kLatestVersion, types::all(), ExpandKernel);
ONYX_REGISTER_CPU_KERNEL("", "Tile", 1, 5, types::all(), TileKernel);
ONYX_REGISTER_CPU_KERNEL("", "Tile", 6, kLatestVersion, types::all(), TileKernel);

}  // namespace onyx::cpu
