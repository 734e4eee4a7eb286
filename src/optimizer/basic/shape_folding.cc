// Shape-arithmetic folding: tracks the known elements of small integer
// tensors through Shape, Size, Cast, Gather, Slice, Squeeze/Unsqueeze and
// Concat (a Shape of [batch, 7, 768] is [?, 7, 768]), and turns every such
// node whose result is fully known into a constant, even when other dims of
// the same tensor are symbolic. Constant folding then folds what follows.
#include <unordered_map>

#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

// The dims of `value` as numbers, -1 where unknown; nullopt when rank unknown.
std::optional<std::vector<int64_t>> dims_of(const PassContext& ctx, int32_t value) {
  const graph::TypeAndShape& info = ctx.info(value);
  if (!info.has_shape || info.type.kind != ValueType::Kind::kTensor) return std::nullopt;
  std::vector<int64_t> dims;
  for (const graph::Dim& d : info.shape) dims.push_back(d.is_known() ? d.value : -1);
  return dims;
}

int64_t clamp_index(int64_t i, int64_t rank) {
  if (i < 0) i += rank;
  return std::max<int64_t>(0, std::min(i, rank));
}

// The [start, end) range of dims a Shape node reports (opset 15 attributes).
std::vector<int64_t> shape_range(const graph::Node& node, const std::vector<int64_t>& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t start = clamp_index(attribute_int(node, "start", 0), rank);
  const graph::Attribute* end_attr = node.attribute("end");
  const int64_t end = end_attr != nullptr ? clamp_index(end_attr->i, rank) : rank;
  std::vector<int64_t> out;
  for (int64_t d = start; d < end; ++d) out.push_back(dims[static_cast<size_t>(d)]);
  return out;
}

bool all_known(const std::vector<int64_t>& dims) {
  for (int64_t d : dims) {
    if (d < 0) return false;
  }
  return true;
}

std::vector<int64_t> ints_of(const Tensor& t) {
  std::vector<int64_t> v;
  if (t.dtype() == DataType::kInt64) {
    for (int64_t i = 0; i < t.size(); ++i) v.push_back(t.data<int64_t>()[i]);
  } else if (t.dtype() == DataType::kInt32) {
    for (int64_t i = 0; i < t.size(); ++i) v.push_back(t.data<int32_t>()[i]);
  }
  return v;
}

// The contents of a small integer tensor, element by element, where known.
struct PartialValue {
  std::vector<std::optional<int64_t>> elements;
  bool scalar = false;
  bool fully_known() const {
    for (const auto& e : elements) {
      if (!e) return false;
    }
    return true;
  }
};

constexpr int64_t kMaxTracked = 64;

std::optional<PartialValue> from_constant(const Tensor& t) {
  if ((t.dtype() != DataType::kInt64 && t.dtype() != DataType::kInt32) || t.rank() > 1 || t.size() > kMaxTracked) {
    return std::nullopt;
  }
  PartialValue p;
  p.scalar = t.rank() == 0;
  for (int64_t v : ints_of(t)) p.elements.emplace_back(v);
  return p;
}

class ShapeFolding final : public Pass {
 public:
  std::string name() const override { return "shape_folding"; }

  // Propagates known elements through the shape-arithmetic ops, in order.
  void begin_sweep(const PassContext& ctx) override {
    partial_.clear();
    for (size_t n = 0; n < ctx.node_count(); ++n) {
      const graph::Node& node = ctx.node(n);
      if (!node.domain.empty() || node.outputs.empty() || node.outputs[0] < 0) continue;
      std::optional<PartialValue> result = evaluate(ctx, node);
      if (result && static_cast<int64_t>(result->elements.size()) <= kMaxTracked) partial_[node.outputs[0]] = *result;
    }
  }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& node = ctx.node(index);
    if (!node.domain.empty() || node.outputs.size() != 1 || node.outputs[0] < 0) return std::nullopt;
    const int32_t out = node.outputs[0];
    if (ctx.is_pinned(out) || node.op_type == "Constant") return std::nullopt;
    auto it = partial_.find(out);
    if (it == partial_.end() || !it->second.fully_known()) return std::nullopt;
    // Constant folding handles nodes whose inputs are all constants.
    bool all_constant = true;
    for (int32_t in : node.inputs) all_constant = all_constant && (in < 0 || ctx.constant(in) != nullptr);
    if (all_constant) return std::nullopt;
    const PartialValue& p = it->second;
    std::vector<int64_t> values;
    for (const auto& e : p.elements) values.push_back(*e);
    const Shape shape = p.scalar ? Shape{} : Shape{static_cast<int64_t>(values.size())};
    Tensor t;
    if (ctx.elem_type(out) == DataType::kInt32) {
      std::vector<int32_t> narrow(values.begin(), values.end());
      t = Tensor::from_vector<int32_t>(narrow, shape);
    } else if (ctx.elem_type(out) == DataType::kInt64) {
      t = Tensor::from_vector<int64_t>(values, shape);
    } else {
      return std::nullopt;
    }
    Patch patch;
    patch.remove(index);
    patch.make_constant.emplace_back(out, std::move(t));
    return patch;
  }

 private:
  std::optional<PartialValue> input(const PassContext& ctx, const graph::Node& node, size_t i) const {
    if (i >= node.inputs.size() || node.inputs[i] < 0) return std::nullopt;
    if (const Tensor* t = ctx.constant(node.inputs[i])) return from_constant(*t);
    auto it = partial_.find(node.inputs[i]);
    if (it == partial_.end()) return std::nullopt;
    return it->second;
  }

  std::optional<PartialValue> evaluate(const PassContext& ctx, const graph::Node& node) const {
    const std::string& op = node.op_type;
    if (op == "Shape") {
      if (node.inputs.empty() || node.inputs[0] < 0) return std::nullopt;
      auto dims = dims_of(ctx, node.inputs[0]);
      if (!dims) return std::nullopt;
      PartialValue p;
      for (int64_t d : shape_range(node, *dims)) {
        p.elements.push_back(d >= 0 ? std::optional<int64_t>(d) : std::nullopt);
      }
      return p;
    }
    if (op == "Size") {
      if (node.inputs.empty() || node.inputs[0] < 0) return std::nullopt;
      auto dims = dims_of(ctx, node.inputs[0]);
      if (!dims || !all_known(*dims)) return std::nullopt;
      PartialValue p;
      p.scalar = true;
      p.elements.emplace_back(shape_size(*dims));
      return p;
    }
    if (op == "Cast") {
      const int64_t to = attribute_int(node, "to", 0);
      if (to != static_cast<int64_t>(DataType::kInt64) && to != static_cast<int64_t>(DataType::kInt32)) return std::nullopt;
      return input(ctx, node, 0);
    }
    if (op == "Identity") return input(ctx, node, 0);
    if (op == "Gather") {
      auto data = input(ctx, node, 0);
      if (!data || data->scalar || attribute_int(node, "axis", 0) != 0 || node.inputs.size() != 2) return std::nullopt;
      const Tensor* indices = node.inputs[1] >= 0 ? ctx.constant(node.inputs[1]) : nullptr;
      if (indices == nullptr || indices->rank() > 1 || indices->size() > kMaxTracked) return std::nullopt;
      const int64_t n = static_cast<int64_t>(data->elements.size());
      PartialValue p;
      p.scalar = indices->rank() == 0;
      for (int64_t i : ints_of(*indices)) {
        if (i < -n || i >= n) return std::nullopt;
        p.elements.push_back(data->elements[static_cast<size_t>(i < 0 ? i + n : i)]);
      }
      if (static_cast<int64_t>(p.elements.size()) != indices->size()) return std::nullopt;
      return p;
    }
    if (op == "Slice") {
      auto data = input(ctx, node, 0);
      if (!data || data->scalar) return std::nullopt;
      std::vector<int64_t> starts, ends, axes = {0}, steps = {1};
      if (node.since_version < 10) {
        if (const graph::Attribute* a = node.attribute("starts")) starts = a->ints;
        if (const graph::Attribute* a = node.attribute("ends")) ends = a->ints;
        if (const graph::Attribute* a = node.attribute("axes")) axes = a->ints;
      } else {
        auto constant_ints = [&](size_t i, std::vector<int64_t>& into) {
          if (i >= node.inputs.size() || node.inputs[i] < 0) return true;
          const Tensor* t = ctx.constant(node.inputs[i]);
          if (t == nullptr) return false;
          into = ints_of(*t);
          return true;
        };
        if (!constant_ints(1, starts) || !constant_ints(2, ends) || !constant_ints(3, axes) || !constant_ints(4, steps)) {
          return std::nullopt;
        }
      }
      if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || steps.size() != 1) return std::nullopt;
      if ((axes[0] != 0 && axes[0] != -1) || steps[0] != 1) return std::nullopt;
      const int64_t n = static_cast<int64_t>(data->elements.size());
      const int64_t begin = clamp_index(starts[0], n), end = clamp_index(ends[0], n);
      PartialValue p;
      for (int64_t i = begin; i < end; ++i) p.elements.push_back(data->elements[static_cast<size_t>(i)]);
      return p;
    }
    if (op == "Unsqueeze" || op == "Squeeze") {
      auto data = input(ctx, node, 0);
      if (!data) return std::nullopt;
      if (op == "Unsqueeze" && data->scalar) {
        data->scalar = false;  // [] -> [1] (axes must be [0] for a scalar)
        return data;
      }
      if (op == "Squeeze" && !data->scalar && data->elements.size() == 1) {
        data->scalar = true;
        return data;
      }
      return std::nullopt;
    }
    if (op == "Concat") {
      const int64_t axis = attribute_int(node, "axis", 0);
      if (axis != 0 && axis != -1) return std::nullopt;
      PartialValue p;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        auto part = input(ctx, node, i);
        if (!part || part->scalar) return std::nullopt;
        p.elements.insert(p.elements.end(), part->elements.begin(), part->elements.end());
      }
      return p;
    }
    return std::nullopt;
  }

  std::unordered_map<int32_t, PartialValue> partial_;
};

}  // namespace

std::unique_ptr<Pass> make_shape_folding_pass() { return std::make_unique<ShapeFolding>(); }

}  // namespace onyx::optimizer
