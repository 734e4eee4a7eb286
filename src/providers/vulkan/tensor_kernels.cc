// Data movement on the device, float32: Reshape, Flatten, Squeeze,
// Unsqueeze and Identity keep the buffer and change the shape; Transpose,
// Concat, Split, Slice and Expand are strided copies
// (shaders/copy_strided.comp); Gather takes its int32 or int64 indices on
// the host, checks them as the CPU does, and gathers on the device
// (shaders/gather.comp).
#include <algorithm>
#include <limits>

#include "providers/vulkan/vulkan_kernel.h"

namespace onyx::vulkan {
namespace {

int64_t normalize_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    s[d] = stride;
    stride *= shape[d];
  }
  return s;
}

Result<std::vector<int64_t>> host_ints(KernelContext& ctx, size_t i, const char* what) {
  const Tensor* t = ctx.input_tensor(i);
  if (t == nullptr) return std::vector<int64_t>();
  if (!t->device().host_readable() || (t->dtype() != DataType::kInt64 && t->dtype() != DataType::kInt32)) {
    return invalid_argument(ctx.label(), ": ", what, " must be int32 or int64 on the host, got ", t->describe());
  }
  std::vector<int64_t> v(static_cast<size_t>(t->size()));
  for (int64_t k = 0; k < t->size(); ++k) {
    v[static_cast<size_t>(k)] = t->dtype() == DataType::kInt64 ? t->data<int64_t>()[k] : t->data<int32_t>()[k];
  }
  return v;
}

// Reshape, Flatten, Squeeze, Unsqueeze, Identity: the input's buffer under
// the new shape.
class ShapeKernel final : public VulkanKernel {
 public:
  ShapeKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)),
        op_(info.op_type()),
        axes_input_(info.version() >= 13 && (op_ == "Squeeze" || op_ == "Unsqueeze")),
        axes_(info.attr_ints("axes")),
        axis_(info.attr_int("axis", 1)),
        allowzero_(info.attr_int("allowzero", 0) != 0) {}

  Status compute(KernelContext& ctx) const override {
    if (op_ == "Identity" && ctx.input(0) != nullptr && !ctx.input(0)->is_tensor()) {
      ctx.set_output(0, *ctx.input(0));  // a sequence or an empty optional passes through as it is
      return Status::ok();
    }
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input 0"));
    (void)rx;
    const Shape& in = x->shape();
    const int64_t rank = x->rank();
    Shape out;
    if (op_ == "Identity") {
      out = in;
    } else if (op_ == "Reshape") {
      ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> shape, host_ints(ctx, 1, "the shape"));
      int64_t known = 1, unknown = -1;
      out = shape;
      for (size_t d = 0; d < out.size(); ++d) {
        if (out[d] == 0 && !allowzero_) {
          if (d >= in.size()) return invalid_argument(ctx.label(), ": shape ", shape_to_string(shape), " copies dim ", d, " of ", x->describe());
          out[d] = in[d];
        }
        if (out[d] == -1) {
          if (unknown >= 0) return invalid_argument(ctx.label(), ": shape ", shape_to_string(shape), " has two -1");
          unknown = static_cast<int64_t>(d);
        } else if (out[d] < 0) {
          return invalid_argument(ctx.label(), ": shape ", shape_to_string(shape), " has a negative dim");
        } else {
          known *= out[d];
        }
      }
      if (unknown >= 0) {
        if (known == 0 || x->size() % known != 0) {
          return invalid_argument(ctx.label(), ": cannot reshape ", x->describe(), " to ", shape_to_string(shape));
        }
        out[static_cast<size_t>(unknown)] = x->size() / known;
      }
    } else if (op_ == "Flatten") {
      const int64_t axis = normalize_axis(axis_, rank);
      if (axis < 0 || axis > rank) return invalid_argument(ctx.label(), ": axis ", axis_, " is out of range for ", x->describe());
      int64_t outer = 1;
      for (int64_t d = 0; d < axis; ++d) outer *= in[static_cast<size_t>(d)];
      out = {outer, outer == 0 ? 0 : x->size() / std::max<int64_t>(outer, 1)};
      if (outer == 0) {
        int64_t inner = 1;
        for (int64_t d = axis; d < rank; ++d) inner *= in[static_cast<size_t>(d)];
        out[1] = inner;
      }
    } else {
      std::vector<int64_t> axes = axes_;
      if (axes_input_) {
        ONYX_ASSIGN_OR_RETURN(axes, host_ints(ctx, 1, "axes"));
      }
      if (op_ == "Squeeze") {
        std::vector<bool> drop(static_cast<size_t>(rank), false);
        if (axes.empty()) {
          for (int64_t d = 0; d < rank; ++d) drop[static_cast<size_t>(d)] = in[static_cast<size_t>(d)] == 1;
        }
        for (int64_t a : axes) {
          const int64_t axis = normalize_axis(a, rank);
          if (axis < 0 || axis >= rank || in[static_cast<size_t>(axis)] != 1) {
            return invalid_argument(ctx.label(), ": axis ", a, " of ", x->describe(), " is not a dim of 1");
          }
          drop[static_cast<size_t>(axis)] = true;
        }
        for (int64_t d = 0; d < rank; ++d) {
          if (!drop[static_cast<size_t>(d)]) out.push_back(in[static_cast<size_t>(d)]);
        }
      } else {
        const int64_t out_rank = rank + static_cast<int64_t>(axes.size());
        std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
        for (int64_t a : axes) {
          const int64_t axis = normalize_axis(a, out_rank);
          if (axis < 0 || axis >= out_rank || inserted[static_cast<size_t>(axis)]) {
            return invalid_argument(ctx.label(), ": axes ", shape_to_string(axes), " are out of range or repeated");
          }
          inserted[static_cast<size_t>(axis)] = true;
        }
        size_t next = 0;
        for (int64_t d = 0; d < out_rank; ++d) out.push_back(inserted[static_cast<size_t>(d)] ? 1 : in[next++]);
      }
    }
    if (shape_size(out) != x->size()) {
      return invalid_argument(ctx.label(), ": cannot reshape ", x->describe(), " to ", shape_to_string(out));
    }
    ctx.set_output(0, Value(x->reshaped(out)));
    return Status::ok();
  }

 private:
  std::string op_;
  bool axes_input_;
  std::vector<int64_t> axes_;
  int64_t axis_;
  bool allowzero_;
};

class TransposeKernel final : public VulkanKernel {
 public:
  TransposeKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)), perm_(info.attr_ints("perm")) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    const size_t rank = x->shape().size();
    std::vector<int64_t> perm = perm_;
    if (perm.empty()) {
      for (size_t d = 0; d < rank; ++d) perm.push_back(static_cast<int64_t>(rank - 1 - d));
    }
    if (perm.size() != rank) return invalid_argument(ctx.label(), ": perm has ", perm.size(), " entries for ", x->describe());
    std::vector<bool> seen(rank, false);
    Shape out(rank);
    const std::vector<int64_t> in_strides = contiguous_strides(x->shape());
    StridedCopy c;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t p = perm[d];
      if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) {
        return invalid_argument(ctx.label(), ": perm ", shape_to_string(perm), " is not a permutation of ", rank, " axes");
      }
      seen[static_cast<size_t>(p)] = true;
      out[d] = x->dim(p);
      c.src_strides.push_back(in_strides[static_cast<size_t>(p)]);
    }
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, out);
    if (y.size() == 0) return Status::ok();
    c.dims = out;
    c.dst_strides = contiguous_strides(out);
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input 0"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    return strided_copy(*device_, ctx.label(), rx, ry, std::move(c));
  }

 private:
  std::vector<int64_t> perm_;
};

class ConcatKernel final : public VulkanKernel {
 public:
  ConcatKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)), axis_(info.attr_int("axis", 0)) {}

  Status compute(KernelContext& ctx) const override {
    std::vector<const Tensor*> inputs;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
      ONYX_ASSIGN_OR_RETURN(const Tensor* t, float_input(ctx, i));
      inputs.push_back(t);
    }
    if (inputs.empty()) return invalid_argument(ctx.label(), ": no inputs");
    const Shape& first = inputs[0]->shape();
    const int64_t rank = static_cast<int64_t>(first.size());
    const int64_t axis = normalize_axis(axis_, rank);
    if (axis < 0 || axis >= rank) return invalid_argument(ctx.label(), ": axis ", axis_, " is out of range for rank ", rank);
    Shape out = first;
    out[static_cast<size_t>(axis)] = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Shape& s = inputs[i]->shape();
      for (int64_t d = 0; d < rank; ++d) {
        if (s.size() != first.size() || (d != axis && s[static_cast<size_t>(d)] != first[static_cast<size_t>(d)])) {
          return invalid_argument(ctx.label(), ": input ", i, " ", inputs[i]->describe(), " does not match input 0 ",
                                  inputs[0]->describe(), " off axis ", axis);
        }
      }
      out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
    }
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, out);
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= first[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= first[static_cast<size_t>(d)];
    const int64_t total = out[static_cast<size_t>(axis)] * inner;
    int64_t offset = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const int64_t width = inputs[i]->dim(axis) * inner;
      if (width > 0) {
        ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *inputs[i], "input " + std::to_string(i)));
        StridedCopy c;
        c.dims = {outer, width};
        c.src_strides = {width, 1};
        c.dst_strides = {total, 1};
        c.dst_offset = offset;
        ONYX_RETURN_IF_ERROR(strided_copy(*device_, ctx.label(), rx, ry, std::move(c)));
      }
      offset += width;
    }
    return Status::ok();
  }

 private:
  int64_t axis_;
};

// Split: sizes from the attribute (before 13), the optional input (13+, on
// the host) or num_outputs (18+), else equal parts.
class SplitKernel final : public VulkanKernel {
 public:
  SplitKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)),
        axis_(info.attr_int("axis", 0)),
        split_(info.attr_ints("split")),
        split_input_(info.version() >= 13),
        num_outputs_(info.attr_int("num_outputs", 0)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    const int64_t rank = x->rank();
    const int64_t axis = normalize_axis(axis_, rank);
    if (axis < 0 || axis >= rank) return invalid_argument(ctx.label(), ": axis ", axis_, " is out of range for ", x->describe());
    std::vector<int64_t> split = split_;
    if (split_input_) {
      ONYX_ASSIGN_OR_RETURN(split, host_ints(ctx, 1, "split"));
    }
    const int64_t dim = x->dim(axis);
    const int64_t outputs = static_cast<int64_t>(ctx.output_count());
    if (split.empty()) {
      const int64_t parts = num_outputs_ > 0 ? num_outputs_ : outputs;
      const int64_t each = (dim + parts - 1) / parts;
      for (int64_t i = 0, left = dim; i < parts; ++i, left -= each) split.push_back(std::max<int64_t>(0, std::min(each, left)));
    }
    int64_t sum = 0;
    for (int64_t s : split) sum += s;
    if (static_cast<int64_t>(split.size()) != outputs || sum != dim) {
      return invalid_argument(ctx.label(), ": split ", shape_to_string(split), " does not cut dim ", axis, " (", dim,
                              ") into ", outputs, " outputs");
    }
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x->dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x->dim(d);
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input 0"));
    int64_t offset = 0;
    for (int64_t o = 0; o < outputs; ++o) {
      Shape shape = x->shape();
      shape[static_cast<size_t>(axis)] = split[static_cast<size_t>(o)];
      const int64_t width = split[static_cast<size_t>(o)] * inner;
      if (ctx.output_requested(static_cast<size_t>(o))) {
        Tensor& y = ctx.allocate_output(static_cast<size_t>(o), DataType::kFloat, shape);
        if (y.size() > 0) {
          ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output " + std::to_string(o)));
          StridedCopy c;
          c.dims = {outer, width};
          c.src_strides = {dim * inner, 1};
          c.dst_strides = {width, 1};
          c.src_offset = offset;
          ONYX_RETURN_IF_ERROR(strided_copy(*device_, ctx.label(), rx, ry, std::move(c)));
        }
      }
      offset += width;
    }
    return Status::ok();
  }

 private:
  int64_t axis_;
  std::vector<int64_t> split_;
  bool split_input_;
  int64_t num_outputs_;
};

// Slice: starts, ends, axes and steps from inputs on the host (10+) or
// attributes (before 10).
class SliceKernel final : public VulkanKernel {
 public:
  SliceKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)),
        inputs_(info.version() >= 10),
        starts_(info.attr_ints("starts")),
        ends_(info.attr_ints("ends")),
        axes_(info.attr_ints("axes")) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    std::vector<int64_t> starts = starts_, ends = ends_, axes = axes_, steps;
    if (inputs_) {
      ONYX_ASSIGN_OR_RETURN(starts, host_ints(ctx, 1, "starts"));
      ONYX_ASSIGN_OR_RETURN(ends, host_ints(ctx, 2, "ends"));
      ONYX_ASSIGN_OR_RETURN(axes, host_ints(ctx, 3, "axes"));
      ONYX_ASSIGN_OR_RETURN(steps, host_ints(ctx, 4, "steps"));
    }
    const int64_t rank = x->rank();
    if (axes.empty()) {
      for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    }
    if (steps.empty()) steps.assign(starts.size(), 1);
    if (starts.size() != ends.size() || axes.size() != starts.size() || steps.size() != starts.size()) {
      return invalid_argument(ctx.label(), ": starts, ends, axes and steps differ in length");
    }
    std::vector<int64_t> begin(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
    Shape out = x->shape();
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (size_t i = 0; i < axes.size(); ++i) {
      const int64_t axis = normalize_axis(axes[i], rank);
      if (axis < 0 || axis >= rank || seen[static_cast<size_t>(axis)]) {
        return invalid_argument(ctx.label(), ": axis ", axes[i], " is out of range or repeated for ", x->describe());
      }
      seen[static_cast<size_t>(axis)] = true;
      const int64_t dim = x->dim(axis), s = steps[i];
      if (s == 0) return invalid_argument(ctx.label(), ": step 0 on axis ", axis);
      int64_t b = starts[i] < 0 ? starts[i] + dim : starts[i];
      int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
      if (ends[i] == std::numeric_limits<int64_t>::max()) e = dim;
      int64_t count;
      if (s > 0) {
        b = std::clamp<int64_t>(b, 0, dim);
        e = std::clamp<int64_t>(e, 0, dim);
        count = e > b ? (e - b + s - 1) / s : 0;
      } else {
        b = std::clamp<int64_t>(b, -1, dim - 1);
        e = std::clamp<int64_t>(e, -1, dim - 1);
        count = b > e ? (b - e + (-s) - 1) / (-s) : 0;
      }
      begin[static_cast<size_t>(axis)] = count > 0 ? b : 0;
      step[static_cast<size_t>(axis)] = s;
      out[static_cast<size_t>(axis)] = count;
    }
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, out);
    if (y.size() == 0) return Status::ok();
    const std::vector<int64_t> strides = contiguous_strides(x->shape());
    StridedCopy c;
    c.dims = out;
    c.dst_strides = contiguous_strides(out);
    for (int64_t d = 0; d < rank; ++d) {
      c.src_offset += begin[static_cast<size_t>(d)] * strides[static_cast<size_t>(d)];
      c.src_strides.push_back(step[static_cast<size_t>(d)] * strides[static_cast<size_t>(d)]);
    }
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input 0"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    return strided_copy(*device_, ctx.label(), rx, ry, std::move(c));
  }

 private:
  bool inputs_;
  std::vector<int64_t> starts_, ends_, axes_;
};

// Expand: x broadcast to the shape input (on the host), numpy's way.
class ExpandKernel final : public VulkanKernel {
 public:
  ExpandKernel(const KernelInfo&, DevicePtr device) : VulkanKernel(std::move(device)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> shape, host_ints(ctx, 1, "the shape"));
    const size_t rank = std::max(shape.size(), x->shape().size());
    std::vector<int64_t> xd(rank, 1), sd(rank, 1);
    for (size_t i = 0; i < x->shape().size(); ++i) xd[rank - x->shape().size() + i] = x->shape()[i];
    for (size_t i = 0; i < shape.size(); ++i) sd[rank - shape.size() + i] = shape[i];
    Shape out(rank);
    for (size_t d = 0; d < rank; ++d) {
      if (xd[d] != sd[d] && xd[d] != 1 && sd[d] != 1) {
        return invalid_argument(ctx.label(), ": ", x->describe(), " does not broadcast to ", shape_to_string(shape));
      }
      out[d] = xd[d] == 1 ? sd[d] : xd[d];
    }
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, out);
    if (y.size() == 0) return Status::ok();
    const std::vector<int64_t> strides = contiguous_strides(Shape(xd.begin(), xd.end()));
    StridedCopy c;
    c.dims = out;
    c.dst_strides = contiguous_strides(out);
    for (size_t d = 0; d < rank; ++d) c.src_strides.push_back(xd[d] == 1 ? 0 : strides[d]);
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input 0"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    return strided_copy(*device_, ctx.label(), rx, ry, std::move(c));
  }
};

class GatherKernel final : public VulkanKernel {
 public:
  GatherKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)), axis_(info.attr_int("axis", 0)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    const Tensor* indices = ctx.input_tensor(1);
    if (indices == nullptr || (indices->dtype() != DataType::kInt64 && indices->dtype() != DataType::kInt32)) {
      return invalid_argument(ctx.label(), ": indices must be int32 or int64");
    }
    const int64_t rank = x->rank();
    const int64_t axis = normalize_axis(axis_, rank);
    if (axis < 0 || axis >= rank) return invalid_argument(ctx.label(), ": axis ", axis_, " is out of range for ", x->describe());
    Shape out(x->shape().begin(), x->shape().begin() + axis);
    out.insert(out.end(), indices->shape().begin(), indices->shape().end());
    out.insert(out.end(), x->shape().begin() + axis + 1, x->shape().end());
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, out);
    if (y.size() == 0) return Status::ok();
    int64_t inner = 1;
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x->dim(d);
    // The indices are on the host (a host input): checked as the CPU checks
    // them, made non-negative, and sent to the device as int32.
    if (!indices->device().host_readable()) return invalid_argument(ctx.label(), ": indices must be in host memory");
    const int64_t dim = x->dim(axis);
    std::vector<int32_t> normalized(static_cast<size_t>(indices->size()));
    for (int64_t i = 0; i < indices->size(); ++i) {
      int64_t index = indices->dtype() == DataType::kInt64 ? indices->data<int64_t>()[i] : indices->data<int32_t>()[i];
      if (index < -dim || index >= dim) {
        return invalid_argument(ctx.label(), ": index ", index, " is out of range for axis ", axis, " of size ", dim,
                                " (expected [", -dim, ", ", dim - 1, "])");
      }
      normalized[static_cast<size_t>(i)] = static_cast<int32_t>(index < 0 ? index + dim : index);
    }
    Tensor device_indices(DataType::kInt32, indices->shape(), ctx.allocator());
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input data"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ri, range(ctx.label(), device_indices, "the indices"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    ONYX_RETURN_IF_ERROR(device_->upload(normalized.data(), ri));
    struct {
      uint32_t n, index_count, inner, axis_dim;
    } push{static_cast<uint32_t>(y.size()), static_cast<uint32_t>(indices->size()), static_cast<uint32_t>(inner),
           static_cast<uint32_t>(dim)};
    ONYX_ASSIGN_OR_RETURN(const Pipeline* p, pipeline("gather", 3, {0}));
    return dispatch_flat(*p, {rx, ri, ry}, &push, sizeof(push), static_cast<uint64_t>(y.size()));
  }

 private:
  int64_t axis_;
};

// Cast among float32, int32 and int64 (shaders/cast.comp); a cast to the
// same type is a device copy.
class CastKernel final : public VulkanKernel {
 public:
  CastKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)), to_(static_cast<DataType>(info.attr_int("to", 0))) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input 0 is missing");
    auto code = [](DataType t) { return t == DataType::kFloat ? 0 : t == DataType::kInt32 ? 1 : t == DataType::kInt64 ? 2 : -1; };
    const int from = code(x->dtype()), to = code(to_);
    if (from < 0 || to < 0) {
      return not_implemented(ctx.label(), ": Vulkan casts among float, int32 and int64, not ", dtype_name(x->dtype()),
                             " to ", dtype_name(to_));
    }
    if (from == to) {
      ctx.set_output(0, Value(*x));  // the same buffer, as the CPU's
      return Status::ok();
    }
    Tensor& y = ctx.allocate_output(0, to_, x->shape());
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input 0"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    // shaders/cast.comp's modes by (from, to).
    static const int kMode[3][3] = {{-1, 0, 2}, {1, -1, 4}, {3, 5, -1}};
    const struct {
      uint32_t n;
    } push{static_cast<uint32_t>(y.size())};
    ONYX_ASSIGN_OR_RETURN(const Pipeline* p, pipeline("cast", 2, {kMode[from][to]}));
    return dispatch_flat(*p, {rx, ry}, &push, sizeof(push), static_cast<uint64_t>(y.size()));
  }

 private:
  DataType to_;
};

}  // namespace

void add_tensor_kernels(std::vector<KernelDef>& defs, const DevicePtr& device) {
  defs.push_back(vulkan_kernel<ShapeKernel>(device, "Reshape", 5, kLatestVersion, {DataType::kFloat}, {1}));
  defs.push_back(vulkan_kernel<ShapeKernel>(device, "Flatten", 1, kLatestVersion));
  defs.push_back(vulkan_kernel<ShapeKernel>(device, "Identity", 1, kLatestVersion));
  for (const char* op : {"Squeeze", "Unsqueeze"}) {
    defs.push_back(vulkan_kernel<ShapeKernel>(device, op, 1, 12));
    defs.push_back(vulkan_kernel<ShapeKernel>(device, op, 13, kLatestVersion, {DataType::kFloat}, {1}));
  }
  defs.push_back(vulkan_kernel<TransposeKernel>(device, "Transpose", 1, kLatestVersion));
  defs.push_back(vulkan_kernel<ConcatKernel>(device, "Concat", 4, kLatestVersion));
  defs.push_back(vulkan_kernel<SplitKernel>(device, "Split", 2, 12));
  defs.push_back(vulkan_kernel<SplitKernel>(device, "Split", 13, kLatestVersion, {DataType::kFloat}, {1}));
  defs.push_back(vulkan_kernel<SliceKernel>(device, "Slice", 1, 9));
  defs.push_back(vulkan_kernel<SliceKernel>(device, "Slice", 10, kLatestVersion, {DataType::kFloat}, {1, 2, 3, 4}));
  defs.push_back(vulkan_kernel<ExpandKernel>(device, "Expand", 8, kLatestVersion, {DataType::kFloat}, {1}));
  defs.push_back(vulkan_kernel<GatherKernel>(device, "Gather", 1, kLatestVersion, {DataType::kFloat}, {1}));
  KernelDef cast = vulkan_kernel<CastKernel>(device, "Cast", 6, kLatestVersion,
                                             {DataType::kFloat, DataType::kInt32, DataType::kInt64});
  cast.more_type_constraints = {{"T2", {DataType::kFloat, DataType::kInt32, DataType::kInt64}}};
  defs.push_back(std::move(cast));
}

}  // namespace onyx::vulkan
