// FastGelu from its tanh form, 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))),
// with x^3 as Pow(x, 3) or x * x * x and the outer product in any order, into
// com.microsoft FastGelu.
#include <unordered_set>

#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;

std::optional<int32_t> other_of(const graph::Node& n, int32_t value) {
  if (n.inputs.size() != 2 || n.outputs.size() != 1) return std::nullopt;
  if (n.inputs[0] == value) return n.inputs[1];
  if (n.inputs[1] == value) return n.inputs[0];
  return std::nullopt;
}

class FastGeluFusion final : public Pass {
 public:
  std::string name() const override { return "fast_gelu_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& tanh = ctx.node(index);
    if (!is_op(tanh, "Tanh") || tanh.inputs.size() != 1 || tanh.outputs.size() != 1) {
      return std::nullopt;
    }
    if (!ctx.has_op("com.microsoft", "FastGelu")) return std::nullopt;
    std::vector<size_t> group = {index};
    auto produced_by = [&](int32_t v, const char* op, size_t user) -> const graph::Node* {
      const int32_t p = ctx.producer_index(v);
      if (p < 0 || !ctx.only_used_by(v, user)) return nullptr;
      const graph::Node& n = ctx.node(static_cast<size_t>(p));
      if (!is_op(n, op)) return nullptr;
      group.push_back(static_cast<size_t>(p));
      return &n;
    };
    // s = (x + 0.044715 x^3) * sqrt(2/pi)
    const graph::Node* scale = produced_by(tanh.inputs[0], "Mul", index);
    if (scale == nullptr) return std::nullopt;
    int32_t inner = -1;
    for (int32_t in : scale->inputs) {
      auto o = other_of(*scale, in);
      if (o && ctx.is_constant_value(*o, kSqrt2OverPi, 1e-3)) inner = in;
    }
    if (inner < 0) return std::nullopt;
    const graph::Node* sum = produced_by(inner, "Add", static_cast<size_t>(group.back()));
    if (sum == nullptr) return std::nullopt;
    const size_t sum_index = group.back();
    // One operand is x, the other 0.044715 * x^3.
    int32_t x = -1;
    for (int side = 0; side < 2 && x < 0; ++side) {
      const int32_t cand = sum->inputs[static_cast<size_t>(side)];
      const int32_t cubic = sum->inputs[static_cast<size_t>(1 - side)];
      const size_t mark = group.size();
      const graph::Node* m = produced_by(cubic, "Mul", sum_index);
      if (m == nullptr) continue;
      const size_t m_index = group.back();
      bool ok = false;
      for (int32_t in : m->inputs) {
        auto o = other_of(*m, in);
        if (!o || !ctx.is_constant_value(*o, 0.044715, 1e-3)) continue;
        if (const graph::Node* p = produced_by(in, "Pow", m_index)) {
          ok = p->inputs.size() == 2 && p->inputs[0] == cand && ctx.is_constant_value(p->inputs[1], 3.0);
        } else if (const graph::Node* c1 = produced_by(in, "Mul", m_index)) {
          // x * x * x as Mul(Mul(x, x), x) or Mul(x, Mul(x, x)).
          const size_t c1_index = group.back();
          auto sq = other_of(*c1, cand);
          if (sq && *sq != cand) {
            const graph::Node* c2 = produced_by(*sq, "Mul", c1_index);
            ok = c2 != nullptr && c2->inputs[0] == cand && c2->inputs[1] == cand;
          }
        }
        if (ok) break;
      }
      if (ok) {
        x = cand;
      } else {
        group.resize(mark);
      }
    }
    if (x < 0 || ctx.elem_type(x) != DataType::kFloat) return std::nullopt;
    // (1 + tanh) times x times 0.5, in any order.
    auto sole = [&](int32_t v) -> std::optional<size_t> {
      if (ctx.is_pinned(v) || ctx.consumers(v).size() != 1) return std::nullopt;
      return ctx.consumers(v)[0];
    };
    auto add1 = sole(tanh.outputs[0]);
    if (!add1 || !is_op(ctx.node(*add1), "Add")) return std::nullopt;
    auto one = other_of(ctx.node(*add1), tanh.outputs[0]);
    if (!one || !ctx.is_constant_value(*one, 1.0)) return std::nullopt;
    group.push_back(*add1);
    const int32_t t1 = ctx.node(*add1).outputs[0];
    auto m1 = sole(t1);
    if (!m1 || !is_op(ctx.node(*m1), "Mul")) return std::nullopt;
    auto o1 = other_of(ctx.node(*m1), t1);
    if (!o1) return std::nullopt;
    group.push_back(*m1);
    int32_t result = -1;
    if (*o1 == x || ctx.is_constant_value(*o1, 0.5)) {
      auto m2 = sole(ctx.node(*m1).outputs[0]);
      if (!m2 || !is_op(ctx.node(*m2), "Mul")) return std::nullopt;
      auto o2 = other_of(ctx.node(*m2), ctx.node(*m1).outputs[0]);
      if (!o2 || !(*o1 == x ? ctx.is_constant_value(*o2, 0.5) : *o2 == x)) return std::nullopt;
      group.push_back(*m2);
      result = ctx.node(*m2).outputs[0];
    } else {
      const graph::Node* h = produced_by(*o1, "Mul", *m1);
      auto o2 = h != nullptr ? other_of(*h, x) : std::nullopt;
      if (!o2 || !ctx.is_constant_value(*o2, 0.5)) return std::nullopt;
      result = ctx.node(*m1).outputs[0];
    }
    // Every intermediate must be read only inside the pattern.
    std::unordered_set<size_t> members(group.begin(), group.end());
    for (size_t n : group) {
      for (int32_t out : ctx.node(n).outputs) {
        if (out < 0 || out == result) continue;
        if (ctx.is_pinned(out)) return std::nullopt;
        for (size_t user : ctx.consumers(out)) {
          if (!members.count(user)) return std::nullopt;
        }
      }
    }
    Patch patch;
    for (size_t n : members) patch.remove(n);
    patch.add_nodes.push_back(make_node("FastGelu", "com.microsoft", 1, {x}, {result},
                                        tanh.name.empty() ? "FastGelu" : tanh.name + "_fast_gelu"));
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_fast_gelu_fusion_pass() { return std::make_unique<FastGeluFusion>(); }

}  // namespace onyx::optimizer
