// Shared by com.microsoft FusedConv and FusedGemm: the activation applied to
// the inner Conv/Gemm kernel's output (in its GEMM write-back when it can be),
// and a KernelContext that runs the inner kernel and hands back its output.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/math/fast_math.h"
#include "providers/kernel.h"

namespace onyx::cpu {

struct FusedActivation {
  enum class Kind { kNone, kRelu, kSigmoid, kTanh, kLeakyRelu, kHardSigmoid, kClip, kHardSwish, kQuickGelu };
  Kind kind = Kind::kNone;
  float alpha = 0.0f;
  float beta = 0.0f;

  // `params` as FusedConv's activation_params: LeakyRelu [alpha],
  // HardSigmoid [alpha, beta], Clip [min, max]. Beyond onnxruntime's list,
  // onyx's own passes fuse HardSwish [alpha, beta] (x * HardSigmoid(x)) and
  // com.microsoft QuickGelu [alpha] (x * sigmoid(alpha x); SiLU at alpha 1).
  static FusedActivation parse(const KernelInfo& info, const std::string& name, const std::vector<float>& params) {
    FusedActivation a;
    auto need = [&](size_t n) {
      if (params.size() < n) {
        throw Error(invalid_model(info.label(), ": activation ", name, " needs ", n, " parameters, got ", params.size()));
      }
    };
    if (name.empty()) {
      a.kind = Kind::kNone;
    } else if (name == "Relu") {
      a.kind = Kind::kRelu;
    } else if (name == "Sigmoid") {
      a.kind = Kind::kSigmoid;
    } else if (name == "Tanh") {
      a.kind = Kind::kTanh;
    } else if (name == "LeakyRelu") {
      a.kind = Kind::kLeakyRelu;
      a.alpha = params.empty() ? 0.01f : params[0];
    } else if (name == "HardSigmoid") {
      a.kind = Kind::kHardSigmoid;
      a.alpha = params.size() > 0 ? params[0] : 0.2f;
      a.beta = params.size() > 1 ? params[1] : 0.5f;
    } else if (name == "HardSwish") {
      a.kind = Kind::kHardSwish;
      a.alpha = params.size() > 0 ? params[0] : 1.0f / 6.0f;
      a.beta = params.size() > 1 ? params[1] : 0.5f;
    } else if (name == "QuickGelu") {
      a.kind = Kind::kQuickGelu;
      a.alpha = params.size() > 0 ? params[0] : 1.702f;
    } else if (name == "Clip") {
      need(2);
      a.kind = Kind::kClip;
      a.alpha = params[0];
      a.beta = params[1];
    } else {
      throw Error(not_implemented(info.label(), ": activation '", name, "' is not supported"));
    }
    return a;
  }

  // The activation as a GEMM write-back step, when the SGEMM epilogue has it
  // (Relu, LeakyRelu, Clip, or none); false for the others.
  bool to_epilogue(GemmEpilogue& ep) const {
    ep = GemmEpilogue{};
    switch (kind) {
      case Kind::kNone: return true;
      case Kind::kRelu: ep.activation = GemmActivation::kRelu; return true;
      case Kind::kLeakyRelu:
        ep.activation = GemmActivation::kLeakyRelu;
        ep.leaky_alpha = alpha;
        return true;
      case Kind::kClip:
        ep.activation = GemmActivation::kClip;
        ep.clip_min = alpha;
        ep.clip_max = beta;
        return true;
      default: return false;
    }
  }

  void apply(float* data, int64_t n, ThreadPool* pool) const {
    if (kind == Kind::kNone) return;
    const FusedActivation a = *this;
    parallel_for(pool, n, 4.0, [data, a](int64_t begin, int64_t end) {
      if (a.kind == Kind::kSigmoid) {
        fast_sigmoid_array(data + begin, data + begin, end - begin);
        return;
      }
      if (a.kind == Kind::kTanh) {
        fast_tanh_array(data + begin, data + begin, end - begin);
        return;
      }
      if (a.kind == Kind::kHardSigmoid || a.kind == Kind::kHardSwish) {
        hard_sigmoid_array(data + begin, data + begin, end - begin, a.alpha, a.beta, a.kind == Kind::kHardSwish);
        return;
      }
      if (a.kind == Kind::kQuickGelu) {
        quick_gelu_array(data + begin, data + begin, end - begin, a.alpha);
        return;
      }
      for (int64_t i = begin; i < end; ++i) {
        const float x = data[i];
        float y = x;
        switch (a.kind) {
          case Kind::kRelu: y = x > 0.0f ? x : 0.0f; break;
          case Kind::kSigmoid: y = 1.0f / (1.0f + std::exp(-x)); break;
          case Kind::kTanh: y = std::tanh(x); break;
          case Kind::kLeakyRelu: y = x >= 0.0f ? x : a.alpha * x; break;
          case Kind::kHardSigmoid: y = std::max(0.0f, std::min(1.0f, a.alpha * x + a.beta)); break;
          case Kind::kClip: y = std::min(std::max(x, a.alpha), a.beta); break;
          case Kind::kNone:
          case Kind::kHardSwish:
          case Kind::kQuickGelu: break;
        }
        data[i] = y;
      }
    });
  }
};

// Forwards everything to the run's context and remembers output 0.
class CapturingContext final : public KernelContext {
 public:
  explicit CapturingContext(KernelContext& base) : base_(base) {}
  size_t input_count() const override { return base_.input_count(); }
  const Value* input(size_t i) const override { return base_.input(i); }
  size_t output_count() const override { return base_.output_count(); }
  bool output_requested(size_t i) const override { return base_.output_requested(i); }
  Tensor& allocate_output(size_t i, DataType dtype, const Shape& shape) override {
    Tensor& t = base_.allocate_output(i, dtype, shape);
    if (i == 0) output_ = t;
    return t;
  }
  void set_output(size_t i, Value value) override {
    if (i == 0 && value.is_tensor()) output_ = value.tensor();
    base_.set_output(i, std::move(value));
  }
  ThreadPool* thread_pool() const override { return base_.thread_pool(); }
  Allocator* allocator() const override { return base_.allocator(); }
  Status run_subgraph(const std::string& attr_name, const std::vector<Value>& inputs,
                      std::vector<Value>& outputs) override {
    return base_.run_subgraph(attr_name, inputs, outputs);
  }
  std::string label() const override { return base_.label(); }
  // Shares the buffer of the output the wrapped kernel wrote.
  Tensor& output() { return output_; }

 private:
  KernelContext& base_;
  Tensor output_;
};

}  // namespace onyx::cpu
