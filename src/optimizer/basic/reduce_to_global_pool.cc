// ReduceMean over every spatial axis of an [N, C, ...] float tensor, keeping
// dims, is GlobalAveragePool: the same values in the same shape. PyTorch's dynamo exporter writes a squeeze-excitation
// block's x.mean((2, 3), keepdim=True) this way, where the TorchScript
// exporter wrote GlobalAveragePool. The pooling op is the one a provider's
// layout passes know (the CPU's NCHWc chain goes through it without leaving
// the blocked layout), and its kernel reads each channel's plane as one run.
#include <algorithm>

#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

class ReduceToGlobalPool final : public Pass {
 public:
  std::string name() const override { return "reduce_to_global_pool"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& r = ctx.node(index);
    // ReduceMax is left alone: ReduceMax must give NaN for a NaN anywhere in
    // the plane, which GlobalMaxPool's kernels do not promise.
    if (!is_op(r, "ReduceMean") || r.inputs.empty() || r.outputs.size() != 1) return std::nullopt;
    if (attribute_int(r, "keepdims", 1) != 1 || ctx.elem_type(r.inputs[0]) != DataType::kFloat) return std::nullopt;
    const graph::TypeAndShape& x = ctx.info(r.inputs[0]);
    // At least two spatial axes: over [N, C, L] the last axis is also the
    // LayerNormalization pattern, which its own fusion looks for.
    if (!x.has_shape || x.shape.size() < 4) return std::nullopt;
    const auto rank = static_cast<int64_t>(x.shape.size());
    std::vector<int64_t> axes;
    if (const graph::Attribute* a = r.attribute("axes")) axes = a->ints;
    if (r.inputs.size() > 1 && r.inputs[1] != graph::kNoValue) {
      const Tensor* t = ctx.constant(r.inputs[1]);
      if (t == nullptr || t->dtype() != DataType::kInt64) return std::nullopt;
      axes.assign(t->data<int64_t>(), t->data<int64_t>() + t->size());
    }
    // Empty axes reduce everything (or nothing, with noop_with_empty_axes).
    if (static_cast<int64_t>(axes.size()) != rank - 2) return std::nullopt;
    for (int64_t& a : axes) {
      if (a < -rank || a >= rank) return std::nullopt;
      if (a < 0) a += rank;
    }
    std::sort(axes.begin(), axes.end());
    for (int64_t d = 2; d < rank; ++d) {
      if (axes[static_cast<size_t>(d - 2)] != d) return std::nullopt;
    }
    // A spatial extent of 0 makes ReduceMean's mean NaN; that corner stays with it.
    for (int64_t d = 2; d < rank; ++d) {
      const graph::Dim& dim = x.shape[static_cast<size_t>(d)];
      if (!dim.is_known() || dim.value <= 0) return std::nullopt;
    }
    Patch patch;
    patch.remove(index);
    patch.add_nodes.push_back(make_node("GlobalAveragePool", "", 1, {r.inputs[0]},
                                        {r.outputs[0]}, r.name));
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_reduce_to_global_pool_pass() { return std::make_unique<ReduceToGlobalPool>(); }

}  // namespace onyx::optimizer
