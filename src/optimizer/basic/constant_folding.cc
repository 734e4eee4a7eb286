// Constant folding: a node whose inputs are all constants is evaluated once
// (OptimizerOptions::ops, the CPU provider's kernels in a session) and its
// outputs become initializers. Budget: an output
// larger than OptimizerOptions::constant_folding_budget_bytes is never made,
// so folding cannot blow up the model (Expand or Tile of a small constant).
#include <memory>
#include <set>

#include "graph/subgraphs.h"
#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

// Ops whose result is not a function of their inputs, or that only make
// sense at run time.
bool never_fold(const graph::Node& node) {
  static const std::set<std::string> kOps = {"RandomNormal",
                                             "RandomUniform",
                                             "RandomNormalLike",
                                             "RandomUniformLike",
                                             "Multinomial",
                                             "Bernoulli",
                                             "Dropout",
                                             "If",
                                             "Loop",
                                             "Scan",
                                             "SequenceMap",
                                             "Optional",
                                             "OptionalGetElement",
                                             "OptionalHasElement"};
  return kOps.count(node.op_type) != 0 || graph::has_subgraphs(node);
}

// Ops whose output can be much larger than their inputs: folded only when
// inference already knows the output's size.
bool may_expand(const graph::Node& node) {
  static const std::set<std::string> kOps = {"ConstantOfShape", "Expand",   "Tile",   "Range",
                                             "Resize",          "Upsample", "Pad",    "OneHot",
                                             "EyeLike",         "Einsum",   "MatMul", "Gemm"};
  return node.domain.empty() && kOps.count(node.op_type) != 0;
}

// With the QDQ fusions on (extended level and up), DequantizeLinear of a
// constant weight is what they match, so the basic pass leaves it; the same
// pass runs again after them (after_qdq) and folds what they did not take.
bool leave_for_qdq(const PassContext& ctx, const graph::Node& node) {
  return is_op(node, "DequantizeLinear") && ctx.options().qdq_fusions &&
         static_cast<int>(ctx.options().level) >= static_cast<int>(GraphOptimizationLevel::kEnableExtended);
}

class ConstantFolding final : public Pass {
 public:
  explicit ConstantFolding(bool after_qdq) : after_qdq_(after_qdq) {}
  std::string name() const override { return after_qdq_ ? "constant_folding_after_qdq" : "constant_folding"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& node = ctx.node(index);
    if (never_fold(node) || ctx.options().ops == nullptr || !ctx.owns(index)) return std::nullopt;
    if (after_qdq_ ? !ctx.options().qdq_fusions : leave_for_qdq(ctx, node)) return std::nullopt;
    std::vector<Value> inputs;
    inputs.reserve(node.inputs.size());
    for (int32_t in : node.inputs) {
      if (in == graph::kNoValue) {
        inputs.emplace_back();
        continue;
      }
      const Tensor* t = ctx.constant(in);
      if (t == nullptr || !t->device().host_readable()) return std::nullopt;
      inputs.emplace_back(*t);
    }
    if (node.inputs.empty() && node.op_type != "Constant") return std::nullopt;
    const size_t budget = ctx.options().constant_folding_budget_bytes;
    std::vector<char> requested;
    bool any_output = false;
    for (int32_t out : node.outputs) {
      // A graph output keeps its producer: graph outputs are not initializers.
      if (out != graph::kNoValue && ctx.is_pinned(out)) return std::nullopt;
      const bool used = out != graph::kNoValue && !ctx.consumers(out).empty();
      requested.push_back(out != graph::kNoValue ? 1 : 0);
      any_output = any_output || used;
      if (out == graph::kNoValue) continue;
      // Refuse before computing when the size is known to be too large.
      std::optional<Shape> shape = ctx.known_shape(out);
      const DataType dtype = ctx.elem_type(out);
      if (shape && dtype != DataType::kUndefined && dtype != DataType::kString) {
        const double bytes = static_cast<double>(shape_size(*shape)) * static_cast<double>(dtype_size(dtype));
        if (bytes > static_cast<double>(budget)) return std::nullopt;
      } else if (may_expand(node)) {
        return std::nullopt;
      }
    }
    if (!any_output) return std::nullopt;  // dead: left to dead-code elimination
    std::vector<const Value*> bound;
    for (const Value& v : inputs) bound.push_back(v.is_none() ? nullptr : &v);
    std::vector<Value> outputs;
    try {
      // A node that fails here fails at run time too, with its own message.
      if (!ctx.options().ops->evaluate(ctx.graph(), index, bound, requested, outputs).is_ok()) return std::nullopt;
    } catch (const std::exception&) {
      return std::nullopt;
    }
    Patch patch;
    patch.remove(index);
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const int32_t out = node.outputs[o];
      if (out == graph::kNoValue) continue;
      if (o >= outputs.size() || !outputs[o].is_tensor()) return std::nullopt;
      const Tensor& t = outputs[o].tensor();
      if (!t.defined() || t.bytes() > budget) return std::nullopt;
      // The output may alias an input (Reshape); initializers are never
      // written, so sharing the buffer is safe.
      patch.make_constant.emplace_back(out, t);
    }
    return patch;
  }

 private:
  bool after_qdq_;
};

}  // namespace

std::unique_ptr<Pass> make_constant_folding_pass(bool after_qdq) {
  return std::make_unique<ConstantFolding>(after_qdq);
}

}  // namespace onyx::optimizer
