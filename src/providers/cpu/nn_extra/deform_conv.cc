// DeformConv (opsets 19, 22): convolution whose kernel taps are moved by learned
// per-position offsets (and optionally scaled by a mask), for any spatial rank.
// Taps land between pixels and are read by multilinear interpolation, with
// zeros outside the input, as the spec's reference does through GridSample.
#include <cmath>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class DeformConvKernel final : public Kernel {
 public:
  explicit DeformConvKernel(const KernelInfo& info)
      : kernel_shape_(info.attr_ints("kernel_shape")),
        strides_(info.attr_ints("strides")),
        dilations_(info.attr_ints("dilations")),
        pads_(info.attr_ints("pads")),
        group_(info.attr_int("group", 1)),
        offset_group_(info.attr_int("offset_group", 1)) {
    if (group_ < 1 || offset_group_ < 1) {
      throw Error(invalid_model(info.label(), ": group is ", group_, " and offset_group is ", offset_group_,
                                ", expected both at least 1"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* w = ctx.input_tensor(1);
    const Tensor* offset = ctx.input_tensor(2);
    if (x == nullptr || w == nullptr || offset == nullptr) {
      return invalid_argument(ctx.label(), ": inputs X, W and offset are required");
    }
    const Tensor* bias = ctx.input_tensor(3);
    const Tensor* mask = ctx.input_tensor(4);
    ONYX_ASSIGN_OR_RETURN(const Geometry geometry, resolve(ctx, *x, *w, *offset, bias, mask));
    for (const Tensor* t : {w, offset, bias, mask}) {
      if (t != nullptr && t->dtype() != x->dtype()) {
        return invalid_argument(ctx.label(), ": input ", t->describe(), " has another element type than X ",
                                x->describe());
      }
    }
    Shape out_shape = {geometry.batch, geometry.out_channels};
    out_shape.insert(out_shape.end(), geometry.output.begin(), geometry.output.end());
    Tensor& y = ctx.allocate_output(0, x->dtype(), out_shape);
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      run<T>(ctx, geometry, *x, *w, *offset, bias, mask, y);
      return Status::ok();
    });
  }

 private:
  // Every size the computation needs, checked against the inputs.
  struct Geometry {
    int64_t batch = 0, channels = 0, out_channels = 0;
    std::vector<int64_t> input, kernel, strides, dilations, pads_begin, output;
    int64_t input_size = 1, kernel_size = 1, output_size = 1;
  };

  Result<Geometry> resolve(const KernelContext& ctx, const Tensor& x, const Tensor& w, const Tensor& offset,
                           const Tensor* bias, const Tensor* mask) const {
    Geometry g;
    const int64_t rank = x.rank() - 2;
    if (rank < 1) return invalid_argument(ctx.label(), ": input X is ", x.describe(), ", expected rank 3 or more (N, C, ...)");
    if (w.rank() != x.rank()) {
      return invalid_argument(ctx.label(), ": input W is ", w.describe(), ", expected rank ", x.rank(), " like X");
    }
    const auto r = static_cast<size_t>(rank);
    g.batch = x.dim(0);
    g.channels = x.dim(1);
    g.out_channels = w.dim(0);
    if (w.dim(1) * group_ != g.channels || g.out_channels % group_ != 0) {
      return invalid_argument(ctx.label(), ": W ", w.describe(), " with group ", group_, " does not fit X ",
                              x.describe(), " (expected W[1] * group = C and M divisible by group)");
    }
    if (g.channels % offset_group_ != 0) {
      return invalid_argument(ctx.label(), ": X has ", g.channels, " channels, not divisible by offset_group ",
                              offset_group_);
    }
    auto per_axis = [&](const std::vector<int64_t>& values, size_t count, int64_t fallback, const char* name,
                        std::vector<int64_t>& out) -> Status {
      if (values.empty()) {
        out.assign(count, fallback);
      } else if (values.size() != count) {
        return invalid_argument(ctx.label(), ": attribute ", name, " has ", values.size(), " values, expected ", count);
      } else {
        out = values;
      }
      return Status::ok();
    };
    std::vector<int64_t> pads;
    ONYX_RETURN_IF_ERROR(per_axis(strides_, r, 1, "strides", g.strides));
    ONYX_RETURN_IF_ERROR(per_axis(dilations_, r, 1, "dilations", g.dilations));
    ONYX_RETURN_IF_ERROR(per_axis(pads_, 2 * r, 0, "pads", pads));
    const std::vector<int64_t> w_kernel(w.shape().begin() + 2, w.shape().end());
    ONYX_RETURN_IF_ERROR(per_axis(kernel_shape_, r, 0, "kernel_shape", g.kernel));
    if (kernel_shape_.empty()) g.kernel = w_kernel;
    if (g.kernel != w_kernel) {
      return invalid_argument(ctx.label(), ": attribute kernel_shape does not match W ", w.describe());
    }
    for (size_t d = 0; d < r; ++d) {
      g.input.push_back(x.dim(static_cast<int64_t>(d) + 2));
      g.pads_begin.push_back(pads[d]);
      if (g.strides[d] < 1 || g.dilations[d] < 1 || g.kernel[d] < 1) {
        return invalid_argument(ctx.label(), ": strides, dilations and kernel_shape must be positive");
      }
      const int64_t span = (g.kernel[d] - 1) * g.dilations[d] + 1;
      const int64_t room = g.input[d] + pads[d] + pads[d + r] - span;
      if (room < 0) {
        return invalid_argument(ctx.label(), ": kernel extent ", span, " exceeds padded input size ",
                                g.input[d] + pads[d] + pads[d + r], " on spatial axis ", d);
      }
      g.output.push_back(room / g.strides[d] + 1);
      g.input_size *= g.input[d];
      g.kernel_size *= g.kernel[d];
      g.output_size *= g.output.back();
    }
    Shape want = {g.batch, offset_group_ * g.kernel_size * rank};
    want.insert(want.end(), g.output.begin(), g.output.end());
    if (offset.shape() != want) {
      return invalid_argument(ctx.label(), ": input offset is ", offset.describe(), ", expected shape ",
                              shape_to_string(want));
    }
    if (mask != nullptr) {
      want[1] = offset_group_ * g.kernel_size;
      if (mask->shape() != want) {
        return invalid_argument(ctx.label(), ": input mask is ", mask->describe(), ", expected shape ",
                                shape_to_string(want));
      }
    }
    if (bias != nullptr && (bias->rank() != 1 || bias->dim(0) != g.out_channels)) {
      return invalid_argument(ctx.label(), ": input B is ", bias->describe(), ", expected shape [",
                              g.out_channels, "]");
    }
    return g;
  }

  template <typename T>
  void run(KernelContext& ctx, const Geometry& g, const Tensor& x_tensor, const Tensor& w_tensor,
           const Tensor& offset_tensor, const Tensor* bias_tensor, const Tensor* mask_tensor, Tensor& y_tensor) const {
    using C = compute_t<T>;
    const size_t rank = g.input.size();
    const T* x = x_tensor.data<T>();
    const T* w = w_tensor.data<T>();
    const T* offset = offset_tensor.data<T>();
    const T* mask = mask_tensor ? mask_tensor->data<T>() : nullptr;
    const T* bias = bias_tensor ? bias_tensor->data<T>() : nullptr;
    T* y = y_tensor.data<T>();
    const int64_t in_per_group = g.channels / group_;
    const int64_t out_per_group = g.out_channels / group_;
    const int64_t in_per_offset_group = g.channels / offset_group_;
    const int64_t rows = in_per_group * g.kernel_size;  // rows of the sampled-column matrix
    const int64_t out_size = g.output_size;
    const int64_t corners = int64_t{1} << rank;
    // Row-major strides of the input's spatial dims.
    std::vector<int64_t> in_stride(rank, 1);
    for (size_t d = rank - 1; d > 0; --d) in_stride[d - 1] = in_stride[d] * g.input[d];

    std::vector<C> columns(static_cast<size_t>(rows * out_size));
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t grp = 0; grp < group_; ++grp) {
        // Columns: row (channel c, tap k) holds, for every output position, the
        // input sampled at that tap's displaced location, times the mask.
        parallel_for(ctx.thread_pool(), rows, static_cast<double>(out_size * corners * 4),
                     [&](int64_t begin, int64_t end) {
          std::vector<int64_t> tap(rank), pos(rank), base(rank);
          std::vector<C> frac(rank);
          for (int64_t row = begin; row < end; ++row) {
            const int64_t c = grp * in_per_group + row / g.kernel_size;
            const int64_t k = row % g.kernel_size;
            const int64_t og = c / in_per_offset_group;
            const T* plane = x + (n * g.channels + c) * g.input_size;
            for (int64_t rest = k, d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
              tap[d] = rest % g.kernel[d];
              rest /= g.kernel[d];
            }
            // offset channel of (og, k, axis d) is (og * K + k) * rank + d.
            const T* off = offset + (n * offset_group_ * g.kernel_size + og * g.kernel_size + k) *
                                        static_cast<int64_t>(rank) * out_size;
            const T* m = mask ? mask + (n * offset_group_ * g.kernel_size + og * g.kernel_size + k) * out_size : nullptr;
            C* col = columns.data() + row * out_size;
            std::fill(pos.begin(), pos.end(), 0);
            for (int64_t o = 0; o < out_size; ++o) {
              // Sampling point: window origin + dilated tap + learned offset.
              bool outside = false;
              for (size_t d = 0; d < rank; ++d) {
                const C p = static_cast<C>(pos[d] * g.strides[d] - g.pads_begin[d] + tap[d] * g.dilations[d]) +
                            static_cast<C>(off[static_cast<int64_t>(d) * out_size + o]);
                const C fl = std::floor(p);
                if (!(fl >= -1 && fl < static_cast<C>(g.input[d]))) outside = true;  // also catches nan
                base[d] = outside ? 0 : static_cast<int64_t>(fl);
                frac[d] = p - fl;
              }
              C value = 0;
              if (!outside) {
                // Sum over the 2^rank surrounding grid points that lie inside.
                for (int64_t corner = 0; corner < corners; ++corner) {
                  C weight = 1;
                  int64_t index = 0;
                  bool inside = true;
                  for (size_t d = 0; d < rank; ++d) {
                    const bool upper = (corner >> d) & 1;
                    const int64_t i = base[d] + (upper ? 1 : 0);
                    if (i < 0 || i >= g.input[d]) {
                      inside = false;
                      break;
                    }
                    weight *= upper ? frac[d] : 1 - frac[d];
                    index += i * in_stride[d];
                  }
                  if (inside) value += weight * static_cast<C>(plane[index]);
                }
              }
              if (m != nullptr) value *= static_cast<C>(m[o]);
              col[o] = value;
              for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
                if (++pos[d] < g.output[d]) break;
                pos[d] = 0;
              }
            }
          }
        });
        // Y[oc] = B[oc] + W[oc] (rows) x columns (rows x out_size).
        parallel_for(ctx.thread_pool(), out_per_group, static_cast<double>(rows * out_size),
                     [&](int64_t begin, int64_t end) {
          std::vector<C> acc(static_cast<size_t>(out_size));
          for (int64_t j = begin; j < end; ++j) {
            const int64_t oc = grp * out_per_group + j;
            std::fill(acc.begin(), acc.end(), bias ? static_cast<C>(bias[oc]) : C(0));
            const T* w_row = w + oc * rows;
            for (int64_t row = 0; row < rows; ++row) {
              const C weight = static_cast<C>(w_row[row]);
              const C* col = columns.data() + row * out_size;
              for (int64_t o = 0; o < out_size; ++o) acc[o] += weight * col[o];
            }
            T* out = y + (n * g.out_channels + oc) * out_size;
            for (int64_t o = 0; o < out_size; ++o) out[o] = static_cast<T>(acc[o]);
          }
        });
      }
    }
  }

  std::vector<int64_t> kernel_shape_, strides_, dilations_, pads_;
  int64_t group_, offset_group_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "DeformConv", 19, 21, types::floats(), DeformConvKernel);
ONYX_REGISTER_CPU_KERNEL("", "DeformConv", 22, kLatestVersion, types::floats(), DeformConvKernel);

}  // namespace onyx::cpu
