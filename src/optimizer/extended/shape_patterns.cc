// Shape reasoning for transformer fusions: evaluates shape tensors built at
// run time into terms (constants and dims of named values) and decides when
// two values share their leading (batch, sequence) dims.
#include "optimizer/extended/shape_patterns.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

namespace onyx::optimizer {
namespace {

constexpr int kMaxDepth = 16;

std::optional<std::vector<int64_t>> ints_of_tensor(const Tensor& t) {
  if (t.size() > 64) return std::nullopt;
  std::vector<int64_t> out;
  if (t.dtype() == DataType::kInt64) {
    for (int64_t i = 0; i < t.size(); ++i) out.push_back(t.data<int64_t>()[i]);
  } else if (t.dtype() == DataType::kInt32) {
    for (int64_t i = 0; i < t.size(); ++i) out.push_back(t.data<int32_t>()[i]);
  } else {
    return std::nullopt;
  }
  return out;
}

bool is_int_type(DataType t) { return t == DataType::kInt64 || t == DataType::kInt32; }

// Length of a 0-D/1-D value from its inferred shape.
std::optional<size_t> vector_length(const PassContext& ctx, int32_t value) {
  std::optional<Shape> s = ctx.known_shape(value);
  if (!s || s->size() > 1) return std::nullopt;
  return s->empty() ? 1 : static_cast<size_t>((*s)[0]);
}

std::optional<std::vector<ShapeTerm>> terms_at(const PassContext& ctx, int32_t value, std::vector<size_t>* visited,
                                               int depth);

// Like terms_at, but a piece that cannot be evaluated and whose length is
// known gives that many unknown terms.
std::optional<std::vector<ShapeTerm>> terms_or_unknown(const PassContext& ctx, int32_t value,
                                                       std::vector<size_t>* visited, int depth) {
  if (auto t = terms_at(ctx, value, visited, depth)) return t;
  if (auto n = vector_length(ctx, value); n && *n <= 64) return std::vector<ShapeTerm>(*n);
  return std::nullopt;
}

std::optional<std::vector<ShapeTerm>> terms_at(const PassContext& ctx, int32_t value, std::vector<size_t>* visited,
                                               int depth) {
  if (depth > kMaxDepth || value < 0) return std::nullopt;
  if (auto c = constant_ints(ctx, value)) {
    std::vector<ShapeTerm> out;
    for (int64_t v : *c) out.push_back(ShapeTerm::of_constant(v));
    return out;
  }
  const int32_t p = ctx.producer_index(value);
  if (p < 0) return std::nullopt;
  const graph::Node& n = ctx.node(static_cast<size_t>(p));
  if (!n.domain.empty() || n.inputs.empty() || n.outputs.size() != 1) return std::nullopt;
  auto note = [&] {
    if (visited != nullptr) visited->push_back(static_cast<size_t>(p));
  };
  const std::string& op = n.op_type;
  if (op == "Shape") {
    std::optional<size_t> r = rank_of(ctx, n.inputs[0]);
    if (!r) return std::nullopt;
    const int64_t rank = static_cast<int64_t>(*r);
    int64_t start = attribute_int(n, "start", 0), end = attribute_int(n, "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, 0, rank);
    std::vector<ShapeTerm> out;
    for (int64_t i = start; i < end; ++i) out.push_back(ShapeTerm::of_dim(n.inputs[0], i));
    note();
    return out;
  }
  if (!is_int_type(ctx.elem_type(value))) return std::nullopt;
  if (op == "Cast" || op == "Identity") {
    if (!is_int_type(ctx.elem_type(n.inputs[0]))) return std::nullopt;
    auto t = terms_at(ctx, n.inputs[0], visited, depth + 1);
    if (t) note();
    return t;
  }
  if (op == "Unsqueeze" || op == "Squeeze" || op == "Reshape") {
    auto t = terms_at(ctx, n.inputs[0], visited, depth + 1);
    if (!t || t->size() != 1) return std::nullopt;
    note();
    return t;
  }
  if (op == "Concat") {
    const int64_t axis = attribute_int(n, "axis", 0);
    if (axis != 0 && axis != -1) return std::nullopt;
    std::vector<ShapeTerm> out;
    for (int32_t in : n.inputs) {
      auto t = terms_or_unknown(ctx, in, visited, depth + 1);
      if (!t) return std::nullopt;
      out.insert(out.end(), t->begin(), t->end());
    }
    note();
    return out;
  }
  if (op == "Gather") {
    if (n.inputs.size() != 2 || attribute_int(n, "axis", 0) != 0) return std::nullopt;
    auto data = terms_at(ctx, n.inputs[0], visited, depth + 1);
    auto idx = constant_ints(ctx, n.inputs[1]);
    if (!data || !idx) return std::nullopt;
    std::vector<ShapeTerm> out;
    const int64_t size = static_cast<int64_t>(data->size());
    for (int64_t i : *idx) {
      if (i < 0) i += size;
      if (i < 0 || i >= size) return std::nullopt;
      out.push_back((*data)[static_cast<size_t>(i)]);
    }
    note();
    return out;
  }
  if (op == "Slice" && n.inputs.size() >= 3) {
    auto data = terms_at(ctx, n.inputs[0], visited, depth + 1);
    auto starts = constant_ints(ctx, n.inputs[1]);
    auto ends = constant_ints(ctx, n.inputs[2]);
    if (!data || !starts || !ends || starts->size() != 1 || ends->size() != 1) return std::nullopt;
    if (n.inputs.size() > 3 && n.inputs[3] != graph::kNoValue) {
      auto axes = constant_ints(ctx, n.inputs[3]);
      if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1)) return std::nullopt;
    }
    if (n.inputs.size() > 4 && n.inputs[4] != graph::kNoValue) {
      auto steps = constant_ints(ctx, n.inputs[4]);
      if (!steps || steps->size() != 1 || (*steps)[0] != 1) return std::nullopt;
    }
    const int64_t size = static_cast<int64_t>(data->size());
    int64_t s = (*starts)[0], e = (*ends)[0];
    if (s < 0) s += size;
    if (e < 0) e += size;
    s = std::clamp<int64_t>(s, 0, size);
    e = std::clamp<int64_t>(e, 0, size);
    note();
    return std::vector<ShapeTerm>(data->begin() + s, data->begin() + std::max(s, e));
  }
  return std::nullopt;
}

int32_t leading_root_at(const PassContext& ctx, int32_t value, int depth);

bool same_leading_dim_at(const PassContext& ctx, int32_t a, int32_t b, int64_t axis, int depth) {
  if (a == b) return true;
  if (a < 0 || b < 0 || axis < 0 || axis > 1) return false;
  const graph::TypeAndShape& ia = ctx.info(a);
  const graph::TypeAndShape& ib = ctx.info(b);
  if (ia.has_shape && ib.has_shape && static_cast<int64_t>(ia.shape.size()) > axis &&
      static_cast<int64_t>(ib.shape.size()) > axis) {
    const graph::Dim& x = ia.shape[static_cast<size_t>(axis)];
    const graph::Dim& y = ib.shape[static_cast<size_t>(axis)];
    if (x.is_known() && y.is_known()) return x.value == y.value;
    if (!x.is_known() && !y.is_known() && !x.symbol.empty() && x.symbol == y.symbol) return true;
  }
  if (depth > kMaxDepth) return false;
  return leading_root_at(ctx, a, depth + 1) == leading_root_at(ctx, b, depth + 1);
}

// True when Reshape `n` keeps dims 0 and 1 of its input.
bool reshape_keeps_first_two(const PassContext& ctx, const graph::Node& n, int depth) {
  if (n.inputs.size() < 2) return false;
  const bool allow_zero = attribute_int(n, "allowzero", 0) != 0;
  auto terms = terms_at(ctx, n.inputs[1], nullptr, depth + 1);
  std::optional<size_t> in_rank = rank_of(ctx, n.inputs[0]);
  if (!terms || terms->size() < 3 || !in_rank || *in_rank < 3) return false;
  for (int64_t i = 0; i < 2; ++i) {
    const ShapeTerm& t = (*terms)[static_cast<size_t>(i)];
    if (t.is_constant(0) && !allow_zero) continue;
    if (t.kind == ShapeTerm::Kind::kDim && t.axis == i && same_leading_dim_at(ctx, t.value, n.inputs[0], i, depth + 1)) {
      continue;
    }
    return false;
  }
  return true;
}

int32_t leading_root_at(const PassContext& ctx, int32_t value, int depth) {
  static const std::unordered_set<std::string> kShapePreserving = {
      "Relu", "Gelu", "Erf", "Tanh", "Sigmoid", "Cast", "Identity", "Dropout", "Softmax", "LogSoftmax", "Sqrt",
      "Neg", "Exp", "LayerNormalization", "Not", "IsNaN", "Abs", "Clip", "LeakyRelu", "HardSigmoid"};
  static const std::unordered_set<std::string> kMsShapePreserving = {
      "Gelu", "FastGelu", "BiasGelu", "QuickGelu", "SkipLayerNormalization", "SkipSimplifiedLayerNormalization",
      "SimplifiedLayerNormalization", "Attention", "MultiHeadAttention"};
  for (int step = 0; step < 64 && depth <= kMaxDepth; ++step) {
    const graph::Node* n = ctx.producer(value);
    if (n == nullptr || n->inputs.empty() || n->outputs.empty()) break;
    // Every output of a Split or a normalization keeps the leading dims
    // (SkipLayerNormalization's residual sum, LayerNormalization's mean).
    if (n->outputs[0] != value && !is_op(*n, "Split") && !is_op(*n, "LayerNormalization") &&
        !(n->domain == "com.microsoft" && (n->op_type == "SkipLayerNormalization" ||
                                           n->op_type == "SkipSimplifiedLayerNormalization"))) {
      break;
    }
    const int32_t a = n->inputs[0];
    const std::string& op = n->op_type;
    if (n->domain == "com.microsoft") {
      if (!kMsShapePreserving.count(op)) break;
      value = a;
      continue;
    }
    if (!n->domain.empty()) break;
    if (kShapePreserving.count(op)) {
      value = a;
      continue;
    }
    if (op == "MatMul" && n->inputs.size() == 2) {
      std::optional<size_t> ra = rank_of(ctx, a), rb = rank_of(ctx, n->inputs[1]);
      if (!ra || !rb || *ra < 3 || *rb != 2) break;
      value = a;
      continue;
    }
    if ((op == "Add" || op == "Sub" || op == "Mul" || op == "Div") && n->inputs.size() == 2) {
      std::optional<size_t> r0 = rank_of(ctx, n->inputs[0]), r1 = rank_of(ctx, n->inputs[1]);
      if (r1 && *r1 <= 1 && r0 && *r0 >= 2) {
        value = n->inputs[0];
        continue;
      }
      if (r0 && *r0 <= 1 && r1 && *r1 >= 2) {
        value = n->inputs[1];
        continue;
      }
      break;
    }
    if (op == "Split") {
      std::optional<size_t> r = rank_of(ctx, a);
      int64_t axis = attribute_int(*n, "axis", 0);
      if (!r || *r < 3) break;
      if (axis < 0) axis += static_cast<int64_t>(*r);
      if (axis < 2) break;
      value = a;
      continue;
    }
    if (op == "Transpose") {
      const graph::Attribute* perm = n->attribute("perm");
      if (perm == nullptr || perm->ints.size() < 3 || perm->ints[0] != 0 || perm->ints[1] != 1) break;
      value = a;
      continue;
    }
    if (op == "Reshape" && reshape_keeps_first_two(ctx, *n, depth + 1)) {
      value = a;
      continue;
    }
    break;
  }
  return value;
}

}  // namespace

std::optional<std::vector<int64_t>> constant_ints(const PassContext& ctx, int32_t value) {
  if (const Tensor* t = ctx.constant(value)) return ints_of_tensor(*t);
  const graph::Node* n = ctx.producer(value);
  if (n != nullptr && is_op(*n, "Constant")) {
    const graph::Attribute* a = n->attribute("value");
    if (a != nullptr && a->type == graph::AttributeType::kTensor) return ints_of_tensor(a->t);
    a = n->attribute("value_ints");
    if (a != nullptr) return a->ints;
    a = n->attribute("value_int");
    if (a != nullptr) return std::vector<int64_t>{a->i};
  }
  return std::nullopt;
}

std::optional<std::vector<int64_t>> axes_of(const PassContext& ctx, const graph::Node& node) {
  if (const graph::Attribute* a = node.attribute("axes")) return a->ints;
  if (node.inputs.size() >= 2 && node.inputs[1] != graph::kNoValue) return constant_ints(ctx, node.inputs[1]);
  return std::nullopt;
}

std::optional<size_t> rank_of(const PassContext& ctx, int32_t value) {
  if (value < 0) return std::nullopt;
  if (const Tensor* t = ctx.constant(value)) return t->rank();
  const graph::TypeAndShape& info = ctx.info(value);
  if (!info.has_shape) return std::nullopt;
  return info.shape.size();
}

std::optional<std::vector<ShapeTerm>> shape_terms(const PassContext& ctx, int32_t shape, std::vector<size_t>* visited) {
  return terms_at(ctx, shape, visited, 0);
}

int32_t leading_root(const PassContext& ctx, int32_t value) { return leading_root_at(ctx, value, 0); }

bool same_leading_dim(const PassContext& ctx, int32_t a, int32_t b, int64_t axis) {
  return same_leading_dim_at(ctx, a, b, axis, 0);
}

bool reshape_keeps_leading(const PassContext& ctx, const graph::Node& reshape, int32_t source, size_t keep,
                           const std::vector<int64_t>& tail, int64_t trailing_product, std::vector<size_t>* visited) {
  if (!is_op(reshape, "Reshape") || reshape.inputs.size() != 2 || keep > 2) return false;
  const int32_t x = reshape.inputs[0];
  std::optional<size_t> rank = rank_of(ctx, x);
  if (!rank || *rank < keep) return false;
  const bool allow_zero = attribute_int(reshape, "allowzero", 0) != 0;
  auto terms = shape_terms(ctx, reshape.inputs[1], visited);
  if (!terms || terms->size() != keep + tail.size()) return false;
  // The elements per leading index must be what the tail holds, so a -1
  // anywhere resolves to the intended number.
  const graph::TypeAndShape& info = ctx.info(x);
  int64_t trailing = trailing_product;
  if (trailing < 0) {
    trailing = 1;
    for (size_t d = keep; d < *rank; ++d) {
      if (!info.has_shape || info.shape.size() != *rank || !info.shape[d].is_known()) return false;
      trailing *= info.shape[d].value;
    }
  }
  int64_t tail_product = 1;
  for (int64_t t : tail) tail_product *= t;
  if (trailing != tail_product) return false;
  int minus_ones = 0;
  for (size_t i = 0; i < keep; ++i) {
    const ShapeTerm& t = (*terms)[i];
    const int64_t axis = static_cast<int64_t>(i);
    if (t.is_constant(0) && !allow_zero) continue;
    if (t.is_constant(-1)) {
      ++minus_ones;
      continue;
    }
    if (t.kind == ShapeTerm::Kind::kDim && t.axis == axis &&
        (same_leading_dim(ctx, t.value, source, axis) || same_leading_dim(ctx, t.value, x, axis))) {
      continue;
    }
    if (t.kind == ShapeTerm::Kind::kConstant && t.constant > 0 && info.has_shape && info.shape.size() > i &&
        info.shape[i].is_known() && info.shape[i].value == t.constant) {
      continue;
    }
    return false;
  }
  for (size_t j = 0; j < tail.size(); ++j) {
    const ShapeTerm& t = (*terms)[keep + j];
    if (t.is_constant(tail[j])) continue;
    if (t.is_constant(-1)) {
      ++minus_ones;
      continue;
    }
    return false;
  }
  return minus_ones <= 1;
}

bool reshape_flattens_to_2d(const PassContext& ctx, const graph::Node& reshape, std::vector<size_t>* visited) {
  if (!is_op(reshape, "Reshape") || reshape.inputs.size() != 2) return false;
  const graph::TypeAndShape& info = ctx.info(reshape.inputs[0]);
  if (!info.has_shape || info.shape.size() != 3 || !info.shape[2].is_known()) return false;
  auto terms = shape_terms(ctx, reshape.inputs[1], visited);
  if (!terms || terms->size() != 2) return false;
  const ShapeTerm& last = (*terms)[1];
  if (last.is_constant(info.shape[2].value)) return true;
  return last.kind == ShapeTerm::Kind::kDim && last.value == reshape.inputs[0] && last.axis == 2;
}

void collect_shape_nodes(const PassContext& ctx, int32_t value, std::vector<size_t>& nodes) {
  static const std::unordered_set<std::string> kShapeOps = {
      "Shape", "Gather", "Concat", "Unsqueeze", "Squeeze", "Cast", "Slice", "Reshape", "ReduceProd", "Mul",
      "Add", "Sub", "Div", "Constant", "Identity", "Equal", "Where", "ConstantOfShape"};
  std::vector<int32_t> stack = {value};
  std::unordered_set<int32_t> seen;
  while (!stack.empty() && seen.size() < 256) {
    const int32_t v = stack.back();
    stack.pop_back();
    if (v < 0 || !seen.insert(v).second) continue;
    const int32_t p = ctx.producer_index(v);
    if (p < 0) continue;
    const graph::Node& n = ctx.node(static_cast<size_t>(p));
    if (!n.domain.empty() || !kShapeOps.count(n.op_type)) continue;
    if (n.op_type != "Shape" && !is_int_type(ctx.elem_type(v))) continue;
    if (std::find(nodes.begin(), nodes.end(), static_cast<size_t>(p)) == nodes.end()) nodes.push_back(static_cast<size_t>(p));
    if (n.op_type == "Shape") continue;
    for (int32_t in : n.inputs) stack.push_back(in);
  }
}

}  // namespace onyx::optimizer
