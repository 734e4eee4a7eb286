// TfIdfVectorizer: counts the pool's n-grams (with up to max_skip_count items
// skipped between their members) in each row of a [C] or [N, C] tensor of
// int32/int64/string tokens, then weights them (TF, IDF or TFIDF).
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

enum class Mode { kTf, kIdf, kTfIdf };

class TfIdfVectorizerKernel final : public Kernel {
 public:
  explicit TfIdfVectorizerKernel(const KernelInfo& info)
      : min_gram_(info.attr_int("min_gram_length", 1)),
        max_gram_(info.attr_int("max_gram_length", 1)),
        max_skip_(info.attr_int("max_skip_count", 0)),
        ngram_indexes_(info.attr_ints("ngram_indexes")),
        weights_(info.attr_floats("weights")) {
    const std::string label = info.label();
    const std::string mode = info.attr_string("mode", "TF");
    if (mode == "TF") {
      mode_ = Mode::kTf;
    } else if (mode == "IDF") {
      mode_ = Mode::kIdf;
    } else if (mode == "TFIDF") {
      mode_ = Mode::kTfIdf;
    } else {
      throw Error(invalid_model(label, ": attribute mode is '", mode, "', expected TF, IDF or TFIDF"));
    }
    if (min_gram_ < 1 || max_gram_ < min_gram_ || max_skip_ < 0) {
      throw Error(invalid_model(label, ": min_gram_length ", min_gram_, ", max_gram_length ", max_gram_,
                                " and max_skip_count ", max_skip_, " are invalid (expected 1 <= min <= max, skip >= 0)"));
    }
    const std::vector<int64_t> pool_ints = info.attr_ints("pool_int64s");
    const std::vector<std::string> pool_strings = info.attr_strings("pool_strings");
    strings_ = !pool_strings.empty();
    if (strings_ == !pool_ints.empty()) {
      throw Error(invalid_model(label, ": exactly one of pool_int64s and pool_strings must be set"));
    }
    // Pool items as string keys; integers are spelled out so one map serves both.
    std::vector<std::string> pool;
    if (strings_) {
      pool = pool_strings;
    } else {
      for (int64_t v : pool_ints) pool.push_back(std::to_string(v));
    }
    output_size_ = 0;
    for (int64_t index : ngram_indexes_) {
      if (index < 0) throw Error(invalid_model(label, ": ngram_indexes holds a negative index ", index));
      output_size_ = std::max(output_size_, index + 1);
    }
    if (!weights_.empty() && static_cast<int64_t>(weights_.size()) < output_size_) {
      throw Error(invalid_model(label, ": weights has ", weights_.size(), " values, expected ", output_size_));
    }
    // ngram_counts[i] is where the (i+1)-grams start in the pool; n-grams
    // are numbered in pool order, and only those within the length range count.
    const std::vector<int64_t> counts = info.attr_ints("ngram_counts");
    int64_t id = 0;
    for (size_t i = 0; i < counts.size(); ++i) {
      const int64_t n = static_cast<int64_t>(i) + 1;
      const int64_t start = counts[i];
      const int64_t end = i + 1 < counts.size() ? counts[i + 1] : static_cast<int64_t>(pool.size());
      if (start < 0 || end > static_cast<int64_t>(pool.size()) || end < start) {
        throw Error(invalid_model(label, ": ngram_counts ", i, " spans [", start, ", ", end, ") outside the pool of ",
                                  pool.size(), " items"));
      }
      for (int64_t g = 0; g < (end - start) / n; ++g, ++id) {
        if (n < min_gram_ || n > max_gram_) continue;
        if (id >= static_cast<int64_t>(ngram_indexes_.size())) {
          throw Error(invalid_model(label, ": ngram_indexes has ", ngram_indexes_.size(), " values, fewer than the pool's n-grams"));
        }
        std::vector<std::string> key(pool.begin() + start + g * n, pool.begin() + start + (g + 1) * n);
        ngrams_[key] = ngram_indexes_[static_cast<size_t>(id)];
      }
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input X is required");
    const bool is_string = x->dtype() == DataType::kString;
    if (is_string != strings_ || (!is_string && x->dtype() != DataType::kInt32 && x->dtype() != DataType::kInt64)) {
      return invalid_argument(ctx.label(), ": input X has type ", dtype_name(x->dtype()), ", expected ",
                              strings_ ? "string (pool_strings is set)" : "int32 or int64 (pool_int64s is set)");
    }
    if (x->rank() > 2) {
      return invalid_argument(ctx.label(), ": input X has shape ", shape_to_string(x->shape()), ", expected [C] or [N, C]");
    }
    const int64_t rows = x->rank() == 2 ? x->dim(0) : 1;
    const int64_t columns = x->rank() == 0 ? 1 : x->dim(x->rank() - 1);
    std::vector<std::string> tokens(static_cast<size_t>(x->size()));
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (is_string) {
        tokens[i] = x->data<std::string>()[i];
      } else {
        tokens[i] = std::to_string(x->dtype() == DataType::kInt32 ? static_cast<int64_t>(x->data<int32_t>()[i])
                                                                  : x->data<int64_t>()[i]);
      }
    }
    std::vector<int64_t> frequencies(static_cast<size_t>(rows * output_size_), 0);
    std::vector<std::string> key;
    for (int64_t r = 0; r < rows; ++r) {
      const std::string* row = tokens.data() + r * columns;
      int64_t* counts = frequencies.data() + r * output_size_;
      // Unigrams count once; longer n-grams once per skip distance.
      for (int64_t distance = 1; distance <= max_skip_ + 1; ++distance) {
        const int64_t first_size = distance == 1 ? min_gram_ : std::max<int64_t>(min_gram_, 2);
        for (int64_t start = 0; start < columns; ++start) {
          key.clear();
          for (int64_t n = 1; n <= max_gram_; ++n) {
            const int64_t position = start + (n - 1) * distance;
            if (position >= columns) break;
            key.push_back(row[position]);
            if (n < first_size) continue;
            auto it = ngrams_.find(key);
            if (it != ngrams_.end()) ++counts[it->second];
          }
        }
      }
    }
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, x->rank() == 2 ? Shape{rows, output_size_} : Shape{output_size_});
    float* yp = y.data<float>();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < output_size_; ++i) {
        const int64_t f = frequencies[static_cast<size_t>(r * output_size_ + i)];
        const float w = weights_.empty() ? 1.0f : weights_[static_cast<size_t>(i)];
        float v = static_cast<float>(f);
        if (mode_ == Mode::kIdf) v = f > 0 ? w : 0.0f;
        if (mode_ == Mode::kTfIdf) v = w * static_cast<float>(f);
        yp[r * output_size_ + i] = v;
      }
    }
    return Status::ok();
  }

 private:
  int64_t min_gram_, max_gram_, max_skip_;
  std::vector<int64_t> ngram_indexes_;
  std::vector<float> weights_;
  Mode mode_ = Mode::kTf;
  bool strings_ = false;
  int64_t output_size_ = 0;
  std::map<std::vector<std::string>, int64_t> ngrams_;  // n-gram -> output column
};

ONYX_REGISTER_CPU_KERNEL("", "TfIdfVectorizer", 9, kLatestVersion,
                         (std::vector<DataType>{DataType::kString, DataType::kInt32, DataType::kInt64}),
                         TfIdfVectorizerKernel);

}  // namespace
}  // namespace onyx::cpu
