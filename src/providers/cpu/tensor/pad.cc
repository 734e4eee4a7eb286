// Pad (v1 `paddings`, v2 `pads` attributes; v11+ inputs, v18 axes, v19 wrap;
// modes constant/reflect/edge/wrap; negative pads crop) and CenterCropPad.
#include <algorithm>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

enum class PadMode { kConstant, kReflect, kEdge, kWrap };

class PadKernel final : public Kernel {
 public:
  explicit PadKernel(const KernelInfo& info)
      : version_(info.version()),
        attr_pads_(info.attr_ints(info.version() < 2 ? "paddings" : "pads")),
        attr_value_(info.attr_float("value", 0.0f)) {
    const std::string mode = info.attr_string("mode", "constant");
    if (mode == "constant") {
      mode_ = PadMode::kConstant;
    } else if (mode == "reflect") {
      mode_ = PadMode::kReflect;
    } else if (mode == "edge") {
      mode_ = PadMode::kEdge;
    } else if (mode == "wrap" && info.version() >= 19) {
      mode_ = PadMode::kWrap;
    } else {
      throw Error(invalid_model(info.label(), ": unknown mode '", mode, "'"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "data"));
    const int64_t rank = data->rank();
    const DataType dtype = data->dtype();
    std::vector<int64_t> pads = attr_pads_;
    std::vector<int64_t> axes;
    // The constant as one element of the data's type.
    Tensor constant(dtype, {});
    zero_fill(constant);
    if (version_ < 11) {
      if (dtype != DataType::kString) {
        const float v = attr_value_;
        (void)dispatch_numeric_or_bool(dtype, [&](auto tag) -> Status {
          using T = typename decltype(tag)::type;
          constant.data<T>()[0] = static_cast<T>(v);
          return Status::ok();
        });
      }
    } else {
      ONYX_ASSIGN_OR_RETURN(const Tensor* pads_t, required_input(ctx, 1, "pads"));
      ONYX_ASSIGN_OR_RETURN(pads, read_ints(*pads_t, ctx.label(), "pads"));
      if (const Tensor* value = ctx.input_tensor(2); value != nullptr && value->size() > 0) {
        if (value->dtype() != dtype) {
          return invalid_argument(ctx.label(), ": constant_value has element type ", dtype_name(value->dtype()),
                                  ", expected ", dtype_name(dtype), " (as data)");
        }
        copy_elements(dtype, constant.raw_data(), value->raw_data(), 1);
      }
      if (version_ >= 18) {
        if (const Tensor* axes_t = ctx.input_tensor(3)) {
          ONYX_ASSIGN_OR_RETURN(axes, read_ints(*axes_t, ctx.label(), "axes"));
        }
      }
    }
    if (axes.empty()) {
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    }
    if (pads.size() != 2 * axes.size()) {
      return invalid_argument(ctx.label(), ": pads has ", pads.size(), " entries, expected ", 2 * axes.size(),
                              " (2 per padded axis)");
    }
    std::vector<int64_t> begin(static_cast<size_t>(rank), 0), end(static_cast<size_t>(rank), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      ONYX_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axes[i], rank, ctx.label(), "axes entry"));
      begin[static_cast<size_t>(axis)] = pads[i];
      end[static_cast<size_t>(axis)] = pads[i + axes.size()];
    }
    // Pads beyond 2^48 cannot give an allocatable output; rejecting them
    // first keeps every sum below from overflowing.
    constexpr int64_t kMaxPad = int64_t{1} << 48;
    for (int64_t p : pads) {
      if (p > kMaxPad || p < -kMaxPad) {
        return invalid_argument(ctx.label(), ": pads ", shape_to_string(pads), " has an entry out of range (|pad| <= 2^48)");
      }
    }
    Shape out_shape(static_cast<size_t>(rank));
    for (size_t a = 0; a < static_cast<size_t>(rank); ++a) {
      const int64_t dim = data->shape()[a];
      out_shape[a] = dim + begin[a] + end[a];
      if (out_shape[a] < 0) {
        return invalid_argument(ctx.label(), ": pads ", shape_to_string(pads), " crop axis ", a, " of size ", dim,
                                " below zero");
      }
    }
    // Allocate before building the per-axis maps: the allocation checks the
    // total size, and an empty output needs no maps (one axis may be huge).
    Tensor& out = ctx.allocate_output(0, dtype, out_shape);
    if (out.size() == 0) return Status::ok();
    // Per axis, the source index of each output index (-1: the constant).
    std::vector<std::vector<int64_t>> maps(static_cast<size_t>(rank));
    for (size_t a = 0; a < static_cast<size_t>(rank); ++a) {
      const int64_t dim = data->shape()[a];
      const int64_t out_dim = out_shape[a];
      maps[a].resize(static_cast<size_t>(out_dim));
      for (int64_t o = 0; o < out_dim; ++o) {
        const int64_t i = o - begin[a];
        int64_t src = i;
        if (i < 0 || i >= dim) {
          if (mode_ != PadMode::kConstant && dim == 0) {
            return invalid_argument(ctx.label(), ": cannot pad empty axis ", a, " in this mode");
          }
          switch (mode_) {
            case PadMode::kConstant: src = -1; break;
            case PadMode::kEdge: src = std::clamp<int64_t>(i, 0, dim - 1); break;
            case PadMode::kWrap: src = ((i % dim) + dim) % dim; break;
            case PadMode::kReflect: {
              if (dim == 1) {
                src = 0;
                break;
              }
              const int64_t period = 2 * (dim - 1);
              src = ((i % period) + period) % period;
              if (src >= dim) src = period - src;
              break;
            }
          }
        }
        maps[a][static_cast<size_t>(o)] = src;
      }
    }
    if (rank == 0) {
      copy_elements(dtype, out.raw_data(), data->raw_data(), 1);
      return Status::ok();
    }
    const std::vector<int64_t> in_strides = contiguous_strides(data->shape());
    const int64_t row = out_shape.back();
    const int64_t rows = out.size() / row;
    const std::vector<int64_t>& last = maps.back();
    // The stretch of the last axis that maps straight onto the input row.
    const int64_t copy_begin = std::clamp<int64_t>(begin.back(), 0, row);
    const int64_t copy_end = std::clamp<int64_t>(begin.back() + data->shape().back(), copy_begin, row);
    parallel_for(ctx.thread_pool(), rows, static_cast<double>(row), [&](int64_t first, int64_t stop) {
      for (int64_t r = first; r < stop; ++r) {
        void* dst = element_at(out.raw_data(), dtype, r * row);
        // Decompose r over the outer output dims into a source row offset.
        int64_t rest = r, src_off = 0;
        bool is_constant = false;
        for (size_t a = static_cast<size_t>(rank) - 1; a-- > 0;) {
          const int64_t o = rest % out_shape[a];
          rest /= out_shape[a];
          const int64_t s = maps[a][static_cast<size_t>(o)];
          if (s < 0) is_constant = true;
          src_off += s * in_strides[a];
        }
        if (is_constant) {
          fill_elements(dtype, dst, constant.raw_data(), row);
          continue;
        }
        const void* src = element_at(data->raw_data(), dtype, src_off);
        for (int64_t o = 0; o < copy_begin; ++o) {
          const int64_t s = last[static_cast<size_t>(o)];
          copy_elements(dtype, element_at(dst, dtype, o), s < 0 ? constant.raw_data() : element_at(src, dtype, s), 1);
        }
        copy_elements(dtype, element_at(dst, dtype, copy_begin),
                      element_at(src, dtype, copy_begin - begin.back()), copy_end - copy_begin);
        for (int64_t o = copy_end; o < row; ++o) {
          const int64_t s = last[static_cast<size_t>(o)];
          copy_elements(dtype, element_at(dst, dtype, o), s < 0 ? constant.raw_data() : element_at(src, dtype, s), 1);
        }
      }
    });
    return Status::ok();
  }

 private:
  int version_;
  std::vector<int64_t> attr_pads_;
  float attr_value_;
  PadMode mode_ = PadMode::kConstant;
};

// CenterCropPad: per axis, crop centrally to `shape` or pad centrally with zeros.
class CenterCropPadKernel final : public Kernel {
 public:
  explicit CenterCropPadKernel(const KernelInfo& info) : axes_(info.attr_ints("axes")) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "input_data"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* shape_t, required_input(ctx, 1, "shape"));
    ONYX_ASSIGN_OR_RETURN(auto shape, read_ints(*shape_t, ctx.label(), "shape"));
    const int64_t rank = data->rank();
    std::vector<int64_t> axes = axes_;
    if (axes.empty()) {
      for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
    }
    if (shape.size() != axes.size()) {
      return invalid_argument(ctx.label(), ": shape has ", shape.size(), " entries, expected ", axes.size(),
                              " (one per axis)");
    }
    Shape out_shape = data->shape();
    Shape box = data->shape();
    std::vector<int64_t> src_begin(static_cast<size_t>(rank), 0), dst_begin(static_cast<size_t>(rank), 0);
    for (size_t i = 0; i < axes.size(); ++i) {
      ONYX_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axes[i], rank, ctx.label(), "axes entry"));
      const size_t a = static_cast<size_t>(axis);
      const int64_t dim = data->shape()[a], target = shape[i];
      if (target < 0) return invalid_argument(ctx.label(), ": shape ", shape_to_string(shape), " has a negative dim");
      out_shape[a] = target;
      box[a] = std::min(dim, target);
      if (target < dim) src_begin[a] = (dim - target) / 2;
      if (target > dim) dst_begin[a] = (target - dim) / 2;
    }
    Tensor& out = ctx.allocate_output(0, data->dtype(), out_shape);
    zero_fill(out);
    const std::vector<int64_t> in_strides = contiguous_strides(data->shape());
    const std::vector<int64_t> out_strides = contiguous_strides(out_shape);
    int64_t src_off = 0, dst_off = 0;
    for (size_t a = 0; a < static_cast<size_t>(rank); ++a) {
      src_off += src_begin[a] * in_strides[a];
      dst_off += dst_begin[a] * out_strides[a];
    }
    strided_copy(data->dtype(), element_at(out.raw_data(), data->dtype(), dst_off), out_strides,
                 element_at(data->raw_data(), data->dtype(), src_off), in_strides, box, ctx.thread_pool());
    return Status::ok();
  }

 private:
  std::vector<int64_t> axes_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "Pad", 1, 1, types::all(), PadKernel);
ONYX_REGISTER_CPU_KERNEL("", "Pad", 2, 10, types::all(), PadKernel);
ONYX_REGISTER_CPU_KERNEL("", "Pad", 11, 17, types::all(), PadKernel);
ONYX_REGISTER_CPU_KERNEL("", "Pad", 18, 18, types::all(), PadKernel);
ONYX_REGISTER_CPU_KERNEL("", "Pad", 19, kLatestVersion, types::all(), PadKernel);
ONYX_REGISTER_CPU_KERNEL("", "CenterCropPad", 18, kLatestVersion, types::all(), CenterCropPadKernel);

}  // namespace onyx::cpu
