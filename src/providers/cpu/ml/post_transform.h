// Score post-transforms shared by the ai.onnx.ml classifiers and regressors:
// NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO and PROBIT, as onnxruntime applies them.
#pragma once

#include <cmath>
#include <string>

#include "onyx/status.h"

namespace onyx::cpu::ml {

enum class PostTransform { kNone, kSoftmax, kLogistic, kSoftmaxZero, kProbit };

inline Result<PostTransform> parse_post_transform(const std::string& label, const std::string& name) {
  if (name == "NONE") return PostTransform::kNone;
  if (name == "SOFTMAX") return PostTransform::kSoftmax;
  if (name == "LOGISTIC") return PostTransform::kLogistic;
  if (name == "SOFTMAX_ZERO") return PostTransform::kSoftmaxZero;
  if (name == "PROBIT") return PostTransform::kProbit;
  return invalid_model(label, ": attribute post_transform is '", name,
                       "', expected NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO or PROBIT");
}

inline float logistic(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// The inverse of the standard normal CDF: sqrt(2) * erfinv(2p - 1), with
// erfinv from Winitzki's closed-form approximation (a = 0.147). It is good to
// about 2e-3 only, but it is what onnxruntime and the ONNX reference
// evaluator both use, so models score the same everywhere.
inline float probit(float p) {
  const float x = 2.0f * p - 1.0f;
  const float sign = x < 0 ? -1.0f : 1.0f;
  const float ln = std::log((1.0f - x) * (1.0f + x));
  const float a = 2.0f / (3.14159265f * 0.147f) + 0.5f * ln;
  const float b = ln / 0.147f;
  return 1.41421356f * sign * std::sqrt(-a + std::sqrt(a * a - b));
}

// Applies the transform in place to one row of n scores.
inline void apply_post_transform(PostTransform t, float* s, int64_t n) {
  switch (t) {
    case PostTransform::kNone: return;
    case PostTransform::kLogistic:
      for (int64_t i = 0; i < n; ++i) s[i] = logistic(s[i]);
      return;
    case PostTransform::kProbit:
      for (int64_t i = 0; i < n; ++i) s[i] = probit(s[i]);
      return;
    case PostTransform::kSoftmax:
    case PostTransform::kSoftmaxZero: {
      // SOFTMAX_ZERO leaves exact zeros at zero and normalises the rest.
      const bool zero = t == PostTransform::kSoftmaxZero;
      float peak = -INFINITY;
      for (int64_t i = 0; i < n; ++i) {
        if (!zero || s[i] != 0.0f) peak = std::max(peak, s[i]);
      }
      float total = 0;
      for (int64_t i = 0; i < n; ++i) {
        if (zero && s[i] == 0.0f) continue;
        s[i] = std::exp(s[i] - peak);
        total += s[i];
      }
      for (int64_t i = 0; i < n; ++i) {
        if (zero && s[i] == 0.0f) continue;
        s[i] = total > 0 ? s[i] / total : 0.0f;
      }
      return;
    }
  }
}

}  // namespace onyx::cpu::ml
