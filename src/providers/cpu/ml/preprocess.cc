// ai.onnx.ml feature preprocessing: Normalizer, Scaler, Binarizer, Imputer,
// ArrayFeatureExtractor, OneHotEncoder and FeatureVectorizer.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

const std::vector<DataType> kFeatureTypes{DataType::kFloat, DataType::kDouble, DataType::kInt64, DataType::kInt32};

// Calls fn with the element type of an ML feature tensor (float, double, int64, int32).
template <typename Fn>
Status dispatch_feature(const std::string& label, const char* input, DataType dtype, Fn&& fn) {
  switch (dtype) {
    case DataType::kFloat: return fn(TypeTag<float>{});
    case DataType::kDouble: return fn(TypeTag<double>{});
    case DataType::kInt64: return fn(TypeTag<int64_t>{});
    case DataType::kInt32: return fn(TypeTag<int32_t>{});
    default:
      return invalid_argument(label, ": input ", input, " has type ", dtype_name(dtype), ", expected float, double, int64 or int32");
  }
}

// Rows and columns of a [N, C] or [C] input.
void rows_cols(const Tensor& x, int64_t* rows, int64_t* cols) {
  *cols = x.rank() == 0 ? 1 : x.dim(x.rank() - 1);
  *rows = *cols == 0 ? 0 : x.size() / *cols;
}

class NormalizerKernel final : public Kernel {
 public:
  explicit NormalizerKernel(const KernelInfo& info) : norm_(info.attr_string("norm", "MAX")) {
    if (norm_ != "MAX" && norm_ != "L1" && norm_ != "L2") {
      throw Error(invalid_model(info.label(), ": attribute norm is '", norm_, "', expected MAX, L1 or L2"));
    }
  }
  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr || x->rank() > 2) return invalid_argument(ctx.label(), ": input X must be [N, C] or [C]");
    int64_t rows, cols;
    rows_cols(*x, &rows, &cols);
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, x->shape());
    return dispatch_feature(ctx.label(), "X", x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      for (int64_t r = 0; r < rows; ++r) {
        const T* px = x->data<T>() + r * cols;
        float* py = y.data<float>() + r * cols;
        float d = 0;
        if (norm_ == "MAX") {
          d = -INFINITY;
          for (int64_t c = 0; c < cols; ++c) d = std::max(d, static_cast<float>(px[c]));
        } else if (norm_ == "L1") {
          for (int64_t c = 0; c < cols; ++c) d += std::fabs(static_cast<float>(px[c]));
        } else {
          for (int64_t c = 0; c < cols; ++c) d += static_cast<float>(px[c]) * static_cast<float>(px[c]);
          d = std::sqrt(d);
        }
        for (int64_t c = 0; c < cols; ++c) py[c] = d != 0 ? static_cast<float>(px[c]) / d : static_cast<float>(px[c]);
      }
      return Status::ok();
    });
  }

 private:
  std::string norm_;
};

class ScalerKernel final : public Kernel {
 public:
  explicit ScalerKernel(const KernelInfo& info) : offset_(info.attr_floats("offset")), scale_(info.attr_floats("scale")) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input X is missing");
    int64_t rows, cols;
    rows_cols(*x, &rows, &cols);
    for (const auto* v : {&offset_, &scale_}) {
      if (v->size() > 1 && static_cast<int64_t>(v->size()) != cols) {
        return invalid_argument(ctx.label(), ": input X has ", cols, " features but offset/scale has ", v->size(), " values");
      }
    }
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, x->shape());
    return dispatch_feature(ctx.label(), "X", x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const float off = offset_.empty() ? 0.0f : offset_[offset_.size() == 1 ? 0 : static_cast<size_t>(c)];
          const float sc = scale_.empty() ? 1.0f : scale_[scale_.size() == 1 ? 0 : static_cast<size_t>(c)];
          y.data<float>()[r * cols + c] = (static_cast<float>(x->data<T>()[r * cols + c]) - off) * sc;
        }
      }
      return Status::ok();
    });
  }

 private:
  std::vector<float> offset_, scale_;
};

class BinarizerKernel final : public Kernel {
 public:
  explicit BinarizerKernel(const KernelInfo& info) : threshold_(info.attr_float("threshold", 0.0f)) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input X is missing");
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    return dispatch_feature(ctx.label(), "X", x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < x->size(); ++i) {
        y.data<T>()[i] = static_cast<double>(x->data<T>()[i]) > static_cast<double>(threshold_) ? T(1) : T(0);
      }
      return Status::ok();
    });
  }

 private:
  float threshold_;
};

class ImputerKernel final : public Kernel {
 public:
  explicit ImputerKernel(const KernelInfo& info)
      : floats_(info.attr_floats("imputed_value_floats")),
        ints_(info.attr_ints("imputed_value_int64s")),
        replaced_float_(info.attr_float("replaced_value_float", 0.0f)),
        replaced_int_(info.attr_int("replaced_value_int64", 0)) {
    if (floats_.empty() && ints_.empty()) {
      throw Error(invalid_model(info.label(), ": imputed_value_floats or imputed_value_int64s is required"));
    }
  }
  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input X is missing");
    int64_t rows, cols;
    rows_cols(*x, &rows, &cols);
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    return dispatch_feature(ctx.label(), "X", x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      constexpr bool kFloat = std::is_floating_point_v<T>;
      const size_t count = kFloat ? floats_.size() : ints_.size();
      if (count == 0) {
        return invalid_argument(ctx.label(), ": input X is ", dtype_name(x->dtype()), " but the imputed values are of the other kind");
      }
      if (count != 1 && static_cast<int64_t>(count) != cols) {
        return invalid_argument(ctx.label(), ": input X has ", cols, " features but ", count, " imputed values");
      }
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const T v = x->data<T>()[r * cols + c];
          const size_t k = count == 1 ? 0 : static_cast<size_t>(c);
          bool replace;
          if constexpr (kFloat) {
            replace = std::isnan(replaced_float_) ? std::isnan(v) : v == static_cast<T>(replaced_float_);
            y.data<T>()[r * cols + c] = replace ? static_cast<T>(floats_[k]) : v;
          } else {
            replace = static_cast<int64_t>(v) == replaced_int_;
            y.data<T>()[r * cols + c] = replace ? static_cast<T>(ints_[k]) : v;
          }
        }
      }
      return Status::ok();
    });
  }

 private:
  std::vector<float> floats_;
  std::vector<int64_t> ints_;
  float replaced_float_;
  int64_t replaced_int_;
};

class ArrayFeatureExtractorKernel final : public Kernel {
 public:
  explicit ArrayFeatureExtractorKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* idx = ctx.input_tensor(1);
    if (x == nullptr || x->rank() == 0) return invalid_argument(ctx.label(), ": input X is missing or a scalar");
    if (idx == nullptr || idx->dtype() != DataType::kInt64) {
      return invalid_argument(ctx.label(), ": input Y is ", idx ? idx->describe() : std::string("missing"), ", expected int64 indices");
    }
    const int64_t cols = x->dim(x->rank() - 1);
    const int64_t rows = cols == 0 ? 0 : x->size() / cols;
    const int64_t k = idx->size();
    const int64_t* pi = idx->data<int64_t>();
    for (int64_t j = 0; j < k; ++j) {
      if (pi[j] < 0 || pi[j] >= cols) {
        return invalid_argument(ctx.label(), ": index ", pi[j], " in input Y is out of range for ", cols, " features");
      }
    }
    Shape out_shape = x->shape();
    if (x->rank() == 1) out_shape.insert(out_shape.begin(), 1);
    out_shape.back() = k;
    Tensor& y = ctx.allocate_output(0, x->dtype(), out_shape);
    return dispatch_all(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < k; ++j) y.data<T>()[r * k + j] = x->data<T>()[r * cols + pi[j]];
      return Status::ok();
    });
  }
};

class OneHotEncoderKernel final : public Kernel {
 public:
  explicit OneHotEncoderKernel(const KernelInfo& info) : zeros_(info.attr_int("zeros", 1) != 0) {
    const auto ints = info.attr_ints("cats_int64s");
    const auto strings = info.attr_strings("cats_strings");
    for (size_t i = 0; i < ints.size(); ++i) int_index_.emplace(ints[i], static_cast<int64_t>(i));
    for (size_t i = 0; i < strings.size(); ++i) string_index_.emplace(strings[i], static_cast<int64_t>(i));
    categories_ = static_cast<int64_t>(std::max(ints.size(), strings.size()));
    if (categories_ == 0) throw Error(invalid_model(info.label(), ": cats_int64s or cats_strings is required"));
  }
  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input X is missing");
    Shape out_shape = x->shape();
    out_shape.push_back(categories_);
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, out_shape);
    std::fill(y.data<float>(), y.data<float>() + y.size(), 0.0f);
    auto place = [&](int64_t i, int64_t cat, bool found) -> Status {
      if (found) {
        y.data<float>()[i * categories_ + cat] = 1.0f;
      } else if (!zeros_) {
        return invalid_argument(ctx.label(), ": input X element ", i, " is not a known category (and zeros is 0)");
      }
      return Status::ok();
    };
    if (x->dtype() == DataType::kString) {
      for (int64_t i = 0; i < x->size(); ++i) {
        auto it = string_index_.find(x->data<std::string>()[i]);
        ONYX_RETURN_IF_ERROR(place(i, it == string_index_.end() ? 0 : it->second, it != string_index_.end()));
      }
      return Status::ok();
    }
    return dispatch_feature(ctx.label(), "X", x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < x->size(); ++i) {
        auto it = int_index_.find(static_cast<int64_t>(x->data<T>()[i]));
        ONYX_RETURN_IF_ERROR(place(i, it == int_index_.end() ? 0 : it->second, it != int_index_.end()));
      }
      return Status::ok();
    });
  }

 private:
  bool zeros_;
  int64_t categories_ = 0;
  std::unordered_map<int64_t, int64_t> int_index_;
  std::unordered_map<std::string, int64_t> string_index_;
};

class FeatureVectorizerKernel final : public Kernel {
 public:
  explicit FeatureVectorizerKernel(const KernelInfo& info) : dims_(info.attr_ints("inputdimensions")) {
    for (int64_t d : dims_) {
      if (d < 0) throw Error(invalid_model(info.label(), ": attribute inputdimensions has a negative value"));
    }
  }
  Status compute(KernelContext& ctx) const override {
    if (ctx.input_count() != dims_.size()) {
      return invalid_argument(ctx.label(), ": ", ctx.input_count(), " inputs but inputdimensions has ", dims_.size(), " values");
    }
    int64_t total = 0;
    for (int64_t d : dims_) total += d;
    int64_t rows = -1;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
      const Tensor* x = ctx.input_tensor(i);
      if (x == nullptr) return invalid_argument(ctx.label(), ": input ", i, " is missing");
      const int64_t r = x->rank() <= 1 ? 1 : x->dim(0);
      if (rows >= 0 && r != rows) return invalid_argument(ctx.label(), ": input ", i, " has ", r, " rows, expected ", rows);
      rows = r;
    }
    if (rows < 0) rows = 1;
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, {rows, total});
    std::fill(y.data<float>(), y.data<float>() + y.size(), 0.0f);
    int64_t at = 0;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
      const Tensor* x = ctx.input_tensor(i);
      const int64_t cols = rows == 0 ? 0 : x->size() / rows;
      const int64_t take = std::min(cols, dims_[i]);
      ONYX_RETURN_IF_ERROR(dispatch_feature(ctx.label(), "X", x->dtype(), [&](auto tag) -> Status {
        using T = typename decltype(tag)::type;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < take; ++c) y.data<float>()[r * total + at + c] = static_cast<float>(x->data<T>()[r * cols + c]);
        return Status::ok();
      }));
      at += dims_[i];
    }
    return Status::ok();
  }

 private:
  std::vector<int64_t> dims_;
};

ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "Normalizer", 1, kLatestVersion, kFeatureTypes, NormalizerKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "Scaler", 1, kLatestVersion, kFeatureTypes, ScalerKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "Binarizer", 1, kLatestVersion, kFeatureTypes, BinarizerKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "Imputer", 1, kLatestVersion, kFeatureTypes, ImputerKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "ArrayFeatureExtractor", 1, kLatestVersion, types::all(), ArrayFeatureExtractorKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "OneHotEncoder", 1, kLatestVersion,
                         (std::vector<DataType>{DataType::kString, DataType::kInt64, DataType::kInt32, DataType::kFloat,
                                                DataType::kDouble}),
                         OneHotEncoderKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "FeatureVectorizer", 1, kLatestVersion, kFeatureTypes, FeatureVectorizerKernel);

}  // namespace
}  // namespace onyx::cpu
