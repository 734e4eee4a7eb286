// The layout level: chains of float 2-D convolutions move to the blocked
// channel layout NCHWc (com.microsoft.nchwc ops, in the format onnxruntime
// uses, so a saved model runs there too). A blocked tensor keeps the logical
// shape [N, C, H, W] but stores [N][C/B][H][W][B]: B consecutive channels of a
// pixel sit in one SIMD register, so a convolution kernel broadcasts one input
// value and multiplies it into B output channels at once, for any spatial
// size. Reorders are added only where the chain meets an op that needs NCHW.
//
// What joins a chain (its input already blocked, or reordered once):
//  - Conv / FusedConv with O % B == 0 and either group 1 with I % B == 0, group
//    1 with I < B (the first layer: it reads plain NCHW X), or depthwise
//    (group == I == O). The weight is reordered here, once: OIHWBiBo
//    ([O/B][I/B][kh][kw][bi][bo]) for the regular case, OIHWBo otherwise.
//  - MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool on a blocked input.
//  - BatchNormalization of a blocked input, as a 1x1 depthwise Conv (with a
//    following Relu as its activation).
//  - Element-wise ops whose tensor inputs are all blocked with one shape (or
//    scalar constants), and Concat along channels: they compute the same thing
//    on either layout, so they stay ONNX ops reading blocked data.
#include <cmath>
#include <unordered_map>

#include "optimizer/pass.h"
#include "providers/cpu/nchwc/nchwc.h"
#include "providers/kernel.h"

namespace onyx::optimizer {
namespace {

constexpr const char* kDomain = "com.microsoft.nchwc";

bool same_dims(const graph::TypeAndShape& a, const graph::TypeAndShape& b) {
  if (!a.has_shape || !b.has_shape || a.shape.size() != b.shape.size()) return false;
  for (size_t i = 0; i < a.shape.size(); ++i) {
    const graph::Dim& x = a.shape[i];
    const graph::Dim& y = b.shape[i];
    if (x.is_known() != y.is_known()) return false;
    if (x.is_known() ? x.value != y.value : (x.symbol.empty() || x.symbol != y.symbol)) return false;
  }
  return true;
}

bool is_unary_elementwise(const graph::Node& n) {
  static const char* kOps[] = {"Relu", "LeakyRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid", "HardSwish",
                               "Elu", "Selu", "Softplus", "Abs", "Neg", "Identity"};
  if (!n.domain.empty()) return false;
  for (const char* op : kOps) {
    if (n.op_type == op) return true;
  }
  return false;
}

bool is_binary_elementwise(const graph::Node& n) {
  static const char* kOps[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean"};
  if (!n.domain.empty()) return false;
  for (const char* op : kOps) {
    if (n.op_type == op) return true;
  }
  return false;
}

// Reorders a float weight [O, I, kh, kw] into O/B blocks of B output channels
// (innermost), with the I input channels in blocks of B as well when
// `block_inputs` (OIHWBiBo) or one by one (OIHWBo).
Tensor reorder_weight(const Tensor& w, int64_t block, bool block_inputs) {
  const int64_t o = w.dim(0), i = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  const int64_t spatial = kh * kw;
  Tensor out(DataType::kFloat, w.shape());
  const float* src = w.data<float>();
  float* dst = out.data<float>();
  for (int64_t ob = 0; ob < o / block; ++ob) {
    for (int64_t ic = 0; ic < i; ++ic) {
      const int64_t ib = block_inputs ? ic / block : ic;
      const int64_t bi = block_inputs ? ic % block : 0;
      const int64_t inner = block_inputs ? block : 1;
      const int64_t in_blocks = block_inputs ? i / block : i;
      for (int64_t s = 0; s < spatial; ++s) {
        for (int64_t bo = 0; bo < block; ++bo) {
          const int64_t oc = ob * block + bo;
          const int64_t to = (((ob * in_blocks + ib) * spatial + s) * inner + bi) * block + bo;
          dst[to] = src[(oc * i + ic) * spatial + s];
        }
      }
    }
  }
  return out;
}

class NchwcTransformer final : public Pass {
 public:
  std::string name() const override { return "nchwc_transformer"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    // The whole graph is rewritten as one patch, from its first node.
    if (index != 0 || !ctx.cpu_only()) return std::nullopt;
    // The kernels' block size: 16 with AVX-512F, 8 with AVX2, else no layout.
    const int block = cpu::nchwc_block_size();
    if (block <= 1 || !cpu_kernel_registry().has_op(kDomain, "Conv")) return std::nullopt;
    Rewrite r(ctx, block);
    return r.run();
  }

 private:
  class Rewrite {
   public:
    Rewrite(const PassContext& ctx, int block) : ctx_(ctx), block_(block) {}

    std::optional<Patch> run() {
      const size_t count = ctx_.node_count();
      converted_.assign(count, 0);
      for (size_t n = 0; n < count; ++n) {
        if (converted_[n]) continue;  // an activation a rewrite took in
        const graph::Node& node = ctx_.node(n);
        if (try_conv(n, node) || try_batchnorm(n, node) || try_pool(n, node) || try_elementwise(n, node)) {
          converted_[n] = 1;
        }
      }
      if (!any_conv_) return std::nullopt;
      // Blocked values still read by an NCHW op (or a graph output) get their
      // original value back through one ReorderOutput each.
      for (const auto& [orig, blocked] : blocked_) {
        bool needed = ctx_.is_pinned(orig);
        for (size_t user : ctx_.consumers(orig)) needed = needed || !converted_[user];
        if (!needed) continue;
        const graph::TypeAndShape& info = ctx_.info(orig);
        graph::Node reorder = make_node("ReorderOutput", kDomain, 1, {blocked}, {orig}, "ReorderOutput_" + name_of(orig));
        reorder.attributes["channels"] = graph::Attribute::make_int("channels", info.shape[1].value);
        patch_.add_nodes.push_back(std::move(reorder));
      }
      return std::move(patch_);
    }

   private:
    std::string name_of(int32_t value) const { return ctx_.graph().value_name(value); }

    bool has_channels_multiple_of_block(int32_t value) const {
      const graph::TypeAndShape& info = ctx_.info(value);
      return info.has_shape && info.shape.size() == 4 && info.shape[1].is_known() && info.shape[1].value % block_ == 0 &&
             info.type.elem_type == DataType::kFloat;
    }

    // The blocked form of `value`: its blocked producer's output, or a
    // ReorderInput added once.
    int32_t blocked_input(int32_t value) {
      auto it = blocked_.find(value);
      if (it != blocked_.end()) return it->second;
      auto r = reordered_.find(value);
      if (r != reordered_.end()) return r->second;
      const int32_t out = patch_.new_value(name_of(value) + "_nchwc", ctx_.info(value));
      patch_.add_nodes.push_back(make_node("ReorderInput", kDomain, 1, {value}, {out}, "ReorderInput_" + name_of(value)));
      reordered_[value] = out;
      return out;
    }

    // Replaces node n by `node` (already rewired) whose single output becomes blocked.
    void emit(size_t n, graph::Node node) {
      const int32_t orig = node.outputs[0];
      const int32_t out = patch_.new_value(name_of(orig) + "_nchwc", ctx_.info(orig));
      node.outputs = {out};
      blocked_[orig] = out;
      patch_.remove(n);
      patch_.add_nodes.push_back(std::move(node));
    }

    bool try_conv(size_t n, const graph::Node& node) {
      const bool fused = node.domain == "com.microsoft" && node.op_type == "FusedConv";
      if ((!is_op(node, "Conv") && !fused) || node.inputs.size() < 2 || node.outputs.size() != 1) return false;
      const int32_t x = node.inputs[0];
      const int32_t y = node.outputs[0];
      const Tensor* w = ctx_.constant(node.inputs[1]);
      if (w == nullptr || w->dtype() != DataType::kFloat || w->rank() != 4) return false;
      if (ctx_.elem_type(x) != DataType::kFloat || !has_channels_multiple_of_block(y)) return false;
      const graph::TypeAndShape& x_info = ctx_.info(x);
      if (!x_info.has_shape || x_info.shape.size() != 4 || !x_info.shape[1].is_known()) return false;
      if (const graph::Attribute* ks = node.attribute("kernel_shape"); ks != nullptr && ks->ints.size() != 2) return false;
      const int64_t group = attribute_int(node, "group", 1);
      const int64_t out_channels = w->dim(0), in_per_group = w->dim(1);
      const int64_t in_channels = x_info.shape[1].value;
      if (out_channels % block_ != 0 || in_channels != in_per_group * group) return false;
      const bool regular = group == 1 && in_per_group % block_ == 0;
      const bool nchw_input = group == 1 && in_per_group < block_;
      const bool depthwise = group > 1 && in_per_group == 1 && group == out_channels;
      if (!regular && !nchw_input && !depthwise) return false;
      if (fused) {
        const graph::Attribute* act = node.attribute("activation");
        static const char* kActivations[] = {"Relu", "LeakyRelu", "Clip", "HardSigmoid", "Sigmoid", "Tanh"};
        bool known = act == nullptr;
        for (const char* a : kActivations) known = known || (act != nullptr && act->s == a);
        if (!known) return false;
      }
      const bool has_sum = fused && node.inputs.size() > 3 && node.inputs[3] != graph::kNoValue;
      if (has_sum && !same_dims(ctx_.info(node.inputs[3]), ctx_.info(y))) return false;

      graph::Node conv = make_node("Conv", kDomain, 1, {}, {y}, node.name);
      conv.attributes = node.attributes;
      conv.inputs.push_back(nchw_input ? x : blocked_input(x));
      const std::string w_name = name_of(node.inputs[1]) + (regular ? "_OIHWBiBo" : "_OIHWBo");
      conv.inputs.push_back(patch_.new_constant(w_name, reorder_weight(*w, block_, regular)));
      conv.inputs.push_back(node.inputs.size() > 2 ? node.inputs[2] : graph::kNoValue);
      if (has_sum) conv.inputs.push_back(blocked_input(node.inputs[3]));
      while (conv.inputs.size() > 2 && conv.inputs.back() == graph::kNoValue) conv.inputs.pop_back();
      if (conv.attributes.find("kernel_shape") == conv.attributes.end()) {
        conv.attributes["kernel_shape"] = graph::Attribute::make_ints("kernel_shape", {w->dim(2), w->dim(3)});
      }
      emit(n, std::move(conv));
      any_conv_ = true;
      return true;
    }

    // BatchNormalization (inference) of a blocked tensor: a per-channel
    // scale and shift, i.e. a 1x1 depthwise convolution, which also takes in a
    // Relu that follows (DenseNet's pre-activation).
    bool try_batchnorm(size_t n, const graph::Node& node) {
      if (!is_op(node, "BatchNormalization") || node.inputs.size() != 5 || node.since_version < 6) return false;
      if (attribute_int(node, "training_mode", 0) != 0 || !blocked_.count(node.inputs[0])) return false;
      for (size_t o = 1; o < node.outputs.size(); ++o) {
        if (node.outputs[o] != graph::kNoValue) return false;
      }
      const int32_t y = node.outputs[0];
      if (!has_channels_multiple_of_block(y)) return false;
      const int64_t channels = ctx_.info(y).shape[1].value;
      const Tensor* p[4];
      for (size_t i = 0; i < 4; ++i) {
        p[i] = ctx_.constant(node.inputs[i + 1]);
        if (p[i] == nullptr || p[i]->dtype() != DataType::kFloat || p[i]->size() != channels) return false;
      }
      const float epsilon = attribute_float(node, "epsilon", 1e-5f);
      Tensor w(DataType::kFloat, {channels, 1, 1, 1});
      Tensor b(DataType::kFloat, {channels});
      for (int64_t c = 0; c < channels; ++c) {
        const float scale = p[0]->data<float>()[c] / std::sqrt(p[3]->data<float>()[c] + epsilon);
        w.data<float>()[c] = scale;
        b.data<float>()[c] = p[1]->data<float>()[c] - p[2]->data<float>()[c] * scale;
      }
      const std::string base = node.name.empty() ? name_of(y) : node.name;
      graph::Node conv = make_node("Conv", kDomain, 1,
                                   {blocked_.at(node.inputs[0]), patch_.new_constant(base + "_OIHWBo", reorder_weight(w, block_, false)),
                                    patch_.new_constant(base + "_B", b)},
                                   {y}, base);
      conv.attributes["group"] = graph::Attribute::make_int("group", channels);
      conv.attributes["kernel_shape"] = graph::Attribute::make_ints("kernel_shape", {1, 1});
      const auto& users = ctx_.consumers(y);
      if (users.size() == 1 && !ctx_.is_pinned(y)) {
        const graph::Node& act = ctx_.node(users[0]);
        if (is_op(act, "Relu") && act.outputs.size() == 1 && act.inputs[0] == y) {
          conv.attributes["activation"] = graph::Attribute::make_string("activation", "Relu");
          conv.outputs = {act.outputs[0]};
          patch_.remove(users[0]);
          converted_[users[0]] = 1;
        }
      }
      emit(n, std::move(conv));
      return true;
    }

    bool try_pool(size_t n, const graph::Node& node) {
      if (!node.domain.empty() || node.inputs.empty() || !blocked_.count(node.inputs[0])) return false;
      const bool global = node.op_type == "GlobalMaxPool" || node.op_type == "GlobalAveragePool";
      const bool windowed = node.op_type == "MaxPool" || node.op_type == "AveragePool";
      if (!global && !windowed) return false;
      if (node.outputs.empty() || (node.outputs.size() > 1 && node.outputs[1] != graph::kNoValue)) return false;
      if (!has_channels_multiple_of_block(node.outputs[0])) return false;
      if (windowed) {
        const graph::Attribute* ks = node.attribute("kernel_shape");
        if (ks == nullptr || ks->ints.size() != 2 || attribute_int(node, "storage_order", 0) != 0) return false;
      }
      graph::Node pool = make_node(node.op_type, kDomain, 1, {blocked_.at(node.inputs[0])}, {node.outputs[0]}, node.name);
      pool.attributes = node.attributes;
      emit(n, std::move(pool));
      return true;
    }

    bool try_elementwise(size_t n, const graph::Node& node) {
      if (node.outputs.size() != 1 || node.inputs.empty()) return false;
      const int32_t y = node.outputs[0];
      const bool unary = is_unary_elementwise(node);
      const bool concat = is_op(node, "Concat") && (attribute_int(node, "axis", 0) == 1 || attribute_int(node, "axis", 0) == -3);
      if (!unary && !concat && !is_binary_elementwise(node)) return false;
      if (!has_channels_multiple_of_block(y)) return false;
      graph::Node copy = node;
      bool any_blocked = false;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const int32_t in = node.inputs[i];
        if (in == graph::kNoValue) continue;
        auto it = blocked_.find(in);
        if (it != blocked_.end()) {
          // Concat joins blocked inputs along channels; the others must not broadcast.
          if (!concat && !same_dims(ctx_.info(in), ctx_.info(y))) return false;
          copy.inputs[i] = it->second;
          any_blocked = true;
          continue;
        }
        // Clip's bounds, or a scalar operand: the same for every element.
        const Tensor* c = ctx_.constant(in);
        if (concat || c == nullptr || c->size() != 1 || (i == 0 && unary)) return false;
      }
      if (!any_blocked) return false;
      emit(n, std::move(copy));
      return true;
    }

    const PassContext& ctx_;
    const int block_;
    Patch patch_;
    std::vector<char> converted_;
    std::unordered_map<int32_t, int32_t> blocked_;    // NCHW value -> its blocked replacement
    std::unordered_map<int32_t, int32_t> reordered_;  // NCHW value -> ReorderInput output
    bool any_conv_ = false;
  };
};

}  // namespace

std::unique_ptr<Pass> make_nchwc_transformer_pass() { return std::make_unique<NchwcTransformer>(); }

}  // namespace onyx::optimizer
