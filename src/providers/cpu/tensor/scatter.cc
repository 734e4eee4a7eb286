// ScatterND, ScatterElements and the deprecated Scatter (v9/v11, same as
// ScatterElements without reduction). The output starts as a copy of data;
// reduction (none/add/mul from v16, max/min from v18) combines updates into it.
#include <algorithm>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction parse_reduction(const KernelInfo& info) {
  const std::string r = info.attr_string("reduction", "none");
  if (r == "none") return Reduction::kNone;
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  throw Error(invalid_model(info.label(), ": unknown reduction '", r, "' (expected none, add, mul, max or min)"));
}

template <typename T>
inline void combine(T& dst, const T& src, Reduction reduction) {
  if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, Bytes16>) {
    dst = src;  // only reduction none reaches here for these
  } else {
    using C = compute_t<T>;
    const C a = static_cast<C>(dst), b = static_cast<C>(src);
    switch (reduction) {
      case Reduction::kNone: dst = src; return;
      case Reduction::kAdd: dst = static_cast<T>(a + b); return;
      case Reduction::kMul: dst = static_cast<T>(a * b); return;
      case Reduction::kMax: dst = static_cast<T>(std::max(a, b)); return;
      case Reduction::kMin: dst = static_cast<T>(std::min(a, b)); return;
    }
  }
}

template <>
inline void combine<bool>(bool& dst, const bool& src, Reduction reduction) {
  switch (reduction) {
    case Reduction::kNone: dst = src; return;
    case Reduction::kAdd: case Reduction::kMax: dst = dst || src; return;
    case Reduction::kMul: case Reduction::kMin: dst = dst && src; return;
  }
}

// Runs fn with a typed tag: any type for reduction none (moved as storage),
// arithmetic types otherwise.
template <typename Fn>
Status dispatch_for_reduction(DataType dtype, Reduction reduction, const std::string& label, Fn&& fn) {
  if (reduction == Reduction::kNone) {
    dispatch_storage(dtype, [&](auto* tag) { fn(TypeTag<std::remove_pointer_t<decltype(tag)>>{}); });
    return Status::ok();
  }
  Status status = dispatch_numeric_or_bool(dtype, [&](auto tag) -> Status {
    fn(tag);
    return Status::ok();
  });
  if (!status.is_ok()) return invalid_argument(label, ": ", status.message());
  return Status::ok();
}

Result<std::vector<int64_t>> read_index_tensor(const Tensor& t, const std::string& label) {
  if (t.dtype() != DataType::kInt32 && t.dtype() != DataType::kInt64) {
    return invalid_argument(label, ": input indices has element type ", dtype_name(t.dtype()),
                            ", expected int32 or int64");
  }
  return read_ints(t, label, "indices");
}

Status check_index(int64_t& i, int64_t dim, const std::string& label, int64_t axis) {
  if (i < -dim || i >= dim) {
    return invalid_argument(label, ": index ", i, " is out of range for axis ", axis, " of size ", dim,
                            " (expected [", -dim, ", ", dim - 1, "])");
  }
  if (i < 0) i += dim;
  return Status::ok();
}

class ScatterNDKernel final : public Kernel {
 public:
  explicit ScatterNDKernel(const KernelInfo& info) : reduction_(parse_reduction(info)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "data"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* indices_t, required_input(ctx, 1, "indices"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* updates, required_input(ctx, 2, "updates"));
    const int64_t r = data->rank(), q = indices_t->rank();
    if (q < 1) return invalid_argument(ctx.label(), ": indices must have rank >= 1");
    const int64_t k = indices_t->dim(q - 1);
    if (k > r) return invalid_argument(ctx.label(), ": indices address ", k, " dims but data has rank ", r);
    Shape expected(indices_t->shape().begin(), indices_t->shape().end() - 1);
    expected.insert(expected.end(), data->shape().begin() + k, data->shape().end());
    if (updates->shape() != expected) {
      return invalid_argument(ctx.label(), ": updates has shape ", shape_to_string(updates->shape()), ", expected ",
                              shape_to_string(expected));
    }
    if (updates->dtype() != data->dtype()) {
      return invalid_argument(ctx.label(), ": updates has element type ", dtype_name(updates->dtype()),
                              ", expected ", dtype_name(data->dtype()));
    }
    ONYX_ASSIGN_OR_RETURN(auto indices, read_index_tensor(*indices_t, ctx.label()));
    const std::vector<int64_t> strides = contiguous_strides(data->shape());
    const int64_t tuples = shape_size(Shape(indices_t->shape().begin(), indices_t->shape().end() - 1));
    int64_t slice = 1;
    for (int64_t d = k; d < r; ++d) slice *= data->dim(d);
    std::vector<int64_t> offsets(static_cast<size_t>(tuples), 0);
    for (int64_t t = 0; t < tuples; ++t) {
      for (int64_t j = 0; j < k; ++j) {
        int64_t i = indices[static_cast<size_t>(t * k + j)];
        ONYX_RETURN_IF_ERROR(check_index(i, data->dim(j), ctx.label(), j));
        offsets[static_cast<size_t>(t)] += i * strides[static_cast<size_t>(j)];
      }
    }
    Tensor& out = ctx.allocate_output(0, data->dtype(), data->shape());
    copy_elements(data->dtype(), out.raw_data(), data->raw_data(), data->size());
    const Reduction reduction = reduction_;
    return dispatch_for_reduction(data->dtype(), reduction, ctx.label(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = out.data<T>();
      const T* src = updates->data<T>();
      for (int64_t t = 0; t < tuples; ++t) {
        T* d = dst + offsets[static_cast<size_t>(t)];
        const T* s = src + t * slice;
        for (int64_t e = 0; e < slice; ++e) combine(d[e], s[e], reduction);
      }
    });
  }

 private:
  Reduction reduction_;
};

class ScatterElementsKernel final : public Kernel {
 public:
  explicit ScatterElementsKernel(const KernelInfo& info)
      : axis_(info.attr_int("axis", 0)), reduction_(parse_reduction(info)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "data"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* indices_t, required_input(ctx, 1, "indices"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* updates, required_input(ctx, 2, "updates"));
    const int64_t rank = data->rank();
    ONYX_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, rank, ctx.label()));
    if (indices_t->shape() != updates->shape()) {
      return invalid_argument(ctx.label(), ": updates has shape ", shape_to_string(updates->shape()),
                              ", expected ", shape_to_string(indices_t->shape()), " (the shape of indices)");
    }
    if (indices_t->rank() != rank) {
      return invalid_argument(ctx.label(), ": indices has rank ", indices_t->rank(), ", expected ", rank);
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && indices_t->dim(d) > data->dim(d)) {
        return invalid_argument(ctx.label(), ": indices shape ", shape_to_string(indices_t->shape()),
                                " exceeds data shape ", shape_to_string(data->shape()), " on axis ", d);
      }
    }
    if (updates->dtype() != data->dtype()) {
      return invalid_argument(ctx.label(), ": updates has element type ", dtype_name(updates->dtype()),
                              ", expected ", dtype_name(data->dtype()));
    }
    ONYX_ASSIGN_OR_RETURN(auto indices, read_index_tensor(*indices_t, ctx.label()));
    const int64_t dim = data->dim(axis);
    for (int64_t& i : indices) ONYX_RETURN_IF_ERROR(check_index(i, dim, ctx.label(), axis));
    Tensor& out = ctx.allocate_output(0, data->dtype(), data->shape());
    copy_elements(data->dtype(), out.raw_data(), data->raw_data(), data->size());
    if (indices_t->size() == 0) return Status::ok();
    const std::vector<int64_t> strides = contiguous_strides(data->shape());
    const Shape& ishape = indices_t->shape();
    const Reduction reduction = reduction_;
    return dispatch_for_reduction(data->dtype(), reduction, ctx.label(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* dst = out.data<T>();
      const T* src = updates->data<T>();
      std::vector<int64_t> index(static_cast<size_t>(rank), 0);
      int64_t base = 0;
      const int64_t axis_stride = strides[static_cast<size_t>(axis)];
      for (int64_t e = 0; e < indices_t->size(); ++e) {
        combine(dst[base + indices[static_cast<size_t>(e)] * axis_stride], src[e], reduction);
        for (int64_t d = rank - 1; d >= 0; --d) {
          const size_t du = static_cast<size_t>(d);
          if (d != axis) base += strides[du];
          if (++index[du] < ishape[du]) break;
          if (d != axis) base -= ishape[du] * strides[du];
          index[du] = 0;
        }
      }
    });
  }

 private:
  int64_t axis_;
  Reduction reduction_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "ScatterND", 11, 15, types::all(), ScatterNDKernel);
ONYX_REGISTER_CPU_KERNEL("", "ScatterND", 16, 17, types::all(), ScatterNDKernel);
ONYX_REGISTER_CPU_KERNEL("", "ScatterND", 18, kLatestVersion, types::all(), ScatterNDKernel);
ONYX_REGISTER_CPU_KERNEL("", "ScatterElements", 11, 15, types::all(), ScatterElementsKernel);
ONYX_REGISTER_CPU_KERNEL("", "ScatterElements", 16, 17, types::all(), ScatterElementsKernel);
ONYX_REGISTER_CPU_KERNEL("", "ScatterElements", 18, kLatestVersion, types::all(), ScatterElementsKernel);
ONYX_REGISTER_CPU_KERNEL("", "Scatter", 9, kLatestVersion, types::all(), ScatterElementsKernel);

}  // namespace onyx::cpu
