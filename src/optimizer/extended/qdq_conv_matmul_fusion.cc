// QDQ node groups around Conv, MatMul and Gemm become one quantized op, as
// onnxruntime's QDQ transformer does for QDQ models (quantize_static with
// QuantFormat.QDQ, exporters' fake-quantized graphs):
//   DQ(x), DQ(w) [, DQ(int32 bias) | float bias] -> Conv -> Q   =>  QLinearConv
//   DQ(a), DQ(b) -> MatMul -> Q                                =>  QLinearMatMul
//   DQ(a), DQ(b) -> MatMul (float output, no Q)                =>  com.microsoft MatMulIntegerToFloat
//   DQ(a), DQ(b) [, bias] -> Gemm [-> Q]                        =>  com.microsoft QGemm
// Activations are quantized per tensor; weights per tensor or per output
// channel. A bias becomes int32 with scale x_scale * w_scale and zero point
// 0: a DQ(int32) bias is taken as it is when its scale is that product, a
// float constant bias is quantized here (rounded half to even). The DQ
// nodes stay for their other readers; dead_code_elimination drops the rest.
#include <cmath>
#include <limits>

#include "optimizer/extended/qdq_util.h"

namespace onyx::optimizer {
namespace {

using qdq::QuantParams;

// The bias scales x_scale * w_scale[m] (float32 products, as the kernels and
// onnxruntime's quantizer compute them), one per channel.
std::vector<float> bias_scales(const QuantParams& x, const QuantParams& w, int64_t channels) {
  const float xs = qdq::scales(x)[0];
  const std::vector<float> ws = qdq::scales(w);
  std::vector<float> out(static_cast<size_t>(channels));
  for (int64_t m = 0; m < channels; ++m)
    out[static_cast<size_t>(m)] = xs * ws[ws.size() == 1 ? 0 : static_cast<size_t>(m)];
  return out;
}

// The int32 bias input of the fused op for `bias` (a Conv's B or a Gemm's C
// of `channels` elements): graph::kNoValue when there is none, nullopt when
// it cannot be expressed exactly enough.
std::optional<int32_t> int32_bias(const PassContext& ctx, Patch& patch, int32_t bias, const QuantParams& x,
                                  const QuantParams& w, int64_t channels, const std::string& name) {
  if (bias == graph::kNoValue) return graph::kNoValue;
  const std::vector<float> expected = bias_scales(x, w, channels);
  for (float s : expected) {
    if (!std::isnormal(s)) return std::nullopt;
  }
  if (std::optional<QuantParams> b = qdq::dequantize_of(ctx, bias, {DataType::kInt32}, true, true)) {
    std::optional<Shape> shape = ctx.known_shape(b->data);
    if (!shape || shape->size() != 1 || (*shape)[0] != channels) return std::nullopt;
    for (int32_t z : qdq::zero_points(*b)) {
      if (z != 0) return std::nullopt;
    }
    const std::vector<float> got = qdq::scales(*b);
    for (int64_t m = 0; m < channels; ++m) {
      const float g = got[got.size() == 1 ? 0 : static_cast<size_t>(m)];
      const float e = expected[static_cast<size_t>(m)];
      // The quantizer may form the product in double before rounding to
      // float: a few ulps apart is the same scale.
      if (std::fabs(g - e) > e * 1e-6f) return std::nullopt;
    }
    return b->data;
  }
  const Tensor* t = ctx.constant(bias);
  if (t == nullptr || t->dtype() != DataType::kFloat || t->rank() != 1 || t->size() != channels) return std::nullopt;
  Tensor q(DataType::kInt32, {channels});
  for (int64_t m = 0; m < channels; ++m) {
    const double v = std::nearbyint(static_cast<double>(t->data<float>()[m]) / expected[static_cast<size_t>(m)]);
    if (!(std::fabs(v) <= static_cast<double>(std::numeric_limits<int32_t>::max()))) return std::nullopt;
    q.data<int32_t>()[m] = static_cast<int32_t>(v);
  }
  return patch.new_constant(name, std::move(q));
}

class QdqConvMatMulFusion final : public Pass {
 public:
  std::string name() const override { return "qdq_conv_matmul_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    if (!ctx.options().qdq_fusions) return std::nullopt;
    const graph::Node& node = ctx.node(index);
    if (node.outputs.size() != 1 || node.inputs.size() < 2) return std::nullopt;
    if (is_op(node, "Conv")) return conv(ctx, index);
    if (is_op(node, "MatMul")) return matmul(ctx, index);
    if (is_op(node, "Gemm")) return gemm(ctx, index);
    return std::nullopt;
  }

 private:
  static std::optional<Patch> conv(const PassContext& ctx, size_t index) {
    const graph::Node& node = ctx.node(index);
    if (node.inputs.size() > 3 || !ctx.has_op("", "QLinearConv")) return std::nullopt;
    std::optional<QuantParams> x = qdq::dequantize_8bit(ctx, node.inputs[0], false);
    std::optional<QuantParams> w = qdq::dequantize_8bit(ctx, node.inputs[1], true);
    if (!x || !w) return std::nullopt;
    std::optional<Shape> w_shape = ctx.known_shape(w->data);
    if (!w_shape || w_shape->size() < 3) return std::nullopt;
    const int64_t channels = (*w_shape)[0];
    if (w->per_channel && w->axis != 0) return std::nullopt;
    std::optional<QuantParams> y = qdq::sole_quantize_reader(ctx, node.outputs[0]);
    if (!y || !qdq::supported_activation_weight(x->type, w->type, y->type)) return std::nullopt;
    Patch patch;
    const int32_t bias_in = node.inputs.size() == 3 ? node.inputs[2] : graph::kNoValue;
    std::optional<int32_t> bias =
        int32_bias(ctx, patch, bias_in, *x, *w, channels, base_name(ctx, index) + "_bias_int32");
    if (!bias) return std::nullopt;
    std::vector<int32_t> inputs = {x->data,  x->scale,      x->zero_point, w->data,
                                   w->scale, w->zero_point, y->scale,      y->zero_point};
    if (*bias != graph::kNoValue) inputs.push_back(*bias);
    graph::Node fused =
        make_node("QLinearConv", "", node.opset, std::move(inputs), {y->data}, base_name(ctx, index) + "_quant");
    fused.attributes = node.attributes;
    return finish(ctx, std::move(patch), std::move(fused), index, y->node);
  }

  static std::optional<Patch> matmul(const PassContext& ctx, size_t index) {
    const graph::Node& node = ctx.node(index);
    if (node.inputs.size() != 2) return std::nullopt;
    std::optional<QuantParams> a = qdq::dequantize_8bit(ctx, node.inputs[0], false);
    std::optional<QuantParams> b = qdq::dequantize_8bit(ctx, node.inputs[1], true);
    if (!a || !b) return std::nullopt;
    std::optional<Shape> b_shape = ctx.known_shape(b->data);
    // Per-channel weights: one scale per column of a 2-D B.
    if (b->per_channel && (!b_shape || b_shape->size() != 2 || b->axis != 1)) return std::nullopt;
    if (std::optional<QuantParams> y = qdq::sole_quantize_reader(ctx, node.outputs[0])) {
      if (!qdq::supported_activation_weight(a->type, b->type, y->type) || !ctx.has_op("", "QLinearMatMul")) {
        return std::nullopt;
      }
      graph::Node fused =
          make_node("QLinearMatMul", "", node.opset,
                    {a->data, a->scale, a->zero_point, b->data, b->scale, b->zero_point, y->scale, y->zero_point},
                    {y->data}, base_name(ctx, index) + "_quant");
      return finish(ctx, Patch{}, std::move(fused), index, y->node);
    }
    // A float result (read by float ops, or a graph output): the integer
    // product scaled back, as onnxruntime's MatMulIntegerToFloat selector.
    // Its B must be 2-D.
    const auto& users = ctx.consumers(node.outputs[0]);
    for (size_t u : users) {
      if (is_op(ctx.node(u), "QuantizeLinear")) return std::nullopt;  // a Q this pass could not take: leave it
    }
    if (!b_shape || b_shape->size() != 2 || !qdq::supported_activation_weight(a->type, b->type, a->type) ||
        !ctx.has_op("com.microsoft", "MatMulIntegerToFloat")) {
      return std::nullopt;
    }
    graph::Node fused = make_node("MatMulIntegerToFloat", "com.microsoft", 1,
                                  {a->data, b->data, a->scale, b->scale, a->zero_point, b->zero_point},
                                  {node.outputs[0]}, base_name(ctx, index) + "_quant");
    Patch patch;
    patch.remove(index);
    patch.refine_info.emplace_back(node.outputs[0], ctx.info(node.outputs[0]));
    patch.add_nodes.push_back(std::move(fused));
    return patch;
  }

  static std::optional<Patch> gemm(const PassContext& ctx, size_t index) {
    const graph::Node& node = ctx.node(index);
    if (node.inputs.size() > 3 || !ctx.has_op("com.microsoft", "QGemm")) return std::nullopt;
    // QGemm scales the bias by alpha with the product: only alpha = beta = 1
    // computes what Gemm does.
    if (attribute_float(node, "alpha", 1.0f) != 1.0f || attribute_float(node, "beta", 1.0f) != 1.0f)
      return std::nullopt;
    std::optional<QuantParams> a = qdq::dequantize_8bit(ctx, node.inputs[0], false);
    std::optional<QuantParams> b = qdq::dequantize_8bit(ctx, node.inputs[1], true);
    if (!a || !b) return std::nullopt;
    std::optional<Shape> b_shape = ctx.known_shape(b->data);
    if (!b_shape || b_shape->size() != 2) return std::nullopt;
    const int64_t trans_b = attribute_int(node, "transB", 0);
    const int64_t n = (*b_shape)[trans_b != 0 ? 0 : 1];
    if (b->per_channel && b->axis != (trans_b != 0 ? 0 : 1)) return std::nullopt;
    std::optional<QuantParams> y = qdq::sole_quantize_reader(ctx, node.outputs[0]);
    if (!y) {
      for (size_t u : ctx.consumers(node.outputs[0])) {
        if (is_op(ctx.node(u), "QuantizeLinear")) return std::nullopt;
      }
    }
    if (!qdq::supported_activation_weight(a->type, b->type, y ? y->type : a->type)) return std::nullopt;
    Patch patch;
    const int32_t bias_in = node.inputs.size() == 3 ? node.inputs[2] : graph::kNoValue;
    std::optional<int32_t> bias = int32_bias(ctx, patch, bias_in, *a, *b, n, base_name(ctx, index) + "_bias_int32");
    if (!bias) return std::nullopt;
    std::vector<int32_t> inputs = {a->data, a->scale, a->zero_point, b->data, b->scale, b->zero_point, *bias};
    if (y) {
      inputs.push_back(y->scale);
      inputs.push_back(y->zero_point);
    } else if (*bias == graph::kNoValue) {
      inputs.pop_back();  // no trailing omitted input
    }
    graph::Node fused = make_node("QGemm", "com.microsoft", 1, std::move(inputs), {y ? y->data : node.outputs[0]},
                                  base_name(ctx, index) + "_quant");
    fused.attributes["transA"] = graph::Attribute::make_int("transA", attribute_int(node, "transA", 0));
    fused.attributes["transB"] = graph::Attribute::make_int("transB", trans_b);
    fused.attributes["alpha"] = graph::Attribute::make_float("alpha", 1.0f);
    if (y) return finish(ctx, std::move(patch), std::move(fused), index, y->node);
    patch.remove(index);
    patch.refine_info.emplace_back(node.outputs[0], ctx.info(node.outputs[0]));
    patch.add_nodes.push_back(std::move(fused));
    return patch;
  }

  static std::string base_name(const PassContext& ctx, size_t index) {
    const graph::Node& node = ctx.node(index);
    return node.name.empty() ? node.op_type + "_" + std::to_string(index) : node.name;
  }

  // Removes the float op and its Q; the fused op writes the Q's output.
  static Patch finish(const PassContext& ctx, Patch patch, graph::Node fused, size_t op, size_t quantize) {
    const int32_t out = ctx.node(quantize).outputs[0];
    patch.remove(op);
    patch.remove(quantize);
    patch.refine_info.emplace_back(out, ctx.info(out));
    patch.add_nodes.push_back(std::move(fused));
    return patch;
  }
};

}  // namespace

std::unique_ptr<Pass> make_qdq_conv_matmul_fusion_pass() { return std::make_unique<QdqConvMatMulFusion>(); }

}  // namespace onyx::optimizer
