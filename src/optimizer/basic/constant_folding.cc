// Constant folding: a node whose inputs are all constants is evaluated once
// with its CPU kernel and its outputs become initializers. Budget: an output
// larger than OptimizerOptions::constant_folding_budget_bytes is never made,
// so folding cannot blow up the model (Expand or Tile of a small constant).
#include <memory>
#include <set>

#include "optimizer/pass.h"
#include "providers/kernel.h"

namespace onyx::optimizer {
namespace {

// Evaluates one node on host tensors; no subgraphs, no thread pool.
class FoldingContext final : public KernelContext {
 public:
  FoldingContext(std::vector<Value> inputs, std::vector<char> requested, std::string label)
      : inputs_(std::move(inputs)), requested_(std::move(requested)), outputs_(requested_.size()),
        label_(std::move(label)) {}
  size_t input_count() const override { return inputs_.size(); }
  const Value* input(size_t i) const override {
    return i < inputs_.size() && !inputs_[i].is_none() ? &inputs_[i] : nullptr;
  }
  size_t output_count() const override { return outputs_.size(); }
  bool output_requested(size_t i) const override { return i < requested_.size() && requested_[i]; }
  Tensor& allocate_output(size_t i, DataType dtype, const Shape& shape) override {
    outputs_.at(i) = Value(Tensor(dtype, shape));
    return outputs_[i].tensor();
  }
  void set_output(size_t i, Value value) override { outputs_.at(i) = std::move(value); }
  ThreadPool* thread_pool() const override { return nullptr; }
  Allocator* allocator() const override { return cpu_allocator(); }
  Status run_subgraph(const std::string&, const std::vector<Value>&, std::vector<Value>&) override {
    return not_implemented(label_, ": constant folding does not run subgraphs");
  }
  std::string label() const override { return label_; }
  std::vector<Value>& outputs() { return outputs_; }

 private:
  std::vector<Value> inputs_;
  std::vector<char> requested_;
  std::vector<Value> outputs_;
  std::string label_;
};

// Ops whose result is not a function of their inputs, or that only make
// sense at run time.
bool never_fold(const graph::Node& node) {
  static const std::set<std::string> kOps = {
      "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli",
      "Dropout", "If", "Loop", "Scan", "SequenceMap", "Optional", "OptionalGetElement", "OptionalHasElement"};
  return kOps.count(node.op_type) != 0 || has_subgraph(node);
}

// Ops whose output can be much larger than their inputs: folded only when
// inference already knows the output's size.
bool may_expand(const graph::Node& node) {
  static const std::set<std::string> kOps = {"ConstantOfShape", "Expand", "Tile", "Range", "Resize", "Upsample",
                                             "Pad", "OneHot", "EyeLike", "Einsum", "MatMul", "Gemm"};
  return node.domain.empty() && kOps.count(node.op_type) != 0;
}

class ConstantFolding final : public Pass {
 public:
  std::string name() const override { return "constant_folding"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& node = ctx.node(index);
    if (never_fold(node)) return std::nullopt;
    std::vector<Value> inputs;
    for (int32_t in : node.inputs) {
      if (in == graph::kNoValue) {
        inputs.emplace_back();
        continue;
      }
      const Tensor* t = ctx.constant(in);
      if (t == nullptr) return std::nullopt;
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
    const KernelDef* def = cpu_kernel_registry().find(node.domain, node.op_type, node.since_version);
    if (def == nullptr) return std::nullopt;
    std::vector<Value> outputs;
    try {
      KernelInfo info(ctx.graph(), node, index, cpu_allocator());
      auto kernel = def->factory(info);
      if (!kernel.is_ok()) return std::nullopt;
      FoldingContext run(std::move(inputs), requested, node.label(index));
      if (!(*kernel)->compute(run).is_ok()) return std::nullopt;
      outputs = std::move(run.outputs());
    } catch (const std::exception&) {
      return std::nullopt;  // the node fails at run time too, with its own message
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
};

}  // namespace

std::unique_ptr<Pass> make_constant_folding_pass() { return std::make_unique<ConstantFolding>(); }

}  // namespace onyx::optimizer
