// Gradient rules of neural-network ops: softmax, convolutions, pooling,
// normalizations, dropout and attention (opset 23). Convolution and windowed pooling
// use kernels of src/providers/cpu/training/; the rest is written with
// ai.onnx ops.
#include <limits>
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

// --- attention ---

// Attention (opset 23) without a KV cache or softcap, 3-D or 4-D: the
// probabilities P = softmax(scale * Q K^T + mask) are recomputed, then
//   dV = P^T dY,  dS = P * (dP - sum(dP * P)) with dP = dY V^T,
//   dQ = scale * dS K,  dK = scale * dS^T Q,  d(float mask) = dS.
// Grouped KV heads are repeated for the products and their gradients summed
// back per KV head.
class AttentionGrad {
 public:
  explicit AttentionGrad(GradientContext& ctx) : ctx_(ctx) {}

  Status run() {
    if (ctx_.input(4) != kNoValue || ctx_.input(5) != kNoValue || ctx_.attr_float("softcap", 0.0f) != 0.0f ||
        ctx_.grad(3) != kNoValue) {
      return not_implemented("Gradient: ", ctx_.label(),
                             ": Attention with past keys/values, softcap or the qk_matmul_output output");
    }
    const int32_t q = ctx_.input(0), k = ctx_.input(1), v = ctx_.input(2), mask = ctx_.input(3);
    const int64_t rank = ctx_.rank(q);
    if (rank != 3 && rank != 4) return not_implemented("Gradient: ", ctx_.label(), ": Q of unknown rank");
    three_d_ = rank == 3;
    int64_t q_heads = ctx_.attr_int("q_num_heads", 0), kv_heads = ctx_.attr_int("kv_num_heads", 0);
    if (!three_d_) {
      q_heads = static_dim(q, 1);
      kv_heads = static_dim(k, 1);
    }
    if (q_heads > 0 && kv_heads > 0 && q_heads % kv_heads == 0) groups_ = q_heads / kv_heads;
    const int32_t q4 = heads(q, q_heads), k4 = heads(k, kv_heads), v4 = heads(v, kv_heads);
    const int32_t ke = repeat(k4), ve = repeat(v4);
    // The scale: the attribute, else 1 / sqrt(head size).
    int32_t scale;
    if (ctx_.attribute("scale") != nullptr) {
      scale = ctx_.scalar_like(ctx_.attr_float("scale", 1.0f), q);
    } else {
      const int32_t size = ctx_.emit("Shape", {q4}, {Attribute::make_int("start", 3), Attribute::make_int("end", 4)});
      scale = ctx_.emit("Reciprocal", {ctx_.emit("Sqrt", {ctx_.emit("CastLike", {size, q})})});
    }
    int32_t s = ctx_.emit("Mul", {ctx_.emit("MatMul", {q4, transposed(ke)}), scale});
    if (mask != kNoValue) {
      const bool boolean = ctx_.info(mask).type.elem_type == DataType::kBool;
      s = ctx_.emit("Add", {s, boolean ? ctx_.emit("Where", {mask, zero(), minus_inf()}) : mask});
    }
    if (ctx_.attr_int("is_causal", 0) != 0) {
      // Query i sees keys j <= i: a lower triangle of the score's last two dims.
      const int32_t dims = ctx_.emit("Shape", {s}, {Attribute::make_int("start", -2)});
      const int32_t ones = ctx_.emit("ConstantOfShape", {dims},
                                     {Attribute::make_tensor("value", Tensor::from_vector<bool>({true}, {1}))});
      const int32_t lower = ctx_.emit(
          "Trilu", {ctx_.emit("Cast", {ones}, {Attribute::make_int("to", static_cast<int64_t>(DataType::kInt32))})},
          {Attribute::make_int("upper", 0)});
      const int32_t seen =
          ctx_.emit("Cast", {lower}, {Attribute::make_int("to", static_cast<int64_t>(DataType::kBool))});
      s = ctx_.emit("Add", {s, ctx_.emit("Where", {seen, zero(), minus_inf()})});
    }
    const int32_t p = ctx_.emit("Softmax", {s}, {Attribute::make_int("axis", -1)});
    const int32_t dy = heads(ctx_.grad(0), q_heads);
    if (ctx_.needs_grad(2)) ctx_.set_grad(2, unheads(reduce_groups(ctx_.emit("MatMul", {transposed(p), dy}))));
    const int32_t dp = ctx_.emit("MatMul", {dy, transposed(ve)});
    const int32_t dot = reduce(ctx_, "ReduceSum", ctx_.emit("Mul", {dp, p}), {-1}, true);
    const int32_t ds = ctx_.emit("Mul", {p, ctx_.emit("Sub", {dp, dot})});
    if (ctx_.needs_grad(0)) ctx_.set_grad(0, unheads(ctx_.emit("Mul", {ctx_.emit("MatMul", {ds, ke}), scale})));
    if (ctx_.needs_grad(1)) {
      const int32_t dk = ctx_.emit("Mul", {ctx_.emit("MatMul", {transposed(ds), q4}), scale});
      ctx_.set_grad(1, unheads(reduce_groups(dk)));
    }
    if (mask != kNoValue && ctx_.needs_grad(3)) ctx_.set_grad(3, ctx_.sum_to(ds, mask));
    // Without a cache, present_key and present_value are K and V (4-D).
    if (ctx_.grad(1) != kNoValue) ctx_.set_grad(1, unheads(ctx_.grad(1)));
    if (ctx_.grad(2) != kNoValue) ctx_.set_grad(2, unheads(ctx_.grad(2)));
    return Status::ok();
  }

 private:
  int64_t static_dim(int32_t value, size_t d) const {
    const graph::TypeAndShape i = ctx_.info(value);
    if (!i.has_shape || i.shape.size() <= d) return 0;
    return i.shape[d].is_known() ? i.shape[d].value : 0;
  }
  int32_t zero() { return ctx_.scalar_like(0.0, ctx_.input(0)); }
  int32_t minus_inf() { return ctx_.scalar_like(-std::numeric_limits<double>::infinity(), ctx_.input(0)); }
  int32_t transposed(int32_t x) { return ctx_.emit("Transpose", {x}, {Attribute::make_ints("perm", {0, 1, 3, 2})}); }
  // (B, S, H * D) -> (B, H, S, D) for 3-D inputs.
  int32_t heads(int32_t x, int64_t count) {
    if (!three_d_) return x;
    const int32_t split = ctx_.emit("Reshape", {x, ctx_.ints({0, 0, count, -1})});
    return ctx_.emit("Transpose", {split}, {Attribute::make_ints("perm", {0, 2, 1, 3})});
  }
  // The inverse of heads().
  int32_t unheads(int32_t x) {
    if (!three_d_) return x;
    const int32_t t = ctx_.emit("Transpose", {x}, {Attribute::make_ints("perm", {0, 2, 1, 3})});
    return ctx_.emit("Reshape", {t, ctx_.ints({0, 0, -1})});
  }
  // (B, Hkv, L, D) -> (B, Hkv * groups, L, D), each KV head repeated for its query heads.
  int32_t repeat(int32_t x) {
    if (groups_ == 1) return x;
    const int32_t shape = ctx_.shape_of(x);
    const int32_t wide = ctx_.emit("Unsqueeze", {x, ctx_.ints({2})});
    const int32_t expanded = ctx_.emit("Expand", {wide, dims(shape, {ctx_.ints({1, groups_})})});
    return ctx_.emit("Reshape", {expanded, dims(shape, {ctx_.ints({-1})})});
  }
  // The inverse of repeat() for gradients: the query heads of a KV head summed.
  int32_t reduce_groups(int32_t x) {
    if (groups_ == 1) return x;
    const int32_t split = ctx_.emit("Reshape", {x, dims(ctx_.shape_of(x), {ctx_.ints({-1, groups_})})});
    return reduce(ctx_, "ReduceSum", split, {2}, false);
  }
  // A 4-D shape's batch dim, then `middle`, then its last two dims.
  int32_t dims(int32_t shape, std::vector<int32_t> middle) {
    std::vector<int32_t> parts = {ctx_.emit("Slice", {shape, ctx_.ints({0}), ctx_.ints({1})})};
    parts.insert(parts.end(), middle.begin(), middle.end());
    parts.push_back(ctx_.emit("Slice", {shape, ctx_.ints({2}), ctx_.ints({4})}));
    return ctx_.emit("Concat", parts, {Attribute::make_int("axis", 0)});
  }

  GradientContext& ctx_;
  bool three_d_ = false;
  int64_t groups_ = 1;
};

Status attention_grad(GradientContext& ctx) { return AttentionGrad(ctx).run(); }

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
ONYX_GRADIENT_RULE("", "Attention", attention_grad);

}  // namespace
}  // namespace onyx::training
