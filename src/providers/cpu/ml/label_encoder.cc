// ai.onnx.ml LabelEncoder (v1 classes_strings, v2 keys_*/values_*, v4 keys_tensor/
// values_tensor) and CategoryMapper: element-wise lookups in a key table.
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

// A key -> position table for string or numeric keys (NaN matches NaN).
class KeyTable {
 public:
  void add_string(const std::string& key, int64_t pos) { strings_[key] = pos; }  // last key wins
  void add_number(double key, int64_t pos) {
    if (std::isnan(key)) {
      nan_ = pos;
    } else {
      numbers_[key] = pos;
    }
  }
  int64_t find(const std::string& key) const {
    auto it = strings_.find(key);
    return it == strings_.end() ? -1 : it->second;
  }
  int64_t find(double key) const {
    if (std::isnan(key)) return nan_;
    auto it = numbers_.find(key);
    return it == numbers_.end() ? -1 : it->second;
  }

 private:
  std::unordered_map<std::string, int64_t> strings_;
  std::map<double, int64_t> numbers_;
  int64_t nan_ = -1;
};

// The whole mapping: keys of one type to values (a 1-D tensor) of another,
// with a default value (a scalar tensor of the value type).
struct Mapping {
  DataType key_type = DataType::kUndefined;
  KeyTable keys;
  Tensor values;
  Tensor fallback;
};

void fill_keys(KeyTable& table, const Tensor& keys) {
  if (keys.dtype() == DataType::kString) {
    for (int64_t i = 0; i < keys.size(); ++i) table.add_string(keys.data<std::string>()[i], i);
    return;
  }
  (void)dispatch_numeric(keys.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (int64_t i = 0; i < keys.size(); ++i) table.add_number(static_cast<double>(static_cast<compute_t<T>>(keys.data<T>()[i])), i);
    return Status::ok();
  });
}

// Maps every element of x through m into a new tensor of the value type.
Status apply_mapping(const std::string& label, const Mapping& m, const Tensor& x, Tensor& y) {
  std::vector<int64_t> pos(static_cast<size_t>(x.size()));
  if (x.dtype() == DataType::kString) {
    for (int64_t i = 0; i < x.size(); ++i) pos[static_cast<size_t>(i)] = m.keys.find(x.data<std::string>()[i]);
  } else {
    Status status = dispatch_numeric(x.dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      for (int64_t i = 0; i < x.size(); ++i) {
        pos[static_cast<size_t>(i)] = m.keys.find(static_cast<double>(static_cast<compute_t<T>>(x.data<T>()[i])));
      }
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), label + ": input X: " + status.message());
  }
  return dispatch_all(m.values.dtype(), [&](auto tag) -> Status {
    using T = typename decltype(tag)::type;
    for (size_t i = 0; i < pos.size(); ++i) {
      y.data<T>()[i] = pos[i] >= 0 ? m.values.data<T>()[pos[i]] : m.fallback.data<T>()[0];
    }
    return Status::ok();
  });
}

Tensor strings_tensor(const std::vector<std::string>& v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); }
Tensor ints_tensor(const std::vector<int64_t>& v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); }
Tensor floats_tensor(const std::vector<float>& v) { return Tensor::from_vector(v, {static_cast<int64_t>(v.size())}); }

class LabelEncoderKernel final : public Kernel {
 public:
  explicit LabelEncoderKernel(const KernelInfo& info) : v1_(info.version() < 2) {
    if (v1_) {
      // v1: string -> index in classes_strings, or int64 -> the class string.
      const auto classes = info.attr_strings("classes_strings");
      std::vector<int64_t> index(classes.size());
      for (size_t i = 0; i < classes.size(); ++i) index[i] = static_cast<int64_t>(i);
      to_index_.key_type = DataType::kString;
      fill_keys(to_index_.keys, strings_tensor(classes));
      to_index_.values = ints_tensor(index);
      to_index_.fallback = Tensor::scalar<int64_t>(info.attr_int("default_int64", -1));
      to_string_.key_type = DataType::kInt64;
      fill_keys(to_string_.keys, ints_tensor(index));
      to_string_.values = strings_tensor(classes);
      to_string_.fallback = Tensor::scalar<std::string>(info.attr_string("default_string", "_Unused"));
      return;
    }
    Tensor keys, values;
    if (const Tensor* t = info.attr_tensor("keys_tensor")) keys = *t;
    else if (info.has_attr("keys_strings")) keys = strings_tensor(info.attr_strings("keys_strings"));
    else if (info.has_attr("keys_int64s")) keys = ints_tensor(info.attr_ints("keys_int64s"));
    else if (info.has_attr("keys_floats")) keys = floats_tensor(info.attr_floats("keys_floats"));
    if (const Tensor* t = info.attr_tensor("values_tensor")) values = *t;
    else if (info.has_attr("values_strings")) values = strings_tensor(info.attr_strings("values_strings"));
    else if (info.has_attr("values_int64s")) values = ints_tensor(info.attr_ints("values_int64s"));
    else if (info.has_attr("values_floats")) values = floats_tensor(info.attr_floats("values_floats"));
    if (!keys.defined() || !values.defined()) throw Error(invalid_model(info.label(), ": a keys_* and a values_* attribute are required"));
    if (keys.size() != values.size()) {
      throw Error(invalid_model(info.label(), ": ", keys.size(), " keys but ", values.size(), " values"));
    }
    map_.key_type = keys.dtype();
    fill_keys(map_.keys, keys);
    map_.values = values.reshaped({values.size()});
    if (const Tensor* t = info.attr_tensor("default_tensor")) {
      if (t->dtype() != values.dtype() || t->size() < 1) {
        throw Error(invalid_model(info.label(), ": default_tensor is ", t->describe(), ", expected one ", dtype_name(values.dtype())));
      }
      map_.fallback = *t;
    } else {
      switch (values.dtype()) {
        case DataType::kString: map_.fallback = Tensor::scalar<std::string>(info.attr_string("default_string", "_Unused")); break;
        case DataType::kInt64: map_.fallback = Tensor::scalar<int64_t>(info.attr_int("default_int64", -1)); break;
        case DataType::kFloat: map_.fallback = Tensor::scalar<float>(info.attr_float("default_float", -0.0f)); break;
        default:
          map_.fallback = Tensor(values.dtype(), {});
          if (values.dtype() != DataType::kString) std::memset(map_.fallback.raw_data(), 0, dtype_size(values.dtype()));
      }
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input X is missing");
    const Mapping* m = &map_;
    if (v1_) {
      if (x->dtype() != DataType::kString && x->dtype() != DataType::kInt64) {
        return invalid_argument(ctx.label(), ": input X has type ", dtype_name(x->dtype()), ", expected string or int64");
      }
      m = x->dtype() == DataType::kString ? &to_index_ : &to_string_;
    } else if (x->dtype() != m->key_type) {
      return invalid_argument(ctx.label(), ": input X has type ", dtype_name(x->dtype()), ", expected ",
                              dtype_name(m->key_type), " like the keys");
    }
    Tensor& y = ctx.allocate_output(0, m->values.dtype(), x->shape());
    return apply_mapping(ctx.label(), *m, *x, y);
  }

 private:
  bool v1_;
  Mapping map_, to_index_, to_string_;
};

class CategoryMapperKernel final : public Kernel {
 public:
  explicit CategoryMapperKernel(const KernelInfo& info) {
    const auto strings = info.attr_strings("cats_strings");
    const auto ints = info.attr_ints("cats_int64s");
    if (strings.size() != ints.size()) {
      throw Error(invalid_model(info.label(), ": cats_strings has ", strings.size(), " values but cats_int64s has ", ints.size()));
    }
    to_int_.key_type = DataType::kString;
    fill_keys(to_int_.keys, strings_tensor(strings));
    to_int_.values = ints_tensor(ints);
    to_int_.fallback = Tensor::scalar<int64_t>(info.attr_int("default_int64", -1));
    to_string_.key_type = DataType::kInt64;
    fill_keys(to_string_.keys, ints_tensor(ints));
    to_string_.values = strings_tensor(strings);
    to_string_.fallback = Tensor::scalar<std::string>(info.attr_string("default_string", "_Unused"));
  }
  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr || (x->dtype() != DataType::kString && x->dtype() != DataType::kInt64)) {
      return invalid_argument(ctx.label(), ": input X is ", x ? x->describe() : std::string("missing"), ", expected string or int64");
    }
    const Mapping& m = x->dtype() == DataType::kString ? to_int_ : to_string_;
    Tensor& y = ctx.allocate_output(0, m.values.dtype(), x->shape());
    return apply_mapping(ctx.label(), m, *x, y);
  }

 private:
  Mapping to_int_, to_string_;
};

ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "LabelEncoder", 1, 1, types::all(), LabelEncoderKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "LabelEncoder", 2, 3, types::all(), LabelEncoderKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "LabelEncoder", 4, kLatestVersion, types::all(), LabelEncoderKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "CategoryMapper", 1, kLatestVersion, types::all(), CategoryMapperKernel);

}  // namespace
}  // namespace onyx::cpu
