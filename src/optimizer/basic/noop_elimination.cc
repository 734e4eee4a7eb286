// Removes nodes that pass their input through unchanged: Identity, Dropout at
// inference, Cast to the type it already has, Reshape to the shape it already
// has, Transpose by the identity permutation. Consumers read the input instead;
// a graph output keeps its name (the input's producer is made to write it).
#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

bool same_known_shape(const graph::TypeAndShape& a, const graph::TypeAndShape& b) {
  if (!a.has_shape || !b.has_shape || a.shape.size() != b.shape.size()) return false;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    const graph::Dim& x = a.shape[d];
    const graph::Dim& y = b.shape[d];
    if (x.is_known() && y.is_known() && x.value == y.value) continue;
    if (!x.is_known() && !y.is_known() && !x.symbol.empty() && x.symbol == y.symbol) continue;
    return false;
  }
  return true;
}

// True when the node's output 0 equals its input 0.
bool is_noop(const PassContext& ctx, const graph::Node& node) {
  if (!node.domain.empty() || node.inputs.empty() || node.outputs.empty()) return false;
  const int32_t in = node.inputs[0];
  const int32_t out = node.outputs[0];
  if (in < 0 || out < 0) return false;
  // Any extra output (Dropout's mask) must be unused.
  for (size_t o = 1; o < node.outputs.size(); ++o) {
    const int32_t extra = node.outputs[o];
    if (extra != graph::kNoValue && (ctx.is_pinned(extra) || !ctx.consumers(extra).empty())) return false;
  }
  const std::string& op = node.op_type;
  if (op == "Identity") return ctx.info(in).type.kind == ValueType::Kind::kTensor;
  if (op == "Dropout") {
    // Dropout is the identity unless training_mode (input 2) is set.
    if (node.inputs.size() > 2 && node.inputs[2] != graph::kNoValue) {
      std::optional<double> training = ctx.scalar(node.inputs[2]);
      if (!training || *training != 0.0) return false;
    }
    return true;
  }
  if (op == "Cast") {
    const DataType from = ctx.elem_type(in);
    return from != DataType::kUndefined && from == static_cast<DataType>(attribute_int(node, "to", 0));
  }
  if (op == "Reshape") return same_known_shape(ctx.info(in), ctx.info(out));
  if (op == "Transpose") {
    const graph::Attribute* perm = node.attribute("perm");
    if (perm == nullptr) return ctx.info(in).has_shape && ctx.info(in).shape.size() <= 1;
    for (size_t i = 0; i < perm->ints.size(); ++i) {
      if (perm->ints[i] != static_cast<int64_t>(i)) return false;
    }
    return true;
  }
  return false;
}

class NoopElimination final : public Pass {
 public:
  std::string name() const override { return "noop_elimination"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& node = ctx.node(index);
    if (!is_noop(ctx, node)) return std::nullopt;
    const int32_t in = node.inputs[0];
    const int32_t out = node.outputs[0];
    Patch patch;
    patch.remove(index);
    if (!ctx.is_pinned(out)) {
      patch.replace(out, in);
      return patch;
    }
    // The output is a graph output and must keep its name: let the input's
    // producer write it, when the input itself is not pinned.
    const int32_t p = ctx.producer_index(in);
    if (p < 0 || ctx.is_pinned(in)) return std::nullopt;
    graph::Node producer = ctx.node(static_cast<size_t>(p));
    for (int32_t& o : producer.outputs) {
      if (o == in) o = out;
    }
    patch.remove(static_cast<size_t>(p));
    patch.add_nodes.push_back(std::move(producer));
    patch.replace(in, out);
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_noop_elimination_pass() { return std::make_unique<NoopElimination>(); }

}  // namespace onyx::optimizer
