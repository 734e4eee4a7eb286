// A blocked 1x1 convolution whose output only a depthwise convolution reads
// becomes one com.onyx.nchwc PointwiseDepthwiseConv, when that output is
// large: the fused kernel computes it a few rows at a time into a buffer that
// stays in L2 instead of writing it to memory and reading it back
// (MobileNetV2's 96 x 112 x 112 expansion is 4.8 MB per image). Runs after
// the NCHWc transformer, on the com.microsoft.nchwc Conv nodes it made; the
// activations both convolutions already carry go with them.
#include <algorithm>
#include <functional>
#include <string>
#include <unordered_set>

#include "optimizer/pass.h"
#include "providers/cpu/layout/layout_passes.h"
#include "providers/cpu/nchwc/nchwc.h"

namespace onyx::cpu {
namespace {

using namespace ::onyx::optimizer;  // NOLINT(google-build-using-namespace): the pass vocabulary

constexpr const char* kNchwcDomain = "com.microsoft.nchwc";
constexpr const char* kFusedDomain = "com.onyx.nchwc";
// The pointwise output per image from which fusing pays: half a core's L2 on
// the machines onyx is measured on. Smaller tensors stay in the cache between
// the two kernels anyway, and the bands' overhead (calls on a few rows, rows
// a thread's first band computes again) is not repaid. On MobileNetV2 at 2
// threads, fusing from 512 KiB (six pairs, down to 192 x 28 x 28) ran 2.5%
// faster than from 1 MiB (three pairs); from 400 KiB (adding 576 x 14 x 14)
// 1.6% slower, and fusing every pair 3.5% slower.
constexpr int64_t kMinIntermediateBytes = 512 << 10;

bool is_nchwc_conv(const graph::Node& n) {
  return n.domain == kNchwcDomain && n.op_type == "Conv" && n.outputs.size() == 1 && n.inputs.size() >= 2 &&
         (n.inputs.size() < 4 || n.inputs[3] == graph::kNoValue);  // no Sum
}

// Activations the fused kernel applies in registers (not Sigmoid or Tanh).
bool register_activation(const graph::Node& n) {
  const graph::Attribute* a = n.attribute("activation");
  return a == nullptr || a->s == "Relu" || a->s == "LeakyRelu" || a->s == "Clip" || a->s == "HardSigmoid";
}

class NchwcPointwiseDepthwiseFusion final : public Pass {
 public:
  std::string name() const override { return "nchwc_pointwise_depthwise_fusion"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    const graph::Node& dw = ctx.node(index);
    if (!is_nchwc_conv(dw) || !register_activation(dw)) return std::nullopt;
    if (!ctx.has_op(kFusedDomain, "PointwiseDepthwiseConv")) return std::nullopt;
    const int32_t t = dw.inputs[0];
    const int32_t pw_index = ctx.producer_index(t);
    if (pw_index < 0 || !ctx.only_used_by(t, index)) return std::nullopt;
    const graph::Node& pw = ctx.node(static_cast<size_t>(pw_index));
    if (!is_nchwc_conv(pw) || !register_activation(pw) || attribute_int(pw, "group", 1) != 1) return std::nullopt;
    if (!attribute_ints_all(pw, "strides", 1) || !attribute_ints_all(pw, "pads", 0)) return std::nullopt;
    if (const graph::Attribute* ap = pw.attribute("auto_pad"); ap != nullptr && ap->s != "NOTSET" && ap->s != "VALID")
      return std::nullopt;
    const Tensor* w1 = ctx.constant(pw.inputs[1]);
    const Tensor* w2 = ctx.constant(dw.inputs[1]);
    const int64_t block = nchwc_block_size();
    if (w1 == nullptr || w2 == nullptr || w1->rank() != 4 || w2->rank() != 4 || block <= 1) return std::nullopt;
    const int64_t c = w1->dim(0);
    // W1 reads a blocked input (not the NCHW-input form); W2 is depthwise over W1's outputs.
    if (w1->dim(2) != 1 || w1->dim(3) != 1 || w1->dim(1) % block != 0 || c % block != 0) return std::nullopt;
    if (w2->dim(0) != c || w2->dim(1) != 1 || attribute_int(dw, "group", 1) != c) return std::nullopt;
    for (int i = 1; i <= 2; ++i) {
      const graph::Node& n = i == 1 ? pw : dw;
      if (n.inputs.size() > 2 && n.inputs[2] != graph::kNoValue && ctx.constant(n.inputs[2]) == nullptr)
        return std::nullopt;
    }
    const std::optional<Shape> t_shape = ctx.known_shape(t);
    if (!t_shape || t_shape->size() != 4) return std::nullopt;
    const int64_t bytes = (*t_shape)[1] * (*t_shape)[2] * (*t_shape)[3] * static_cast<int64_t>(sizeof(float));
    if (bytes < kMinIntermediateBytes) return std::nullopt;

    auto input_or_none = [](const graph::Node& n, size_t i) {
      return n.inputs.size() > i ? n.inputs[i] : graph::kNoValue;
    };
    graph::Node fused =
        make_node("PointwiseDepthwiseConv", kFusedDomain, 1,
                  {pw.inputs[0], pw.inputs[1], input_or_none(pw, 2), dw.inputs[1], input_or_none(dw, 2)},
                  {dw.outputs[0]}, pw.name.empty() ? dw.name : pw.name + "+" + dw.name);
    for (const char* name :
         {"kernel_shape", "strides", "pads", "dilations", "auto_pad", "group", "activation", "activation_params"}) {
      if (const graph::Attribute* a = dw.attribute(name)) fused.attributes[name] = *a;
    }
    for (const char* name : {"activation", "activation_params"}) {
      if (const graph::Attribute* a = pw.attribute(name)) {
        graph::Attribute renamed = *a;
        renamed.name = std::string("pointwise_") + name;
        fused.attributes[renamed.name] = std::move(renamed);
      }
    }
    while (fused.inputs.back() == graph::kNoValue) fused.inputs.pop_back();
    Patch patch;
    patch.remove(static_cast<size_t>(pw_index));
    patch.remove(index);
    patch.add_nodes.push_back(std::move(fused));
    return patch;
  }
};

}  // namespace

namespace {

const model::AttributeProto* find_attribute(const model::NodeProto& n, const std::string& name) {
  for (const model::AttributeProto& a : n.attribute) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

// FusedConv, FusedGemm or an NCHWc Conv with an activation onnxruntime's
// kernels lack (HardSwish, QuickGelu: onyx's activation_fusion) is written as
// the node without it, then the activation on its own: HardSwish as
// HardSigmoid and Mul (any opset), QuickGelu as com.microsoft QuickGelu. A
// FusedConv left without activation or residual, and a FusedGemm, go back
// to Conv and Gemm. False when `n` is none of these (it is left alone).
bool split_activation(model::NodeProto& n, const std::function<std::string(const std::string&)>& fresh,
                      std::vector<model::NodeProto>& out, bool& wrote_quick_gelu) {
  const bool fused_conv = n.domain == "com.microsoft" && n.op_type == "FusedConv";
  const bool fused_gemm = n.domain == "com.microsoft" && n.op_type == "FusedGemm";
  const bool nchwc_conv = n.domain == kNchwcDomain && n.op_type == "Conv";
  if ((!fused_conv && !fused_gemm && !nchwc_conv) || n.output.size() != 1) return false;
  const model::AttributeProto* act = find_attribute(n, "activation");
  if (act == nullptr || (act->s != "HardSwish" && act->s != "QuickGelu")) return false;
  const std::string kind = act->s;
  std::vector<float> params;
  if (fused_gemm) {
    if (const model::AttributeProto* a = find_attribute(n, "activation_alpha")) params.push_back(a->f);
    if (const model::AttributeProto* b = find_attribute(n, "activation_beta")) params.push_back(b->f);
  } else if (const model::AttributeProto* p = find_attribute(n, "activation_params")) {
    params = p->floats;
  }
  n.attribute.erase(std::remove_if(n.attribute.begin(), n.attribute.end(),
                                   [](const model::AttributeProto& a) { return a.name.rfind("activation", 0) == 0; }),
                    n.attribute.end());
  if (fused_gemm || (fused_conv && n.input.size() <= 3)) {
    n.domain.clear();
    n.op_type = fused_gemm ? "Gemm" : "Conv";
  }
  const std::string y = n.output[0];
  const std::string t = fresh(y + "_before_activation");
  n.output[0] = t;
  out.push_back(std::move(n));
  auto float_attr = [](const std::string& name, float v) {
    model::AttributeProto a;
    a.name = name;
    a.type = model::AttributeProto::FLOAT;
    a.f = v;
    return a;
  };
  model::NodeProto act_node;
  act_node.name = y + "/activation";
  if (kind == "HardSwish") {
    const std::string gate = fresh(y + "_gate");
    model::NodeProto hs;
    hs.name = y + "/hard_sigmoid";
    hs.op_type = "HardSigmoid";
    hs.input = {t};
    hs.output = {gate};
    hs.attribute = {float_attr("alpha", params.size() > 0 ? params[0] : 1.0f / 6.0f),
                    float_attr("beta", params.size() > 1 ? params[1] : 0.5f)};
    out.push_back(std::move(hs));
    act_node.op_type = "Mul";
    act_node.input = {t, gate};
  } else {
    act_node.domain = "com.microsoft";
    act_node.op_type = "QuickGelu";
    wrote_quick_gelu = true;
    act_node.input = {t};
    act_node.attribute = {float_attr("alpha", params.empty() ? 1.702f : params[0])};
  }
  act_node.output = {y};
  out.push_back(std::move(act_node));
  return true;
}

}  // namespace

void split_onyx_only_nodes(model::ModelProto& model) {
  if (!model.graph) return;
  bool any = false;
  bool any_quick_gelu = false;
  std::function<void(model::GraphProto&)> split = [&](model::GraphProto& g) {
    std::unordered_set<std::string> names;
    for (const auto& v : g.input) names.insert(v.name);
    for (const auto& t : g.initializer) names.insert(t.name);
    for (const auto& n : g.node) names.insert(n.output.begin(), n.output.end());
    auto fresh = [&](const std::string& base) {
      std::string name = base;
      for (int i = 1; names.count(name) != 0; ++i) name = base + "_" + std::to_string(i);
      names.insert(name);
      return name;
    };
    std::vector<model::NodeProto> nodes;
    nodes.reserve(g.node.size());
    for (model::NodeProto& n : g.node) {
      for (auto& a : n.attribute) {
        if (a.g) split(*a.g);
        for (auto& sub : a.graphs) split(*sub);
      }
      if (split_activation(n, fresh, nodes, any_quick_gelu)) continue;
      if (n.domain != kFusedDomain || n.op_type != "PointwiseDepthwiseConv" || n.input.size() < 4 ||
          n.output.size() != 1) {
        nodes.push_back(std::move(n));
        continue;
      }
      any = true;
      const std::string t = fresh(n.output[0] + "_pointwise");
      model::NodeProto pw, dw;
      pw.domain = dw.domain = kNchwcDomain;
      pw.op_type = dw.op_type = "Conv";
      pw.name = n.name + "/pointwise";
      dw.name = n.name;
      pw.input = {n.input[0], n.input[1]};
      if (!n.input[2].empty()) pw.input.push_back(n.input[2]);
      pw.output = {t};
      dw.input = {t, n.input[3]};
      if (n.input.size() > 4 && !n.input[4].empty()) dw.input.push_back(n.input[4]);
      dw.output = n.output;
      model::AttributeProto kernel;
      kernel.name = "kernel_shape";
      kernel.type = model::AttributeProto::INTS;
      kernel.ints = {1, 1};
      pw.attribute.push_back(std::move(kernel));
      for (model::AttributeProto& a : n.attribute) {
        if (a.name.rfind("pointwise_", 0) == 0) {
          a.name = a.name.substr(std::string("pointwise_").size());
          pw.attribute.push_back(std::move(a));
        } else {
          dw.attribute.push_back(std::move(a));
        }
      }
      nodes.push_back(std::move(pw));
      nodes.push_back(std::move(dw));
    }
    g.node = std::move(nodes);
  };
  split(*model.graph);
  auto& imports = model.opset_import;
  if (any_quick_gelu && std::none_of(imports.begin(), imports.end(),
                                     [](const model::OperatorSetIdProto& o) { return o.domain == "com.microsoft"; })) {
    imports.push_back({"com.microsoft", 1});
  }
  if (!any) return;
  imports.erase(std::remove_if(imports.begin(), imports.end(),
                               [](const model::OperatorSetIdProto& o) { return o.domain == kFusedDomain; }),
                imports.end());
  bool has_nchwc = false;
  for (const auto& o : imports) has_nchwc = has_nchwc || o.domain == kNchwcDomain;
  if (!has_nchwc) imports.push_back({kNchwcDomain, 1});
}

void record_nchwc_block(model::ModelProto& model) {
  const bool blocked = std::any_of(model.opset_import.begin(), model.opset_import.end(),
                                   [](const model::OperatorSetIdProto& o) { return o.domain == kNchwcDomain; });
  auto& props = model.metadata_props;
  props.erase(std::remove_if(props.begin(), props.end(), [](const auto& p) { return p.key == kNchwcBlockKey; }),
              props.end());
  if (blocked) props.push_back({kNchwcBlockKey, std::to_string(nchwc_block_size())});
}

Status check_nchwc_block(const model::ModelProto& model) {
  for (const auto& p : model.metadata_props) {
    if (p.key != kNchwcBlockKey) continue;
    const std::string here = std::to_string(nchwc_block_size());
    if (p.value == here) return Status::ok();
    return invalid_model("this optimized model's blocked convolutions were laid out for NCHWc blocks of ", p.value,
                         " channels (metadata ", kNchwcBlockKey, "), but this CPU runs blocks of ", here,
                         ": save the optimized model again from the original on this machine, or run the original");
  }
  return Status::ok();
}

std::unique_ptr<optimizer::Pass> make_nchwc_pointwise_depthwise_fusion_pass() {
  return std::make_unique<NchwcPointwiseDepthwiseFusion>();
}

}  // namespace onyx::cpu
