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
  ctx.set_grad(0, ctx.emit("ReluGrad", {ctx.grad(0), ctx.input(0)}, {}, kInternalDomain));
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

// g * s for a constant s of g's type.
int32_t scaled(GradientContext& ctx, int32_t g, double s) { return ctx.emit("Mul", {g, ctx.scalar_like(s, g)}); }

// d(a^b) = g * b * a^(b-1) for a, g * a^b * ln(a) for b (which needs a > 0).
// The exponent may be an integer tensor: it is cast to a's type to scale,
// and gets no gradient of its own.
Status pow_grad(GradientContext& ctx) {
  const int32_t g = ctx.grad(0);
  const int32_t a = ctx.input(0);
  const int32_t b = ctx.input(1);
  if (ctx.needs_grad(0)) {
    const int32_t bf = ctx.emit("CastLike", {b, a});
    const int32_t power = ctx.emit("Pow", {a, ctx.emit("Sub", {bf, ctx.scalar_like(1.0, a)})});
    ctx.set_grad(0, ctx.sum_to(ctx.emit("Mul", {g, ctx.emit("Mul", {bf, power})}), a));
  }
  if (ctx.needs_grad(1) && ctx.is_float(b)) {
    const int32_t gy = ctx.emit("Mul", {g, ctx.output(0)});
    const int32_t db = ctx.emit("Mul", {gy, ctx.emit("Log", {a})});
    ctx.set_grad(1, ctx.sum_to(ctx.emit("CastLike", {db, b}), b));
  }
  return Status::ok();
}

Status sqrt_grad(GradientContext& ctx) {  // g / (2 y)
  ctx.set_grad(0, ctx.emit("Div", {ctx.grad(0), scaled(ctx, ctx.output(0), 2.0)}));
  return Status::ok();
}

Status reciprocal_grad(GradientContext& ctx) {  // -g y^2
  const int32_t y = ctx.output(0);
  ctx.set_grad(0, ctx.emit("Neg", {ctx.emit("Mul", {ctx.grad(0), ctx.emit("Mul", {y, y})})}));
  return Status::ok();
}

Status abs_grad(GradientContext& ctx) {  // g sign(x); 0 at x = 0
  ctx.set_grad(0, ctx.emit("Mul", {ctx.grad(0), ctx.emit("Sign", {ctx.input(0)})}));
  return Status::ok();
}

Status erf_grad(GradientContext& ctx) {  // g 2/sqrt(pi) exp(-x^2)
  const int32_t x = ctx.input(0);
  const int32_t e = ctx.emit("Exp", {ctx.emit("Neg", {ctx.emit("Mul", {x, x})})});
  ctx.set_grad(0, ctx.emit("Mul", {ctx.grad(0), scaled(ctx, e, 1.1283791670955126)}));
  return Status::ok();
}

// g where x >= 0 (the kernels treat x = 0 as the identity side), alpha g below.
Status leaky_relu_grad(GradientContext& ctx) {
  const int32_t x = ctx.input(0);
  const int32_t g = ctx.grad(0);
  const int32_t below = ctx.emit("Less", {x, ctx.scalar_like(0.0, x)});
  ctx.set_grad(0, ctx.emit("Where", {below, scaled(ctx, g, ctx.attr_float("alpha", 0.01f)), g}));
  return Status::ok();
}

// Below zero y = alpha (e^x - 1), so dy/dx = alpha e^x = y + alpha.
Status elu_grad(GradientContext& ctx) {
  const int32_t x = ctx.input(0);
  const int32_t g = ctx.grad(0);
  const int32_t y = ctx.output(0);
  const int32_t slope = ctx.emit("Add", {y, ctx.scalar_like(ctx.attr_float("alpha", 1.0f), y)});
  const int32_t below = ctx.emit("Less", {x, ctx.scalar_like(0.0, x)});
  ctx.set_grad(0, ctx.emit("Where", {below, ctx.emit("Mul", {g, slope}), g}));
  return Status::ok();
}

Status softplus_grad(GradientContext& ctx) {  // g sigmoid(x)
  ctx.set_grad(0, ctx.emit("Mul", {ctx.grad(0), ctx.emit("Sigmoid", {ctx.input(0)})}));
  return Status::ok();
}

// Exact: y = x Phi(x), dy/dx = Phi(x) + x phi(x), Phi(x) = (1 + erf(x/sqrt2))/2.
// Tanh: y = x (1 + t)/2 with t = tanh(k (x + c x^3)), so
// dy/dx = (1 + t)/2 + x (1 - t^2) k (1 + 3 c x^2) / 2.
Status gelu_grad(GradientContext& ctx) {
  const int32_t x = ctx.input(0);
  const int32_t g = ctx.grad(0);
  const int32_t x2 = ctx.emit("Mul", {x, x});
  const int32_t one = ctx.scalar_like(1.0, x);
  const int32_t half = ctx.scalar_like(0.5, x);
  int32_t slope;
  if (ctx.attr_string("approximate", "none") == "tanh") {
    constexpr double k = 0.7978845608028654;  // sqrt(2/pi)
    constexpr double c = 0.044715;
    const int32_t inner = ctx.emit("Mul", {x, ctx.emit("Add", {one, scaled(ctx, x2, c)})});
    const int32_t t = ctx.emit("Tanh", {scaled(ctx, inner, k)});
    const int32_t du = scaled(ctx, ctx.emit("Add", {one, scaled(ctx, x2, 3.0 * c)}), 0.5 * k);
    const int32_t dt = ctx.emit("Sub", {one, ctx.emit("Mul", {t, t})});
    slope = ctx.emit(
        "Add", {ctx.emit("Mul", {half, ctx.emit("Add", {one, t})}), ctx.emit("Mul", {x, ctx.emit("Mul", {dt, du})})});
  } else {
    const int32_t cdf =
        ctx.emit("Mul", {half, ctx.emit("Add", {one, ctx.emit("Erf", {scaled(ctx, x, 0.7071067811865476)})})});
    const int32_t pdf = scaled(ctx, ctx.emit("Exp", {scaled(ctx, x2, -0.5)}), 0.3989422804014327);  // 1/sqrt(2 pi)
    slope = ctx.emit("Add", {cdf, ctx.emit("Mul", {x, pdf})});
  }
  ctx.set_grad(0, ctx.emit("Mul", {g, slope}));
  return Status::ok();
}

// y is x, min or max element by element, each copied exactly, so comparing y
// with them says which one each element took. x wins where it equals y (so
// at the bounds x keeps the gradient); max where y is max and x was not
// taken (also when min > max, where every element is max); min elsewhere.
// Before opset 11 the bounds were attributes and get nothing.
Status clip_grad(GradientContext& ctx) {
  const int32_t g = ctx.grad(0);
  const int32_t x = ctx.input(0);
  const int32_t y = ctx.output(0);
  const int32_t lo = ctx.input(1);
  const int32_t hi = ctx.input(2);
  const int32_t zero = ctx.scalar_like(0.0, g);
  const int32_t took_x = ctx.emit("Equal", {x, y});
  ctx.set_grad(0, ctx.emit("Where", {took_x, g, zero}));
  const int32_t clipped = ctx.emit("Not", {took_x});
  int32_t took_hi = graph::kNoValue;
  if (hi != graph::kNoValue) took_hi = ctx.emit("And", {clipped, ctx.emit("Equal", {y, hi})});
  if (ctx.needs_grad(2)) ctx.set_grad(2, ctx.sum_to(ctx.emit("Where", {took_hi, g, zero}), hi));
  if (ctx.needs_grad(1)) {
    const int32_t took_lo = hi == graph::kNoValue ? clipped : ctx.emit("And", {clipped, ctx.emit("Not", {took_hi})});
    ctx.set_grad(1, ctx.sum_to(ctx.emit("Where", {took_lo, g, zero}), lo));
  }
  return Status::ok();
}

// Each element's gradient goes to the first input that holds the result, so
// ties are not counted twice.
Status max_min_grad(GradientContext& ctx) {
  const int32_t g = ctx.grad(0);
  const int32_t y = ctx.output(0);
  const int32_t zero = ctx.scalar_like(0.0, g);
  int32_t taken = graph::kNoValue;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    const int32_t x = ctx.input(i);
    int32_t mine = ctx.emit("Equal", {x, y});
    if (taken != graph::kNoValue) mine = ctx.emit("And", {mine, ctx.emit("Not", {taken})});
    if (ctx.needs_grad(i)) ctx.set_grad(i, ctx.sum_to(ctx.emit("Where", {mine, g, zero}), x));
    if (i + 1 < ctx.input_count()) taken = taken == graph::kNoValue ? mine : ctx.emit("Or", {taken, mine});
  }
  return Status::ok();
}

Status sum_grad(GradientContext& ctx) {
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    if (ctx.needs_grad(i)) ctx.set_grad(i, ctx.sum_to(ctx.grad(0), ctx.input(i)));
  }
  return Status::ok();
}

Status mean_grad(GradientContext& ctx) {
  const int32_t g = scaled(ctx, ctx.grad(0), 1.0 / static_cast<double>(ctx.input_count()));
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    if (ctx.needs_grad(i)) ctx.set_grad(i, ctx.sum_to(g, ctx.input(i)));
  }
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
ONYX_GRADIENT_RULE("", "Pow", pow_grad);
ONYX_GRADIENT_RULE("", "Sqrt", sqrt_grad);
ONYX_GRADIENT_RULE("", "Reciprocal", reciprocal_grad);
ONYX_GRADIENT_RULE("", "Abs", abs_grad);
ONYX_GRADIENT_RULE("", "Erf", erf_grad);
ONYX_GRADIENT_RULE("", "LeakyRelu", leaky_relu_grad);
ONYX_GRADIENT_RULE("", "Elu", elu_grad);
ONYX_GRADIENT_RULE("", "Softplus", softplus_grad);
ONYX_GRADIENT_RULE("", "Gelu", gelu_grad);
ONYX_GRADIENT_RULE("", "Clip", clip_grad);
ONYX_GRADIENT_RULE("", "Max", max_min_grad);
ONYX_GRADIENT_RULE("", "Min", max_min_grad);
ONYX_GRADIENT_RULE("", "Sum", sum_grad);
ONYX_GRADIENT_RULE("", "Mean", mean_grad);

}  // namespace
}  // namespace onyx::training
