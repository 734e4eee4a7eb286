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

// The gradient is shared evenly by the elements equal to the extreme (a
// subgradient; with no ties each output's gradient goes to its arg position).
Status reduce_max_min_grad(GradientContext& ctx) {
  const int32_t x = ctx.input(0);
  int32_t spread_g, spread_y;
  ONYX_RETURN_IF_ERROR(spread_back(ctx, ctx.grad(0), &spread_g));
  ONYX_RETURN_IF_ERROR(spread_back(ctx, ctx.output(0), &spread_y));
  const int32_t hit = ctx.emit("CastLike", {ctx.emit("Equal", {x, spread_y}), x});
  const int32_t axes = reduced_axes(ctx);
  std::vector<int32_t> count_inputs = {hit};
  if (axes != graph::kNoValue) count_inputs.push_back(axes);
  // With noop_with_empty_axes and no axes y is x: the count is one everywhere.
  const int32_t count =
      ctx.emit("ReduceSum", count_inputs,
               {graph::Attribute::make_int("keepdims", 1),
                graph::Attribute::make_int("noop_with_empty_axes", ctx.attr_int("noop_with_empty_axes", 0))});
  ctx.set_grad(0, ctx.emit("Div", {ctx.emit("Mul", {hit, spread_g}), count}));
  return Status::ok();
}

Status reduce_sum_square_grad(GradientContext& ctx) {  // 2 x g
  int32_t spread;
  ONYX_RETURN_IF_ERROR(spread_back(ctx, ctx.grad(0), &spread));
  const int32_t x = ctx.input(0);
  ctx.set_grad(0, ctx.emit("Mul", {ctx.emit("Mul", {x, ctx.scalar_like(2.0, x)}), spread}));
  return Status::ok();
}

Status reduce_l2_grad(GradientContext& ctx) {  // x g / y
  int32_t spread;
  ONYX_RETURN_IF_ERROR(spread_back(ctx, ctx.emit("Div", {ctx.grad(0), ctx.output(0)}), &spread));
  ctx.set_grad(0, ctx.emit("Mul", {ctx.input(0), spread}));
  return Status::ok();
}

Status reduce_log_sum_exp_grad(GradientContext& ctx) {  // g exp(x - y), the softmax over the reduced axes
  int32_t spread_g, spread_y;
  ONYX_RETURN_IF_ERROR(spread_back(ctx, ctx.grad(0), &spread_g));
  ONYX_RETURN_IF_ERROR(spread_back(ctx, ctx.output(0), &spread_y));
  const int32_t softmax = ctx.emit("Exp", {ctx.emit("Sub", {ctx.input(0), spread_y})});
  ctx.set_grad(0, ctx.emit("Mul", {spread_g, softmax}));
  return Status::ok();
}

ONYX_GRADIENT_RULE("", "ReduceSum", reduce_sum_grad);
ONYX_GRADIENT_RULE("", "ReduceMean", reduce_mean_grad);
ONYX_GRADIENT_RULE("", "ReduceMax", reduce_max_min_grad);
ONYX_GRADIENT_RULE("", "ReduceMin", reduce_max_min_grad);
ONYX_GRADIENT_RULE("", "ReduceSumSquare", reduce_sum_square_grad);
ONYX_GRADIENT_RULE("", "ReduceL2", reduce_l2_grad);
ONYX_GRADIENT_RULE("", "ReduceLogSumExp", reduce_log_sum_exp_grad);

}  // namespace
}  // namespace onyx::training
