// Ops that only relabel a buffer's shape: Reshape, Flatten, Squeeze, Unsqueeze
// and Identity. Each returns its input's buffer under a new shape, no copy.
#include <algorithm>

#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

// Reshape: v1 takes the target as attribute `shape`, v5+ as input 1; a 0
// copies the input's dim (unless allowzero, v14+), one -1 is inferred.
class ReshapeKernel final : public Kernel {
 public:
  explicit ReshapeKernel(const KernelInfo& info)
      : from_attribute_(info.version() < 5),
        attr_shape_(info.attr_ints("shape")),
        allowzero_(info.attr_int("allowzero", 0) != 0) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "data"));
    std::vector<int64_t> target = attr_shape_;
    if (!from_attribute_) {
      ONYX_ASSIGN_OR_RETURN(const Tensor* shape, required_input(ctx, 1, "shape"));
      if (shape->rank() != 1) {
        return invalid_argument(ctx.label(), ": input shape has rank ", shape->rank(), ", expected 1");
      }
      ONYX_ASSIGN_OR_RETURN(target, read_ints(*shape, ctx.label(), "shape"));
    }
    Shape out(target.size());
    int64_t known = 1;
    int inferred = -1;
    for (size_t i = 0; i < target.size(); ++i) {
      const int64_t d = target[i];
      if (d == -1) {
        if (inferred >= 0) return invalid_argument(ctx.label(), ": shape ", shape_to_string(target), " has more than one -1");
        inferred = static_cast<int>(i);
        continue;
      }
      if (d < -1) return invalid_argument(ctx.label(), ": shape ", shape_to_string(target), " has invalid dim ", d);
      if (d == 0 && !allowzero_) {
        if (static_cast<int64_t>(i) >= data->rank()) {
          return invalid_argument(ctx.label(), ": shape ", shape_to_string(target), " copies dim ", i,
                                  " (0) but data has rank ", data->rank());
        }
        out[i] = data->dim(static_cast<int64_t>(i));
      } else {
        out[i] = d;
      }
      if (__builtin_mul_overflow(known, out[i], &known)) {
        return invalid_argument(ctx.label(), ": shape ", shape_to_string(target), " has too many elements");
      }
    }
    if (inferred >= 0) {
      if (known == 0) {
        if (data->size() != 0) {
          return invalid_argument(ctx.label(), ": cannot infer the -1 dim of ", shape_to_string(target),
                                  " for data ", data->describe());
        }
        out[static_cast<size_t>(inferred)] = 0;
      } else {
        if (data->size() % known != 0) {
          return invalid_argument(ctx.label(), ": cannot reshape data ", data->describe(), " to ",
                                  shape_to_string(target));
        }
        out[static_cast<size_t>(inferred)] = data->size() / known;
      }
    }
    if (shape_size(out) != data->size()) {
      return invalid_argument(ctx.label(), ": cannot reshape data ", data->describe(), " (", data->size(),
                              " elements) to ", shape_to_string(out));
    }
    ctx.set_output(0, Value(data->reshaped(out)));
    return Status::ok();
  }

 private:
  bool from_attribute_;
  std::vector<int64_t> attr_shape_;
  bool allowzero_;
};

class FlattenKernel final : public Kernel {
 public:
  explicit FlattenKernel(const KernelInfo& info) : axis_(info.attr_int("axis", 1)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "input"));
    int64_t axis = axis_;
    // axis may equal rank (all dims go to the outer factor).
    if (axis < -data->rank() || axis > data->rank()) {
      return invalid_argument(ctx.label(), ": axis ", axis, " is out of range for input of rank ", data->rank());
    }
    if (axis < 0) axis += data->rank();
    int64_t outer = 1, inner = 1;
    for (int64_t i = 0; i < data->rank(); ++i) (i < axis ? outer : inner) *= data->dim(i);
    ctx.set_output(0, Value(data->reshaped({outer, inner})));
    return Status::ok();
  }

 private:
  int64_t axis_;
};

// Squeeze/Unsqueeze: `axes` is an attribute before v13 and an input from v13.
Result<std::vector<int64_t>> read_axes(const KernelContext& ctx, bool from_input, size_t input_index,
                                       const std::vector<int64_t>& attr_axes, bool* given) {
  *given = !from_input && !attr_axes.empty();
  if (!from_input) return attr_axes;
  const Tensor* axes = ctx.input_tensor(input_index);
  if (axes == nullptr) return std::vector<int64_t>{};
  *given = true;
  return read_ints(*axes, ctx.label(), "axes");
}

class SqueezeKernel final : public Kernel {
 public:
  explicit SqueezeKernel(const KernelInfo& info)
      : axes_from_input_(info.version() >= 13), attr_axes_(info.attr_ints("axes")) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "data"));
    bool given = false;
    ONYX_ASSIGN_OR_RETURN(auto axes, read_axes(ctx, axes_from_input_, 1, attr_axes_, &given));
    std::vector<bool> drop(static_cast<size_t>(data->rank()), false);
    if (!given) {
      for (int64_t i = 0; i < data->rank(); ++i) drop[static_cast<size_t>(i)] = data->dim(i) == 1;
    }
    for (int64_t a : axes) {
      ONYX_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a, data->rank(), ctx.label(), "axes entry"));
      if (data->dim(axis) != 1) {
        return invalid_argument(ctx.label(), ": cannot squeeze axis ", a, " of data ", data->describe(),
                                ": its size is ", data->dim(axis), ", expected 1");
      }
      drop[static_cast<size_t>(axis)] = true;
    }
    Shape out;
    for (int64_t i = 0; i < data->rank(); ++i) {
      if (!drop[static_cast<size_t>(i)]) out.push_back(data->dim(i));
    }
    ctx.set_output(0, Value(data->reshaped(out)));
    return Status::ok();
  }

 private:
  bool axes_from_input_;
  std::vector<int64_t> attr_axes_;
};

class UnsqueezeKernel final : public Kernel {
 public:
  explicit UnsqueezeKernel(const KernelInfo& info)
      : axes_from_input_(info.version() >= 13), attr_axes_(info.attr_ints("axes")) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "data"));
    bool given = false;
    ONYX_ASSIGN_OR_RETURN(auto axes, read_axes(ctx, axes_from_input_, 1, attr_axes_, &given));
    if (!given) return invalid_argument(ctx.label(), ": axes are required");
    const int64_t out_rank = data->rank() + static_cast<int64_t>(axes.size());
    std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
    for (int64_t a : axes) {
      ONYX_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(a, out_rank, ctx.label(), "axes entry"));
      if (inserted[static_cast<size_t>(axis)]) {
        return invalid_argument(ctx.label(), ": axes ", shape_to_string(axes), " repeat axis ", axis);
      }
      inserted[static_cast<size_t>(axis)] = true;
    }
    Shape out(static_cast<size_t>(out_rank));
    int64_t next = 0;
    for (int64_t i = 0; i < out_rank; ++i) {
      out[static_cast<size_t>(i)] = inserted[static_cast<size_t>(i)] ? 1 : data->dim(next++);
    }
    ctx.set_output(0, Value(data->reshaped(out)));
    return Status::ok();
  }

 private:
  bool axes_from_input_;
  std::vector<int64_t> attr_axes_;
};

// Identity passes any value (tensor, sequence, optional) through unchanged.
class IdentityKernel final : public Kernel {
 public:
  explicit IdentityKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    const Value* v = ctx.input(0);
    ctx.set_output(0, v != nullptr ? *v : Value::none());
    return Status::ok();
  }
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "Reshape", 1, 4, types::all_with_small_formats(), ReshapeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Reshape", 5, kLatestVersion, types::all_with_small_formats(), ReshapeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Flatten", 1, kLatestVersion, types::all_with_small_formats(), FlattenKernel);
ONYX_REGISTER_CPU_KERNEL("", "Squeeze", 1, 12, types::all_with_small_formats(), SqueezeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Squeeze", 13, kLatestVersion, types::all_with_small_formats(), SqueezeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Unsqueeze", 1, 12, types::all_with_small_formats(), UnsqueezeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Unsqueeze", 13, kLatestVersion, types::all_with_small_formats(), UnsqueezeKernel);
ONYX_REGISTER_CPU_KERNEL("", "Identity", 1, kLatestVersion, types::all_with_small_formats(), IdentityKernel);

}  // namespace onyx::cpu
