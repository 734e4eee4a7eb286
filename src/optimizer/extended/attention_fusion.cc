// Self-attention written out as ops, the way BERT and GPT-2 exports write it
// (Q/K/V projections, heads split by Reshape+Transpose, Q·Kᵀ, a scale, an
// additive mask or a causal Where, Softmax, ·V, heads merged again), becomes
// one com.microsoft Attention with the Q/K/V weights packed into one matrix
// here. Where Attention cannot say it (past key/values as separate tensors,
// projections of different inputs) it becomes com.microsoft
// MultiHeadAttention fed by one packed MatMul. Both are onnxruntime's
// contrib ops with its signatures, so a saved optimized model runs there too.
#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "optimizer/extended/shape_patterns.h"

namespace onyx::optimizer {
namespace {

bool has_perm(const graph::Node& n, const std::vector<int64_t>& perm) {
  if (!is_op(n, "Transpose")) return false;
  const graph::Attribute* a = n.attribute("perm");
  return a != nullptr && a->ints == perm;
}

// y[..., begin:begin+count] = x @ weight[:, begin:begin+count] + bias[begin:begin+count]
struct Projection {
  int32_t x = -1;
  const Tensor* weight = nullptr;  // [K, total]
  const Tensor* bias = nullptr;    // [total] or none
  int64_t begin = 0, count = 0;
  std::vector<size_t> nodes;
};

// The linear projection (MatMul by a constant matrix, an optional constant
// bias Add, an optional Split on the last axis) that produces `y`.
std::optional<Projection> match_projection(const PassContext& ctx, int32_t y) {
  Projection p;
  int32_t v = y;
  int32_t index = ctx.producer_index(v);
  if (index < 0) return std::nullopt;
  bool split = false;
  const graph::Node* n = &ctx.node(static_cast<size_t>(index));
  if (is_op(*n, "Split")) {
    std::optional<Shape> in = ctx.known_shape(n->inputs[0]);
    std::optional<size_t> rank = rank_of(ctx, n->inputs[0]);
    int64_t axis = attribute_int(*n, "axis", 0);
    if (!rank || *rank != 3) return std::nullopt;
    if (axis < 0) axis += 3;
    if (axis != 2) return std::nullopt;
    std::vector<int64_t> sizes;
    if (n->inputs.size() > 1 && n->inputs[1] != graph::kNoValue) {
      auto s = constant_ints(ctx, n->inputs[1]);
      if (!s) return std::nullopt;
      sizes = *s;
    } else if (const graph::Attribute* a = n->attribute("split")) {
      sizes = a->ints;
    } else {
      const graph::TypeAndShape& info = ctx.info(n->inputs[0]);
      if (!info.has_shape || !info.shape[2].is_known() || n->outputs.empty() ||
          info.shape[2].value % static_cast<int64_t>(n->outputs.size()) != 0) {
        return std::nullopt;
      }
      sizes.assign(n->outputs.size(), info.shape[2].value / static_cast<int64_t>(n->outputs.size()));
    }
    if (sizes.size() != n->outputs.size()) return std::nullopt;
    int64_t begin = 0;
    bool found = false;
    for (size_t k = 0; k < sizes.size(); ++k) {
      if (n->outputs[k] == y) {
        p.begin = begin;
        p.count = sizes[k];
        found = true;
      }
      begin += sizes[k];
    }
    if (!found) return std::nullopt;
    p.nodes.push_back(static_cast<size_t>(index));
    split = true;
    v = n->inputs[0];
    index = ctx.producer_index(v);
    if (index < 0) return std::nullopt;
    n = &ctx.node(static_cast<size_t>(index));
  }
  if (is_op(*n, "Add") && n->inputs.size() == 2) {
    bool found = false;
    for (int side = 0; side < 2 && !found; ++side) {
      const Tensor* b = ctx.constant(n->inputs[static_cast<size_t>(1 - side)]);
      const graph::Node* m = ctx.producer(n->inputs[static_cast<size_t>(side)]);
      if (b == nullptr || b->rank() != 1 || b->dtype() != DataType::kFloat || m == nullptr || !is_op(*m, "MatMul")) {
        continue;
      }
      p.bias = b;
      p.nodes.push_back(static_cast<size_t>(index));
      v = n->inputs[static_cast<size_t>(side)];
      found = true;
    }
    if (!found) return std::nullopt;
    index = ctx.producer_index(v);
    n = &ctx.node(static_cast<size_t>(index));
  }
  if (!is_op(*n, "MatMul") || n->inputs.size() != 2) return std::nullopt;
  const Tensor* w = ctx.constant(n->inputs[1]);
  std::optional<size_t> xrank = rank_of(ctx, n->inputs[0]);
  if (w == nullptr || w->rank() != 2 || w->dtype() != DataType::kFloat || !xrank || *xrank != 3) return std::nullopt;
  if (ctx.elem_type(n->inputs[0]) != DataType::kFloat) return std::nullopt;
  if (p.bias != nullptr && p.bias->size() != w->dim(1)) return std::nullopt;
  p.nodes.push_back(static_cast<size_t>(index));
  p.x = n->inputs[0];
  p.weight = w;
  if (!split) p.count = w->dim(1);
  if (p.begin + p.count > w->dim(1) || p.count <= 0) return std::nullopt;
  return p;
}

// Transpose(perm)(Reshape(y, [B, S, heads, head_size])): the heads of y.
struct Heads {
  int32_t projected = -1;  // y, [B, S, heads * head_size]
  int64_t heads = 0, head_size = 0;
  std::vector<size_t> nodes;
  std::vector<size_t> shape_nodes;
};

std::optional<Heads> match_heads(const PassContext& ctx, int32_t value, const std::vector<int64_t>& perm) {
  const int32_t ti = ctx.producer_index(value);
  if (ti < 0 || !has_perm(ctx.node(static_cast<size_t>(ti)), perm)) return std::nullopt;
  const int32_t reshaped = ctx.node(static_cast<size_t>(ti)).inputs[0];
  const int32_t ri = ctx.producer_index(reshaped);
  if (ri < 0) return std::nullopt;
  const graph::Node& r = ctx.node(static_cast<size_t>(ri));
  if (!is_op(r, "Reshape") || r.inputs.size() != 2) return std::nullopt;
  Heads h;
  h.projected = r.inputs[0];
  const graph::TypeAndShape& info = ctx.info(h.projected);
  if (!info.has_shape || info.shape.size() != 3 || !info.shape[2].is_known()) return std::nullopt;
  const int64_t hidden = info.shape[2].value;
  auto terms = shape_terms(ctx, r.inputs[1]);
  if (!terms || terms->size() != 4 || (*terms)[3].kind != ShapeTerm::Kind::kConstant) return std::nullopt;
  h.head_size = (*terms)[3].constant;
  if (h.head_size <= 0 || hidden % h.head_size != 0) return std::nullopt;
  h.heads = hidden / h.head_size;
  if (!reshape_keeps_leading(ctx, r, h.projected, 2, {h.heads, h.head_size}, -1, &h.shape_nodes)) return std::nullopt;
  h.nodes = {static_cast<size_t>(ti), static_cast<size_t>(ri)};
  return h;
}

// A scalar constant factor: value = Mul(v, c) / Mul(c, v) / Div(v, c).
struct Scaled {
  int32_t input = -1;
  double factor = 1.0;
  size_t node = 0;
};

std::optional<Scaled> match_scale(const PassContext& ctx, int32_t value) {
  const int32_t i = ctx.producer_index(value);
  if (i < 0) return std::nullopt;
  const graph::Node& n = ctx.node(static_cast<size_t>(i));
  if (!(is_op(n, "Mul") || is_op(n, "Div")) || n.inputs.size() != 2) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    const int32_t c = n.inputs[static_cast<size_t>(1 - side)];
    std::optional<double> s = ctx.scalar(c);
    const Tensor* t = ctx.constant(c);
    if (!s || t == nullptr || t->rank() > 1 || t->dtype() != DataType::kFloat) continue;
    if (n.op_type == "Div") {
      if (side != 0 || *s == 0.0) continue;
      return Scaled{n.inputs[0], 1.0 / *s, static_cast<size_t>(i)};
    }
    return Scaled{n.inputs[static_cast<size_t>(side)], *s, static_cast<size_t>(i)};
  }
  return std::nullopt;
}

// The BERT extended mask (1 - Cast(Unsqueeze(mask, [1, 2]))) * c of a
// [batch, kv] mask: Attention takes the raw mask (mask_index) with
// mask_filter_value c instead.
struct RawMask {
  int32_t mask = -1;
  float filter_value = -10000.0f;
};

std::optional<RawMask> match_raw_mask(const PassContext& ctx, int32_t value) {
  const graph::Node* mul = ctx.producer(value);
  if (mul == nullptr || !is_op(*mul, "Mul") || mul->inputs.size() != 2) return std::nullopt;
  for (int side = 0; side < 2; ++side) {
    std::optional<double> c = ctx.scalar(mul->inputs[static_cast<size_t>(1 - side)]);
    const graph::Node* sub = ctx.producer(mul->inputs[static_cast<size_t>(side)]);
    if (!c || sub == nullptr || !is_op(*sub, "Sub") || sub->inputs.size() != 2) continue;
    if (!ctx.is_constant_value(sub->inputs[0], 1.0, 0.0) || ctx.constant(sub->inputs[0])->size() != 1) continue;
    // Walk Cast / Unsqueeze / whole-range Slice back to a rank-2 mask.
    int32_t v = sub->inputs[1];
    std::vector<int64_t> inserted;
    bool cast_to_float = false;
    for (int step = 0; step < 6; ++step) {
      const graph::Node* n = ctx.producer(v);
      if (n == nullptr) break;
      if (is_op(*n, "Cast")) {
        cast_to_float = cast_to_float || attribute_int(*n, "to", 0) == static_cast<int64_t>(DataType::kFloat);
        v = n->inputs[0];
      } else if (is_op(*n, "Unsqueeze")) {
        auto axes = axes_of(ctx, *n);
        if (!axes) return std::nullopt;
        inserted.insert(inserted.end(), axes->begin(), axes->end());
        v = n->inputs[0];
      } else if (is_op(*n, "Slice") && n->inputs.size() >= 3) {
        auto starts = constant_ints(ctx, n->inputs[1]);
        auto ends = constant_ints(ctx, n->inputs[2]);
        if (!starts || !ends) return std::nullopt;
        for (int64_t s : *starts) {
          if (s != 0) return std::nullopt;
        }
        for (int64_t e : *ends) {
          if (e < (int64_t{1} << 31)) return std::nullopt;
        }
        if (n->inputs.size() > 4 && n->inputs[4] != graph::kNoValue && !ctx.is_constant_value(n->inputs[4], 1.0, 0.0)) {
          return std::nullopt;
        }
        v = n->inputs[0];
      } else {
        break;
      }
    }
    std::sort(inserted.begin(), inserted.end());
    std::optional<size_t> rank = rank_of(ctx, v);
    const DataType t = ctx.elem_type(v);
    if (!rank || *rank != 2 || inserted != std::vector<int64_t>{1, 2}) continue;
    if (t != DataType::kInt64 && t != DataType::kInt32 && t != DataType::kFloat && t != DataType::kBool) continue;
    if (t != DataType::kFloat && !cast_to_float) continue;
    return RawMask{v, static_cast<float>(*c)};
  }
  return std::nullopt;
}

// A causal mask: Where(tril[..., rows, :cols], scores, very negative), the
// rows and columns sliced from a constant lower-triangular buffer (GPT-2).
// The slice bounds are computed from sequence lengths at run time; the
// buffer being lower-triangular and the slices being on its last two axes
// is what is checked.
bool is_causal_condition(const PassContext& ctx, int32_t cond, std::vector<size_t>& nodes) {
  int32_t v = cond;
  for (int step = 0; step < 6; ++step) {
    const int32_t i = ctx.producer_index(v);
    const graph::Node* n = i < 0 ? nullptr : &ctx.node(static_cast<size_t>(i));
    if (n != nullptr && is_op(*n, "Cast")) {
      nodes.push_back(static_cast<size_t>(i));
      v = n->inputs[0];
      continue;
    }
    if (n != nullptr && is_op(*n, "Slice") && n->inputs.size() >= 4) {
      auto axes = constant_ints(ctx, n->inputs[3]);
      if (!axes) return false;
      for (int64_t a : *axes) {
        if (a != 2 && a != 3 && a != -1 && a != -2) return false;
      }
      if (n->inputs.size() > 4 && n->inputs[4] != graph::kNoValue && !ctx.is_constant_value(n->inputs[4], 1.0, 0.0)) {
        return false;
      }
      nodes.push_back(static_cast<size_t>(i));
      collect_shape_nodes(ctx, n->inputs[1], nodes);
      collect_shape_nodes(ctx, n->inputs[2], nodes);
      v = n->inputs[0];
      continue;
    }
    break;
  }
  const Tensor* buffer = ctx.constant(v);
  if (buffer == nullptr || buffer->rank() != 4 || buffer->dim(0) != 1 || buffer->dim(1) != 1 ||
      buffer->dim(2) != buffer->dim(3) || buffer->dim(2) > 16384) {
    return false;
  }
  const int64_t m = buffer->dim(2);
  auto at = [&](int64_t k) -> double {
    switch (buffer->dtype()) {
      case DataType::kBool: return buffer->data<bool>()[k] ? 1.0 : 0.0;
      case DataType::kUInt8: return buffer->data<uint8_t>()[k];
      case DataType::kFloat: return buffer->data<float>()[k];
      case DataType::kInt64: return static_cast<double>(buffer->data<int64_t>()[k]);
      case DataType::kInt32: return buffer->data<int32_t>()[k];
      default: return -1.0;
    }
  };
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t c = 0; c < m; ++c) {
      if (at(r * m + c) != (c <= r ? 1.0 : 0.0)) return false;
    }
  }
  return true;
}

struct Match {
  std::vector<size_t> core;      // removed
  std::vector<size_t> optional;  // removed when nothing else reads them
  std::vector<int32_t> reproduced;
};

// Drops optional nodes something outside the pattern reads, then checks that
// nothing outside reads a core node's outputs.
bool closes(const PassContext& ctx, Match& m) {
  std::unordered_set<size_t> all(m.core.begin(), m.core.end());
  std::vector<size_t> optional;
  for (size_t n : m.optional) {
    if (!all.count(n) && std::find(optional.begin(), optional.end(), n) == optional.end()) optional.push_back(n);
  }
  for (size_t n : optional) all.insert(n);
  const std::unordered_set<int32_t> reproduced(m.reproduced.begin(), m.reproduced.end());
  auto read_outside = [&](size_t n) {
    for (int32_t out : ctx.node(n).outputs) {
      if (out < 0 || reproduced.count(out)) continue;
      if (ctx.is_pinned(out)) return true;
      for (size_t user : ctx.consumers(out)) {
        if (!all.count(user)) return true;
      }
    }
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (auto it = optional.begin(); it != optional.end();) {
      if (read_outside(*it)) {
        all.erase(*it);
        it = optional.erase(it);
        changed = true;
      } else {
        ++it;
      }
    }
  }
  for (size_t n : m.core) {
    if (read_outside(n)) return false;
  }
  m.optional = optional;
  return true;
}

class AttentionFusion final : public Pass {
 public:
  std::string name() const override { return "attention_fusion"; }

  void begin_sweep(const PassContext& ctx) override {
    int32_casts_.clear();
    pending_casts_.clear();
    for (size_t i = 0; i < ctx.node_count(); ++i) {
      const graph::Node& n = ctx.node(i);
      if (is_op(n, "Cast") && n.outputs.size() == 1 && !n.inputs.empty() &&
          attribute_int(n, "to", 0) == static_cast<int64_t>(DataType::kInt32)) {
        int32_casts_[n.inputs[0]] = n.outputs[0];
      }
    }
  }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& softmax = ctx.node(index);
    if (!is_op(softmax, "Softmax") || softmax.inputs.size() != 1 || softmax.outputs.size() != 1) {
      return std::nullopt;
    }
    if (ctx.elem_type(softmax.outputs[0]) != DataType::kFloat) return std::nullopt;
    std::optional<size_t> srank = rank_of(ctx, softmax.inputs[0]);
    if (!srank || *srank != 4) return std::nullopt;
    const int64_t axis = attribute_int(softmax, "axis", softmax.since_version >= 13 ? -1 : 1);
    if (axis != -1 && axis != 3) return std::nullopt;
    Match m;
    m.core.push_back(index);

    // Down: probabilities · V, heads merged.
    int32_t probs = softmax.outputs[0];
    const graph::Node* pv = nullptr;
    size_t pv_index = 0;
    for (int step = 0; step < 3 && pv == nullptr; ++step) {
      const auto& users = ctx.consumers(probs);
      if (users.size() != 1) return std::nullopt;
      const graph::Node& u = ctx.node(users[0]);
      if ((is_op(u, "Cast") && attribute_int(u, "to", 0) == static_cast<int64_t>(DataType::kFloat)) ||
          is_op(u, "Identity") || (is_op(u, "Dropout") && u.outputs.size() >= 1)) {
        for (size_t o = 1; o < u.outputs.size(); ++o) {
          if (u.outputs[o] != graph::kNoValue && !ctx.consumers(u.outputs[o]).empty()) return std::nullopt;
        }
        m.core.push_back(users[0]);
        probs = u.outputs[0];
      } else if (is_op(u, "MatMul") && u.inputs.size() == 2 && u.inputs[0] == probs) {
        pv = &u;
        pv_index = users[0];
      } else {
        return std::nullopt;
      }
    }
    if (pv == nullptr) return std::nullopt;
    m.core.push_back(pv_index);
    const auto& pv_users = ctx.consumers(pv->outputs[0]);
    if (pv_users.size() != 1 || !has_perm(ctx.node(pv_users[0]), {0, 2, 1, 3})) return std::nullopt;
    const size_t merge_t = pv_users[0];
    // Exports also read the merged heads' Shape to build the Reshape target.
    std::vector<size_t> mt_users;
    for (size_t u : ctx.consumers(ctx.node(merge_t).outputs[0])) {
      if (is_op(ctx.node(u), "Shape")) m.optional.push_back(u);
      else mt_users.push_back(u);
    }
    if (mt_users.size() != 1 || !is_op(ctx.node(mt_users[0]), "Reshape")) return std::nullopt;
    const size_t merge_r = mt_users[0];
    m.core.push_back(merge_t);
    m.core.push_back(merge_r);
    const int32_t result = ctx.node(merge_r).outputs[0];

    // Up: mask, causal Where and scale, back to Q·Kᵀ.
    double factor = 1.0;
    int32_t mask = graph::kNoValue;
    bool causal = false;
    int32_t v = softmax.inputs[0];
    const graph::Node* qk = nullptr;
    for (int step = 0; step < 6 && qk == nullptr; ++step) {
      const int32_t i = ctx.producer_index(v);
      if (i < 0) return std::nullopt;
      const graph::Node& n = ctx.node(static_cast<size_t>(i));
      if (is_op(n, "MatMul") && n.inputs.size() == 2) {
        qk = &n;
        m.core.push_back(static_cast<size_t>(i));
      } else if (is_op(n, "Add") && n.inputs.size() == 2 && mask == graph::kNoValue) {
        const int side = leads_to_scores(ctx, n.inputs[0]) ? 0 : leads_to_scores(ctx, n.inputs[1]) ? 1 : -1;
        if (side < 0) return std::nullopt;
        mask = n.inputs[static_cast<size_t>(1 - side)];
        v = n.inputs[static_cast<size_t>(side)];
        m.core.push_back(static_cast<size_t>(i));
      } else if (is_op(n, "Where") && n.inputs.size() == 3 && !causal) {
        std::optional<double> fill = ctx.scalar(n.inputs[2]);
        if (!fill || !(*fill <= -1000.0)) return std::nullopt;
        if (!is_causal_condition(ctx, n.inputs[0], m.optional)) return std::nullopt;
        causal = true;
        v = n.inputs[1];
        m.core.push_back(static_cast<size_t>(i));
      } else if (auto s = match_scale(ctx, v)) {
        factor *= s->factor;
        v = s->input;
        m.core.push_back(s->node);
      } else {
        return std::nullopt;
      }
    }
    if (qk == nullptr) return std::nullopt;

    // Q: optional scale, heads of the query projection.
    int32_t q_side = qk->inputs[0];
    if (auto s = match_scale(ctx, q_side)) {
      factor *= s->factor;
      q_side = s->input;
      m.core.push_back(s->node);
    }
    std::optional<Heads> q = match_heads(ctx, q_side, {0, 2, 1, 3});
    if (!q) return std::nullopt;
    // K: optional scale, then either heads transposed straight to [B, N, D, S],
    // or [B, N, S, D] heads (after a Concat with past keys) transposed.
    int32_t k_side = qk->inputs[1];
    if (auto s = match_scale(ctx, k_side)) {
      factor *= s->factor;
      k_side = s->input;
      m.core.push_back(s->node);
    }
    int32_t past_key = graph::kNoValue, present_key = graph::kNoValue;
    std::optional<Heads> k = match_heads(ctx, k_side, {0, 2, 3, 1});
    if (!k) {
      const int32_t ti = ctx.producer_index(k_side);
      if (ti < 0 || !has_perm(ctx.node(static_cast<size_t>(ti)), {0, 1, 3, 2})) return std::nullopt;
      m.core.push_back(static_cast<size_t>(ti));
      int32_t k4 = ctx.node(static_cast<size_t>(ti)).inputs[0];
      if (auto cat = match_past_concat(ctx, k4, m)) {
        past_key = cat->first;
        present_key = k4;
        k4 = cat->second;
      }
      k = match_heads(ctx, k4, {0, 2, 1, 3});
      if (!k) return std::nullopt;
    }
    int32_t past_value = graph::kNoValue, present_value = graph::kNoValue;
    int32_t v4 = pv->inputs[1];
    if (auto cat = match_past_concat(ctx, v4, m)) {
      past_value = cat->first;
      present_value = v4;
      v4 = cat->second;
    }
    std::optional<Heads> val = match_heads(ctx, v4, {0, 2, 1, 3});
    if (!val) return std::nullopt;
    if ((past_key == graph::kNoValue) != (past_value == graph::kNoValue)) return std::nullopt;
    if (q->heads != k->heads || q->heads != val->heads || q->head_size != k->head_size) return std::nullopt;
    const int64_t heads = q->heads;
    for (const Heads* h : {&*q, &*k, &*val}) {
      m.core.insert(m.core.end(), h->nodes.begin(), h->nodes.end());
      m.optional.insert(m.optional.end(), h->shape_nodes.begin(), h->shape_nodes.end());
    }
    const int64_t q_hidden = heads * q->head_size, v_hidden = heads * val->head_size;
    // The merged output is [B, S, heads * v_head_size] with the query's B, S.
    if (!reshape_keeps_leading(ctx, ctx.node(merge_r), q->projected, 2, {v_hidden}, v_hidden, &m.optional)) {
      return std::nullopt;
    }
    if (!ctx.has_op("com.microsoft", "Attention") || !ctx.has_op("com.microsoft", "MultiHeadAttention")) {
      return std::nullopt;
    }

    // The mask: Attention takes a raw [B, kv] mask as mask_index, an additive
    // [B or 1, heads or 1, S, kv] one as attention_bias.
    std::optional<RawMask> raw;
    bool bias_per_head = true;
    if (mask != graph::kNoValue) {
      if (ctx.elem_type(mask) != DataType::kFloat) return std::nullopt;
      raw = match_raw_mask(ctx, mask);
      if (!raw) {
        const graph::TypeAndShape& info = ctx.info(mask);
        if (!info.has_shape || info.shape.size() != 4) return std::nullopt;
        // A mask broadcast along queries or keys is not an attention_bias; a
        // dim of 1 is fine where the query (or key) sequence has length 1.
        const graph::TypeAndShape& q_info = ctx.info(q->projected);
        const graph::TypeAndShape& k_info = ctx.info(k->projected);
        auto is_one = [](const graph::TypeAndShape& i, size_t d) {
          return i.has_shape && i.shape.size() > d && i.shape[d].is_known() && i.shape[d].value == 1;
        };
        if (is_one(info, 2) && !is_one(q_info, 1)) return std::nullopt;
        if (is_one(info, 3) && !(is_one(k_info, 1) && past_key == graph::kNoValue)) return std::nullopt;
        // Attention takes [B or 1, heads or 1, S, kv]; where the head dim is
        // not known the run-time shape decides, which MultiHeadAttention checks.
        bias_per_head = info.shape[1].is_known() && (info.shape[1].value == heads || info.shape[1].value == 1);
        if (!bias_per_head && info.shape[1].is_known()) return std::nullopt;
      }
    }

    std::optional<Projection> pq = match_projection(ctx, q->projected);
    std::optional<Projection> pk = match_projection(ctx, k->projected);
    std::optional<Projection> pvp = match_projection(ctx, val->projected);
    const bool packed = pq && pk && pvp && pq->x == pk->x && pq->x == pvp->x && pq->count == q_hidden &&
                        pk->count == q_hidden && pvp->count == v_hidden && pq->weight->dim(0) == pk->weight->dim(0) &&
                        pq->weight->dim(0) == pvp->weight->dim(0);
    const bool has_past = past_key != graph::kNoValue;
    const bool use_attention = packed && !has_past && (mask == graph::kNoValue || raw || bias_per_head);
    if (packed) {
      for (const Projection* p : {&*pq, &*pk, &*pvp}) m.core.insert(m.core.end(), p->nodes.begin(), p->nodes.end());
    }
    m.reproduced = {result};
    if (present_key != graph::kNoValue) m.reproduced.push_back(present_key);
    if (present_value != graph::kNoValue) m.reproduced.push_back(present_value);
    std::sort(m.core.begin(), m.core.end());
    m.core.erase(std::unique(m.core.begin(), m.core.end()), m.core.end());
    if (!closes(ctx, m)) return std::nullopt;

    Patch patch;
    for (size_t n : m.core) patch.remove(n);
    for (size_t n : m.optional) patch.remove(n);
    const std::string base = softmax.name.empty() ? "Attention" : softmax.name + "_fused";
    int32_t mask_input = graph::kNoValue;
    if (raw) {
      if (ctx.elem_type(raw->mask) == DataType::kInt32) {
        mask_input = raw->mask;
      } else if (auto it = int32_casts_.find(raw->mask); it != int32_casts_.end()) {
        mask_input = it->second;
      } else {
        // One Cast per mask: other layers pick it up in the next sweep.
        if (!pending_casts_.insert(raw->mask).second) return std::nullopt;
        graph::TypeAndShape info = ctx.info(raw->mask);
        info.type = ValueType::tensor(DataType::kInt32);
        mask_input = patch.new_value(ctx.value(raw->mask).name + "_int32", info);
        graph::Node cast = make_node("Cast", "", softmax.opset > 0 ? softmax.opset : 13, {raw->mask}, {mask_input},
                                     ctx.value(raw->mask).name + "_to_int32");
        cast.attributes["to"] = graph::Attribute::make_int("to", static_cast<int64_t>(DataType::kInt32));
        patch.add_nodes.push_back(std::move(cast));
      }
    }

    int32_t packed_weight = graph::kNoValue, packed_bias = graph::kNoValue;
    if (packed) {
      const int64_t in = pq->weight->dim(0), total = 2 * q_hidden + v_hidden;
      Tensor w(DataType::kFloat, {in, total});
      Tensor b(DataType::kFloat, {total});
      int64_t col = 0;
      for (const Projection* p : {&*pq, &*pk, &*pvp}) {
        const int64_t width = p->weight->dim(1);
        for (int64_t r = 0; r < in; ++r) {
          std::copy_n(p->weight->data<float>() + r * width + p->begin, p->count, w.data<float>() + r * total + col);
        }
        for (int64_t c = 0; c < p->count; ++c) {
          b.data<float>()[col + c] = p->bias != nullptr ? p->bias->data<float>()[p->begin + c] : 0.0f;
        }
        col += p->count;
      }
      packed_weight = patch.new_constant(base + "_qkv_weight", std::move(w));
      packed_bias = patch.new_constant(base + "_qkv_bias", std::move(b));
    }

    const float default_scale = 1.0f / std::sqrt(static_cast<float>(q->head_size));
    const float scale = static_cast<float>(factor);
    graph::Node fused;
    if (use_attention) {
      std::vector<int32_t> inputs = {pq->x, packed_weight, packed_bias, mask_input};
      if (mask != graph::kNoValue && !raw) inputs = {pq->x, packed_weight, packed_bias, graph::kNoValue, graph::kNoValue, mask};
      while (inputs.back() == graph::kNoValue) inputs.pop_back();
      fused = make_node("Attention", "com.microsoft", 1, inputs, {result}, base);
      if (v_hidden != q_hidden) fused.attributes["qkv_hidden_sizes"] = graph::Attribute::make_ints("qkv_hidden_sizes", {q_hidden, q_hidden, v_hidden});
    } else {
      int32_t query = q->projected, key = k->projected, value = val->projected;
      if (packed) {
        graph::TypeAndShape qkv_info = ctx.info(q->projected);
        if (qkv_info.has_shape && qkv_info.shape.size() == 3) qkv_info.shape[2] = graph::Dim::known(2 * q_hidden + v_hidden);
        const int32_t qkv = patch.new_value(base + "_qkv", qkv_info);
        const int opset = softmax.opset > 0 ? softmax.opset : 13;
        if (opset < 13) return std::nullopt;
        patch.add_nodes.push_back(make_node("MatMul", "", opset, {pq->x, packed_weight}, {qkv}, base + "_qkv_matmul"));
        Tensor sizes(DataType::kInt64, {3});
        sizes.data<int64_t>()[0] = q_hidden;
        sizes.data<int64_t>()[1] = q_hidden;
        sizes.data<int64_t>()[2] = v_hidden;
        const int32_t split_sizes = patch.new_constant(base + "_qkv_sizes", std::move(sizes));
        graph::TypeAndShape qi = ctx.info(q->projected), vi = ctx.info(val->projected);
        query = patch.new_value(base + "_q", qi);
        key = patch.new_value(base + "_k", qi);
        value = patch.new_value(base + "_v", vi);
        graph::Node split = make_node("Split", "", opset, {qkv, split_sizes}, {query, key, value}, base + "_qkv_split");
        split.attributes["axis"] = graph::Attribute::make_int("axis", 2);
        patch.add_nodes.push_back(std::move(split));
      } else {
        // Keep the projections; only their head split goes.
        for (int32_t y : {q->projected, k->projected, val->projected}) {
          std::optional<size_t> r = rank_of(ctx, y);
          if (!r || *r != 3) return std::nullopt;
        }
      }
      std::vector<int32_t> inputs = {query, key, value, packed_bias, mask_input,
                                     raw ? graph::kNoValue : mask, past_key, past_value};
      while (inputs.back() == graph::kNoValue) inputs.pop_back();
      std::vector<int32_t> outputs = {result};
      if (has_past) outputs = {result, present_key, present_value};
      fused = make_node("MultiHeadAttention", "com.microsoft", 1, inputs, outputs, base);
    }
    fused.attributes["num_heads"] = graph::Attribute::make_int("num_heads", heads);
    if (std::fabs(scale - default_scale) > 1e-6f * default_scale) fused.attributes["scale"] = graph::Attribute::make_float("scale", scale);
    if (causal) fused.attributes["unidirectional"] = graph::Attribute::make_int("unidirectional", 1);
    if (raw && raw->filter_value != -10000.0f) {
      fused.attributes["mask_filter_value"] = graph::Attribute::make_float("mask_filter_value", raw->filter_value);
    }
    patch.add_nodes.push_back(std::move(fused));
    // Shape inference does not cover com.microsoft ops: say what comes out,
    // so that fusions downstream (SkipLayerNormalization, linear layers) see
    // a [B, S, hidden] value.
    const graph::TypeAndShape& qi = ctx.info(q->projected);
    graph::TypeAndShape out_info;
    out_info.type = ValueType::tensor(DataType::kFloat);
    out_info.has_shape = true;
    out_info.shape = {graph::Dim{}, graph::Dim{}, graph::Dim::known(v_hidden)};
    if (qi.has_shape && qi.shape.size() == 3) {
      out_info.shape[0] = qi.shape[0];
      out_info.shape[1] = qi.shape[1];
    }
    patch.refine_info.emplace_back(result, out_info);
    return patch;
  }

 private:
  // True when `v` is Q·Kᵀ, possibly scaled or causally masked.
  static bool leads_to_scores(const PassContext& ctx, int32_t v) {
    for (int step = 0; step < 4; ++step) {
      const graph::Node* n = ctx.producer(v);
      if (n == nullptr) return false;
      if (is_op(*n, "MatMul")) return true;
      if (is_op(*n, "Where") && n->inputs.size() == 3) {
        v = n->inputs[1];
      } else if (auto s = match_scale(ctx, v)) {
        v = s->input;
      } else {
        return false;
      }
    }
    return false;
  }

  // value = Concat(past, new_heads, axis=2): returns (past, new_heads).
  static std::optional<std::pair<int32_t, int32_t>> match_past_concat(const PassContext& ctx, int32_t value, Match& m) {
    const int32_t i = ctx.producer_index(value);
    if (i < 0) return std::nullopt;
    const graph::Node& n = ctx.node(static_cast<size_t>(i));
    if (!is_op(n, "Concat") || n.inputs.size() != 2) return std::nullopt;
    const int64_t axis = attribute_int(n, "axis", 0);
    if (axis != 2 && axis != -2) return std::nullopt;
    std::optional<size_t> r = rank_of(ctx, n.inputs[0]);
    if (!r || *r != 4 || ctx.elem_type(n.inputs[0]) != DataType::kFloat) return std::nullopt;
    m.core.push_back(static_cast<size_t>(i));
    return std::make_pair(n.inputs[0], n.inputs[1]);
  }

  std::unordered_map<int32_t, int32_t> int32_casts_;
  std::unordered_set<int32_t> pending_casts_;
};

}  // namespace

std::unique_ptr<Pass> make_attention_fusion_pass() { return std::make_unique<AttentionFusion>(); }

}  // namespace onyx::optimizer
