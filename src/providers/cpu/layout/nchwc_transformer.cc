// The layout level: chains of float 2-D convolutions move to the blocked
// channel layout NCHWc (com.microsoft.nchwc ops, in the format onnxruntime
// uses, so a saved model runs there too). A blocked tensor has the logical
// shape [N, Cp, H, W] (C rounded up to a multiple of B) and stores
// [N][Cp/B][H][W][B]: B consecutive channels of a
// pixel sit in one SIMD register, so a convolution kernel broadcasts one input
// value and multiplies it into B output channels at once, for any spatial
// size. Reorders are added only where the chain meets an op that needs NCHW.
//
// What joins a chain (its input already blocked, or reordered once):
//  - Conv / FusedConv with group 1 (regular; or, when X is not blocked and
//    I < B, the first layer, which reads plain NCHW X) or depthwise (group ==
//    I == O), except the 3x3 stride-1 convs that the NCHW Conv kernel's
//    Winograd runs faster (prefers_winograd). The weight is reordered here,
//    once: OIHWBiBo ([O/B][I/B][kh][kw][bi][bo]) for the regular case, OIHWBo
//    otherwise.
//    Channel counts that are not a multiple of B are padded to one (when
//    that adds at most half again to the work): the
//    weights and bias get zeros there, the blocked tensor's logical shape has
//    the padded count Cp, and ReorderOutput's `channels` drops the padding.
//  - MaxPool, AveragePool, GlobalMaxPool, GlobalAveragePool on a blocked
//    input, and MaxPool / AveragePool of an NCHW input that fills whole blocks.
//  - BatchNormalization of a blocked input, as a 1x1 depthwise Conv (with a
//    following Relu as its activation).
//  - Resize of a blocked input by whole-number factors of H and W (nearest
//    with asymmetric coordinates and floor, or linear) as nchwc Upsample.
//  - Element-wise ops whose tensor inputs are all blocked with one shape (or
//    scalar constants), and Concat along channels of unpadded inputs: they
//    compute the same thing on either layout, so they stay ONNX ops reading
//    blocked data. Padded channels hold finite junk (act(0), 0 + c), which the
//    zero weights of the next convolution cancel; so no Div by a blocked
//    value with padding, which could make them infinite.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "optimizer/pass.h"
#include "providers/cpu/layout/layout_passes.h"
#include "providers/cpu/nchwc/nchwc.h"

namespace onyx::cpu {
namespace {

using namespace ::onyx::optimizer;  // NOLINT(google-build-using-namespace): the pass vocabulary

constexpr const char* kDomain = "com.microsoft.nchwc";

bool is_unary_elementwise(const graph::Node& n) {
  static const char* kOps[] = {"Relu", "LeakyRelu", "Sigmoid",  "Tanh", "Clip", "HardSigmoid", "HardSwish",
                               "Elu",  "Selu",      "Softplus", "Abs",  "Neg",  "Identity"};
  if (n.domain == "com.microsoft" && n.op_type == "QuickGelu") return true;  // SiLU (silu_fusion)
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

int64_t round_up(int64_t v, int64_t block) { return (v + block - 1) / block * block; }

// Reorders a float weight [O, I, kh, kw] into Op/B blocks of B output channels
// (innermost), with the input channels in Ip/B blocks of B as well when
// `block_inputs` (OIHWBiBo) or one by one (OIHWBo). Padded channels are zero.
Tensor reorder_weight(const Tensor& w, int64_t block, bool block_inputs, int64_t o_padded, int64_t i_padded) {
  const int64_t o = w.dim(0), i = w.dim(1), spatial = w.dim(2) * w.dim(3);
  Tensor out(DataType::kFloat, {o_padded, i_padded, w.dim(2), w.dim(3)});
  const float* src = w.data<float>();
  float* dst = out.data<float>();
  const int64_t inner = block_inputs ? block : 1;
  const int64_t in_blocks = block_inputs ? i_padded / block : i_padded;
  // In destination order, so the writes stream; padded channels read as zero.
  for (int64_t ob = 0; ob < o_padded / block; ++ob) {
    for (int64_t ib = 0; ib < in_blocks; ++ib) {
      for (int64_t s = 0; s < spatial; ++s) {
        for (int64_t bi = 0; bi < inner; ++bi) {
          const int64_t ic = ib * inner + bi;
          for (int64_t bo = 0; bo < block; ++bo) {
            const int64_t oc = ob * block + bo;
            *dst++ = (oc < o && ic < i) ? src[(oc * i + ic) * spatial + s] : 0.0f;
          }
        }
      }
    }
  }
  return out;
}

// A per-channel float vector padded with zeros to `padded`.
Tensor pad_vector(const float* v, int64_t count, int64_t padded) {
  Tensor out(DataType::kFloat, {padded});
  for (int64_t c = 0; c < padded; ++c) out.data<float>()[c] = c < count ? v[c] : 0.0f;
  return out;
}

// 3x3 stride-1 convolutions run 20-30% faster through the NCHW Conv
// kernel's Winograd F(2x2, 3x3) than through the blocked direct kernel when
// they have enough channels, per node at 1 and 2 threads (VGG-19's 128 x 128
// at 112 x 112: 11.2 against 14.7 ms; 256 x 256 at 56 x 56: 9.6 against 14.0),
// but leaving the blocked layout costs a reorder on each side, which grows
// with C + K while the saving grows with C * K: C K >= 48 (C + K) keeps
// Inception-v2's 64 -> 192 (3.5% faster at 1 thread, 2.4% at 2) and drops
// 64 -> 64 and 64 -> 128 (ResNet-50 6.6% slower at 2 threads with its 64 x 64
// at 56 x 56 unblocked; VGG-19 no faster). With 512 output channels the
// transformed weights (16 C K floats) no longer stay in cache and Winograd
// is slower (256 -> 512 at 28 x 28: 8.6 against 6.9 ms): C K <= 256 x 256.
// Planes of at least 56 x 56 only: smaller ones gain 0.1-0.2 ms per conv, and
// between blocked 1x1 convs (ResNet-50's 128 x 128 at 28 x 28) the reorders
// made the model 1-5% slower at 2 threads. The conditions imply
// nn::winograd_applies.
bool prefers_winograd(const graph::Node& conv, const Tensor& w, const graph::TypeAndShape& y) {
  if (w.rank() != 4 || w.dim(2) != 3 || w.dim(3) != 3 || attribute_int(conv, "group", 1) != 1) return false;
  if (!attribute_ints_all(conv, "strides", 1) || !attribute_ints_all(conv, "dilations", 1)) return false;
  const int64_t k = w.dim(0), c = w.dim(1);
  if (c * k < 48 * (c + k) || c * k > 256 * 256) return false;
  if (!y.has_shape || y.shape.size() != 4 || !y.shape[2].is_known() || !y.shape[3].is_known()) return false;
  return y.shape[2].value * y.shape[3].value >= 56 * 56;
}

class NchwcTransformer final : public Pass {
 public:
  std::string name() const override { return "nchwc_transformer"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    // The whole graph is rewritten as one patch, from its first node.
    if (index != 0) return std::nullopt;
    // The kernels' block size: 16 with AVX-512F, 8 with AVX2, else no layout.
    const int block = nchwc_block_size();
    if (block <= 1 || !ctx.has_op(kDomain, "Conv")) return std::nullopt;
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
        // An activation a rewrite took in, or a node another provider runs.
        if (converted_[n] || !ctx_.owns(n)) continue;
        const graph::Node& node = ctx_.node(n);
        if (try_conv(n, node) || try_batchnorm(n, node) || try_pool(n, node) || try_resize(n, node) ||
            try_elementwise(n, node)) {
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
        graph::Node reorder =
            make_node("ReorderOutput", kDomain, 1, {blocked.id}, {orig}, "ReorderOutput_" + name_of(orig));
        reorder.attributes["channels"] = graph::Attribute::make_int("channels", channels_of(orig));
        patch_.add_nodes.push_back(std::move(reorder));
      }
      return std::move(patch_);
    }

   private:
    struct Blocked {
      int32_t id;        // the blocked value (a patch value id)
      int64_t channels;  // its channel count, padded to a multiple of the block
    };

    std::string name_of(int32_t value) const { return ctx_.graph().value_name(value); }

    // The known channel count of a float 4-D value, or -1.
    int64_t channels_of(int32_t value) const {
      const graph::TypeAndShape& info = ctx_.info(value);
      if (info.type.elem_type != DataType::kFloat || !info.has_shape || info.shape.size() != 4 ||
          !info.shape[1].is_known()) {
        return -1;
      }
      return info.shape[1].value;
    }

    graph::TypeAndShape padded_info(int32_t value, int64_t channels) const {
      graph::TypeAndShape info = ctx_.info(value);
      info.shape[1] = graph::Dim::known(channels);
      return info;
    }

    // The blocked form of `value`: its blocked producer's output, or a
    // ReorderInput added once (which zero-fills the padded channels).
    Blocked blocked_input(int32_t value) {
      auto it = blocked_.find(value);
      if (it != blocked_.end()) return it->second;
      auto r = reordered_.find(value);
      if (r != reordered_.end()) return r->second;
      const int64_t channels = round_up(channels_of(value), block_);
      const int32_t out = patch_.new_value(name_of(value) + "_nchwc", padded_info(value, channels));
      patch_.add_nodes.push_back(
          make_node("ReorderInput", kDomain, 1, {value}, {out}, "ReorderInput_" + name_of(value)));
      reordered_[value] = Blocked{out, channels};
      return reordered_[value];
    }

    // Replaces node n by `node` (already rewired) whose single output becomes
    // blocked with `channels` (padded) channels.
    void emit(size_t n, graph::Node node, int64_t channels) {
      const int32_t orig = node.outputs[0];
      const int32_t out = patch_.new_value(name_of(orig) + "_nchwc", padded_info(orig, channels));
      node.outputs = {out};
      blocked_[orig] = Blocked{out, channels};
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
      const int64_t in_channels = channels_of(x);
      const int64_t out_channels = w->dim(0), in_per_group = w->dim(1);
      if (in_channels <= 0 || channels_of(y) != out_channels) return false;
      if (const graph::Attribute* ks = node.attribute("kernel_shape"); ks != nullptr && ks->ints.size() != 2)
        return false;
      const int64_t group = attribute_int(node, "group", 1);
      if (in_channels != in_per_group * group) return false;
      const bool x_blocked = blocked_.count(x) != 0;
      const bool nchw_input = group == 1 && !x_blocked && in_per_group < block_;
      const bool regular = group == 1 && !nchw_input;
      const bool depthwise = group > 1 && in_per_group == 1 && group == out_channels;
      if (!regular && !nchw_input && !depthwise) return false;
      if (regular && prefers_winograd(node, *w, ctx_.info(y))) return false;
      if (fused) {
        const graph::Attribute* act = node.attribute("activation");
        static const char* kActivations[] = {"Relu", "LeakyRelu", "Clip",     "HardSigmoid",
                                             "Sigmoid", "Tanh",    "HardSwish", "QuickGelu"};
        bool known = act == nullptr;
        for (const char* a : kActivations) known = known || (act != nullptr && act->s == a);
        if (!known) return false;
      }
      // Padding is worth it while it adds at most half again to the work
      // (24 -> 32 channels, 1000 -> 1008), not for a handful of channels.
      auto pads_cheaply = [&](int64_t c) { return round_up(c, block_) * 2 <= c * 3; };
      const int64_t out_padded = round_up(out_channels, block_);
      if (!pads_cheaply(out_channels) || (regular && !x_blocked && !pads_cheaply(in_channels))) return false;
      const bool has_bias = node.inputs.size() > 2 && node.inputs[2] != graph::kNoValue;
      const Tensor* bias = has_bias ? ctx_.constant(node.inputs[2]) : nullptr;
      if (out_padded != out_channels && has_bias && (bias == nullptr || bias->dtype() != DataType::kFloat))
        return false;
      const bool has_sum = fused && node.inputs.size() > 3 && node.inputs[3] != graph::kNoValue;
      if (has_sum) {
        const graph::TypeAndShape& z = ctx_.info(node.inputs[3]);
        const graph::TypeAndShape& yi = ctx_.info(y);
        if (!z.has_shape || z.shape.size() != 4 || !yi.has_shape) return false;
        for (size_t d = 0; d < 4; ++d) {
          const graph::Dim& a = z.shape[d];
          const graph::Dim& b = yi.shape[d];
          if (!a.is_known() || !b.is_known() || a.value != b.value) return false;
        }
      }

      graph::Node conv = make_node("Conv", kDomain, 1, {}, {y}, node.name);
      conv.attributes = node.attributes;
      int64_t in_padded = in_per_group;
      if (nchw_input) {
        conv.inputs.push_back(x);
      } else {
        const Blocked bx = blocked_input(x);
        conv.inputs.push_back(bx.id);
        in_padded = bx.channels;
      }
      if (depthwise) {
        // One group per (padded) channel: the padded ones compute zeros.
        if (in_padded != out_padded) return false;
        conv.attributes["group"] = graph::Attribute::make_int("group", out_padded);
        in_padded = 1;
      }
      const std::string w_name = name_of(node.inputs[1]) + (regular ? "_OIHWBiBo" : "_OIHWBo");
      conv.inputs.push_back(patch_.new_constant(w_name, reorder_weight(*w, block_, regular, out_padded, in_padded)));
      if (!has_bias) {
        conv.inputs.push_back(graph::kNoValue);
      } else if (out_padded == out_channels) {
        conv.inputs.push_back(node.inputs[2]);
      } else {
        conv.inputs.push_back(patch_.new_constant(name_of(node.inputs[2]) + "_padded",
                                                  pad_vector(bias->data<float>(), out_channels, out_padded)));
      }
      if (has_sum) {
        const Blocked sum = blocked_input(node.inputs[3]);
        if (sum.channels != out_padded) return false;
        conv.inputs.push_back(sum.id);
      }
      while (conv.inputs.size() > 2 && conv.inputs.back() == graph::kNoValue) conv.inputs.pop_back();
      conv.attributes["kernel_shape"] = graph::Attribute::make_ints("kernel_shape", {w->dim(2), w->dim(3)});
      emit(n, std::move(conv), out_padded);
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
      const int64_t channels = channels_of(y);
      const Blocked bx = blocked_.at(node.inputs[0]);
      if (channels <= 0) return false;
      const Tensor* p[4];
      for (size_t i = 0; i < 4; ++i) {
        p[i] = ctx_.constant(node.inputs[i + 1]);
        if (p[i] == nullptr || p[i]->dtype() != DataType::kFloat || p[i]->size() != channels) return false;
      }
      const float epsilon = attribute_float(node, "epsilon", 1e-5f);
      Tensor w(DataType::kFloat, {channels, 1, 1, 1});
      std::vector<float> b(static_cast<size_t>(channels));
      for (int64_t c = 0; c < channels; ++c) {
        const float scale = p[0]->data<float>()[c] / std::sqrt(p[3]->data<float>()[c] + epsilon);
        w.data<float>()[c] = scale;
        b[static_cast<size_t>(c)] = p[1]->data<float>()[c] - p[2]->data<float>()[c] * scale;
      }
      const std::string base = node.name.empty() ? name_of(y) : node.name;
      graph::Node conv =
          make_node("Conv", kDomain, 1,
                    {bx.id, patch_.new_constant(base + "_OIHWBo", reorder_weight(w, block_, false, bx.channels, 1)),
                     patch_.new_constant(base + "_B", pad_vector(b.data(), channels, bx.channels))},
                    {y}, base);
      conv.attributes["group"] = graph::Attribute::make_int("group", bx.channels);
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
      emit(n, std::move(conv), bx.channels);
      return true;
    }

    // True when a convolution that stays NCHW for Winograd reads `value`.
    bool feeds_winograd_conv(int32_t value) const {
      for (size_t user : ctx_.consumers(value)) {
        const graph::Node& c = ctx_.node(user);
        const bool conv = is_op(c, "Conv") || (c.domain == "com.microsoft" && c.op_type == "FusedConv");
        if (!conv || c.inputs.size() < 2 || c.inputs[0] != value || c.outputs.size() != 1) continue;
        const Tensor* w = ctx_.constant(c.inputs[1]);
        if (w != nullptr && w->dtype() == DataType::kFloat && prefers_winograd(c, *w, ctx_.info(c.outputs[0]))) {
          return true;
        }
      }
      return false;
    }

    // Pools on a blocked input; a pool of an NCHW input whose channels fill
    // whole blocks is reordered too (it usually feeds a convolution), unless
    // it feeds one that stays NCHW for Winograd.
    bool try_pool(size_t n, const graph::Node& node) {
      if (!node.domain.empty() || node.inputs.empty()) return false;
      const bool global = node.op_type == "GlobalMaxPool" || node.op_type == "GlobalAveragePool";
      const bool windowed = node.op_type == "MaxPool" || node.op_type == "AveragePool";
      if (!global && !windowed) return false;
      if (node.outputs.empty() || (node.outputs.size() > 1 && node.outputs[1] != graph::kNoValue)) return false;
      const int32_t x = node.inputs[0];
      const int64_t channels = channels_of(x);
      if (channels <= 0 || channels_of(node.outputs[0]) != channels) return false;
      if (!blocked_.count(x) && (channels % block_ != 0 || global || feeds_winograd_conv(node.outputs[0]))) {
        return false;
      }
      if (windowed) {
        const graph::Attribute* ks = node.attribute("kernel_shape");
        if (ks == nullptr || ks->ints.size() != 2 || attribute_int(node, "storage_order", 0) != 0) return false;
      }
      const Blocked bx = blocked_input(x);
      graph::Node pool = make_node(node.op_type, kDomain, 1, {bx.id}, {node.outputs[0]}, node.name);
      pool.attributes = node.attributes;
      emit(n, std::move(pool), bx.channels);
      return true;
    }

    // Resize of a blocked input by whole-number factors of H and W only
    // (ONNX Resize-11 and later): nearest with asymmetric coordinates and
    // floor, or linear, becomes com.microsoft.nchwc Upsample (an FPN's
    // upsampling between blocked convolutions no longer leaves the layout).
    bool try_resize(size_t n, const graph::Node& node) {
      if (!is_op(node, "Resize") || node.since_version < 11 || node.inputs.empty() || node.outputs.size() != 1) {
        return false;
      }
      const int32_t x = node.inputs[0], y = node.outputs[0];
      if (!blocked_.count(x)) return false;
      const graph::TypeAndShape& xi = ctx_.info(x);
      const graph::TypeAndShape& yi = ctx_.info(y);
      if (channels_of(x) <= 0 || channels_of(y) != channels_of(x) || !yi.has_shape) return false;
      int64_t scales[2];
      for (size_t d = 2; d < 4; ++d) {
        const graph::Dim &in = xi.shape[d], &out = yi.shape[d];
        if (!in.is_known() || !out.is_known() || in.value <= 0 || out.value % in.value != 0) return false;
        scales[d - 2] = out.value / in.value;
      }
      if (!xi.shape[0].is_known() || !yi.shape[0].is_known() || xi.shape[0].value != yi.shape[0].value) return false;
      auto text = [&](const char* name, const char* fallback) {
        const graph::Attribute* a = node.attribute(name);
        return a != nullptr ? a->s : std::string(fallback);
      };
      const std::string mode = text("mode", "nearest");
      const std::string coords = text("coordinate_transformation_mode", "half_pixel");
      if (attribute_int(node, "antialias", 0) != 0 || text("keep_aspect_ratio_policy", "stretch") != "stretch") {
        return false;
      }
      if (node.attribute("axes") != nullptr) return false;
      if (mode == "nearest") {
        if (coords != "asymmetric" || text("nearest_mode", "round_prefer_floor") != "floor") return false;
      } else if (mode == "linear") {
        if (coords != "asymmetric" && coords != "half_pixel" && coords != "pytorch_half_pixel" &&
            coords != "align_corners") {
          return false;
        }
      } else {
        return false;
      }
      const Blocked bx = blocked_.at(x);
      graph::Node up = make_node("Upsample", kDomain, 1, {bx.id}, {y}, node.name);
      up.attributes["scales"] = graph::Attribute::make_ints("scales", {1, 1, scales[0], scales[1]});
      up.attributes["mode"] = graph::Attribute::make_string("mode", mode);
      if (mode == "linear") {
        up.attributes["coordinate_transformation_mode"] =
            graph::Attribute::make_string("coordinate_transformation_mode", coords);
      }
      emit(n, std::move(up), bx.channels);
      return true;
    }

    bool try_elementwise(size_t n, const graph::Node& node) {
      if (node.outputs.size() != 1 || node.inputs.empty()) return false;
      const int32_t y = node.outputs[0];
      const bool unary = is_unary_elementwise(node);
      const bool concat =
          is_op(node, "Concat") && (attribute_int(node, "axis", 0) == 1 || attribute_int(node, "axis", 0) == -3);
      if (!unary && !concat && !is_binary_elementwise(node)) return false;
      if (channels_of(y) <= 0) return false;
      graph::Node copy = node;
      int64_t channels = -1;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const int32_t in = node.inputs[i];
        if (in == graph::kNoValue) continue;
        auto it = blocked_.find(in);
        if (it != blocked_.end()) {
          const bool padded = it->second.channels != channels_of(in);
          if (padded && is_op(node, "Div") && i == 1) return false;
          if (concat) {
            // Blocks of unpadded inputs follow each other as channels do.
            if (it->second.channels != channels_of(in)) return false;
          } else if (!same_dims(ctx_.info(in), ctx_.info(y)) || (channels >= 0 && channels != it->second.channels)) {
            return false;  // must not broadcast, and all share one padding
          }
          channels = concat ? std::max<int64_t>(channels, 0) + it->second.channels : it->second.channels;
          copy.inputs[i] = it->second.id;
          continue;
        }
        // Clip's bounds, or a scalar operand: the same for every element.
        const Tensor* c = ctx_.constant(in);
        if (concat || c == nullptr || c->size() != 1 || (i == 0 && unary)) return false;
      }
      if (channels < 0) return false;
      emit(n, std::move(copy), channels);
      return true;
    }

    const PassContext& ctx_;
    const int block_;
    Patch patch_;
    std::vector<char> converted_;
    std::unordered_map<int32_t, Blocked> blocked_;    // NCHW value -> its blocked replacement
    std::unordered_map<int32_t, Blocked> reordered_;  // NCHW value -> ReorderInput output
    bool any_conv_ = false;
  };
};

}  // namespace

std::unique_ptr<optimizer::Pass> make_nchwc_transformer_pass() { return std::make_unique<NchwcTransformer>(); }

}  // namespace onyx::cpu
