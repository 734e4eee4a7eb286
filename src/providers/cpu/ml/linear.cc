// ai.onnx.ml LinearClassifier and LinearRegressor: scores = X * coefficients^T
// + intercepts, then a post-transform; the classifier also picks a label.
#include <algorithm>
#include <string>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/ml/post_transform.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

// Reads X (float, double, int32 or int64; [N, F] or [F]) as float rows.
Result<std::vector<float>> read_features(const KernelContext& ctx, int64_t* rows, int64_t* cols) {
  const Tensor* x = ctx.input_tensor(0);
  if (x == nullptr || x->rank() > 2 || x->rank() == 0) {
    return invalid_argument(ctx.label(), ": input X is ", x ? x->describe() : std::string("missing"), ", expected [N, F] or [F]");
  }
  *rows = x->rank() == 2 ? x->dim(0) : 1;
  *cols = x->rank() == 2 ? x->dim(1) : x->dim(0);
  std::vector<float> out(static_cast<size_t>(x->size()));
  Status status;
  switch (x->dtype()) {
    case DataType::kFloat: std::copy(x->data<float>(), x->data<float>() + x->size(), out.begin()); break;
    case DataType::kDouble: std::transform(x->data<double>(), x->data<double>() + x->size(), out.begin(), [](double v) { return static_cast<float>(v); }); break;
    case DataType::kInt64: std::transform(x->data<int64_t>(), x->data<int64_t>() + x->size(), out.begin(), [](int64_t v) { return static_cast<float>(v); }); break;
    case DataType::kInt32: std::transform(x->data<int32_t>(), x->data<int32_t>() + x->size(), out.begin(), [](int32_t v) { return static_cast<float>(v); }); break;
    default:
      return invalid_argument(ctx.label(), ": input X has type ", dtype_name(x->dtype()), ", expected float, double, int64 or int32");
  }
  return out;
}

class LinearClassifierKernel final : public Kernel {
 public:
  explicit LinearClassifierKernel(const KernelInfo& info) {
    coefficients_ = info.attr_floats("coefficients");
    intercepts_ = info.attr_floats("intercepts");
    labels_int_ = info.attr_ints("classlabels_ints");
    labels_str_ = info.attr_strings("classlabels_strings");
    auto pt = ml::parse_post_transform(info.label(), info.attr_string("post_transform", "NONE"));
    if (!pt.is_ok()) throw Error(pt.status());
    post_ = pt.value();
    use_strings_ = !labels_str_.empty();
    const size_t label_count = use_strings_ ? labels_str_.size() : labels_int_.size();
    if (label_count == 0) throw Error(invalid_model(info.label(), ": classlabels_ints or classlabels_strings is required"));
    classes_ = intercepts_.empty() ? static_cast<int64_t>(label_count) : static_cast<int64_t>(intercepts_.size());
    if (classes_ == 1 && label_count != 2) {
      throw Error(invalid_model(info.label(), ": one score column needs exactly 2 class labels, got ", label_count));
    }
    if (classes_ > 1 && static_cast<int64_t>(label_count) != classes_) {
      throw Error(invalid_model(info.label(), ": ", classes_, " score columns but ", label_count, " class labels"));
    }
    if (coefficients_.empty() || coefficients_.size() % static_cast<size_t>(classes_) != 0) {
      throw Error(invalid_model(info.label(), ": coefficients has ", coefficients_.size(), " values, expected a multiple of ", classes_));
    }
  }

  Status compute(KernelContext& ctx) const override {
    int64_t n = 0, f = 0;
    ONYX_ASSIGN_OR_RETURN(std::vector<float> x, read_features(ctx, &n, &f));
    if (f * classes_ != static_cast<int64_t>(coefficients_.size())) {
      return invalid_argument(ctx.label(), ": input X has ", f, " features, expected ",
                              static_cast<int64_t>(coefficients_.size()) / classes_);
    }
    const bool binary = classes_ == 1;
    const int64_t out_cols = binary ? 2 : classes_;
    Tensor& labels = ctx.allocate_output(0, use_strings_ ? DataType::kString : DataType::kInt64, {n});
    Tensor scores_buffer;
    Tensor& scores = ctx.output_count() > 1 ? ctx.allocate_output(1, DataType::kFloat, {n, out_cols})
                                           : (scores_buffer = Tensor(DataType::kFloat, {n, out_cols}));
    for (int64_t r = 0; r < n; ++r) {
      float* s = scores.data<float>() + r * out_cols;
      for (int64_t c = 0; c < classes_; ++c) {
        float acc = intercepts_.empty() ? 0.0f : intercepts_[static_cast<size_t>(c)];
        for (int64_t j = 0; j < f; ++j) acc += x[static_cast<size_t>(r * f + j)] * coefficients_[static_cast<size_t>(c * f + j)];
        s[c] = acc;
      }
      int64_t pick = 0;
      if (binary) {
        // One score: the positive class when it is above zero, and the score
        // pair is [1 - s, s] (onnxruntime's convention).
        const float v = s[0];
        pick = v > 0 ? 1 : 0;
        if (post_ == ml::PostTransform::kLogistic) {
          const float p = ml::logistic(v);
          s[0] = 1 - p;
          s[1] = p;
        } else {
          s[0] = 1 - v;
          s[1] = v;
          if (post_ == ml::PostTransform::kProbit) ml::apply_post_transform(post_, s, 2);
        }
      } else {
        pick = std::max_element(s, s + classes_) - s;
        ml::apply_post_transform(post_, s, classes_);
      }
      if (use_strings_) {
        labels.data<std::string>()[r] = labels_str_[static_cast<size_t>(pick)];
      } else {
        labels.data<int64_t>()[r] = labels_int_[static_cast<size_t>(pick)];
      }
    }
    return Status::ok();
  }

 private:
  std::vector<float> coefficients_, intercepts_;
  std::vector<int64_t> labels_int_;
  std::vector<std::string> labels_str_;
  ml::PostTransform post_ = ml::PostTransform::kNone;
  bool use_strings_ = false;
  int64_t classes_ = 0;
};

class LinearRegressorKernel final : public Kernel {
 public:
  explicit LinearRegressorKernel(const KernelInfo& info) {
    coefficients_ = info.attr_floats("coefficients");
    intercepts_ = info.attr_floats("intercepts");
    targets_ = info.attr_int("targets", 1);
    auto pt = ml::parse_post_transform(info.label(), info.attr_string("post_transform", "NONE"));
    if (!pt.is_ok()) throw Error(pt.status());
    post_ = pt.value();
    if (targets_ <= 0 || coefficients_.size() % static_cast<size_t>(targets_) != 0) {
      throw Error(invalid_model(info.label(), ": coefficients has ", coefficients_.size(), " values, not a multiple of targets ", targets_));
    }
    if (!intercepts_.empty() && static_cast<int64_t>(intercepts_.size()) != targets_) {
      throw Error(invalid_model(info.label(), ": intercepts has ", intercepts_.size(), " values, expected ", targets_));
    }
  }

  Status compute(KernelContext& ctx) const override {
    int64_t n = 0, f = 0;
    ONYX_ASSIGN_OR_RETURN(std::vector<float> x, read_features(ctx, &n, &f));
    if (f * targets_ != static_cast<int64_t>(coefficients_.size())) {
      return invalid_argument(ctx.label(), ": input X has ", f, " features, expected ",
                              static_cast<int64_t>(coefficients_.size()) / targets_);
    }
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, {n, targets_});
    for (int64_t r = 0; r < n; ++r) {
      float* s = y.data<float>() + r * targets_;
      for (int64_t t = 0; t < targets_; ++t) {
        float acc = intercepts_.empty() ? 0.0f : intercepts_[static_cast<size_t>(t)];
        for (int64_t j = 0; j < f; ++j) acc += x[static_cast<size_t>(r * f + j)] * coefficients_[static_cast<size_t>(t * f + j)];
        s[t] = acc;
      }
      ml::apply_post_transform(post_, s, targets_);
    }
    return Status::ok();
  }

 private:
  std::vector<float> coefficients_, intercepts_;
  int64_t targets_ = 1;
  ml::PostTransform post_ = ml::PostTransform::kNone;
};

const std::vector<DataType> kFeatureTypes{DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kInt32};

ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "LinearClassifier", 1, kLatestVersion, kFeatureTypes, LinearClassifierKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "LinearRegressor", 1, kLatestVersion, kFeatureTypes, LinearRegressorKernel);

}  // namespace
}  // namespace onyx::cpu
