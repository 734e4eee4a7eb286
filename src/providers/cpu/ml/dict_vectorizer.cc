// ai.onnx.ml DictVectorizer and CastMap: turn a map (one row of a
// dictionary-shaped feature record) into a dense [1, C] tensor.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <string>
#include <unordered_map>
#include <vector>

#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

const Map *input_map(const KernelContext &ctx, Status *status) {
  const Value *v = ctx.input(0);
  if (v == nullptr || !v->is_map()) {
    *status = invalid_argument(ctx.label(), ": input X is ",
                               v ? v->describe() : std::string("missing"),
                               ", expected a map");
    return nullptr;
  }
  const Map &m = v->map_data();
  if (m.keys.rank() != 1 || m.values.rank() != 1 ||
      m.keys.size() != m.values.size()) {
    *status =
        invalid_argument(ctx.label(), ": input X is a map with ",
                         m.keys.describe(), " keys and ", m.values.describe(),
                         " values, expected two 1-D tensors of one length");
    return nullptr;
  }
  return &m;
}

// Copies element `from` of `src` to element `to` of `dst` (same dtype).
void copy_element(const Tensor &src, int64_t from, Tensor &dst, int64_t to) {
  if (src.dtype() == DataType::kString) {
    dst.data<std::string>()[to] = src.data<std::string>()[from];
    return;
  }
  const size_t size = dtype_size(src.dtype());
  std::copy_n(static_cast<const char *>(src.raw_data()) +
                  static_cast<size_t>(from) * size,
              size,
              static_cast<char *>(dst.raw_data()) +
                  static_cast<size_t>(to) * size);
}

// Output column j holds the value whose key is vocabulary[j]; keys outside
// the vocabulary are dropped and absent keys read 0 (or "").
class DictVectorizerKernel final : public Kernel {
public:
  explicit DictVectorizerKernel(const KernelInfo &info) {
    const auto strings = info.attr_strings("string_vocabulary");
    const auto ints = info.attr_ints("int64_vocabulary");
    if (strings.empty() == ints.empty()) {
      throw Error(
          invalid_model(info.label(), ": exactly one of string_vocabulary and "
                                      "int64_vocabulary is required"));
    }
    string_keys_ = !strings.empty();
    size_ = static_cast<int64_t>(string_keys_ ? strings.size() : ints.size());
    for (size_t i = 0; i < strings.size(); ++i)
      string_index_.emplace(strings[i], static_cast<int64_t>(i));
    for (size_t i = 0; i < ints.size(); ++i)
      int_index_.emplace(ints[i], static_cast<int64_t>(i));
  }

  Status compute(KernelContext &ctx) const override {
    Status status;
    const Map *m = input_map(ctx, &status);
    if (m == nullptr)
      return status;
    const DataType key_type =
        string_keys_ ? DataType::kString : DataType::kInt64;
    if (m->keys.dtype() != key_type) {
      return invalid_argument(ctx.label(), ": input X has ",
                              dtype_name(m->keys.dtype()), " keys, expected ",
                              dtype_name(key_type), " (the vocabulary's type)");
    }
    const DataType out_type = m->values.dtype();
    if (out_type != DataType::kFloat && out_type != DataType::kDouble &&
        out_type != DataType::kInt64 && out_type != DataType::kString) {
      return invalid_argument(
          ctx.label(), ": input X has ", dtype_name(out_type),
          " values, expected float, double, int64 or string");
    }
    Tensor &y = ctx.allocate_output(0, out_type, {1, size_});
    if (out_type != DataType::kString)
      std::fill_n(static_cast<char *>(y.raw_data()), y.bytes(), 0);
    for (int64_t i = 0; i < m->keys.size(); ++i) {
      int64_t column = -1;
      if (string_keys_) {
        auto it = string_index_.find(m->keys.data<std::string>()[i]);
        if (it != string_index_.end())
          column = it->second;
      } else {
        auto it = int_index_.find(m->keys.data<int64_t>()[i]);
        if (it != int_index_.end())
          column = it->second;
      }
      if (column >= 0)
        copy_element(m->values, i, y, column);
    }
    return Status::ok();
  }

private:
  bool string_keys_ = true;
  int64_t size_ = 0;
  std::unordered_map<std::string, int64_t> string_index_;
  std::unordered_map<int64_t, int64_t> int_index_;
};

// CastMap: an int64-keyed map to a tensor in key order (DENSE), or to
// max_map columns indexed by key (SPARSE), cast to float, int64 or string.
class CastMapKernel final : public Kernel {
public:
  explicit CastMapKernel(const KernelInfo &info) {
    const std::string cast_to = info.attr_string("cast_to", "TO_FLOAT");
    if (cast_to == "TO_FLOAT")
      out_type_ = DataType::kFloat;
    else if (cast_to == "TO_STRING")
      out_type_ = DataType::kString;
    else if (cast_to == "TO_INT64")
      out_type_ = DataType::kInt64;
    else
      throw Error(invalid_model(info.label(), ": cast_to is '", cast_to,
                                "', expected TO_FLOAT, TO_STRING or TO_INT64"));
    const std::string form = info.attr_string("map_form", "DENSE");
    if (form != "DENSE" && form != "SPARSE")
      throw Error(invalid_model(info.label(), ": map_form is '", form,
                                "', expected DENSE or SPARSE"));
    sparse_ = form == "SPARSE";
    max_map_ = info.attr_int("max_map", 1);
    if (sparse_ && max_map_ <= 0)
      throw Error(invalid_model(info.label(), ": max_map is ", max_map_,
                                ", expected > 0"));
  }

  Status compute(KernelContext &ctx) const override {
    Status status;
    const Map *m = input_map(ctx, &status);
    if (m == nullptr)
      return status;
    if (m->keys.dtype() != DataType::kInt64) {
      return invalid_argument(ctx.label(), ": input X has ",
                              dtype_name(m->keys.dtype()),
                              " keys, expected int64");
    }
    const DataType in_type = m->values.dtype();
    if (in_type != DataType::kFloat && in_type != DataType::kString) {
      return invalid_argument(ctx.label(), ": input X has ",
                              dtype_name(in_type),
                              " values, expected float or string");
    }
    const int64_t n = m->keys.size();
    const int64_t *keys = m->keys.data<int64_t>();
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return keys[a] < keys[b]; });
    const int64_t columns = sparse_ ? max_map_ : n;
    Tensor &y = ctx.allocate_output(0, out_type_, {1, columns});
    for (int64_t j = 0; j < columns; ++j)
      write(y, j, nullptr, 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t source = order[static_cast<size_t>(i)];
      int64_t column = i;
      if (sparse_) {
        column = keys[source];
        if (column < 0 || column >= max_map_) {
          return invalid_argument(ctx.label(), ": input X has key ", column,
                                  ", expected [0, max_map = ", max_map_,
                                  ") for SPARSE");
        }
      }
      write(y, column, &m->values, source);
    }
    return Status::ok();
  }

private:
  // Writes value `index` of `values` (or the default 0 when null) cast to the
  // output type.
  void write(Tensor &y, int64_t column, const Tensor *values,
             int64_t index) const {
    const bool is_string =
        values != nullptr && values->dtype() == DataType::kString;
    float f = 0;
    std::string s = "0";
    if (values != nullptr) {
      if (is_string) {
        s = values->data<std::string>()[index];
        char *end = nullptr;
        f = std::strtof(s.c_str(), &end);
      } else {
        f = values->data<float>()[index];
        s = std::to_string(f);
      }
    }
    switch (out_type_) {
    case DataType::kFloat:
      y.data<float>()[column] = f;
      break;
    case DataType::kInt64:
      y.data<int64_t>()[column] =
          std::isfinite(f) ? static_cast<int64_t>(f) : 0;
      break;
    default:
      y.data<std::string>()[column] = s;
      break;
    }
  }

  DataType out_type_ = DataType::kFloat;
  bool sparse_ = false;
  int64_t max_map_ = 1;
};

ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "DictVectorizer", 1, kLatestVersion,
                         (std::vector<DataType>{
                             DataType::kFloat, DataType::kDouble,
                             DataType::kInt64, DataType::kString}),
                         DictVectorizerKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "CastMap", 1, kLatestVersion,
                         (std::vector<DataType>{DataType::kFloat,
                                                DataType::kString,
                                                DataType::kInt64}),
                         CastMapKernel);

} // namespace
} // namespace onyx::cpu
