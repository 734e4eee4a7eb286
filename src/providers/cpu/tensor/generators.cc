// Ops that make tensors from attributes or shapes rather than moving input
// data: Shape, Size, Constant, ConstantOfShape, Range and EyeLike.
#include <algorithm>
#include <cmath>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

// Shape; v15 adds start/end (negative counts from the end, clamped to [0, rank]).
class ShapeKernel final : public Kernel {
 public:
  explicit ShapeKernel(const KernelInfo& info)
      : start_(info.attr_int("start", 0)), end_(info.attr_int("end", INT64_MAX)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "data"));
    const int64_t rank = data->rank();
    auto clamp = [rank](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
    const int64_t start = clamp(start_), end = clamp(end_);
    const int64_t n = std::max<int64_t>(0, end - start);
    Tensor& out = ctx.allocate_output(0, DataType::kInt64, {n});
    for (int64_t i = 0; i < n; ++i) out.data<int64_t>()[i] = data->dim(start + i);
    return Status::ok();
  }

 private:
  int64_t start_, end_;
};

class SizeKernel final : public Kernel {
 public:
  explicit SizeKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "data"));
    ctx.allocate_output(0, DataType::kInt64, {}).data<int64_t>()[0] = data->size();
    return Status::ok();
  }
};

// Constant: exactly one of value (or sparse_value, densified by the loader),
// value_float(s), value_int(s), value_string(s). The tensor is built once and
// handed out by reference on every run.
class ConstantKernel final : public Kernel {
 public:
  explicit ConstantKernel(const KernelInfo& info) {
    int found = 0;
    if (const graph::Attribute* a = info.attr("value")) {
      value_ = a->t, ++found;
    }
    if (const graph::Attribute* a = info.attr("sparse_value")) {
      value_ = a->t, ++found;
    }
    if (const graph::Attribute* a = info.attr("value_float")) {
      value_ = Tensor::scalar<float>(a->f), ++found;
    }
    if (const graph::Attribute* a = info.attr("value_floats")) {
      value_ = Tensor::from_vector<float>(a->floats, {static_cast<int64_t>(a->floats.size())}), ++found;
    }
    if (const graph::Attribute* a = info.attr("value_int")) {
      value_ = Tensor::scalar<int64_t>(a->i), ++found;
    }
    if (const graph::Attribute* a = info.attr("value_ints")) {
      value_ = Tensor::from_vector<int64_t>(a->ints, {static_cast<int64_t>(a->ints.size())}), ++found;
    }
    if (const graph::Attribute* a = info.attr("value_string")) {
      value_ = Tensor::scalar<std::string>(a->s), ++found;
    }
    if (const graph::Attribute* a = info.attr("value_strings")) {
      value_ = Tensor::from_vector<std::string>(a->strings, {static_cast<int64_t>(a->strings.size())}), ++found;
    }
    if (found != 1 || !value_.defined()) {
      throw Error(invalid_model(info.label(), ": expected exactly one value attribute, found ", found));
    }
  }

  Status compute(KernelContext& ctx) const override {
    ctx.set_output(0, Value(value_));
    return Status::ok();
  }

 private:
  Tensor value_;
};

class ConstantOfShapeKernel final : public Kernel {
 public:
  explicit ConstantOfShapeKernel(const KernelInfo& info) {
    if (const Tensor* v = info.attr_tensor("value")) {
      if (v->size() != 1) {
        throw Error(invalid_model(info.label(), ": attribute value has ", v->size(), " elements, expected 1"));
      }
      value_ = *v;
    } else {
      value_ = Tensor::scalar<float>(0.0f);
    }
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* shape_t, required_input(ctx, 0, "input"));
    if (shape_t->rank() > 1) {
      return invalid_argument(ctx.label(), ": input has rank ", shape_t->rank(), ", expected 1");
    }
    ONYX_ASSIGN_OR_RETURN(auto shape, read_ints(*shape_t, ctx.label(), "input"));
    for (int64_t d : shape) {
      if (d < 0) return invalid_argument(ctx.label(), ": shape ", shape_to_string(shape), " has a negative dim");
    }
    Tensor& out = ctx.allocate_output(0, value_.dtype(), shape);
    fill_elements(value_.dtype(), out.raw_data(), value_.raw_data(), out.size());
    return Status::ok();
  }

 private:
  Tensor value_;
};

class RangeKernel final : public Kernel {
 public:
  explicit RangeKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* start_t, required_input(ctx, 0, "start"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* limit_t, required_input(ctx, 1, "limit"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* delta_t, required_input(ctx, 2, "delta"));
    const DataType dtype = start_t->dtype();
    for (const Tensor* t : {start_t, limit_t, delta_t}) {
      if (t->dtype() != dtype || t->size() != 1) {
        return invalid_argument(ctx.label(), ": start, limit and delta must be scalars of one type, got ",
                                start_t->describe(), ", ", limit_t->describe(), ", ", delta_t->describe());
      }
    }
    return dispatch_numeric(dtype, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const C start = static_cast<C>(start_t->data<T>()[0]);
      const C limit = static_cast<C>(limit_t->data<T>()[0]);
      const C delta = static_cast<C>(delta_t->data<T>()[0]);
      if (delta == C(0)) return invalid_argument(ctx.label(), ": delta is 0");
      // The count ceil((limit - start) / delta): exact in long double for
      // integers, in double for floats. NaN, infinite or huge counts are
      // errors before the cast to int64 (undefined for them) or allocation.
      long double count;
      if constexpr (std::is_integral_v<C>) {
        count = std::ceil((static_cast<long double>(limit) - static_cast<long double>(start)) /
                          static_cast<long double>(delta));
      } else {
        count = std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
      }
      if (std::isnan(count) || count > static_cast<long double>(int64_t{1} << 48)) {
        return invalid_argument(ctx.label(), ": Range(start=", static_cast<double>(start), ", limit=",
                                static_cast<double>(limit), ", delta=", static_cast<double>(delta),
                                ") would have ", static_cast<double>(count), " elements, too many to allocate");
      }
      const int64_t n = count > 0 ? static_cast<int64_t>(count) : 0;
      Tensor& out = ctx.allocate_output(0, dtype, {n});
      T* y = out.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_integral_v<C>) {
          // i * delta may overflow C on a span wider than C's positive half
          // even though start + i * delta fits: wrap in uint64 (defined).
          y[i] = static_cast<T>(static_cast<uint64_t>(start) + static_cast<uint64_t>(i) * static_cast<uint64_t>(delta));
        } else {
          y[i] = static_cast<T>(start + static_cast<C>(i) * delta);
        }
      }
      return Status::ok();
    });
  }
};

class EyeLikeKernel final : public Kernel {
 public:
  explicit EyeLikeKernel(const KernelInfo& info)
      : dtype_(static_cast<DataType>(info.attr_int("dtype", 0))), k_(info.attr_int("k", 0)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "input"));
    if (data->rank() != 2) return invalid_argument(ctx.label(), ": input has rank ", data->rank(), ", expected 2");
    const DataType dtype = dtype_ == DataType::kUndefined ? data->dtype() : dtype_;
    const int64_t rows = data->dim(0), cols = data->dim(1), k = k_;
    return dispatch_numeric_or_bool(dtype, [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      Tensor& out = ctx.allocate_output(0, dtype, data->shape());
      zero_fill(out);
      T* y = out.data<T>();
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t c = r + k;
        if (c >= 0 && c < cols) y[r * cols + c] = static_cast<T>(1.0f);
      }
      return Status::ok();
    });
  }

 private:
  DataType dtype_;
  int64_t k_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "Shape", 1, 14, types::all(), ShapeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Shape", 15, kLatestVersion, types::all(), ShapeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Size", 1, kLatestVersion, types::all(), SizeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Constant", 1, kLatestVersion, types::all(), ConstantKernel);
ONYX_REGISTER_CPU_KERNEL("", "ConstantOfShape", 9, kLatestVersion, types::all(), ConstantOfShapeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Range", 11, kLatestVersion, types::numeric(), RangeKernel);
ONYX_REGISTER_CPU_KERNEL("", "EyeLike", 9, kLatestVersion, types::numeric(), EyeLikeKernel);

}  // namespace onyx::cpu
