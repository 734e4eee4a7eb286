// A 3-D activation flattened to 2-D, multiplied by a matrix (Gemm, or MatMul
// with an optional bias Add) and reshaped back to its leading dims is one 3-D
// MatMul (+ bias Add): how GPT-2 (Conv1D via addmm) and TensorFlow
// (Tensordot) exports write a linear layer. Rewriting it lets the bias, the
// residual and the activation fusions, and the attention fusion, see the
// layer the way PyTorch's nn.Linear export writes it.
#include "optimizer/extended/shape_patterns.h"

namespace onyx::optimizer {
namespace {

// True when the target of `reshape` is [dim0(x), dim1(x), n] for the rank-3 x.
bool unflattens_to(const PassContext& ctx, const graph::Node& reshape, int32_t x, int64_t n) {
  if (reshape.inputs.size() != 2) return false;
  auto terms = shape_terms(ctx, reshape.inputs[1]);
  if (!terms || terms->size() != 3) return false;
  const graph::TypeAndShape& info = ctx.info(x);
  int minus_ones = 0;
  for (int64_t i = 0; i < 2; ++i) {
    const ShapeTerm& t = (*terms)[static_cast<size_t>(i)];
    if (t.kind == ShapeTerm::Kind::kDim && t.axis == i && same_leading_dim(ctx, t.value, x, i)) continue;
    if (t.kind == ShapeTerm::Kind::kConstant && t.constant > 0 && info.has_shape && info.shape[static_cast<size_t>(i)].is_known() &&
        info.shape[static_cast<size_t>(i)].value == t.constant) {
      continue;
    }
    if (t.is_constant(-1)) {
      ++minus_ones;
      continue;
    }
    return false;
  }
  const ShapeTerm& last = (*terms)[2];
  if (last.is_constant(-1)) ++minus_ones;
  else if (!last.is_constant(n)) return false;
  return minus_ones <= 1;
}

class ReshapedMatMulFusion final : public Pass {
 public:
  std::string name() const override { return "reshaped_matmul_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& unflatten = ctx.node(index);
    if (!is_op(unflatten, "Reshape") || unflatten.inputs.size() != 2 || unflatten.outputs.size() != 1) return std::nullopt;
    const int32_t y = unflatten.outputs[0];
    if (ctx.elem_type(y) != DataType::kFloat) return std::nullopt;
    const int32_t g = unflatten.inputs[0];
    const int32_t gi = ctx.producer_index(g);
    if (gi < 0 || !ctx.only_used_by(g, index)) return std::nullopt;
    Patch patch;
    patch.remove(index);
    patch.remove(static_cast<size_t>(gi));
    const graph::Node* mm = &ctx.node(static_cast<size_t>(gi));
    int32_t bias = graph::kNoValue;
    size_t mm_index = static_cast<size_t>(gi);
    if (is_op(*mm, "Add") && mm->inputs.size() == 2) {
      for (int side = 0; side < 2; ++side) {
        const int32_t m = mm->inputs[static_cast<size_t>(side)];
        const int32_t mi = ctx.producer_index(m);
        const Tensor* b = ctx.constant(mm->inputs[static_cast<size_t>(1 - side)]);
        if (mi < 0 || b == nullptr || b->rank() != 1 || !ctx.only_used_by(m, static_cast<size_t>(gi))) continue;
        if (!is_op(ctx.node(static_cast<size_t>(mi)), "MatMul")) continue;
        bias = mm->inputs[static_cast<size_t>(1 - side)];
        mm_index = static_cast<size_t>(mi);
        break;
      }
      if (bias == graph::kNoValue) return std::nullopt;
      patch.remove(mm_index);
      mm = &ctx.node(mm_index);
    }
    const bool gemm = is_op(*mm, "Gemm");
    if (!(gemm || is_op(*mm, "MatMul")) || mm->inputs.size() < 2 || mm->outputs.size() != 1) return std::nullopt;
    if (gemm && (attribute_int(*mm, "transA", 0) != 0 || attribute_float(*mm, "alpha", 1.0f) != 1.0f)) return std::nullopt;
    const int32_t flat = mm->inputs[0];
    const int32_t fi = ctx.producer_index(flat);
    if (fi < 0 || !reshape_flattens_to_2d(ctx, ctx.node(static_cast<size_t>(fi)))) return std::nullopt;
    const int32_t x = ctx.node(static_cast<size_t>(fi)).inputs[0];
    if (ctx.only_used_by(flat, mm_index)) patch.remove(static_cast<size_t>(fi));

    int32_t weight = mm->inputs[1];
    std::optional<size_t> wrank = rank_of(ctx, weight);
    if (!wrank || *wrank != 2 || ctx.elem_type(weight) != DataType::kFloat) return std::nullopt;
    const bool trans_b = gemm && attribute_int(*mm, "transB", 0) != 0;
    const Tensor* w = ctx.constant(weight);
    if (trans_b && w == nullptr) return std::nullopt;
    std::optional<Shape> wshape = ctx.known_shape(weight);
    if (!wshape) return std::nullopt;
    const int64_t n = trans_b ? (*wshape)[0] : (*wshape)[1];
    if (trans_b) {
      const int64_t rows = (*wshape)[0], cols = (*wshape)[1];
      Tensor t(DataType::kFloat, {cols, rows});
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) t.data<float>()[c * rows + r] = w->data<float>()[r * cols + c];
      }
      weight = patch.new_constant(ctx.value(mm->inputs[1]).name + "_transposed", std::move(t));
    }
    if (gemm && mm->inputs.size() > 2 && mm->inputs[2] != graph::kNoValue) {
      const Tensor* c = ctx.constant(mm->inputs[2]);
      // Only a bias per output column (beta folds into it).
      if (c == nullptr || c->dtype() != DataType::kFloat || c->size() != n || (c->rank() == 2 && c->dim(0) != 1) ||
          c->rank() > 2) {
        return std::nullopt;
      }
      const float beta = attribute_float(*mm, "beta", 1.0f);
      if (c->rank() == 1 && beta == 1.0f) {
        bias = mm->inputs[2];
      } else {
        Tensor b(DataType::kFloat, {n});
        for (int64_t i = 0; i < n; ++i) b.data<float>()[i] = beta * c->data<float>()[i];
        bias = patch.new_constant(ctx.value(mm->inputs[2]).name + "_vector", std::move(b));
      }
    } else if (bias != graph::kNoValue) {
      const Tensor* b = ctx.constant(bias);
      if (b == nullptr || b->size() != n || b->dtype() != DataType::kFloat) return std::nullopt;
    }
    if (!unflattens_to(ctx, unflatten, x, n)) return std::nullopt;

    // Add before opset 7 needs a `broadcast` attribute; keep to later ones.
    const int opset = unflatten.opset > 0 ? unflatten.opset : 13;
    if (opset < 7) return std::nullopt;
    const std::string base = mm->name.empty() ? "ReshapedMatMul" : mm->name;
    if (bias == graph::kNoValue) {
      patch.add_nodes.push_back(make_node("MatMul", "", opset, {x, weight}, {y}, base + "_3d"));
    } else {
      const int32_t product = patch.new_value(ctx.value(y).name + "_matmul", ctx.info(y));
      patch.add_nodes.push_back(make_node("MatMul", "", opset, {x, weight}, {product}, base + "_3d"));
      patch.add_nodes.push_back(make_node("Add", "", opset, {product, bias}, {y}, base + "_bias"));
    }
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_reshaped_matmul_fusion_pass() { return std::make_unique<ReshapedMatMulFusion>(); }

}  // namespace onyx::optimizer
