// MatMul of 2-D operands followed by Add of a bias that broadcasts to the
// product ([N], [1,N], [M,1], [M,N] or one element) becomes one Gemm.
#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

std::optional<std::vector<graph::Dim>> dims2(const PassContext& ctx, int32_t v) {
  const graph::TypeAndShape& info = ctx.info(v);
  if (!info.has_shape || info.shape.size() != 2) return std::nullopt;
  return info.shape;
}

bool same_dim(const graph::Dim& a, const graph::Dim& b) {
  return (a.is_known() && b.is_known() && a.value == b.value) ||
         (!a.is_known() && !b.is_known() && !a.symbol.empty() && a.symbol == b.symbol);
}

class MatMulAddGemmFusion final : public Pass {
 public:
  std::string name() const override { return "matmul_add_gemm_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& add = ctx.node(index);
    if (!is_op(add, "Add") || add.inputs.size() != 2 || add.outputs.size() != 1) return std::nullopt;
    for (int side = 0; side < 2; ++side) {
      const int32_t product = add.inputs[static_cast<size_t>(side)];
      const int32_t bias = add.inputs[static_cast<size_t>(1 - side)];
      const int32_t mm_index = ctx.producer_index(product);
      if (mm_index < 0 || !ctx.only_used_by(product, index)) continue;
      const graph::Node& mm = ctx.node(static_cast<size_t>(mm_index));
      if (!is_op(mm, "MatMul") || mm.inputs.size() != 2 || mm.outputs.size() != 1) continue;
      const DataType dtype = ctx.elem_type(product);
      if (dtype != DataType::kFloat && dtype != DataType::kDouble) continue;
      if (ctx.elem_type(bias) != dtype) continue;
      auto a = dims2(ctx, mm.inputs[0]);
      auto b = dims2(ctx, mm.inputs[1]);
      auto out = dims2(ctx, product);
      if (!a || !b || !out) continue;
      // The bias must broadcast to [M, N] without changing the result's shape.
      const graph::TypeAndShape& c = ctx.info(bias);
      if (!c.has_shape || c.shape.size() > 2) continue;
      bool fits = true;
      for (size_t i = 0; i < c.shape.size(); ++i) {
        const graph::Dim& d = c.shape[c.shape.size() - 1 - i];
        const graph::Dim& o = (*out)[1 - i];
        if (!(d.is_known() && d.value == 1) && !same_dim(d, o)) fits = false;
      }
      if (!fits) continue;
      const int opset = mm.opset > 0 ? mm.opset : 13;
      // Gemm before opset 7 has a `broadcast` attribute; keep to later ones.
      if (opset < 7) continue;
      Patch patch;
      patch.remove(static_cast<size_t>(mm_index));
      patch.remove(index);
      graph::Node gemm = make_node("Gemm", "", opset, {mm.inputs[0], mm.inputs[1], bias}, {add.outputs[0]},
                                   mm.name.empty() ? add.name : mm.name);
      patch.add_nodes.push_back(std::move(gemm));
      return patch;
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<Pass> make_matmul_add_gemm_fusion_pass() { return std::make_unique<MatMulAddGemmFusion>(); }

}  // namespace onyx::optimizer
