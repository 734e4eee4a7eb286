// Gradient rules of matrix products: MatMul and Gemm.
#include <algorithm>
#include <numeric>

#include "training/gradient_rules.h"

namespace onyx::training {
namespace {

// The value with its last two axes swapped; rank is its known rank (>= 2).
int32_t swap_last_two(GradientContext& ctx, int32_t value, int64_t rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
  return ctx.emit("Transpose", {value}, {graph::Attribute::make_ints("perm", perm)});
}

// Y = A @ B with numpy's rules: a 1-D A is a row (1, K) and a 1-D B a column
// (K, 1), the added axis dropped from Y; batch axes broadcast. The rule
// restores those axes so that every operand is at least a matrix, then
// dA = g @ B^T and dB = A^T @ g, summed over the batch axes each operand was
// broadcast along.
Status matmul_grad(GradientContext& ctx) {
  int32_t a = ctx.input(0);
  int32_t b = ctx.input(1);
  const int64_t a_rank = ctx.rank(a);
  const int64_t b_rank = ctx.rank(b);
  if (a_rank < 1 || b_rank < 1) {
    return not_implemented("Gradient: ", ctx.label(), ": MatMul needs operands of known rank (>= 1)");
  }
  std::vector<int64_t> g_axes;  // where Y lost the axes the 1-D operands gained
  if (a_rank == 1) {
    a = ctx.emit("Unsqueeze", {a, ctx.ints({0})});
    g_axes.push_back(-2);
  }
  if (b_rank == 1) {
    b = ctx.emit("Unsqueeze", {b, ctx.ints({1})});
    g_axes.push_back(-1);
  }
  int32_t g = ctx.grad(0);
  if (!g_axes.empty()) g = ctx.emit("Unsqueeze", {g, ctx.ints(g_axes)});
  if (ctx.needs_grad(0)) {
    // (..., M, K); for a 1-D A, (..., 1, K), which SumToShapeOf folds to (K).
    const int32_t da = ctx.emit("MatMul", {g, swap_last_two(ctx, b, std::max<int64_t>(b_rank, 2))});
    ctx.set_grad(0, ctx.sum_to(da, ctx.input(0)));
  }
  if (ctx.needs_grad(1) && b_rank == 2 && a_rank >= 3) {
    // A weight matrix applied to a batch of rows (a linear layer over [N, S,
    // K]): dB is one product over every row, A^T g with both flattened to
    // matrices. The batched form below would make an [N, K, M] product per
    // batch entry and then sum it away.
    const int32_t rows_a = ctx.emit("Flatten", {a}, {graph::Attribute::make_int("axis", a_rank - 1)});
    const int32_t rows_g = ctx.emit("Flatten", {g}, {graph::Attribute::make_int("axis", a_rank - 1)});
    ctx.set_grad(1, ctx.emit("Gemm", {rows_a, rows_g}, {graph::Attribute::make_int("transA", 1)}));
  } else if (ctx.needs_grad(1)) {
    int32_t db = ctx.emit("MatMul", {swap_last_two(ctx, a, std::max<int64_t>(a_rank, 2)), g});
    // (..., K, 1) for a 1-D B: drop the column axis before summing to (K).
    if (b_rank == 1) db = ctx.emit("Squeeze", {db, ctx.ints({-1})});
    ctx.set_grad(1, ctx.sum_to(db, ctx.input(1)));
  }
  return Status::ok();
}

// Y = alpha A' B' + beta C, A' = A^T if transA, B' = B^T if transB.
// dA' = alpha g B'^T and dB' = alpha A'^T g; each is written as one Gemm
// whose trans flags fold the transposes, e.g. dA = (dA')^T = alpha B' g^T
// when transA.
Status gemm_grad(GradientContext& ctx) {
  const int32_t g = ctx.grad(0);
  const int32_t a = ctx.input(0);
  const int32_t b = ctx.input(1);
  const bool trans_a = ctx.attr_int("transA", 0) != 0;
  const bool trans_b = ctx.attr_int("transB", 0) != 0;
  const float alpha = ctx.attr_float("alpha", 1.0f);
  const float beta = ctx.attr_float("beta", 1.0f);
  auto gemm = [&](int32_t x, int32_t y, bool tx, bool ty) {
    return ctx.emit("Gemm", {x, y},
                    {graph::Attribute::make_float("alpha", alpha), graph::Attribute::make_int("transA", tx ? 1 : 0),
                     graph::Attribute::make_int("transB", ty ? 1 : 0)});
  };
  if (ctx.needs_grad(0)) ctx.set_grad(0, trans_a ? gemm(b, g, trans_b, true) : gemm(g, b, false, !trans_b));
  if (ctx.needs_grad(1)) ctx.set_grad(1, trans_b ? gemm(g, a, true, trans_a) : gemm(a, g, !trans_a, false));
  if (ctx.needs_grad(2)) {
    const int32_t gc = beta == 1.0f ? g : ctx.emit("Mul", {g, ctx.scalar_like(beta, g)});
    ctx.set_grad(2, ctx.sum_to(gc, ctx.input(2)));
  }
  return Status::ok();
}

ONYX_GRADIENT_RULE("", "MatMul", matmul_grad);
ONYX_GRADIENT_RULE("", "Gemm", gemm_grad);

}  // namespace
}  // namespace onyx::training
