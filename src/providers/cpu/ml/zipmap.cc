// ai.onnx.ml ZipMap: each row of class scores becomes a map from class label
// (string or int64) to its score; the output is a sequence of those maps.
#include <string>
#include <vector>

#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class ZipMapKernel final : public Kernel {
 public:
  explicit ZipMapKernel(const KernelInfo& info) {
    strings_ = info.attr_strings("classlabels_strings");
    ints_ = info.attr_ints("classlabels_int64s");
    if (strings_.empty() == ints_.empty()) {
      throw Error(invalid_model(info.label(), ": exactly one of classlabels_strings and classlabels_int64s is required"));
    }
    use_strings_ = !strings_.empty();
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const int64_t labels = use_strings_ ? static_cast<int64_t>(strings_.size()) : static_cast<int64_t>(ints_.size());
    if (x == nullptr || x->dtype() != DataType::kFloat || x->rank() > 2 || x->rank() == 0) {
      return invalid_argument(ctx.label(), ": input X is ", x ? x->describe() : std::string("missing"), ", expected float[N, ", labels, "]");
    }
    const int64_t cols = x->dim(x->rank() - 1);
    const int64_t rows = x->rank() == 2 ? x->dim(0) : 1;
    if (cols != labels) {
      return invalid_argument(ctx.label(), ": input X has ", cols, " columns, expected ", labels, " (one per class label)");
    }
    // Every map shares one keys tensor; only the values differ per row.
    const Tensor keys = use_strings_ ? Tensor::from_vector(strings_, {labels}) : Tensor::from_vector(ints_, {labels});
    Sequence maps;
    maps.reserve(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) {
      Tensor values(DataType::kFloat, {labels});
      for (int64_t c = 0; c < labels; ++c) values.data<float>()[c] = x->data<float>()[r * cols + c];
      maps.push_back(Value::map(Map{keys, values}));
    }
    ValueType elem;
    elem.kind = ValueType::Kind::kMap;
    elem.key_type = use_strings_ ? DataType::kString : DataType::kInt64;
    elem.inner = std::make_shared<ValueType>(ValueType::tensor(DataType::kFloat));
    ctx.set_output(0, Value::sequence(std::move(maps), elem));
    return Status::ok();
  }

 private:
  std::vector<std::string> strings_;
  std::vector<int64_t> ints_;
  bool use_strings_ = false;
};

ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "ZipMap", 1, kLatestVersion, {DataType::kFloat}, ZipMapKernel);

}  // namespace
}  // namespace onyx::cpu
