// Gradient rules of reductions.
#include "training/gradient_rules.h"

namespace onyx::training {
namespace {

// The reduced axes as a value (an int64 1-D tensor), or kNoValue when every
// axis is reduced. Before opset 13 (18 for most) they were an attribute.
int32_t reduced_axes(GradientContext& ctx) {
  if (const graph::Attribute* axes = ctx.attribute("axes")) return ctx.ints(axes->ints);
  return ctx.input(1);
}

// The gradient of a reduction's output spread back over its input's shape:
// the reduced axes restored (keepdims=0) and broadcast.
Status spread_back(GradientContext& ctx, int32_t g, int32_t* spread) {
  const int32_t x = ctx.input(0);
  const int32_t axes = reduced_axes(ctx);
  if (axes == graph::kNoValue && ctx.attr_int("noop_with_empty_axes", 0) != 0) {
    *spread = g;
    return Status::ok();
  }
  if (ctx.attr_int("keepdims", 1) == 0 && axes != graph::kNoValue) g = ctx.emit("Unsqueeze", {g, axes});
  *spread = ctx.emit("Expand", {g, ctx.shape_of(x)});
  return Status::ok();
}

Status reduce_sum_grad(GradientContext& ctx) {
  int32_t spread;
  ONYX_RETURN_IF_ERROR(spread_back(ctx, ctx.grad(0), &spread));
  ctx.set_grad(0, spread);
  return Status::ok();
}

// dx = g / n, n the number of elements each output averages.
Status reduce_mean_grad(GradientContext& ctx) {
  int32_t spread;
  ONYX_RETURN_IF_ERROR(spread_back(ctx, ctx.grad(0), &spread));
  const int32_t x = ctx.input(0);
  const int32_t in_size = ctx.emit("Size", {x});
  const int32_t out_size = ctx.emit("Size", {ctx.output(0)});
  const int32_t n = ctx.emit("CastLike", {ctx.emit("Div", {in_size, out_size}), x});
  ctx.set_grad(0, ctx.emit("Div", {spread, n}));
  return Status::ok();
}

ONYX_GRADIENT_RULE("", "ReduceSum", reduce_sum_grad);
ONYX_GRADIENT_RULE("", "ReduceMean", reduce_mean_grad);

}  // namespace
}  // namespace onyx::training
