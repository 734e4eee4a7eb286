// Transposes that undo each other, as exports from channels-last frameworks
// write them around element-wise work (NHWC -> NCHW, Relu, NCHW -> NHWC):
//  - Transpose(Transpose(x, p1), p2) becomes one Transpose(x, p1[p2[i]]),
//    which noop_elimination removes when that is the identity;
//  - a Transpose followed by element-wise ops that lead to another Transpose
//    moves past them, one op per sweep, until the two meet. Element-wise ops
//    are unary ones, and binary ones whose other operand is a constant (a
//    scalar, or a tensor of full rank that is transposed back here);
//  - Gather(Transpose(x), indices) becomes Transpose(Gather(x, indices)) on
//    the matching axis of x: only the gathered rows are transposed. A decoder
//    with tied embeddings gathers its token rows from the transposed lm_head
//    weight: [vocab, hidden], which would otherwise be transposed whole on
//    every run (or folded into a second copy of the weight).
#include <cstring>

#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

std::optional<std::vector<int64_t>> permutation(const PassContext& ctx, const graph::Node& t) {
  if (!is_op(t, "Transpose") || t.inputs.size() != 1 || t.outputs.size() != 1) return std::nullopt;
  const graph::Attribute* perm = t.attribute("perm");
  if (perm != nullptr) return perm->ints;
  // No perm: the reversed axes, when the rank is known.
  const graph::TypeAndShape& info = ctx.info(t.inputs[0]);
  if (!info.has_shape) return std::nullopt;
  std::vector<int64_t> p(info.shape.size());
  for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int64_t>(p.size() - 1 - i);
  return p;
}

bool is_unary_elementwise(const graph::Node& n) {
  static const char* kOps[] = {"Relu",     "Sigmoid", "Tanh", "LeakyRelu",  "Elu",  "Selu", "Abs",         "Neg",
                               "Exp",      "Log",     "Sqrt", "Reciprocal", "Erf",  "Cast", "HardSigmoid", "HardSwish",
                               "Softplus", "Floor",   "Ceil", "Round",      "Sign", "Not",  "Identity",    "Gelu"};
  if (!n.domain.empty() || n.inputs.size() != 1 || n.outputs.size() != 1) return false;
  for (const char* op : kOps) {
    if (n.op_type == op) return true;
  }
  return false;
}

bool is_binary_elementwise(const graph::Node& n) {
  static const char* kOps[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu"};
  if (!n.domain.empty() || n.inputs.size() != 2 || n.outputs.size() != 1) return false;
  for (const char* op : kOps) {
    if (n.op_type == op) return true;
  }
  return false;
}

// A constant transposed by `perm` (any element type of fixed size).
std::optional<Tensor> transpose_constant(const Tensor& c, const std::vector<int64_t>& perm) {
  const size_t rank = perm.size();
  if (static_cast<size_t>(c.rank()) != rank || c.dtype() == DataType::kString) return std::nullopt;
  Shape out_shape(rank);
  for (size_t i = 0; i < rank; ++i) out_shape[i] = c.dim(perm[i]);
  Tensor out(c.dtype(), out_shape);
  const size_t elem = dtype_size(c.dtype());
  std::vector<int64_t> in_strides(rank, 1);
  for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * c.dim(static_cast<int64_t>(i));
  std::vector<int64_t> index(rank, 0);
  const auto* src = static_cast<const unsigned char*>(c.raw_data());
  auto* dst = static_cast<unsigned char*>(out.raw_data());
  for (int64_t o = 0; o < out.size(); ++o) {
    int64_t from = 0;
    for (size_t i = 0; i < rank; ++i) from += index[i] * in_strides[static_cast<size_t>(perm[i])];
    std::memcpy(dst + static_cast<size_t>(o) * elem, src + static_cast<size_t>(from) * elem, elem);
    for (size_t i = rank; i-- > 0;) {
      if (++index[i] < out_shape[i]) break;
      index[i] = 0;
    }
  }
  return out;
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

class TransposeOptimization final : public Pass {
 public:
  std::string name() const override { return "transpose_optimization"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& t = ctx.node(index);
    std::optional<std::vector<int64_t>> perm = permutation(ctx, t);
    if (!perm) return std::nullopt;
    const int32_t x = t.inputs[0];
    const int32_t y = t.outputs[0];
    // Transpose of a Transpose read by nothing else: one Transpose.
    const int32_t p = ctx.producer_index(x);
    if (p >= 0 && ctx.only_used_by(x, index)) {
      const graph::Node& inner = ctx.node(static_cast<size_t>(p));
      if (std::optional<std::vector<int64_t>> p1 = permutation(ctx, inner); p1 && p1->size() == perm->size()) {
        std::vector<int64_t> composed(perm->size());
        for (size_t i = 0; i < perm->size(); ++i) composed[i] = (*p1)[static_cast<size_t>((*perm)[i])];
        graph::Node merged = t;
        merged.inputs = {inner.inputs[0]};
        merged.attributes["perm"] = graph::Attribute::make_ints("perm", composed);
        Patch patch;
        patch.remove(static_cast<size_t>(p));
        patch.remove(index);
        patch.add_nodes.push_back(std::move(merged));
        return patch;
      }
    }
    if (std::optional<Patch> gather = gather_first(ctx, index, *perm)) return gather;
    // Move past the element-wise op reading y, when a chain of them ends at a Transpose.
    if (!leads_to_transpose(ctx, y)) return std::nullopt;
    const size_t op_index = ctx.consumers(y)[0];
    const graph::Node& op = ctx.node(op_index);
    graph::Node moved = op;
    Patch patch;
    for (size_t i = 0; i < op.inputs.size(); ++i) {
      if (op.inputs[i] == y) {
        moved.inputs[i] = x;
        continue;
      }
      const Tensor* c = ctx.constant(op.inputs[i]);
      if (c == nullptr) return std::nullopt;
      if (c->size() == 1 && c->rank() <= 1) continue;  // a scalar broadcasts the same either way
      std::optional<Tensor> back = transpose_constant(*c, inverse(*perm));
      if (!back) return std::nullopt;
      moved.inputs[i] = patch.new_constant(ctx.graph().value_name(op.inputs[i]) + "_transposed", std::move(*back));
    }
    const int32_t z = op.outputs[0];
    graph::TypeAndShape info = ctx.info(x);
    info.type.elem_type = ctx.elem_type(z);
    const int32_t before = patch.new_value(ctx.graph().value_name(z) + "_untransposed", info);
    moved.outputs = {before};
    graph::Node transpose = t;
    transpose.inputs = {before};
    transpose.outputs = {z};
    transpose.attributes["perm"] = graph::Attribute::make_ints("perm", *perm);
    patch.remove(index);
    patch.remove(op_index);
    patch.add_nodes.push_back(std::move(moved));
    patch.add_nodes.push_back(std::move(transpose));
    return patch;
  }

 private:
  // Gather(Transpose(x, perm), indices, axis a) == Transpose(Gather(x, indices,
  // axis perm[a]), back): x's axes keep their order around the indices' axes
  // in the Gather's result, and `back` puts them where perm had them.
  static std::optional<Patch> gather_first(const PassContext& ctx, size_t index, const std::vector<int64_t>& perm) {
    const graph::Node& t = ctx.node(index);
    const int32_t y = t.outputs[0];
    const auto& users = ctx.consumers(y);
    if (users.size() != 1 || ctx.is_pinned(y)) return std::nullopt;
    const graph::Node& gather = ctx.node(users[0]);
    if (!is_op(gather, "Gather") || gather.inputs.size() != 2 || gather.inputs[0] != y || gather.inputs[1] == y)
      return std::nullopt;
    const graph::TypeAndShape& idx = ctx.info(gather.inputs[1]);
    if (!idx.has_shape) return std::nullopt;
    const auto rank = static_cast<int64_t>(perm.size());
    int64_t a = attribute_int(gather, "axis", 0);
    if (a < 0) a += rank;
    if (a < 0 || a >= rank) return std::nullopt;
    const int64_t b = perm[static_cast<size_t>(a)];
    const auto q = static_cast<int64_t>(idx.shape.size());
    // Where axis k of x lands in Gather(x, indices, axis b).
    auto position = [&](int64_t k) { return k < b ? k : k + q - 1; };
    std::vector<int64_t> back;
    for (int64_t i = 0; i < a; ++i) back.push_back(position(perm[static_cast<size_t>(i)]));
    for (int64_t j = 0; j < q; ++j) back.push_back(b + j);
    for (int64_t i = a + 1; i < rank; ++i) back.push_back(position(perm[static_cast<size_t>(i)]));
    const int32_t z = gather.outputs[0];
    graph::TypeAndShape info;
    info.type = ctx.info(z).type;
    const graph::TypeAndShape& xi = ctx.info(t.inputs[0]);
    if (xi.has_shape) {
      info.has_shape = true;
      info.shape.assign(xi.shape.begin(), xi.shape.begin() + b);
      info.shape.insert(info.shape.end(), idx.shape.begin(), idx.shape.end());
      info.shape.insert(info.shape.end(), xi.shape.begin() + b + 1, xi.shape.end());
    }
    Patch patch;
    const int32_t gathered = patch.new_value(ctx.graph().value_name(z) + "_untransposed", info);
    graph::Node first = gather;
    first.inputs = {t.inputs[0], gather.inputs[1]};
    first.outputs = {gathered};
    first.attributes["axis"] = graph::Attribute::make_int("axis", b);
    graph::Node transpose = t;
    transpose.inputs = {gathered};
    transpose.outputs = {z};
    transpose.attributes["perm"] = graph::Attribute::make_ints("perm", back);
    patch.remove(index);
    patch.remove(users[0]);
    patch.add_nodes.push_back(std::move(first));
    patch.add_nodes.push_back(std::move(transpose));
    return patch;
  }

  // True when `value` feeds (as its only use) a chain of element-wise ops,
  // each the only reader of the one before, whose end feeds a Transpose.
  bool leads_to_transpose(const PassContext& ctx, int32_t value) const {
    for (int steps = 0; steps < 64; ++steps) {
      const auto& users = ctx.consumers(value);
      if (users.size() != 1 || ctx.is_pinned(value)) return false;
      const graph::Node& n = ctx.node(users[0]);
      if (is_op(n, "Transpose")) return steps > 0;
      if (!is_unary_elementwise(n) && !is_binary_elementwise(n)) return false;
      if (is_binary_elementwise(n)) {
        const int32_t other = n.inputs[0] == value ? n.inputs[1] : n.inputs[0];
        if (n.inputs[0] == n.inputs[1] || ctx.constant(other) == nullptr) return false;
        // The op must not broadcast the moved operand into a larger result.
        const graph::TypeAndShape& in = ctx.info(value);
        const graph::TypeAndShape& out = ctx.info(n.outputs[0]);
        if (!in.has_shape || !out.has_shape || in.shape.size() != out.shape.size()) return false;
        const Tensor* c = ctx.constant(other);
        if (!(c->size() == 1 && c->rank() <= 1) && static_cast<size_t>(c->rank()) != in.shape.size()) return false;
        for (size_t d = 0; d < in.shape.size(); ++d) {
          if (!in.shape[d].is_known() || !out.shape[d].is_known() || in.shape[d].value != out.shape[d].value)
            return false;
        }
      }
      value = n.outputs[0];
    }
    return false;
  }
};

}  // namespace

std::unique_ptr<Pass> make_transpose_optimization_pass() { return std::make_unique<TransposeOptimization>(); }

}  // namespace onyx::optimizer
