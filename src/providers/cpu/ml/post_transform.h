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
// erfinv from Giles' single-precision approximation.
inline float probit(float p) {
  const float x = 2.0f * p - 1.0f;
  float w = -std::log((1.0f - x) * (1.0f + x));
  float r;
  if (w < 5.0f) {
    w -= 2.5f;
    r = 2.81022636e-08f;
    r = 3.43273939e-07f + r * w;
    r = -3.5233877e-06f + r * w;
    r = -4.39150654e-06f + r * w;
    r = 0.00021858087f + r * w;
    r = -0.00125372503f + r * w;
    r = -0.00417768164f + r * w;
    r = 0.246640727f + r * w;
    r = 1.50140941f + r * w;
  } else {
    w = std::sqrt(w) - 3.0f;
    r = -0.000200214257f;
    r = 0.000100950558f + r * w;
    r = 0.00134934322f + r * w;
    r = -0.00367342844f + r * w;
    r = 0.00573950773f + r * w;
    r = -0.0076224613f + r * w;
    r = 0.00943887047f + r * w;
    r = 1.00167406f + r * w;
    r = 2.83297682f + r * w;
  }
  return 1.41421356f * r * x;
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
