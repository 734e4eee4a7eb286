// MatMul of an activation of rank 3 or more by a matrix, then Add of a bias
// over the last axis ([N]), becomes Reshape to 2-D -> Gemm -> Reshape back,
// so the bias is added in the GEMM's write-back instead of in a pass of its
// own over the whole product (a CTC head's [80, 1, 96] x [96, 6625]: 5% of
// a CRNN's run). Reshape relabels a buffer, no copy.
//
// Not among the extended passes: the fusions there want a linear layer as
// MatMul + Add (reshaped_matmul_fusion writes Reshape -> Gemm -> Reshape
// back into that form), so the CPU provider runs this one last, with its
// layout passes, on the MatMul + Add pairs they left.
#include <algorithm>

#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

Tensor int64_vector(const std::vector<int64_t>& values) {
  Tensor t(DataType::kInt64, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.data<int64_t>()[i] = values[i];
  return t;
}

class FlattenedMatMulGemmFusion final : public Pass {
 public:
  std::string name() const override { return "flattened_matmul_gemm_fusion"; }

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
      const int opset = mm.opset > 0 ? mm.opset : 13;
      if (opset < 7) continue;  // Gemm's `broadcast` attribute and Reshape's shape attribute
      if (ctx.elem_type(product) != DataType::kFloat || ctx.elem_type(bias) != DataType::kFloat) continue;
      const int32_t a = mm.inputs[0], b = mm.inputs[1];
      std::optional<Shape> b_shape = ctx.known_shape(b);
      const graph::TypeAndShape& y = ctx.info(product);
      const graph::TypeAndShape& c = ctx.info(bias);
      if (!b_shape || b_shape->size() != 2 || !y.has_shape || y.shape.size() < 3 || !c.has_shape) continue;
      const int64_t k = (*b_shape)[0], n = (*b_shape)[1];
      // The bias is [N] (or one value): it broadcasts over the rows only.
      if (c.shape.size() > 1 || (c.shape.size() == 1 && !(c.shape[0].is_known() &&
                                                          (c.shape[0].value == n || c.shape[0].value == 1)))) {
        continue;
      }
      // The product's leading dims, known but for at most one (-1 in Reshape).
      std::vector<int64_t> leading;
      int unknown = 0;
      for (size_t d = 0; d + 1 < y.shape.size(); ++d) {
        leading.push_back(y.shape[d].is_known() ? y.shape[d].value : -1);
        unknown += y.shape[d].is_known() ? 0 : 1;
      }
      // (A 0 in Reshape's target would copy a dim of the 2-D product.)
      const bool empty = std::find(leading.begin(), leading.end(), 0) != leading.end();
      if (unknown > 1 || empty || !y.shape.back().is_known() || y.shape.back().value != n) continue;
      const std::string base = mm.name.empty() ? ctx.value(product).name : mm.name;
      Patch patch;
      patch.remove(static_cast<size_t>(mm_index));
      patch.remove(index);
      graph::TypeAndShape flat_a = ctx.info(a), flat_y = y;
      flat_a.shape = {graph::Dim{}, graph::Dim::known(k)};
      flat_y.shape = {graph::Dim{}, graph::Dim::known(n)};
      const int32_t a2 = patch.new_value(base + "_rows", flat_a);
      const int32_t y2 = patch.new_value(base + "_gemm", flat_y);
      std::vector<int64_t> y_shape = leading;
      y_shape.push_back(n);
      patch.add_nodes.push_back(make_node("Reshape", "", opset, {a, patch.new_constant(base + "_rows_shape", int64_vector({-1, k}))},
                                          {a2}, base + "_rows"));
      patch.add_nodes.push_back(make_node("Gemm", "", opset, {a2, b, bias}, {y2}, base));
      patch.add_nodes.push_back(make_node("Reshape", "", opset,
                                          {y2, patch.new_constant(base + "_shape", int64_vector(y_shape))},
                                          {add.outputs[0]}, base + "_unflatten"));
      return patch;
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<Pass> make_flattened_matmul_gemm_fusion_pass() { return std::make_unique<FlattenedMatMulGemmFusion>(); }

}  // namespace onyx::optimizer
