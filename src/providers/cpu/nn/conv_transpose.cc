// ConvTranspose: per image and group, col = W_g^T * X_g (one GEMM), then col2im
// scatters each column back into the (larger) output, adding overlaps. Float
// 1-D and 2-D run in L2-sized chunks of input rows with W packed once.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/nn/conv_transpose_geometry.h"
#include "providers/cpu/nn/im2col.h"
#include "providers/cpu/nn/nn_util.h"

namespace onyx::cpu {
namespace {

using nn::col2im;
using nn::col2im_chunk;
using nn::Geometry;
using nn::Plane2D;

template <typename T>
void transpose_convolve(const T* x, const T* w, const T* bias, T* y, int64_t batch, int64_t in_channels,
                        int64_t out_channels, int64_t group, const Geometry& geo, ThreadPool* pool) {
  const int64_t cg = in_channels / group, mg = out_channels / group;
  const int64_t in_size = shape_size(geo.input), out_size = shape_size(geo.output), k_size = shape_size(geo.kernel);
  const int64_t rows = mg * k_size;
  parallel_for(pool, batch * group, 2.0 * static_cast<double>(rows * cg * in_size), [&](int64_t begin, int64_t end) {
    std::vector<T> col(static_cast<size_t>(rows * in_size));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t n = task / group, g = task % group;
      const T* xg = x + (n * in_channels + g * cg) * in_size;
      T* yg = y + (n * out_channels + g * mg) * out_size;
      // W_g is cg x (mg * k_size); col = W_g^T * X_g.
      gemm<T>(true, false, rows, in_size, cg, T(1), w + g * cg * rows, rows, xg, in_size, T(0), col.data(), in_size,
              nullptr);
      for (int64_t m = 0; m < mg; ++m) {
        std::fill(yg + m * out_size, yg + (m + 1) * out_size, bias ? bias[g * mg + m] : T(0));
      }
      col2im(col.data(), mg, geo, yg);
    }
  });
}

// Float, 1-D and 2-D (1-D as a height of 1): per image and group, chunks of
// input rows sized to stay in L2 go through one multithreaded GEMM with W_g^T
// packed (once, at kernel creation, when W is constant), then a col2im of the
// chunk whose inner loop is a unit-stride add when the stride across is 1,
// parallel over output channels (whose outputs do not overlap).
void transpose_convolve_float(const float* x, const std::vector<PackedMatrix>& packed_wt, const float* bias, float* y,
                              int64_t batch, int64_t in_channels, int64_t out_channels, int64_t group,
                              const Geometry& geo, ThreadPool* pool) {
  const Plane2D p(geo);
  const int64_t cg = in_channels / group, mg = out_channels / group;
  const int64_t in_size = p.ih * p.iw, out_size = p.oh * p.ow, rows = mg * p.kh * p.kw;
  const int64_t chunk_rows = std::clamp<int64_t>((int64_t{1} << 18) / std::max<int64_t>(rows * p.iw, 1), 1, p.ih);
  std::vector<float> col(static_cast<size_t>(rows * chunk_rows * p.iw));
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t g = 0; g < group; ++g) {
      const float* xg = x + (n * in_channels + g * cg) * in_size;
      float* yg = y + (n * out_channels + g * mg) * out_size;
      for (int64_t m = 0; m < mg; ++m) std::fill(yg + m * out_size, yg + (m + 1) * out_size, bias ? bias[g * mg + m] : 0.0f);
      for (int64_t r0 = 0; r0 < p.ih; r0 += chunk_rows) {
        const int64_t r1 = std::min(p.ih, r0 + chunk_rows), width = (r1 - r0) * p.iw;
        sgemm_packed_a(packed_wt[static_cast<size_t>(g)], false, width, 1.0f, xg + r0 * p.iw, in_size, 0.0f,
                       col.data(), width, pool);
        parallel_for(pool, mg, 2.0 * static_cast<double>(p.kh * p.kw * width), [&](int64_t c0, int64_t c1) {
          col2im_chunk(col.data(), c0, c1, p, r0, r1, yg);
        });
      }
    }
}

// W (C x M/group x kernel) as W_g^T per group, packed as the GEMM's left operand.
std::vector<PackedMatrix> pack_transposed_weights(const float* w, int64_t group, int64_t cg, int64_t rows) {
  std::vector<PackedMatrix> packed;
  for (int64_t g = 0; g < group; ++g) packed.push_back(pack_a(true, rows, cg, w + g * cg * rows, rows));
  return packed;
}

class ConvTransposeKernel final : public Kernel {
 public:
  explicit ConvTransposeKernel(const KernelInfo& info)
      : attrs_(nn::ConvTransposeAttributes::from(info)), group_(info.attr_int("group", 1)) {
    if (group_ < 1) throw Error(invalid_model(info.label(), ": attribute group is ", group_, ", expected >= 1"));
    // A constant float W is packed for the GEMM once, here.
    const Tensor* w = info.constant_input(1);
    if (w != nullptr && w->dtype() == DataType::kFloat && (w->rank() == 3 || w->rank() == 4) && w->size() > 0 &&
        w->dim(0) % group_ == 0) {
      const int64_t cg = w->dim(0) / group_;
      packed_wt_ = pack_transposed_weights(w->data<float>(), group_, cg, w->size() / w->dim(0));
      packed_w_shape_ = w->shape();
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* w = ctx.input_tensor(1);
    const Tensor* b = ctx.input_tensor(2);
    const std::string label = ctx.label();
    if (x == nullptr || w == nullptr) return invalid_argument(label, ": inputs X and W are required");
    if (x->rank() < 3) return invalid_argument(label, ": input X has rank ", x->rank(), ", expected at least 3 (N,C,spatial...)");
    if (w->rank() != x->rank()) {
      return invalid_argument(label, ": input W has rank ", w->rank(), ", expected ", x->rank(), " (C, M/group, kernel...)");
    }
    if (w->dtype() != x->dtype() || (b != nullptr && b->dtype() != x->dtype())) {
      return invalid_argument(label, ": inputs have element types ", dtype_name(x->dtype()), " and ",
                              dtype_name(w->dtype()), ", expected one type");
    }
    const int64_t batch = x->dim(0), in_channels = x->dim(1);
    if (w->dim(0) != in_channels) {
      return invalid_argument(label, ": input X has ", in_channels, " channels, but W expects ", w->dim(0), " (W.shape[0])");
    }
    if (in_channels % group_ != 0) {
      return invalid_argument(label, ": X has ", in_channels, " channels, expected a multiple of group ", group_);
    }
    const int64_t out_channels = w->dim(1) * group_;
    if (b != nullptr && (b->rank() != 1 || b->dim(0) != out_channels)) {
      return invalid_argument(label, ": input B has shape ", shape_to_string(b->shape()), ", expected [", out_channels, "]");
    }
    ONYX_ASSIGN_OR_RETURN(Geometry geo, nn::resolve_conv_transpose(label, attrs_, x->shape(), w->shape()));
    const size_t rank = geo.input.size();
    Shape out_shape{batch, out_channels};
    out_shape.insert(out_shape.end(), geo.output.begin(), geo.output.end());
    Tensor& y = ctx.allocate_output(0, x->dtype(), out_shape);
    if (y.size() == 0) return Status::ok();
    ThreadPool* pool = ctx.thread_pool();
    return dispatch_float(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float>) {
        if (rank <= 2) {
          const int64_t cg = in_channels / group_;
          std::vector<PackedMatrix> packed_here;
          const bool use_packed = !packed_wt_.empty() && w->shape() == packed_w_shape_;
          if (!use_packed) packed_here = pack_transposed_weights(w->data<float>(), group_, cg, w->size() / w->dim(0));
          transpose_convolve_float(x->data<float>(), use_packed ? packed_wt_ : packed_here, b ? b->data<float>() : nullptr,
                                   y.data<float>(), batch, in_channels, out_channels, group_, geo, pool);
          return Status::ok();
        }
      }
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        transpose_convolve<T>(x->data<T>(), w->data<T>(), b ? b->data<T>() : nullptr, y.data<T>(), batch,
                              in_channels, out_channels, group_, geo, pool);
      } else {
        const Tensor xf = nn::to_float<T>(*x), wf = nn::to_float<T>(*w);
        Tensor bf;
        if (b != nullptr) bf = nn::to_float<T>(*b);
        std::vector<float> yf(static_cast<size_t>(y.size()));
        transpose_convolve<float>(xf.data<float>(), wf.data<float>(), b ? bf.data<float>() : nullptr, yf.data(), batch,
                                  in_channels, out_channels, group_, geo, pool);
        nn::from_float<T>(yf.data(), y.size(), y.data<T>());
      }
      return Status::ok();
    });
  }

 private:
  nn::ConvTransposeAttributes attrs_;
  int64_t group_;
  std::vector<PackedMatrix> packed_wt_;  // W_g^T per group, when W is a constant float
  Shape packed_w_shape_;
};

ONYX_REGISTER_CPU_KERNEL("", "ConvTranspose", 1, 10, types::floats(), ConvTransposeKernel);
ONYX_REGISTER_CPU_KERNEL("", "ConvTranspose", 11, kLatestVersion, types::floats(), ConvTransposeKernel);

}  // namespace
}  // namespace onyx::cpu
