// Gradient rules of neural-network ops: softmax, convolutions, pooling,
// normalizations, dropout and attention. Convolution and windowed pooling
// use kernels of src/providers/cpu/training/; the rest is written with
// ai.onnx ops.
#include <numeric>

#include "training/gradient_rules.h"

namespace onyx::training {
namespace {

using graph::Attribute;
using graph::kNoValue;

// ReduceSum/ReduceMean (op) of v over axes.
int32_t reduce(GradientContext& ctx, const char* op, int32_t v, const std::vector<int64_t>& axes, bool keepdims) {
  return ctx.emit(op, {v, ctx.ints(axes)}, {Attribute::make_int("keepdims", keepdims ? 1 : 0)});
}

std::vector<int64_t> range(int64_t begin, int64_t end) {
  std::vector<int64_t> r(static_cast<size_t>(std::max<int64_t>(0, end - begin)));
  std::iota(r.begin(), r.end(), begin);
  return r;
}

// The rank of the forward input x, or an error naming the node: these rules
// pick their axes by rank, which shape inference has found in every model
// that it can run.
Status known_rank(GradientContext& ctx, int32_t x, int64_t* rank) {
  *rank = ctx.rank(x);
  if (*rank < 0) return not_implemented("Gradient: ", ctx.label(), ": the rank of its input is unknown");
  return Status::ok();
}

// The axes softmax normalizes over: one axis from opset 13, before it every
// axis from `axis` on (the input coerced to 2-D).
Status softmax_axes(GradientContext& ctx, std::vector<int64_t>* axes) {
  int64_t rank;
  ONYX_RETURN_IF_ERROR(known_rank(ctx, ctx.input(0), &rank));
  const bool coerced = ctx.node().since_version < 13;
  int64_t axis = ctx.attr_int("axis", coerced ? 1 : -1);
  if (axis < 0) axis += rank;
  *axes = coerced ? range(axis, rank) : std::vector<int64_t>{axis};
  return Status::ok();
}

Status softmax_grad(GradientContext& ctx) {  // dx = y * (g - sum(g * y))
  std::vector<int64_t> axes;
  ONYX_RETURN_IF_ERROR(softmax_axes(ctx, &axes));
  const int32_t g = ctx.grad(0);
  const int32_t y = ctx.output(0);
  const int32_t dot = reduce(ctx, "ReduceSum", ctx.emit("Mul", {g, y}), axes, true);
  ctx.set_grad(0, ctx.emit("Mul", {y, ctx.emit("Sub", {g, dot})}));
  return Status::ok();
}

Status log_softmax_grad(GradientContext& ctx) {  // dx = g - exp(y) * sum(g)
  std::vector<int64_t> axes;
  ONYX_RETURN_IF_ERROR(softmax_axes(ctx, &axes));
  const int32_t g = ctx.grad(0);
  const int32_t sum = reduce(ctx, "ReduceSum", g, axes, true);
  ctx.set_grad(0, ctx.emit("Sub", {g, ctx.emit("Mul", {ctx.emit("Exp", {ctx.output(0)}), sum})}));
  return Status::ok();
}

// --- convolutions ---

// Conv and ConvTranspose: one ConvGrad kernel gives dX, dW and dB, each only
// where the input needs it (the first layer's data input does not).
Status conv_family_grad(GradientContext& ctx, bool transposed) {
  const std::vector<bool> wanted = {ctx.needs_grad(0), ctx.needs_grad(1), ctx.needs_grad(2)};
  std::vector<Attribute> attrs = ctx.attributes(
      {"auto_pad", "kernel_shape", "strides", "pads", "dilations", "group", "output_padding", "output_shape"});
  attrs.push_back(Attribute::make_int("transposed", transposed ? 1 : 0));
  const std::vector<int32_t> grads =
      ctx.emit_some("ConvGrad", {ctx.grad(0), ctx.input(0), ctx.input(1)}, wanted, std::move(attrs), kInternalDomain);
  for (size_t i = 0; i < wanted.size(); ++i) {
    if (wanted[i]) ctx.set_grad(i, grads[i]);
  }
  return Status::ok();
}

Status conv_grad(GradientContext& ctx) { return conv_family_grad(ctx, false); }
Status conv_transpose_grad(GradientContext& ctx) { return conv_family_grad(ctx, true); }

// --- pooling ---

// Each output's gradient goes to the input element the forward chose, read
// from its Indices output (added to the node when the model left it out).
Status max_pool_grad(GradientContext& ctx) {
  ctx.set_grad(0, ctx.emit("MaxPoolGrad", {ctx.grad(0), ctx.output(1), ctx.input(0)},
                           ctx.attributes({"storage_order"}), kInternalDomain));
  return Status::ok();
}

Status average_pool_grad(GradientContext& ctx) {
  ctx.set_grad(0, ctx.emit("AveragePoolGrad", {ctx.grad(0), ctx.input(0)},
                           ctx.attributes({"auto_pad", "kernel_shape", "strides", "pads", "dilations", "ceil_mode",
                                           "count_include_pad"}),
                           kInternalDomain));
  return Status::ok();
}

Status global_average_pool_grad(GradientContext& ctx) {  // dx = g / (positions per plane), spread
  const int32_t x = ctx.input(0);
  const int32_t spread = ctx.emit("Expand", {ctx.grad(0), ctx.shape_of(x)});
  const int32_t positions = ctx.emit("Div", {ctx.emit("Size", {x}), ctx.emit("Size", {ctx.output(0)})});
  ctx.set_grad(0, ctx.emit("Div", {spread, ctx.emit("CastLike", {positions, x})}));
  return Status::ok();
}

Status global_max_pool_grad(GradientContext& ctx) {  // g where x is its plane's maximum
  const int32_t x = ctx.input(0);
  const int32_t spread = ctx.emit("Expand", {ctx.grad(0), ctx.shape_of(x)});
  const int32_t is_max = ctx.emit("Equal", {x, ctx.output(0)});
  ctx.set_grad(0, ctx.emit("Where", {is_max, spread, ctx.scalar_like(0.0, x)}));
  return Status::ok();
}

// --- normalizations ---

// The backward of xhat = (x - mean) * inv_std with mean and variance taken
// over `axes` from x itself: given dxhat (the gradient of xhat),
//   dx = inv_std * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)).
// BatchNormalization (training), LayerNormalization and InstanceNormalization
// share it.
int32_t normalized_input_grad(GradientContext& ctx, int32_t dxhat, int32_t xhat, int32_t inv_std,
                              const std::vector<int64_t>& axes) {
  const int32_t mean_d = reduce(ctx, "ReduceMean", dxhat, axes, true);
  const int32_t mean_dx = reduce(ctx, "ReduceMean", ctx.emit("Mul", {dxhat, xhat}), axes, true);
  const int32_t centered = ctx.emit("Sub", {ctx.emit("Sub", {dxhat, mean_d}), ctx.emit("Mul", {xhat, mean_dx})});
  return ctx.emit("Mul", {inv_std, centered});
}

// 1 / sqrt(var + epsilon).
int32_t inverse_std(GradientContext& ctx, int32_t var, int32_t like) {
  const int32_t eps = ctx.scalar_like(ctx.attr_float("epsilon", 1e-5f), like);
  return ctx.emit("Reciprocal", {ctx.emit("Sqrt", {ctx.emit("Add", {var, eps})})});
}

// Mean and 1/std of x over axes (keepdims), as the forward computed them.
void moments(GradientContext& ctx, int32_t x, const std::vector<int64_t>& axes, int32_t* mean, int32_t* inv_std) {
  *mean = reduce(ctx, "ReduceMean", x, axes, true);
  const int32_t centered = ctx.emit("Sub", {x, *mean});
  *inv_std = inverse_std(ctx, reduce(ctx, "ReduceMean", ctx.emit("Mul", {centered, centered}), axes, true), x);
}

// A per-channel parameter (C) shaped to broadcast against x (N, C, ...).
int32_t per_channel(GradientContext& ctx, int32_t param, int64_t rank) {
  return rank <= 2 ? param : ctx.emit("Unsqueeze", {param, ctx.ints(range(1, rank - 1))});
}

// BatchNormalization and InstanceNormalization: y = xhat * scale + B with
// per-channel scale and B; `stats` are the axes of the statistics.
Status channel_norm_grad(GradientContext& ctx, int32_t xhat, int32_t inv_std, bool batch_stats,
                         const std::vector<int64_t>& stats, int64_t rank) {
  const int32_t g = ctx.grad(0);
  const int32_t scale = per_channel(ctx, ctx.input(1), rank);
  const std::vector<int64_t> all_but_channel = [&] {
    std::vector<int64_t> axes = range(0, rank);
    axes.erase(axes.begin() + 1);
    return axes;
  }();
  if (ctx.needs_grad(0)) {
    const int32_t dxhat = ctx.emit("Mul", {g, scale});
    ctx.set_grad(0, batch_stats ? normalized_input_grad(ctx, dxhat, xhat, inv_std, stats)
                                : ctx.emit("Mul", {dxhat, inv_std}));
  }
  if (ctx.needs_grad(1)) ctx.set_grad(1, reduce(ctx, "ReduceSum", ctx.emit("Mul", {g, xhat}), all_but_channel, false));
  if (ctx.needs_grad(2)) ctx.set_grad(2, reduce(ctx, "ReduceSum", g, all_but_channel, false));
  return Status::ok();
}

// In training mode (opset 14+, training_mode=1) the statistics are the
// batch's, and x's gradient flows through them too; the running mean and
// variance outputs get no gradient. Otherwise the given mean and variance are
// constants of the normalization (they get a gradient too, if asked).
Status batch_norm_grad(GradientContext& ctx) {
  const int32_t x = ctx.input(0);
  int64_t rank;
  ONYX_RETURN_IF_ERROR(known_rank(ctx, x, &rank));
  if (ctx.grad(0) == kNoValue) return Status::ok();
  const bool training = ctx.node().since_version >= 14 && ctx.attr_int("training_mode", 0) != 0;
  std::vector<int64_t> stats = range(0, rank);
  stats.erase(stats.begin() + 1);
  int32_t mean, inv_std;
  if (training) {
    moments(ctx, x, stats, &mean, &inv_std);
  } else {
    mean = per_channel(ctx, ctx.input(3), rank);
    inv_std = inverse_std(ctx, per_channel(ctx, ctx.input(4), rank), x);
  }
  const int32_t centered = ctx.emit("Sub", {x, mean});
  const int32_t xhat = ctx.emit("Mul", {centered, inv_std});
  ONYX_RETURN_IF_ERROR(channel_norm_grad(ctx, xhat, inv_std, training, stats, rank));
  if (training || !(ctx.needs_grad(3) || ctx.needs_grad(4))) return Status::ok();
  // Fixed statistics: d/dmean = -sum(g) * scale * inv_std and
  // d/dvar = -sum(g * (x - mean)) * scale * inv_std^3 / 2, per channel.
  const int32_t g = ctx.grad(0);
  const int32_t scale = per_channel(ctx, ctx.input(1), rank);
  const int32_t scaled = ctx.emit("Mul", {ctx.emit("Mul", {g, scale}), inv_std});
  if (ctx.needs_grad(3)) ctx.set_grad(3, ctx.emit("Neg", {reduce(ctx, "ReduceSum", scaled, stats, false)}));
  if (ctx.needs_grad(4)) {
    const int32_t cube = ctx.emit("Mul", {ctx.emit("Mul", {scaled, xhat}), inv_std});
    const int32_t half = ctx.scalar_like(-0.5, x);
    ctx.set_grad(4, ctx.emit("Mul", {reduce(ctx, "ReduceSum", cube, stats, false), half}));
  }
  return Status::ok();
}

Status instance_norm_grad(GradientContext& ctx) {
  const int32_t x = ctx.input(0);
  int64_t rank;
  ONYX_RETURN_IF_ERROR(known_rank(ctx, x, &rank));
  const std::vector<int64_t> stats = range(2, rank);
  int32_t mean, inv_std;
  moments(ctx, x, stats, &mean, &inv_std);
  const int32_t xhat = ctx.emit("Mul", {ctx.emit("Sub", {x, mean}), inv_std});
  return channel_norm_grad(ctx, xhat, inv_std, true, stats, rank);
}

// Normalizes over the axes from `axis` on; reuses the forward's Mean and
// InvStdDev outputs (added to the node when the model left them out).
Status layer_norm_grad(GradientContext& ctx) {
  const int32_t x = ctx.input(0);
  int64_t rank;
  ONYX_RETURN_IF_ERROR(known_rank(ctx, x, &rank));
  int64_t axis = ctx.attr_int("axis", -1);
  if (axis < 0) axis += rank;
  const int32_t g = ctx.grad(0);
  // The statistics are of the stash type, which may differ from x's.
  const int32_t mean = ctx.emit("CastLike", {ctx.output(1), x});
  const int32_t inv_std = ctx.emit("CastLike", {ctx.output(2), x});
  const int32_t xhat = ctx.emit("Mul", {ctx.emit("Sub", {x, mean}), inv_std});
  const int32_t scale = ctx.input(1);
  if (ctx.needs_grad(0)) {
    ctx.set_grad(0, normalized_input_grad(ctx, ctx.emit("Mul", {g, scale}), xhat, inv_std, range(axis, rank)));
  }
  if (ctx.needs_grad(1)) ctx.set_grad(1, ctx.sum_to(ctx.emit("Mul", {g, xhat}), scale));
  if (ctx.needs_grad(2)) ctx.set_grad(2, ctx.sum_to(g, ctx.input(2)));
  return Status::ok();
}

// --- dropout ---

// In training mode dx = g * mask / (1 - ratio), with the forward's mask
// output (added to the node when the model left it out); at inference the
// identity. Before opset 12 Dropout has no training mode here.
Status dropout_grad(GradientContext& ctx) {
  const int32_t g = ctx.grad(0);
  const int32_t training = ctx.input(2);
  if (ctx.node().since_version < 12 || training == kNoValue) {
    ctx.set_grad(0, g);
    return Status::ok();
  }
  const int32_t x = ctx.input(0);
  const int32_t one = ctx.scalar_like(1.0, x);
  const int32_t ratio = ctx.input(1) == kNoValue ? ctx.scalar_like(0.5, x) : ctx.emit("CastLike", {ctx.input(1), x});
  // The kept elements' scale: 1 / (1 - ratio) in training, else 1 (the mask is all true).
  const int32_t scale = ctx.emit("Where", {training, ctx.emit("Div", {one, ctx.emit("Sub", {one, ratio})}), one});
  const int32_t kept = ctx.emit("Mul", {g, scale});
  ctx.set_grad(0, ctx.emit("Where", {ctx.output(1), kept, ctx.scalar_like(0.0, x)}));
  return Status::ok();
}

ONYX_GRADIENT_RULE("", "Softmax", softmax_grad);
ONYX_GRADIENT_RULE("", "LogSoftmax", log_softmax_grad);
ONYX_GRADIENT_RULE("", "Conv", conv_grad);
ONYX_GRADIENT_RULE("", "ConvTranspose", conv_transpose_grad);
ONYX_GRADIENT_RULE("", "MaxPool", max_pool_grad);
ONYX_GRADIENT_RULE("", "AveragePool", average_pool_grad);
ONYX_GRADIENT_RULE("", "GlobalAveragePool", global_average_pool_grad);
ONYX_GRADIENT_RULE("", "GlobalMaxPool", global_max_pool_grad);
ONYX_GRADIENT_RULE("", "BatchNormalization", batch_norm_grad);
ONYX_GRADIENT_RULE("", "InstanceNormalization", instance_norm_grad);
ONYX_GRADIENT_RULE("", "LayerNormalization", layer_norm_grad);
ONYX_GRADIENT_RULE("", "Dropout", dropout_grad);

}  // namespace
}  // namespace onyx::training
