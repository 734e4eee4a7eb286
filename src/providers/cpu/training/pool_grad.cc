// Pooling gradients (com.onyx.internal):
// MaxPoolGrad(dY, Indices, X) adds each output's gradient to the input
// element MaxPool's Indices output names (attribute storage_order as the
// forward's); AveragePoolGrad(dY, X), with AveragePool's attributes, spreads
// each output's gradient evenly over its window, with the forward's divisor.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"
#include "providers/cpu/nn/nn_util.h"
#include "training/gradient.h"

namespace onyx::cpu {
namespace {

class MaxPoolGradKernel final : public Kernel {
 public:
  explicit MaxPoolGradKernel(const KernelInfo& info) : col_major_(info.attr_int("storage_order", 0) != 0) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* dy = ctx.input_tensor(0);
    const Tensor* indices = ctx.input_tensor(1);
    const Tensor* x = ctx.input_tensor(2);
    if (dy == nullptr || indices == nullptr || x == nullptr) {
      return invalid_argument(ctx.label(), ": inputs dY, Indices and X are required");
    }
    if (indices->dtype() != DataType::kInt64 || indices->shape() != dy->shape() || x->rank() < 2) {
      return invalid_argument(ctx.label(), ": Indices ", indices->describe(), " does not match dY ", dy->describe());
    }
    Tensor& dx = ctx.allocate_output(0, x->dtype(), x->shape());
    const std::vector<int64_t> spatial = nn::tail(x->shape(), 2);
    const int64_t in_size = shape_size(spatial);
    const int64_t planes = x->dim(0) * x->dim(1);
    const int64_t out_size = planes == 0 ? 0 : dy->size() / planes;
    const int64_t* idx = indices->data<int64_t>();
    // Plane by plane: a division per element to find its plane cost more than
    // the whole scatter below.
    for (int64_t plane = 0; plane < planes; ++plane) {
      const int64_t low = plane * in_size, high = low + in_size;
      for (int64_t o = plane * out_size; o < (plane + 1) * out_size; ++o) {
        if (idx[o] < low || idx[o] >= high) {
          return invalid_argument(ctx.label(), ": index ", idx[o], " at ", o, " is outside its plane");
        }
      }
    }
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        const T* g = dy->data<T>();
        T* d = dx.data<T>();
        std::fill(d, d + dx.size(), T(0));
        // Planes are independent: each output's index lies in its own plane.
        parallel_for(ctx.thread_pool(), planes, static_cast<double>(out_size), [&](int64_t begin, int64_t end) {
          for (int64_t plane = begin; plane < end; ++plane) {
            for (int64_t o = plane * out_size; o < (plane + 1) * out_size; ++o) {
              int64_t within = idx[o] - plane * in_size;
              if (col_major_) within = row_major(within, spatial);
              d[plane * in_size + within] += g[o];
            }
          }
        });
        return Status::ok();
      } else {
        return not_implemented(ctx.label(), ": element type ", dtype_name(x->dtype()));
      }
    });
  }

 private:
  // A column-major spatial index (the first spatial dim fastest) as row-major.
  static int64_t row_major(int64_t index, const std::vector<int64_t>& dims) {
    std::vector<int64_t> pos(dims.size());
    for (size_t d = 0; d < dims.size(); ++d) {
      pos[d] = index % dims[d];
      index /= dims[d];
    }
    int64_t result = 0;
    for (size_t d = 0; d < dims.size(); ++d) result = result * dims[d] + pos[d];
    return result;
  }

  bool col_major_;
};

class AveragePoolGradKernel final : public Kernel {
 public:
  explicit AveragePoolGradKernel(const KernelInfo& info)
      : attrs_(nn::WindowAttributes::from(info)), count_include_pad_(info.attr_int("count_include_pad", 0) != 0) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* dy = ctx.input_tensor(0);
    const Tensor* x = ctx.input_tensor(1);
    if (dy == nullptr || x == nullptr) return invalid_argument(ctx.label(), ": inputs dY and X are required");
    if (x->rank() < 3 || x->rank() > 5) {
      return invalid_argument(ctx.label(), ": input X has rank ", x->rank(), ", expected 3 to 5 (N,C,spatial...)");
    }
    ONYX_ASSIGN_OR_RETURN(nn::Window w, nn::resolve_window(ctx.label(), attrs_, nn::tail(x->shape(), 2), {}));
    Shape out_shape{x->dim(0), x->dim(1)};
    out_shape.insert(out_shape.end(), w.output.begin(), w.output.end());
    if (dy->shape() != out_shape) {
      return invalid_argument(ctx.label(), ": dY ", dy->describe(), ", expected shape ", shape_to_string(out_shape));
    }
    const nn::Window3 g = nn::to_3d(w);
    Tensor& dx = ctx.allocate_output(0, x->dtype(), x->shape());
    const int64_t planes = x->dim(0) * x->dim(1), in_size = w.input_size(), out_size = w.output_size();
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      parallel_for(ctx.thread_pool(), planes, static_cast<double>(out_size * w.kernel_size()),
                   [&](int64_t begin, int64_t end) {
                     std::vector<C> acc(static_cast<size_t>(in_size));
                     for (int64_t plane = begin; plane < end; ++plane) {
                       std::fill(acc.begin(), acc.end(), C(0));
                       spread_plane(dy->data<T>() + plane * out_size, g, acc.data());
                       T* d = dx.data<T>() + plane * in_size;
                       for (int64_t i = 0; i < in_size; ++i) d[i] = static_cast<T>(acc[static_cast<size_t>(i)]);
                     }
                   });
      return Status::ok();
    });
  }

 private:
  // The adjoint of AveragePool's plane loop: each output's gradient divided
  // by the forward's divisor and added to every input its window covers.
  template <typename T, typename C>
  void spread_plane(const T* dy, const nn::Window3& g, C* dx) const {
    int64_t o = 0;
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          const int64_t sd = od * g.s[0] - g.pb[0], sh = oh * g.s[1] - g.pb[1], sw = ow * g.s[2] - g.pb[2];
          // The positions inside the input, per axis.
          int64_t valid = 1;
          const int64_t start[3] = {sd, sh, sw};
          for (int i = 0; i < 3; ++i) {
            int64_t n = 0;
            for (int64_t k = 0; k < g.k[i]; ++k) {
              const int64_t p = start[i] + k * g.d[i];
              n += (p >= 0 && p < g.in[i]) ? 1 : 0;
            }
            valid *= n;
          }
          const int64_t divisor = count_include_pad_ ? nn::padded_window_count(g, sd, sh, sw) : valid;
          if (divisor <= 0) continue;
          const C share = static_cast<C>(dy[o]) / static_cast<C>(divisor);
          for (int64_t kd = 0; kd < g.k[0]; ++kd) {
            const int64_t id = sd + kd * g.d[0];
            if (id < 0 || id >= g.in[0]) continue;
            for (int64_t kh = 0; kh < g.k[1]; ++kh) {
              const int64_t ih = sh + kh * g.d[1];
              if (ih < 0 || ih >= g.in[1]) continue;
              C* row = dx + (id * g.in[1] + ih) * g.in[2];
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                const int64_t iw = sw + kw * g.d[2];
                if (iw >= 0 && iw < g.in[2]) row[iw] += share;
              }
            }
          }
        }
  }

  nn::WindowAttributes attrs_;
  bool count_include_pad_;
};

const std::vector<DataType> kTypes = {DataType::kFloat, DataType::kDouble};

}  // namespace

ONYX_REGISTER_CPU_KERNEL(training::kInternalDomain, "MaxPoolGrad", 1, kLatestVersion, kTypes,
                         MaxPoolGradKernel);
ONYX_REGISTER_CPU_KERNEL(training::kInternalDomain, "AveragePoolGrad", 1, kLatestVersion, kTypes,
                         AveragePoolGradKernel);

}  // namespace onyx::cpu
