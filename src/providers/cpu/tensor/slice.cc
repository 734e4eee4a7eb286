// Slice: v1 takes starts/ends/axes as attributes, v10+ as inputs with steps.
// The result is one strided copy (source strides times steps, so negative
// steps walk backwards); unit-step inner dims move with memcpy. slice_box
// (slice.h) works out which elements are read, for SliceGrad too.
#include "providers/cpu/tensor/slice.h"

#include <algorithm>
#include <limits>

#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {

Result<SliceBox> slice_box(const Shape& data, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                           std::vector<int64_t> axes, std::vector<int64_t> steps, const std::string& label) {
  const auto rank = static_cast<int64_t>(data.size());
  if (starts.size() != ends.size()) {
    return invalid_argument(label, ": starts has ", starts.size(), " entries but ends has ", ends.size());
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    return invalid_argument(label, ": starts, ends, axes and steps have ", starts.size(), ", ", ends.size(), ", ",
                            axes.size(), " and ", steps.size(), " entries, expected equal counts");
  }
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
  SliceBox box;
  box.shape = data;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    ONYX_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axes[i], rank, label, "axes entry"));
    const size_t a = static_cast<size_t>(axis);
    if (seen[a]) return invalid_argument(label, ": axes ", shape_to_string(axes), " repeat axis ", axis);
    seen[a] = true;
    const int64_t dim = data[a];
    const int64_t st = steps[i];
    if (st == 0) return invalid_argument(label, ": steps entry ", i, " is 0");
    int64_t start = starts[i], end = ends[i];
    // Negative positions count from the end; then clamp per the spec (for
    // negative steps the valid range is [-1, dim-1]).
    if (start < 0) start = start < std::numeric_limits<int64_t>::min() + dim ? -1 : start + dim;
    if (end < 0) end = end < std::numeric_limits<int64_t>::min() + dim ? -1 : end + dim;
    int64_t count;
    if (st > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? 1 + (end - start - 1) / st : 0;
    } else {
      start = std::clamp<int64_t>(start, -1, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      // -(st) may overflow for INT64_MIN; any such step takes at most one element.
      const int64_t neg = st == std::numeric_limits<int64_t>::min() ? std::numeric_limits<int64_t>::max() : -st;
      count = start > end ? 1 + (start - end - 1) / neg : 0;
    }
    begin[a] = count > 0 ? start : 0;
    step[a] = st;
    box.shape[a] = count;
  }
  const std::vector<int64_t> in_strides = contiguous_strides(data);
  box.strides.resize(static_cast<size_t>(rank));
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    box.offset += begin[d] * in_strides[d];
    // A dim of size 1 is never stepped; avoid overflowing the stride product.
    box.strides[d] = box.shape[d] > 1 ? step[d] * in_strides[d] : 0;
  }
  return box;
}

Result<SliceBox> slice_box_from_inputs(const KernelContext& ctx, size_t first, const Shape& data) {
  ONYX_ASSIGN_OR_RETURN(const Tensor* s, required_input(ctx, first, "starts"));
  ONYX_ASSIGN_OR_RETURN(const Tensor* e, required_input(ctx, first + 1, "ends"));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> starts, read_ints(*s, ctx.label(), "starts"));
  ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> ends, read_ints(*e, ctx.label(), "ends"));
  std::vector<int64_t> axes, steps;
  if (const Tensor* a = ctx.input_tensor(first + 2)) {
    ONYX_ASSIGN_OR_RETURN(axes, read_ints(*a, ctx.label(), "axes"));
  }
  if (const Tensor* st = ctx.input_tensor(first + 3)) {
    ONYX_ASSIGN_OR_RETURN(steps, read_ints(*st, ctx.label(), "steps"));
  }
  return slice_box(data, starts, ends, std::move(axes), std::move(steps), ctx.label());
}

namespace {

class SliceKernel final : public Kernel {
 public:
  explicit SliceKernel(const KernelInfo& info)
      : from_inputs_(info.version() >= 10),
        attr_starts_(info.attr_ints("starts")),
        attr_ends_(info.attr_ints("ends")),
        attr_axes_(info.attr_ints("axes")) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "data"));
    SliceBox box;
    if (from_inputs_) {
      ONYX_ASSIGN_OR_RETURN(box, slice_box_from_inputs(ctx, 1, data->shape()));
    } else {
      ONYX_ASSIGN_OR_RETURN(box, slice_box(data->shape(), attr_starts_, attr_ends_, attr_axes_, {}, ctx.label()));
    }
    Tensor& out = ctx.allocate_output(0, data->dtype(), box.shape);
    if (out.size() == 0) return Status::ok();
    strided_copy(data->dtype(), out.raw_data(), contiguous_strides(box.shape),
                 element_at(data->raw_data(), data->dtype(), box.offset), box.strides, box.shape, ctx.thread_pool());
    return Status::ok();
  }

 private:
  bool from_inputs_;
  std::vector<int64_t> attr_starts_, attr_ends_, attr_axes_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "Slice", 1, 9, types::all(), SliceKernel);
ONYX_REGISTER_CPU_KERNEL("", "Slice", 10, kLatestVersion, types::all(), SliceKernel);

}  // namespace onyx::cpu
