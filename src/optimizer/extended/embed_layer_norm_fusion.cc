// BERT's embedding layer: word and token-type lookups (Gather from constant
// tables), their sum, plus the position embeddings (a constant once the
// position ids are folded), layer-normalized. After skip_layer_norm_fusion it
// reads SkipLayerNormalization(Add(Gather(word, ids), Gather(type, tids)),
// positions, gamma, beta), or with a batch over 1 LayerNormalization of that
// sum plus the positions, and becomes one com.microsoft
// EmbedLayerNormalization, which looks each token up and normalizes it in one
// pass. Its ids are int32, as onnxruntime's signature has them: int64 ids are
// cast first, and must not be negative (Gather would count those from the
// end; BERT's never are). Its mask input stays empty (the attention mask is
// handled by the Attention nodes).
#include <array>

#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

// Gather(table, ids) along axis 0 of a constant float [rows, hidden] table
// with integer ids of rank 2, read only by `user`.
struct Lookup {
  size_t node;
  int32_t table;
  int32_t ids;
};

std::optional<Lookup> lookup(const PassContext& ctx, int32_t value, size_t user, int64_t hidden) {
  const int32_t p = ctx.producer_index(value);
  if (p < 0 || !ctx.only_used_by(value, user)) return std::nullopt;
  const graph::Node& g = ctx.node(static_cast<size_t>(p));
  if (!is_op(g, "Gather") || g.inputs.size() != 2 || attribute_int(g, "axis", 0) != 0) return std::nullopt;
  const Tensor* table = ctx.constant(g.inputs[0]);
  if (table == nullptr || table->dtype() != DataType::kFloat || table->rank() != 2 || table->dim(1) != hidden) {
    return std::nullopt;
  }
  const DataType id_type = ctx.elem_type(g.inputs[1]);
  const graph::TypeAndShape& ids = ctx.info(g.inputs[1]);
  if ((id_type != DataType::kInt64 && id_type != DataType::kInt32) || !ids.has_shape || ids.shape.size() != 2) {
    return std::nullopt;
  }
  return Lookup{static_cast<size_t>(p), g.inputs[0], g.inputs[1]};
}

class EmbedLayerNormFusion final : public Pass {
 public:
  std::string name() const override { return "embed_layer_norm_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& ln = ctx.node(index);
    if (ln.outputs.empty()) return std::nullopt;
    // SkipLayerNormalization(sum, positions, gamma, beta) without bias; or,
    // when the batch is not 1 (the position rows broadcast over it, so the
    // skip fusion left them), LayerNormalization(Add(sum, positions)).
    const bool skip = ln.domain == "com.microsoft" && ln.op_type == "SkipLayerNormalization" && ln.inputs.size() == 4;
    const bool plain = is_op(ln, "LayerNormalization") && ln.inputs.size() == 3 &&
                       (attribute_int(ln, "axis", -1) == -1 || attribute_int(ln, "axis", -1) == 2);
    if (!skip && !plain) return std::nullopt;
    for (size_t o = 1; o < ln.outputs.size(); ++o) {
      if (ln.outputs[o] != graph::kNoValue && (ctx.is_pinned(ln.outputs[o]) || !ctx.consumers(ln.outputs[o]).empty())) {
        return std::nullopt;
      }
    }
    if (!ctx.has_op("com.microsoft", "EmbedLayerNormalization")) return std::nullopt;
    const int32_t gamma_id = ln.inputs[skip ? 2 : 1];
    const int32_t beta_id = ln.inputs[skip ? 3 : 2];
    const Tensor* gamma = ctx.constant(gamma_id);
    if (gamma == nullptr || gamma->rank() != 1 || beta_id == graph::kNoValue) return std::nullopt;
    const int64_t hidden = gamma->dim(0);
    // The two summands of the normalized value, and the Add that made them (plain form).
    std::optional<size_t> outer_add;
    std::array<int32_t, 2> operands = {ln.inputs[0], skip ? ln.inputs[1] : graph::kNoValue};
    if (plain) {
      const int32_t p = ctx.producer_index(ln.inputs[0]);
      if (p < 0 || !ctx.only_used_by(ln.inputs[0], index)) return std::nullopt;
      const graph::Node& add = ctx.node(static_cast<size_t>(p));
      if (!is_op(add, "Add") || add.inputs.size() != 2) return std::nullopt;
      outer_add = static_cast<size_t>(p);
      operands = {add.inputs[0], add.inputs[1]};
    }
    const size_t sum_user = outer_add ? *outer_add : index;
    for (int side = 0; side < 2; ++side) {
      const int32_t sum = operands[static_cast<size_t>(side)];
      const int32_t positions_id = operands[static_cast<size_t>(1 - side)];
      const Tensor* positions = ctx.constant(positions_id);
      // Positions: [S, hidden] or [1, S, hidden], one row per position 0..S-1.
      if (positions == nullptr || positions->dtype() != DataType::kFloat ||
          positions->dim(positions->rank() - 1) != hidden ||
          (positions->rank() != 2 && (positions->rank() != 3 || positions->dim(0) != 1))) {
        continue;
      }
      const int32_t add_index = ctx.producer_index(sum);
      if (add_index < 0 || !ctx.only_used_by(sum, sum_user)) continue;
      const graph::Node& add = ctx.node(static_cast<size_t>(add_index));
      if (!is_op(add, "Add") || add.inputs.size() != 2) continue;
      std::optional<Lookup> a = lookup(ctx, add.inputs[0], static_cast<size_t>(add_index), hidden);
      std::optional<Lookup> b = lookup(ctx, add.inputs[1], static_cast<size_t>(add_index), hidden);
      if (!a || !b || a->node == b->node) continue;
      // The larger table is the vocabulary; both id tensors index [batch, sequence].
      if (ctx.constant(a->table)->dim(0) < ctx.constant(b->table)->dim(0)) std::swap(a, b);
      const graph::TypeAndShape& ids_info = ctx.info(a->ids);
      const int64_t seq = positions->dim(positions->rank() - 2);
      if (!ids_info.shape[1].is_known() || ids_info.shape[1].value != seq) continue;
      if (ctx.info(b->ids).shape.size() != 2) continue;

      Patch patch;
      auto as_int32 = [&](int32_t ids) {
        if (ctx.elem_type(ids) == DataType::kInt32) return ids;
        graph::TypeAndShape info = ctx.info(ids);
        info.type.elem_type = DataType::kInt32;
        const int32_t cast = patch.new_value(ctx.graph().value_name(ids) + "_int32", info);
        graph::Node node =
            make_node("Cast", "", ctx.node(a->node).opset, {ids}, {cast}, ctx.graph().value_name(ids) + "_to_int32");
        node.attributes["to"] = graph::Attribute::make_int("to", static_cast<int64_t>(DataType::kInt32));
        patch.add_nodes.push_back(std::move(node));
        return cast;
      };
      const int32_t word_ids = as_int32(a->ids);
      const int32_t segment_ids = as_int32(b->ids);
      Tensor table(DataType::kFloat, {seq, hidden});
      std::copy(positions->data<float>(), positions->data<float>() + seq * hidden, table.data<float>());
      const int32_t position_table =
          patch.new_constant(ctx.graph().value_name(positions_id) + "_table", std::move(table));
      graph::TypeAndShape mask_info;
      mask_info.type = ctx.info(a->ids).type;
      mask_info.type.elem_type = DataType::kInt32;
      mask_info.has_shape = true;
      mask_info.shape = {ids_info.shape[0]};
      const int32_t mask_index = patch.new_value(ctx.graph().value_name(ln.outputs[0]) + "_mask_index", mask_info);
      graph::Node fused =
          make_node("EmbedLayerNormalization", "com.microsoft", 1,
                    {word_ids, segment_ids, a->table, position_table, b->table, gamma_id, beta_id},
                    {ln.outputs[0], mask_index}, ln.name.empty() ? "EmbedLayerNorm" : ln.name + "_embed");
      fused.attributes["epsilon"] =
          graph::Attribute::make_float("epsilon", attribute_float(ln, "epsilon", skip ? 1e-12f : 1e-5f));
      patch.remove(index);
      if (outer_add) patch.remove(*outer_add);
      patch.remove(static_cast<size_t>(add_index));
      patch.remove(a->node);
      patch.remove(b->node);
      patch.add_nodes.push_back(std::move(fused));
      return patch;
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<Pass> make_embed_layer_norm_fusion_pass() { return std::make_unique<EmbedLayerNormFusion>(); }

}  // namespace onyx::optimizer
