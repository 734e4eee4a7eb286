// ai.onnx.ml SVMClassifier and SVMRegressor: libsvm-style support vector
// machines (one-vs-one voting, Platt probabilities) scored as onnxruntime does.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "providers/cpu/ml/post_transform.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

enum class SvmKernel { kLinear, kPoly, kRbf, kSigmoid };

// The kernel function and its parameters, shared by both ops.
struct KernelFunction {
  SvmKernel type = SvmKernel::kLinear;
  float gamma = 0, coef0 = 0, degree = 0;

  explicit KernelFunction(const KernelInfo &info) {
    const std::string name = info.attr_string("kernel_type", "LINEAR");
    if (name == "LINEAR")
      type = SvmKernel::kLinear;
    else if (name == "POLY")
      type = SvmKernel::kPoly;
    else if (name == "RBF")
      type = SvmKernel::kRbf;
    else if (name == "SIGMOID")
      type = SvmKernel::kSigmoid;
    else
      throw Error(invalid_model(info.label(), ": kernel_type is '", name,
                                "', expected LINEAR, POLY, RBF or SIGMOID"));
    const auto params = info.attr_floats("kernel_params");
    if (!params.empty() && params.size() != 3) {
      throw Error(invalid_model(info.label(), ": kernel_params has ",
                                params.size(),
                                " values, expected 3 (gamma, coef0, degree)"));
    }
    if (params.size() == 3) {
      gamma = params[0];
      coef0 = params[1];
      degree = params[2];
    }
  }

  float operator()(const float *x, const float *v, int64_t n) const {
    if (type == SvmKernel::kRbf) {
      float sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float d = x[i] - v[i];
        sum += d * d;
      }
      return std::exp(-gamma * sum);
    }
    float dot = 0;
    for (int64_t i = 0; i < n; ++i)
      dot += x[i] * v[i];
    switch (type) {
    case SvmKernel::kLinear:
      return dot;
    case SvmKernel::kPoly: {
      const float base = gamma * dot + coef0;
      if (degree == 2)
        return base * base;
      if (degree == 3)
        return base * base * base;
      return std::pow(base, degree);
    }
    case SvmKernel::kSigmoid:
      return std::tanh(gamma * dot + coef0);
    case SvmKernel::kRbf:
      break;
    }
    return dot;
  }
};

// X (float, double, int64 or int32; [N, F] or [F]) as float rows.
Result<std::vector<float>> read_features(const KernelContext &ctx,
                                         int64_t *rows, int64_t *cols) {
  const Tensor *x = ctx.input_tensor(0);
  if (x == nullptr || x->rank() == 0 || x->rank() > 2) {
    return invalid_argument(ctx.label(), ": input X is ",
                            x ? x->describe() : std::string("missing"),
                            ", expected [N, F] or [F]");
  }
  *rows = x->rank() == 2 ? x->dim(0) : 1;
  *cols = x->dim(x->rank() - 1);
  std::vector<float> out(static_cast<size_t>(x->size()));
  auto copy = [&](auto tag) {
    using S = decltype(tag);
    const S *p = x->data<S>();
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<float>(p[i]);
  };
  switch (x->dtype()) {
  case DataType::kFloat:
    copy(float{});
    break;
  case DataType::kDouble:
    copy(double{});
    break;
  case DataType::kInt64:
    copy(int64_t{});
    break;
  case DataType::kInt32:
    copy(int32_t{});
    break;
  default:
    return invalid_argument(ctx.label(), ": input X has type ",
                            dtype_name(x->dtype()),
                            ", expected float, double, int64 or int32");
  }
  return out;
}

// Pairwise coupling of one-vs-one probabilities into class probabilities
// (Wu, Lin and Weng 2004, "Probability estimates for multi-class
// classification by pairwise coupling", method 2), in float and with the
// same stopping rule as libsvm and onnxruntime. r[i*k+j] = P(i | i or j).
void couple_probabilities(int64_t k, const std::vector<float> &r, float *p) {
  const auto n = static_cast<size_t>(k);
  std::vector<float> q(n * n, 0.0f), qp(n, 0.0f);
  for (size_t i = 0; i < n; ++i) {
    p[i] = 1.0f / static_cast<float>(k);
    for (size_t j = 0; j < n; ++j) {
      if (j == i)
        continue;
      q[i * n + i] += r[j * n + i] * r[j * n + i];
      q[i * n + j] = j < i ? q[j * n + i] : -r[j * n + i] * r[i * n + j];
    }
  }
  const float eps = 0.005f / static_cast<float>(k);
  for (int iteration = 0; iteration < 100; ++iteration) {
    float pqp = 0;
    for (size_t i = 0; i < n; ++i) {
      qp[i] = 0;
      for (size_t j = 0; j < n; ++j)
        qp[i] += q[i * n + j] * p[j];
      pqp += p[i] * qp[i];
    }
    float max_error = 0;
    for (size_t i = 0; i < n; ++i)
      max_error = std::max(max_error, std::fabs(qp[i] - pqp));
    if (max_error < eps)
      break;
    for (size_t i = 0; i < n; ++i) {
      const float diff = (-qp[i] + pqp) / q[i * n + i];
      p[i] += diff;
      pqp = (pqp + diff * (diff * q[i * n + i] + 2 * qp[i])) / (1 + diff) /
            (1 + diff);
      for (size_t j = 0; j < n; ++j) {
        qp[j] = (qp[j] + diff * q[i * n + j]) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
}

class SVMClassifierKernel final : public Kernel {
public:
  explicit SVMClassifierKernel(const KernelInfo &info) : kernel_(info) {
    const std::string label = info.label();
    vectors_per_class_ = info.attr_ints("vectors_per_class");
    support_vectors_ = info.attr_floats("support_vectors");
    coefficients_ = info.attr_floats("coefficients");
    rho_ = info.attr_floats("rho");
    prob_a_ = info.attr_floats("prob_a");
    prob_b_ = info.attr_floats("prob_b");
    labels_int_ = info.attr_ints("classlabels_ints");
    labels_str_ = info.attr_strings("classlabels_strings");
    auto post = ml::parse_post_transform(
        label, info.attr_string("post_transform", "NONE"));
    if (!post.is_ok())
      throw Error(post.status());
    post_ = post.value();
    if (labels_int_.empty() == labels_str_.empty()) {
      throw Error(invalid_model(label, ": exactly one of classlabels_ints and "
                                       "classlabels_strings is required"));
    }
    use_strings_ = !labels_str_.empty();
    classes_ = static_cast<int64_t>(use_strings_ ? labels_str_.size()
                                                 : labels_int_.size());
    if (classes_ < 2 || classes_ > 65535)
      throw Error(invalid_model(label, ": ", classes_,
                                " class labels, expected 2 to 65535"));
    if (prob_a_.size() != prob_b_.size()) {
      throw Error(invalid_model(label, ": prob_a has ", prob_a_.size(),
                                " values but prob_b has ", prob_b_.size()));
    }
    if (coefficients_.empty())
      throw Error(invalid_model(label, ": coefficients is empty"));
    if (rho_.empty())
      throw Error(invalid_model(label, ": rho is empty"));
    for (int64_t count : vectors_per_class_) {
      if (count < 0)
        throw Error(invalid_model(label, ": vectors_per_class has ", count,
                                  ", expected >= 0"));
      starts_.push_back(vector_count_);
      vector_count_ += count;
    }
    pairs_ = classes_ * (classes_ - 1) / 2;
    if (vector_count_ > 0) {
      svc_ = true;
      if (static_cast<int64_t>(vectors_per_class_.size()) != classes_) {
        throw Error(invalid_model(
            label, ": vectors_per_class has ", vectors_per_class_.size(),
            " values, expected ", classes_, " (one per class)"));
      }
      if (support_vectors_.empty() ||
          support_vectors_.size() % static_cast<size_t>(vector_count_) != 0) {
        throw Error(invalid_model(
            label, ": support_vectors has ", support_vectors_.size(),
            " values, not a multiple of the ", vector_count_, " vectors"));
      }
      features_ = static_cast<int64_t>(support_vectors_.size()) / vector_count_;
      if (static_cast<int64_t>(coefficients_.size()) <
          (classes_ - 1) * vector_count_) {
        throw Error(invalid_model(label, ": coefficients has ",
                                  coefficients_.size(), " values, expected ",
                                  (classes_ - 1) * vector_count_));
      }
      if (static_cast<int64_t>(rho_.size()) < pairs_)
        throw Error(invalid_model(label, ": rho has ", rho_.size(),
                                  " values, expected ", pairs_));
      if (!prob_a_.empty() && static_cast<int64_t>(prob_a_.size()) < pairs_) {
        throw Error(invalid_model(label, ": prob_a has ", prob_a_.size(),
                                  " values, expected ", pairs_));
      }
    } else {
      // liblinear layout: one coefficient row per class, scored with a plain
      // dot product.
      if (coefficients_.size() % static_cast<size_t>(classes_) != 0) {
        throw Error(invalid_model(
            label, ": coefficients has ", coefficients_.size(),
            " values, not a multiple of the ", classes_, " classes"));
      }
      features_ = static_cast<int64_t>(coefficients_.size()) / classes_;
      kernel_.type = SvmKernel::kLinear;
    }
    all_positive_ = std::all_of(coefficients_.begin(), coefficients_.end(),
                                [](float v) { return v >= 0; });
  }

  Status compute(KernelContext &ctx) const override {
    int64_t rows = 0, cols = 0;
    ONYX_ASSIGN_OR_RETURN(std::vector<float> x,
                          read_features(ctx, &rows, &cols));
    if (cols != features_)
      return invalid_argument(ctx.label(), ": input X has ", cols,
                              " features, expected ", features_);
    const bool proba = svc_ && !prob_a_.empty();
    int64_t out_cols = classes_;
    if (svc_ && !proba)
      out_cols = classes_ > 2 ? pairs_ : 2;
    Tensor &labels = ctx.allocate_output(
        0, use_strings_ ? DataType::kString : DataType::kInt64, {rows});
    Tensor scratch;
    Tensor &z = ctx.output_count() > 1
                    ? ctx.allocate_output(1, DataType::kFloat, {rows, out_cols})
                    : (scratch = Tensor(DataType::kFloat, {rows, out_cols}));
    const double cost = static_cast<double>(
        (svc_ ? vector_count_ : classes_) * features_ + pairs_ * 4);
    parallel_for(
        ctx.thread_pool(), rows, cost, [&](int64_t begin, int64_t end) {
          std::vector<float> kernels(static_cast<size_t>(vector_count_));
          std::vector<float> pair_scores(static_cast<size_t>(pairs_));
          std::vector<int64_t> votes(static_cast<size_t>(classes_));
          std::vector<float> pairwise(static_cast<size_t>(classes_ * classes_));
          for (int64_t r = begin; r < end; ++r) {
            const float *xr = x.data() + r * cols;
            float *zr = z.data<float>() + r * out_cols;
            const int64_t pick = svc_ ? score_svc(xr, kernels, pair_scores,
                                                  votes, pairwise, proba, zr)
                                      : score_linear(xr, zr);
            if (use_strings_) {
              labels.data<std::string>()[r] =
                  labels_str_[static_cast<size_t>(pick)];
            } else {
              labels.data<int64_t>()[r] =
                  labels_int_[static_cast<size_t>(pick)];
            }
          }
        });
    return Status::ok();
  }

private:
  int64_t score_linear(const float *x, float *z) const {
    for (int64_t c = 0; c < classes_; ++c)
      z[c] =
          kernel_(x, coefficients_.data() + c * features_, features_) + rho_[0];
    const int64_t best = std::max_element(z, z + classes_) - z;
    const float top = z[best];
    int64_t pick = best;
    // onnxruntime's two-class rule: without probabilities the second class
    // wins on a score >= 0.5 (all weights positive) or > 0 (mixed weights).
    if (classes_ == 2 && prob_a_.empty()) {
      if ((all_positive_ && top >= 0.5f) || (!all_positive_ && top > 0))
        pick = 1;
    }
    ml::apply_post_transform(post_, z, classes_);
    return pick;
  }

  int64_t score_svc(const float *x, std::vector<float> &kernels,
                    std::vector<float> &pair_scores,
                    std::vector<int64_t> &votes, std::vector<float> &pairwise,
                    bool proba, float *z) const {
    for (int64_t v = 0; v < vector_count_; ++v)
      kernels[static_cast<size_t>(v)] =
          kernel_(x, support_vectors_.data() + v * features_, features_);
    std::fill(votes.begin(), votes.end(), 0);
    // Coefficients are laid out [classes - 1, vectors]: the decision between
    // classes i < j weighs i's vectors with row j - 1 and j's vectors with row
    // i.
    size_t pair = 0;
    for (int64_t i = 0; i < classes_ - 1; ++i) {
      for (int64_t j = i + 1; j < classes_; ++j, ++pair) {
        double sum = 0;
        const float *ci = coefficients_.data() + (j - 1) * vector_count_ +
                          starts_[static_cast<size_t>(i)];
        for (int64_t m = 0; m < vectors_per_class_[static_cast<size_t>(i)]; ++m)
          sum +=
              ci[m] *
              kernels[static_cast<size_t>(starts_[static_cast<size_t>(i)] + m)];
        const float *cj = coefficients_.data() + i * vector_count_ +
                          starts_[static_cast<size_t>(j)];
        for (int64_t m = 0; m < vectors_per_class_[static_cast<size_t>(j)]; ++m)
          sum +=
              cj[m] *
              kernels[static_cast<size_t>(starts_[static_cast<size_t>(j)] + m)];
        sum += rho_[pair];
        pair_scores[pair] = static_cast<float>(sum);
        ++votes[static_cast<size_t>(sum > 0 ? i : j)];
      }
    }
    const int64_t pick =
        std::max_element(votes.begin(), votes.end()) - votes.begin();
    if (proba) {
      // Platt scaling of each pairwise decision, clipped away from 0 and 1.
      std::fill(pairwise.begin(), pairwise.end(), 0.0f);
      pair = 0;
      for (int64_t i = 0; i < classes_ - 1; ++i) {
        for (int64_t j = i + 1; j < classes_; ++j, ++pair) {
          const float p =
              1.0f -
              ml::logistic(pair_scores[pair] * prob_a_[pair] + prob_b_[pair]);
          const float clipped = std::min(std::max(p, 1.0e-7f), 1.0f - 1.0e-7f);
          pairwise[static_cast<size_t>(i * classes_ + j)] = clipped;
          pairwise[static_cast<size_t>(j * classes_ + i)] = 1.0f - clipped;
        }
      }
      couple_probabilities(classes_, pairwise, z);
      ml::apply_post_transform(post_, z, classes_);
      return pick;
    }
    if (classes_ == 2) {
      // One decision value widened to two columns: [-s, s] without a
      // post-transform, else [1 - s, s] (onnxruntime's convention).
      const float s = pair_scores[0];
      if (post_ == ml::PostTransform::kProbit) {
        z[0] = ml::probit(s);
        z[1] = 0.0f;
      } else if (post_ == ml::PostTransform::kNone) {
        z[0] = -s;
        z[1] = s;
      } else {
        z[0] = 1.0f - s;
        z[1] = s;
      }
      return pick;
    }
    std::copy(pair_scores.begin(), pair_scores.end(), z);
    ml::apply_post_transform(post_, z, pairs_);
    return pick;
  }

  KernelFunction kernel_;
  std::vector<int64_t> vectors_per_class_, starts_;
  std::vector<float> support_vectors_, coefficients_, rho_, prob_a_, prob_b_;
  std::vector<int64_t> labels_int_;
  std::vector<std::string> labels_str_;
  ml::PostTransform post_ = ml::PostTransform::kNone;
  bool use_strings_ = false, svc_ = false, all_positive_ = false;
  int64_t classes_ = 0, vector_count_ = 0, features_ = 0, pairs_ = 0;
};

class SVMRegressorKernel final : public Kernel {
public:
  explicit SVMRegressorKernel(const KernelInfo &info) : kernel_(info) {
    const std::string label = info.label();
    support_vectors_ = info.attr_floats("support_vectors");
    coefficients_ = info.attr_floats("coefficients");
    rho_ = info.attr_floats("rho");
    vector_count_ = info.attr_int("n_supports", 0);
    one_class_ = info.attr_int("one_class", 0) != 0;
    if (coefficients_.empty())
      throw Error(invalid_model(label, ": coefficients is empty"));
    if (rho_.empty())
      throw Error(invalid_model(label, ": rho is empty"));
    if (vector_count_ < 0)
      throw Error(invalid_model(label, ": n_supports is ", vector_count_,
                                ", expected >= 0"));
    if (vector_count_ > 0) {
      if (support_vectors_.empty() ||
          support_vectors_.size() % static_cast<size_t>(vector_count_) != 0) {
        throw Error(invalid_model(
            label, ": support_vectors has ", support_vectors_.size(),
            " values, not a multiple of n_supports ", vector_count_));
      }
      if (static_cast<int64_t>(coefficients_.size()) < vector_count_) {
        throw Error(
            invalid_model(label, ": coefficients has ", coefficients_.size(),
                          " values, expected n_supports = ", vector_count_));
      }
      features_ = static_cast<int64_t>(support_vectors_.size()) / vector_count_;
    } else {
      features_ = static_cast<int64_t>(coefficients_.size());
      kernel_.type = SvmKernel::kLinear;
    }
  }

  // post_transform is accepted and, like onnxruntime, not applied: the op
  // has one output column, which none of the transforms is meant for.
  Status compute(KernelContext &ctx) const override {
    int64_t rows = 0, cols = 0;
    ONYX_ASSIGN_OR_RETURN(std::vector<float> x,
                          read_features(ctx, &rows, &cols));
    if (cols != features_)
      return invalid_argument(ctx.label(), ": input X has ", cols,
                              " features, expected ", features_);
    Tensor &y = ctx.allocate_output(0, DataType::kFloat, {rows, 1});
    const double cost =
        static_cast<double>(std::max<int64_t>(vector_count_, 1) * features_);
    parallel_for(
        ctx.thread_pool(), rows, cost, [&](int64_t begin, int64_t end) {
          for (int64_t r = begin; r < end; ++r) {
            const float *xr = x.data() + r * cols;
            float score = 0;
            if (vector_count_ > 0) {
              for (int64_t v = 0; v < vector_count_; ++v) {
                score += coefficients_[static_cast<size_t>(v)] *
                         kernel_(xr, support_vectors_.data() + v * features_,
                                 features_);
              }
            } else {
              score = kernel_(xr, coefficients_.data(), features_);
            }
            score += rho_[0];
            y.data<float>()[r] =
                one_class_ ? (score > 0 ? 1.0f : -1.0f) : score;
          }
        });
    return Status::ok();
  }

private:
  KernelFunction kernel_;
  std::vector<float> support_vectors_, coefficients_, rho_;
  int64_t vector_count_ = 0, features_ = 0;
  bool one_class_ = false;
};

const std::vector<DataType> kFeatureTypes{DataType::kFloat, DataType::kDouble,
                                          DataType::kInt64, DataType::kInt32};

ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "SVMClassifier", 1, kLatestVersion,
                         kFeatureTypes, SVMClassifierKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "SVMRegressor", 1, kLatestVersion,
                         kFeatureTypes, SVMRegressorKernel);

} // namespace
} // namespace onyx::cpu
