// The quantized layout: chains of uint8 QLinearConv move to channels-last
// (NHWC), as onnxruntime's NHWC transformer moves them, in its op forms, so
// a saved optimized model runs there too. In NHWC the int8 GEMM reads each
// output pixel's taps straight from the image and writes each output pixel's
// channels as one row (qconv_int8.h), so a chain pays one Transpose where it
// starts and one where an NCHW op reads it, instead of two per convolution.
//
// What joins a chain:
//  - QLinearConv (ONNX) of a uint8 x with a constant int8 weight whose zero
//    points are 0, group 1, 2-D, where the int8 GEMM reads rows in place on
//    this CPU: com.microsoft QLinearConv with channels_last = 1;
//  - com.microsoft QLinearAdd of two channels-last values of one shape (no
//    broadcasting): the same op on the channels-last values;
//  - MaxPool (2-D, no Indices output, row-major) of a channels-last int8 or
//    uint8 value: com.microsoft NhwcMaxPool;
//  - com.microsoft QLinearGlobalAveragePool of a channels-last value: the
//    same op with channels_last = 1 (its [N, 1, 1, C] result is [N, C, 1, 1]
//    transposed).
// A chain's input gets one Transpose to NHWC; each of its values read by an
// op outside it (or a graph output) gets its NCHW form back through one
// Transpose.
#include <unordered_map>

#include "optimizer/pass.h"
#include "providers/cpu/layout/layout_passes.h"
#include "providers/cpu/quant/qgemm_int8.h"

namespace onyx::cpu {
namespace {

using namespace ::onyx::optimizer;  // NOLINT(google-build-using-namespace): the pass vocabulary

constexpr const char* kContrib = "com.microsoft";

bool is_8bit_4d(const graph::TypeAndShape& info) {
  return (info.type.elem_type == DataType::kUInt8 || info.type.elem_type == DataType::kInt8) && info.has_shape &&
         info.shape.size() == 4;
}

// [N, C, H, W] -> [N, H, W, C]
graph::TypeAndShape channels_last_info(const graph::TypeAndShape& info) {
  graph::TypeAndShape out = info;
  if (info.has_shape && info.shape.size() == 4)
    out.shape = {info.shape[0], info.shape[2], info.shape[3], info.shape[1]};
  return out;
}

class QLinearNhwcTransformer final : public Pass {
 public:
  std::string name() const override { return "qlinear_nhwc_transformer"; }

  std::optional<Patch> match(const PassContext& ctx, size_t index) override {
    // The whole graph is rewritten as one patch, from its first node.
    if (index != 0 || !ctx.has_op(kContrib, "QLinearConv") || !int8_indirect_available()) return std::nullopt;
    Rewrite r(ctx);
    return r.run();
  }

 private:
  class Rewrite {
   public:
    explicit Rewrite(const PassContext& ctx) : ctx_(ctx) {}

    std::optional<Patch> run() {
      const size_t count = ctx_.node_count();
      converted_.assign(count, 0);
      for (size_t n = 0; n < count; ++n) {
        if (!ctx_.owns(n)) continue;
        const graph::Node& node = ctx_.node(n);
        if (try_conv(n, node) || try_add(n, node) || try_max_pool(n, node) || try_global_average(n, node)) {
          converted_[n] = 1;
        }
      }
      if (!any_conv_) return std::nullopt;
      for (const auto& [orig, nhwc] : nhwc_) {
        bool needed = ctx_.is_pinned(orig);
        for (size_t user : ctx_.consumers(orig)) needed = needed || !converted_[user];
        if (!needed) continue;
        graph::Node back = make_node("Transpose", "", 13, {nhwc}, {orig}, "Transpose_nchw_" + name_of(orig));
        back.attributes["perm"] = graph::Attribute::make_ints("perm", {0, 3, 1, 2});
        patch_.add_nodes.push_back(std::move(back));
      }
      return std::move(patch_);
    }

   private:
    std::string name_of(int32_t value) const { return ctx_.graph().value_name(value); }

    // The channels-last form of `value`: its converted producer's output, or
    // a Transpose added once.
    int32_t nhwc_input(int32_t value) {
      auto it = nhwc_.find(value);
      if (it != nhwc_.end()) return it->second;
      auto t = transposed_.find(value);
      if (t != transposed_.end()) return t->second;
      const int32_t out = patch_.new_value(name_of(value) + "_nhwc", channels_last_info(ctx_.info(value)));
      graph::Node to = make_node("Transpose", "", 13, {value}, {out}, "Transpose_nhwc_" + name_of(value));
      to.attributes["perm"] = graph::Attribute::make_ints("perm", {0, 2, 3, 1});
      patch_.add_nodes.push_back(std::move(to));
      transposed_[value] = out;
      return out;
    }

    // Replaces node n by `node` (inputs already rewired) whose single output
    // becomes channels-last.
    void emit(size_t n, graph::Node node) {
      const int32_t orig = node.outputs[0];
      const int32_t out = patch_.new_value(name_of(orig) + "_nhwc", channels_last_info(ctx_.info(orig)));
      node.outputs = {out};
      nhwc_[orig] = out;
      patch_.remove(n);
      patch_.add_nodes.push_back(std::move(node));
    }

    bool try_conv(size_t n, const graph::Node& node) {
      if (!is_op(node, "QLinearConv") || node.inputs.size() < 8 || node.outputs.size() != 1) return false;
      const graph::TypeAndShape& x = ctx_.info(node.inputs[0]);
      if (x.type.elem_type != DataType::kUInt8 || !x.has_shape || x.shape.size() != 4) return false;
      if (!is_8bit_4d(ctx_.info(node.outputs[0])) || attribute_int(node, "group", 1) != 1) return false;
      const Tensor* w = ctx_.constant(node.inputs[3]);
      if (w == nullptr || w->dtype() != DataType::kInt8 || w->rank() != 4) return false;
      if (node.inputs[5] != graph::kNoValue) {
        const Tensor* wz = ctx_.constant(node.inputs[5]);
        if (wz == nullptr || wz->dtype() != DataType::kInt8) return false;
        for (int64_t i = 0; i < wz->size(); ++i) {
          if (wz->data<int8_t>()[i] != 0) return false;
        }
      }
      graph::Node conv = make_node("QLinearConv", kContrib, 1, node.inputs, {node.outputs[0]}, node.name);
      conv.attributes = node.attributes;
      conv.attributes["channels_last"] = graph::Attribute::make_int("channels_last", 1);
      conv.inputs[0] = nhwc_input(node.inputs[0]);
      emit(n, std::move(conv));
      any_conv_ = true;
      return true;
    }

    bool try_add(size_t n, const graph::Node& node) {
      if (node.domain != kContrib || node.op_type != "QLinearAdd" || node.inputs.size() < 7 ||
          node.outputs.size() != 1) {
        return false;
      }
      const int32_t a = node.inputs[0], b = node.inputs[3], y = node.outputs[0];
      if (!nhwc_.count(a) || !nhwc_.count(b)) return false;
      if (!same_dims(ctx_.info(a), ctx_.info(b)) || !same_dims(ctx_.info(a), ctx_.info(y))) return false;
      graph::Node add = node;
      add.inputs[0] = nhwc_.at(a);
      add.inputs[3] = nhwc_.at(b);
      emit(n, std::move(add));
      return true;
    }

    bool try_max_pool(size_t n, const graph::Node& node) {
      if (!is_op(node, "MaxPool") || node.inputs.size() != 1 || node.outputs.empty()) return false;
      if (node.outputs.size() > 1 && node.outputs[1] != graph::kNoValue) return false;
      const int32_t x = node.inputs[0];
      if (!nhwc_.count(x) || !is_8bit_4d(ctx_.info(x)) || attribute_int(node, "storage_order", 0) != 0) return false;
      const graph::Attribute* ks = node.attribute("kernel_shape");
      if (ks == nullptr || ks->ints.size() != 2) return false;
      graph::Node pool = make_node("NhwcMaxPool", kContrib, 1, {nhwc_.at(x)}, {node.outputs[0]}, node.name);
      for (const char* a : {"kernel_shape", "strides", "pads", "dilations", "auto_pad", "ceil_mode"}) {
        if (const graph::Attribute* attr = node.attribute(a)) pool.attributes[a] = *attr;
      }
      emit(n, std::move(pool));
      return true;
    }

    bool try_global_average(size_t n, const graph::Node& node) {
      if (node.domain != kContrib || node.op_type != "QLinearGlobalAveragePool" || node.inputs.empty() ||
          node.outputs.size() != 1 || attribute_int(node, "channels_last", 0) != 0) {
        return false;
      }
      const int32_t x = node.inputs[0];
      if (!nhwc_.count(x) || !is_8bit_4d(ctx_.info(x))) return false;
      graph::Node pool = node;
      pool.inputs[0] = nhwc_.at(x);
      pool.attributes["channels_last"] = graph::Attribute::make_int("channels_last", 1);
      emit(n, std::move(pool));
      return true;
    }

    const PassContext& ctx_;
    Patch patch_;
    std::vector<char> converted_;
    std::unordered_map<int32_t, int32_t> nhwc_;        // NCHW value -> its channels-last replacement
    std::unordered_map<int32_t, int32_t> transposed_;  // NCHW value -> its Transpose to NHWC
    bool any_conv_ = false;
  };
};

}  // namespace

std::unique_ptr<optimizer::Pass> make_qlinear_nhwc_transformer_pass() {
  return std::make_unique<QLinearNhwcTransformer>();
}

}  // namespace onyx::cpu
