// Gradient rules of element-wise arithmetic and activations.
#include "training/gradient_rules.h"

namespace onyx::training {
namespace {

Status add_grad(GradientContext& ctx) {
  ctx.set_grad(0, ctx.sum_to(ctx.grad(0), ctx.input(0)));
  ctx.set_grad(1, ctx.sum_to(ctx.grad(0), ctx.input(1)));
  return Status::ok();
}

Status sub_grad(GradientContext& ctx) {
  ctx.set_grad(0, ctx.sum_to(ctx.grad(0), ctx.input(0)));
  if (ctx.needs_grad(1)) ctx.set_grad(1, ctx.sum_to(ctx.emit("Neg", {ctx.grad(0)}), ctx.input(1)));
  return Status::ok();
}

Status mul_grad(GradientContext& ctx) {
  const int32_t g = ctx.grad(0);
  if (ctx.needs_grad(0)) ctx.set_grad(0, ctx.sum_to(ctx.emit("Mul", {g, ctx.input(1)}), ctx.input(0)));
  if (ctx.needs_grad(1)) ctx.set_grad(1, ctx.sum_to(ctx.emit("Mul", {g, ctx.input(0)}), ctx.input(1)));
  return Status::ok();
}

Status div_grad(GradientContext& ctx) {  // d(a/b) = g/b, -g*a/b^2
  const int32_t g = ctx.grad(0);
  const int32_t a = ctx.input(0);
  const int32_t b = ctx.input(1);
  if (ctx.needs_grad(0)) ctx.set_grad(0, ctx.sum_to(ctx.emit("Div", {g, b}), a));
  if (ctx.needs_grad(1)) {
    const int32_t q = ctx.emit("Div", {ctx.emit("Mul", {g, a}), ctx.emit("Mul", {b, b})});
    ctx.set_grad(1, ctx.sum_to(ctx.emit("Neg", {q}), b));
  }
  return Status::ok();
}

Status neg_grad(GradientContext& ctx) {
  ctx.set_grad(0, ctx.emit("Neg", {ctx.grad(0)}));
  return Status::ok();
}

Status identity_grad(GradientContext& ctx) {
  ctx.set_grad(0, ctx.grad(0));
  return Status::ok();
}

Status relu_grad(GradientContext& ctx) {  // g where x > 0
  const int32_t x = ctx.input(0);
  const int32_t zero = ctx.scalar_like(0.0, x);
  ctx.set_grad(0, ctx.emit("Where", {ctx.emit("Greater", {x, zero}), ctx.grad(0), zero}));
  return Status::ok();
}

Status exp_grad(GradientContext& ctx) {
  ctx.set_grad(0, ctx.emit("Mul", {ctx.grad(0), ctx.output(0)}));
  return Status::ok();
}

Status log_grad(GradientContext& ctx) {
  ctx.set_grad(0, ctx.emit("Div", {ctx.grad(0), ctx.input(0)}));
  return Status::ok();
}

Status tanh_grad(GradientContext& ctx) {  // g * (1 - y^2)
  const int32_t g = ctx.grad(0);
  const int32_t y = ctx.output(0);
  ctx.set_grad(0, ctx.emit("Sub", {g, ctx.emit("Mul", {g, ctx.emit("Mul", {y, y})})}));
  return Status::ok();
}

Status sigmoid_grad(GradientContext& ctx) {  // g * y * (1 - y)
  const int32_t y = ctx.output(0);
  const int32_t gy = ctx.emit("Mul", {ctx.grad(0), y});
  ctx.set_grad(0, ctx.emit("Sub", {gy, ctx.emit("Mul", {gy, y})}));
  return Status::ok();
}

ONYX_GRADIENT_RULE("", "Add", add_grad);
ONYX_GRADIENT_RULE("", "Sub", sub_grad);
ONYX_GRADIENT_RULE("", "Mul", mul_grad);
ONYX_GRADIENT_RULE("", "Div", div_grad);
ONYX_GRADIENT_RULE("", "Neg", neg_grad);
ONYX_GRADIENT_RULE("", "Identity", identity_grad);
ONYX_GRADIENT_RULE("", "Relu", relu_grad);
ONYX_GRADIENT_RULE("", "Exp", exp_grad);
ONYX_GRADIENT_RULE("", "Log", log_grad);
ONYX_GRADIENT_RULE("", "Tanh", tanh_grad);
ONYX_GRADIENT_RULE("", "Sigmoid", sigmoid_grad);

}  // namespace
}  // namespace onyx::training
