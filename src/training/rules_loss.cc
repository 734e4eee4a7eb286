// Gradient rules of the losses. Neither label input gets a gradient.
#include "training/gradient_rules.h"

namespace onyx::training {
namespace {

using graph::kNoValue;

std::vector<graph::Attribute> loss_attributes(GradientContext& ctx) {
  return ctx.attributes({"reduction", "ignore_index"});
}

// The loss picks -input[target] (times the class weight): its gradient is a
// kernel's (NegativeLogLikelihoodLossGrad, which knows the mean's divisor).
Status nll_loss_grad(GradientContext& ctx) {
  if (!ctx.needs_grad(0)) return Status::ok();
  ctx.set_grad(0, ctx.emit("NegativeLogLikelihoodLossGrad", {ctx.grad(0), ctx.input(0), ctx.input(1), ctx.input(2)},
                           loss_attributes(ctx), kInternalDomain));
  return Status::ok();
}

// loss = nll(log_prob), log_prob = log_softmax(scores) over axis 1. The
// gradient of log_prob (from the loss, plus any from the log_prob output
// itself) goes back through log_softmax: d - exp(log_prob) * sum(d). The
// forward's log_prob output is reused (added to the node when left out).
Status softmax_cross_entropy_grad(GradientContext& ctx) {
  if (!ctx.needs_grad(0)) return Status::ok();
  const int32_t log_prob = ctx.output(1);
  int32_t d = kNoValue;
  if (ctx.grad(0) != kNoValue) {
    d = ctx.emit("NegativeLogLikelihoodLossGrad", {ctx.grad(0), log_prob, ctx.input(1), ctx.input(2)},
                 loss_attributes(ctx), kInternalDomain);
  }
  if (ctx.grad(1) != kNoValue) d = d == kNoValue ? ctx.grad(1) : ctx.emit("Add", {d, ctx.grad(1)});
  const int32_t sum = ctx.emit("ReduceSum", {d, ctx.ints({1})}, {graph::Attribute::make_int("keepdims", 1)});
  ctx.set_grad(0, ctx.emit("Sub", {d, ctx.emit("Mul", {ctx.emit("Exp", {log_prob}), sum})}));
  return Status::ok();
}

ONYX_GRADIENT_RULE("", "NegativeLogLikelihoodLoss", nll_loss_grad);
ONYX_GRADIENT_RULE("", "SoftmaxCrossEntropyLoss", softmax_cross_entropy_grad);

}  // namespace
}  // namespace onyx::training
