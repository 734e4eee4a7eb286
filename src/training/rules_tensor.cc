// Gradient rules of data movement: reshapes, transposes, concatenation and
// splitting, slicing, gathering, padding, tiling, Where, Expand and Cast. Each
// routes the gradient back to the elements it came from; elements that were
// read several times (Gather with repeated indices, Tile, Expand) sum theirs.
#include <algorithm>
#include <numeric>

#include "training/gradient_rules.h"

namespace onyx::training {
namespace {

using graph::Attribute;
using graph::kNoValue;

// An axis attribute mapped into [0, rank), or an error when the rank is
// unknown (shape inference gave none) or the axis is out of range.
Status known_axis(GradientContext& ctx, int32_t value, int64_t axis, int64_t* out) {
  const int64_t rank = ctx.rank(value);
  if (rank < 0) return not_implemented("Gradient: ", ctx.label(), " needs an input of known rank");
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) {
    return invalid_model(ctx.label(), ": axis ", axis, " is out of range for rank ", rank);
  }
  *out = axis < 0 ? axis + rank : axis;
  return Status::ok();
}

// An operand's length along an axis, as a 1-element int64 tensor.
int32_t dim_of(GradientContext& ctx, int32_t value, int64_t axis) {
  return ctx.emit("Shape", {value}, {Attribute::make_int("start", axis), Attribute::make_int("end", axis + 1)});
}

// Reshape, Flatten, Squeeze and Unsqueeze only relabel the elements: the
// gradient takes the input's shape back. allowzero keeps a zero dim zero.
Status reshape_grad(GradientContext& ctx) {
  ctx.set_grad(0,
               ctx.emit("Reshape", {ctx.grad(0), ctx.shape_of(ctx.input(0))}, {Attribute::make_int("allowzero", 1)}));
  return Status::ok();
}

// The inverse permutation; without perm the axes were reversed, which is its
// own inverse.
Status transpose_grad(GradientContext& ctx) {
  const std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty()) {
    ctx.set_grad(0, ctx.emit("Transpose", {ctx.grad(0)}));
    return Status::ok();
  }
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    const int64_t p = perm[i] < 0 ? perm[i] + static_cast<int64_t>(perm.size()) : perm[i];
    if (p < 0 || p >= static_cast<int64_t>(perm.size())) return invalid_model(ctx.label(), ": bad perm");
    inverse[static_cast<size_t>(p)] = static_cast<int64_t>(i);
  }
  ctx.set_grad(0, ctx.emit("Transpose", {ctx.grad(0)}, {Attribute::make_ints("perm", inverse)}));
  return Status::ok();
}

// The gradient split back into the inputs' lengths along the axis.
Status concat_grad(GradientContext& ctx) {
  const size_t n = ctx.input_count();
  int64_t axis;
  ONYX_RETURN_IF_ERROR(known_axis(ctx, ctx.input(0), ctx.attr_int("axis", 0), &axis));
  std::vector<int32_t> lengths;
  for (size_t i = 0; i < n; ++i) lengths.push_back(dim_of(ctx, ctx.input(i), axis));
  const int32_t split = ctx.emit("Concat", lengths, {Attribute::make_int("axis", 0)});
  const std::vector<int32_t> parts = ctx.emit_n("Split", {ctx.grad(0), split}, n, {Attribute::make_int("axis", axis)});
  for (size_t i = 0; i < n; ++i) {
    if (ctx.needs_grad(i)) ctx.set_grad(i, parts[i]);
  }
  return Status::ok();
}

// The outputs' gradients concatenated again, whichever way the split was
// given (input, attribute or num_outputs); an output no path uses counts as
// zeros.
Status split_grad(GradientContext& ctx) {
  std::vector<int32_t> parts;
  for (size_t o = 0; o < ctx.node().outputs.size(); ++o) {
    const int32_t g = ctx.grad(o);
    parts.push_back(g != kNoValue ? g : ctx.fill_like(ctx.output(o), 0.0f));
  }
  ctx.set_grad(0, ctx.emit("Concat", parts, {Attribute::make_int("axis", ctx.attr_int("axis", 0))}));
  return Status::ok();
}

// Zeros of the input's shape with the gradient written back where Slice read
// (SliceGrad, src/providers/cpu/training/slice_grad.cc). Before opset 10
// starts, ends and axes were attributes.
Status slice_grad(GradientContext& ctx) {
  std::vector<int32_t> inputs = {ctx.grad(0), ctx.shape_of(ctx.input(0))};
  if (ctx.attribute("starts") != nullptr) {
    inputs.push_back(ctx.ints(ctx.attr_ints("starts")));
    inputs.push_back(ctx.ints(ctx.attr_ints("ends")));
    if (ctx.attribute("axes") != nullptr) inputs.push_back(ctx.ints(ctx.attr_ints("axes")));
  } else {
    for (size_t i = 1; i < 5; ++i) inputs.push_back(ctx.input(i));
  }
  while (inputs.back() == kNoValue) inputs.pop_back();
  ctx.set_grad(0, ctx.emit("SliceGrad", inputs, {}, kInternalDomain));
  return Status::ok();
}

// Zeros of x's shape with the gradient added at the gathered positions
// (ScatterElements with reduction add, so repeated indices accumulate; it
// takes negative indices as Gather does). The indices' axes, which replace
// the gathered axis in y, are flattened into one so that the indices can be
// broadcast along the other axes of x.
Status gather_grad(GradientContext& ctx) {
  const int32_t x = ctx.input(0);
  int64_t axis;
  ONYX_RETURN_IF_ERROR(known_axis(ctx, x, ctx.attr_int("axis", 0), &axis));
  const int64_t rank = ctx.rank(x);
  const int32_t before = ctx.emit("Shape", {x}, {Attribute::make_int("end", axis)});
  const int32_t after = ctx.emit("Shape", {x}, {Attribute::make_int("start", axis + 1)});
  const int32_t g_shape = ctx.emit("Concat", {before, ctx.ints({-1}), after}, {Attribute::make_int("axis", 0)});
  const int32_t g = ctx.emit("Reshape", {ctx.grad(0), g_shape});
  std::vector<int64_t> index_shape(static_cast<size_t>(rank), 1);
  index_shape[static_cast<size_t>(axis)] = -1;
  const int32_t index = ctx.emit("Reshape", {ctx.input(1), ctx.ints(index_shape)});
  const int32_t indices = ctx.emit("Expand", {index, ctx.shape_of(g)});
  ctx.set_grad(0, ctx.emit("ScatterElements", {ctx.fill_like(x, 0.0f), indices, g},
                           {Attribute::make_int("axis", axis), Attribute::make_string("reduction", "add")}));
  return Status::ok();
}

Status gather_elements_grad(GradientContext& ctx) {
  const int32_t x = ctx.input(0);
  ctx.set_grad(
      0, ctx.emit("ScatterElements", {ctx.fill_like(x, 0.0f), ctx.input(1), ctx.grad(0)},
                  {Attribute::make_int("axis", ctx.attr_int("axis", 0)), Attribute::make_string("reduction", "add")}));
  return Status::ok();
}

// The condition gets none; each branch gets the gradient where it was chosen.
Status where_grad(GradientContext& ctx) {
  const int32_t g = ctx.grad(0);
  const int32_t c = ctx.input(0);
  const int32_t zero = ctx.scalar_like(0.0, g);
  if (ctx.needs_grad(1)) ctx.set_grad(1, ctx.sum_to(ctx.emit("Where", {c, g, zero}), ctx.input(1)));
  if (ctx.needs_grad(2)) ctx.set_grad(2, ctx.sum_to(ctx.emit("Where", {c, zero, g}), ctx.input(2)));
  return Status::ok();
}

Status expand_grad(GradientContext& ctx) {
  ctx.set_grad(0, ctx.sum_to(ctx.grad(0), ctx.input(0)));
  return Status::ok();
}

// The gradient cast back to the input's type; a cast from or to a
// non-float type passes no gradient (its result is piecewise constant).
Status cast_grad(GradientContext& ctx) {
  const int32_t x = ctx.input(0);
  if (!ctx.is_float(x) || !ctx.is_float(ctx.node().outputs[0])) return Status::ok();
  const auto to = static_cast<int64_t>(ctx.info(x).type.elem_type);
  ctx.set_grad(0, ctx.emit("Cast", {ctx.grad(0)}, {Attribute::make_int("to", to)}));
  return Status::ok();
}

// y's axis d holds repeats[d] copies of x's: the gradient, reshaped to
// (repeats[0], x[0], repeats[1], x[1], ...), is summed over the repeat axes.
Status tile_grad(GradientContext& ctx) {
  const int32_t x = ctx.input(0);
  const int64_t rank = ctx.rank(x);
  if (rank < 0) return not_implemented("Gradient: ", ctx.label(), " needs an input of known rank");
  if (ctx.input_count() != 2) return not_implemented("Gradient: ", ctx.label(), ": Tile before opset 6");
  const int32_t axes = ctx.ints({1});
  const int32_t repeats = ctx.emit("Unsqueeze", {ctx.emit("CastLike", {ctx.input(1), axes}), axes});
  const int32_t dims = ctx.emit("Unsqueeze", {ctx.shape_of(x), axes});
  const int32_t pairs = ctx.emit("Concat", {repeats, dims}, {Attribute::make_int("axis", 1)});
  const int32_t shape = ctx.emit("Reshape", {pairs, ctx.ints({-1})});
  std::vector<int64_t> repeat_axes;
  for (int64_t d = 0; d < rank; ++d) repeat_axes.push_back(2 * d);
  const int32_t g = ctx.emit("Reshape", {ctx.grad(0), shape});
  ctx.set_grad(0, ctx.emit("ReduceSum", {g, ctx.ints(repeat_axes)}, {Attribute::make_int("keepdims", 0)}));
  return Status::ok();
}

// Constant padding: the gradient padded by the negated pads, which crops
// what was padded and restores, as zeros, what negative pads cropped.
// Before opset 11 pads were an attribute (`paddings` in opset 1).
Status pad_grad(GradientContext& ctx) {
  if (ctx.attr_string("mode", "constant") != "constant") {
    return not_implemented("Gradient: ", ctx.label(), ": Pad mode '", ctx.attr_string("mode", ""),
                           "' has no gradient rule (only constant)");
  }
  int32_t pads = ctx.input(1);
  for (const char* name : {"pads", "paddings"}) {
    if (ctx.attribute(name) != nullptr) pads = ctx.ints(ctx.attr_ints(name));
  }
  std::vector<int32_t> inputs = {ctx.grad(0), ctx.emit("Neg", {pads})};
  if (ctx.input(3) != kNoValue) inputs.insert(inputs.end(), {kNoValue, ctx.input(3)});
  ctx.set_grad(0, ctx.emit("Pad", inputs));
  return Status::ok();
}

ONYX_GRADIENT_RULE("", "Reshape", reshape_grad);
ONYX_GRADIENT_RULE("", "Flatten", reshape_grad);
ONYX_GRADIENT_RULE("", "Squeeze", reshape_grad);
ONYX_GRADIENT_RULE("", "Unsqueeze", reshape_grad);
ONYX_GRADIENT_RULE("", "Transpose", transpose_grad);
ONYX_GRADIENT_RULE("", "Concat", concat_grad);
ONYX_GRADIENT_RULE("", "Split", split_grad);
ONYX_GRADIENT_RULE("", "Slice", slice_grad);
ONYX_GRADIENT_RULE("", "Gather", gather_grad);
ONYX_GRADIENT_RULE("", "GatherElements", gather_elements_grad);
ONYX_GRADIENT_RULE("", "Where", where_grad);
ONYX_GRADIENT_RULE("", "Expand", expand_grad);
ONYX_GRADIENT_RULE("", "Cast", cast_grad);
ONYX_GRADIENT_RULE("", "Tile", tile_grad);
ONYX_GRADIENT_RULE("", "Pad", pad_grad);

}  // namespace
}  // namespace onyx::training
