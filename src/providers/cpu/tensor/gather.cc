// Gather, GatherElements and GatherND. Every index is checked against its
// dim before any read; Gather and GatherND move whole inner blocks at once.
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

// Reads an int32/int64 index tensor.
Result<std::vector<int64_t>> read_indices(const Tensor& t, const std::string& label) {
  if (t.dtype() != DataType::kInt32 && t.dtype() != DataType::kInt64) {
    return invalid_argument(label, ": input indices has element type ", dtype_name(t.dtype()),
                            ", expected int32 or int64");
  }
  return read_ints(t, label, "indices");
}

// Maps index `i` into [0, dim) (negative counts from the end) or reports it.
inline Status fix_index(int64_t& i, int64_t dim, const std::string& label, int64_t axis) {
  if (i < -dim || i >= dim) {
    return invalid_argument(label, ": index ", i, " is out of range for axis ", axis, " of size ", dim,
                            " (expected [", -dim, ", ", dim - 1, "])");
  }
  if (i < 0) i += dim;
  return Status::ok();
}

class GatherKernel final : public Kernel {
 public:
  explicit GatherKernel(const KernelInfo& info) : axis_(info.attr_int("axis", 0)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "data"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* indices_t, required_input(ctx, 1, "indices"));
    ONYX_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, data->rank(), ctx.label()));
    ONYX_ASSIGN_OR_RETURN(auto indices, read_indices(*indices_t, ctx.label()));
    const int64_t dim = data->dim(axis);
    for (int64_t& i : indices) ONYX_RETURN_IF_ERROR(fix_index(i, dim, ctx.label(), axis));
    Shape out_shape(data->shape().begin(), data->shape().begin() + axis);
    out_shape.insert(out_shape.end(), indices_t->shape().begin(), indices_t->shape().end());
    out_shape.insert(out_shape.end(), data->shape().begin() + axis + 1, data->shape().end());
    Tensor& out = ctx.allocate_output(0, data->dtype(), out_shape);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < data->rank(); ++d) {
      if (d < axis) outer *= data->dim(d);
      if (d > axis) inner *= data->dim(d);
    }
    const int64_t n = static_cast<int64_t>(indices.size());
    const DataType dtype = data->dtype();
    const void* src = data->raw_data();
    void* dst = out.raw_data();
    parallel_for(ctx.thread_pool(), outer * n, static_cast<double>(inner), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t o = r / n, j = r % n;
        copy_elements(dtype, element_at(dst, dtype, r * inner),
                      element_at(src, dtype, (o * dim + indices[static_cast<size_t>(j)]) * inner), inner);
      }
    });
    return Status::ok();
  }

 private:
  int64_t axis_;
};

class GatherElementsKernel final : public Kernel {
 public:
  explicit GatherElementsKernel(const KernelInfo& info) : axis_(info.attr_int("axis", 0)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "data"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* indices_t, required_input(ctx, 1, "indices"));
    const int64_t rank = data->rank();
    ONYX_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, rank, ctx.label()));
    if (indices_t->rank() != rank) {
      return invalid_argument(ctx.label(), ": indices has rank ", indices_t->rank(), ", expected ", rank,
                              " (the rank of data)");
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d != axis && indices_t->dim(d) > data->dim(d)) {
        return invalid_argument(ctx.label(), ": indices shape ", shape_to_string(indices_t->shape()),
                                " exceeds data shape ", shape_to_string(data->shape()), " on axis ", d);
      }
    }
    ONYX_ASSIGN_OR_RETURN(auto indices, read_indices(*indices_t, ctx.label()));
    const int64_t dim = data->dim(axis);
    for (int64_t& i : indices) ONYX_RETURN_IF_ERROR(fix_index(i, dim, ctx.label(), axis));
    Tensor& out = ctx.allocate_output(0, data->dtype(), indices_t->shape());
    if (out.size() == 0) return Status::ok();
    const std::vector<int64_t> strides = contiguous_strides(data->shape());
    const Shape& ishape = indices_t->shape();
    dispatch_storage(data->dtype(), [&](auto* tag) {
      using T = std::remove_pointer_t<decltype(tag)>;
      const T* src = data->data<T>();
      T* dst = out.data<T>();
      std::vector<int64_t> index(static_cast<size_t>(rank), 0);
      int64_t base = 0;  // data offset of the current position without the axis term
      for (int64_t e = 0; e < out.size(); ++e) {
        dst[e] = src[base + indices[static_cast<size_t>(e)] * strides[static_cast<size_t>(axis)]];
        for (int64_t d = rank - 1; d >= 0; --d) {
          const size_t du = static_cast<size_t>(d);
          if (d != axis) base += strides[du];
          if (++index[du] < ishape[du]) break;
          if (d != axis) base -= ishape[du] * strides[du];
          index[du] = 0;
        }
      }
    });
    return Status::ok();
  }

 private:
  int64_t axis_;
};

// GatherND with batch_dims (v12+): the first batch_dims dims of data and
// indices are matched one-to-one; the last dim of indices addresses data.
class GatherNDKernel final : public Kernel {
 public:
  explicit GatherNDKernel(const KernelInfo& info) : batch_dims_(info.attr_int("batch_dims", 0)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "data"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* indices_t, required_input(ctx, 1, "indices"));
    const int64_t r = data->rank(), q = indices_t->rank(), b = batch_dims_;
    if (q < 1 || r < 1) return invalid_argument(ctx.label(), ": data and indices must have rank >= 1");
    if (b < 0 || b >= std::min(q, r)) {
      return invalid_argument(ctx.label(), ": batch_dims ", b, " must be in [0, min(rank(data), rank(indices)))");
    }
    for (int64_t d = 0; d < b; ++d) {
      if (data->dim(d) != indices_t->dim(d)) {
        return invalid_argument(ctx.label(), ": batch dim ", d, " of indices is ", indices_t->dim(d),
                                ", expected ", data->dim(d), " (as in data)");
      }
    }
    const int64_t k = indices_t->dim(q - 1);
    if (k > r - b) {
      return invalid_argument(ctx.label(), ": indices address ", k, " dims but data has only ", r - b,
                              " dims after batch_dims");
    }
    if (indices_t->dtype() != DataType::kInt64 && indices_t->dtype() != DataType::kInt32) {
      return invalid_argument(ctx.label(), ": input indices has element type ", dtype_name(indices_t->dtype()),
                              ", expected int64");
    }
    ONYX_ASSIGN_OR_RETURN(auto indices, read_ints(*indices_t, ctx.label(), "indices"));
    Shape out_shape(indices_t->shape().begin(), indices_t->shape().end() - 1);
    out_shape.insert(out_shape.end(), data->shape().begin() + b + k, data->shape().end());
    Tensor& out = ctx.allocate_output(0, data->dtype(), out_shape);
    int64_t batch = 1, tuples = 1, slice = 1;
    for (int64_t d = 0; d < b; ++d) batch *= data->dim(d);
    for (int64_t d = b; d < q - 1; ++d) tuples *= indices_t->dim(d);
    for (int64_t d = b + k; d < r; ++d) slice *= data->dim(d);
    const std::vector<int64_t> strides = contiguous_strides(data->shape());
    const int64_t batch_stride = b > 0 ? strides[static_cast<size_t>(b - 1)] : 0;
    // Resolve every tuple to a data offset first, so a bad index fails cleanly.
    std::vector<int64_t> offsets(static_cast<size_t>(batch * tuples));
    for (int64_t t = 0; t < batch * tuples; ++t) {
      int64_t offset = (t / tuples) * batch_stride;
      for (int64_t j = 0; j < k; ++j) {
        int64_t i = indices[static_cast<size_t>(t * k + j)];
        ONYX_RETURN_IF_ERROR(fix_index(i, data->dim(b + j), ctx.label(), b + j));
        offset += i * strides[static_cast<size_t>(b + j)];
      }
      offsets[static_cast<size_t>(t)] = offset;
    }
    const DataType dtype = data->dtype();
    parallel_for(ctx.thread_pool(), batch * tuples, static_cast<double>(slice), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        copy_elements(dtype, element_at(out.raw_data(), dtype, t * slice),
                      element_at(data->raw_data(), dtype, offsets[static_cast<size_t>(t)]), slice);
      }
    });
    return Status::ok();
  }

 private:
  int64_t batch_dims_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "Gather", 1, kLatestVersion, types::all(), GatherKernel);
ONYX_REGISTER_CPU_KERNEL("", "GatherElements", 11, kLatestVersion, types::all(), GatherElementsKernel);
ONYX_REGISTER_CPU_KERNEL("", "GatherND", 11, 11, types::all(), GatherNDKernel);
ONYX_REGISTER_CPU_KERNEL("", "GatherND", 12, kLatestVersion, types::all(), GatherNDKernel);

}  // namespace onyx::cpu
