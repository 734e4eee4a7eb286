// Gemm: Y = alpha * op(A) * op(B) + beta * C, with C broadcast to M x N
// (optional from version 11; versions 1-6 carry a `broadcast` flag, which only
// restricts what is legal, so broadcasting is always accepted here). A
// constant float B is packed once; a C that is a row or column vector is added
// in the SGEMM's write-back.
#include <algorithm>
#include <memory>
#include <type_traits>
#include <vector>

#include "model/tensor_proto.h"
#include "providers/cpu/dispatch.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/nn/fused_kernels.h"
#include "providers/cpu/nn/nn_util.h"

namespace onyx::cpu {
namespace {

// Y = alpha * op(A) op(B) + beta * C in float, then `activation`. A C that
// broadcasts along one axis (shape [N], [1,N], [M,1] or a scalar) becomes a
// bias of the GEMM's write-back instead of a copy into Y before the product.
void gemm_float(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* a, int64_t lda,
                const float* b, int64_t ldb, const PackedMatrix* packed_b, float beta, const float* c, int64_t c_rows,
                int64_t c_cols, const GemmEpilogue& activation, float* y, ThreadPool* pool) {
  GemmEpilogue ep = activation;
  ep.row_bias = ep.col_bias = nullptr;
  std::vector<float> bias;
  float c_scale = 0.0f;  // beta of the GEMM call: nonzero only when C was copied into Y
  if (c != nullptr) {
    if (c_rows == 1) {
      bias.resize(static_cast<size_t>(N));
      for (int64_t j = 0; j < N; ++j) bias[static_cast<size_t>(j)] = beta * c[c_cols == 1 ? 0 : j];
      ep.col_bias = bias.data();
    } else if (c_cols == 1) {
      bias.resize(static_cast<size_t>(M));
      for (int64_t i = 0; i < M; ++i) bias[static_cast<size_t>(i)] = beta * c[i];
      ep.row_bias = bias.data();
    } else {
      std::copy(c, c + M * N, y);
      c_scale = beta;
    }
  }
  if (packed_b != nullptr) {
    sgemm_packed_b(trans_a, M, alpha, a, lda, *packed_b, c_scale, y, N, pool, ep);
  } else {
    sgemm(trans_a, trans_b, M, N, K, alpha, a, lda, b, ldb, c_scale, y, N, pool, ep);
  }
}

class GemmKernel final : public Kernel {
 public:
  explicit GemmKernel(const KernelInfo& info) : GemmKernel(info, GemmEpilogue{}) {}

  GemmKernel(const KernelInfo& info, const GemmEpilogue& activation)
      : trans_a_(info.attr_int("transA", 0) != 0),
        trans_b_(info.attr_int("transB", 0) != 0),
        alpha_(info.attr_float("alpha", 1.0f)),
        beta_(info.attr_float("beta", 1.0f)),
        activation_(activation) {
    // A constant float B (weights) is packed for the GEMM once, here.
    const Tensor* b = info.constant_input(1);
    if (b != nullptr && b->dtype() == DataType::kFloat && b->rank() == 2 && b->size() > 0) {
      const int64_t K = trans_b_ ? b->dim(1) : b->dim(0), N = trans_b_ ? b->dim(0) : b->dim(1);
      if (N > 1) {
        // Nothing else reads B: its pages go as they are packed.
        std::function<void(const float*, size_t)> consumed;
        if (info.consumes_constant(1)) consumed = [](const float* p, size_t n) { model::discard_weight_pages(p, n); };
        packed_b_ = pack_b(trans_b_, K, N, b->data<float>(), b->dim(1), SgemmIsa::kAuto, consumed);
        packed_b_shape_ = b->shape();
      }
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* a = ctx.input_tensor(0);
    const Tensor* b = ctx.input_tensor(1);
    const Tensor* c = ctx.input_tensor(2);
    const std::string label = ctx.label();
    if (a == nullptr || b == nullptr) return invalid_argument(label, ": inputs A and B are required");
    if (a->rank() != 2 || b->rank() != 2) {
      return invalid_argument(label, ": inputs A and B have ranks ", a->rank(), " and ", b->rank(), ", expected 2 and 2");
    }
    if (a->dtype() != b->dtype() || (c != nullptr && c->dtype() != a->dtype())) {
      return invalid_argument(label, ": inputs have element types ", dtype_name(a->dtype()), " and ",
                              dtype_name(b->dtype()), ", expected one type");
    }
    const int64_t M = trans_a_ ? a->dim(1) : a->dim(0);
    const int64_t K = trans_a_ ? a->dim(0) : a->dim(1);
    const int64_t N = trans_b_ ? b->dim(0) : b->dim(1);
    const int64_t kb = trans_b_ ? b->dim(1) : b->dim(0);
    if (K != kb) {
      return invalid_argument(label, ": op(A) is ", M, "x", K, " and op(B) is ", kb, "x", N, "; the inner dims differ");
    }
    // C broadcasts to M x N: right-aligned, each dim equal or 1.
    int64_t c_rows = 1, c_cols = 1;
    if (c != nullptr) {
      if (c->rank() > 2) return invalid_argument(label, ": input C has rank ", c->rank(), ", expected at most 2");
      c_cols = c->rank() >= 1 ? c->dim(c->rank() - 1) : 1;
      c_rows = c->rank() == 2 ? c->dim(0) : 1;
      if ((c_rows != 1 && c_rows != M) || (c_cols != 1 && c_cols != N)) {
        return invalid_argument(label, ": input C has shape ", shape_to_string(c->shape()),
                                ", expected one that broadcasts to [", M, ",", N, "]");
      }
    }
    Tensor& y = ctx.allocate_output(0, a->dtype(), {M, N});
    ThreadPool* pool = ctx.thread_pool();
    const bool use_c = c != nullptr && beta_ != 0.0f;
    const bool fused = activation_.activation != GemmActivation::kNone;
    auto run = [&](auto* yp, const auto* ap, const auto* bp, const auto* cp) {
      using T = std::remove_cv_t<std::remove_pointer_t<decltype(ap)>>;
      if (use_c) {
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j)
            yp[i * N + j] = cp[(c_rows == 1 ? 0 : i) * c_cols + (c_cols == 1 ? 0 : j)];
      }
      gemm<T>(trans_a_, trans_b_, M, N, K, static_cast<T>(alpha_), ap, a->dim(1), bp, b->dim(1),
              use_c ? static_cast<T>(beta_) : T(0), yp, N, pool);
    };
    return dispatch_numeric(a->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float>) {
        const bool use_packed = !packed_b_.empty() && b->shape() == packed_b_shape_;
        gemm_float(trans_a_, trans_b_, M, N, K, alpha_, a->data<float>(), a->dim(1), b->data<float>(), b->dim(1),
                   use_packed ? &packed_b_ : nullptr, beta_, use_c ? c->data<float>() : nullptr, c_rows, c_cols,
                   activation_, y.data<float>(), pool);
        return Status::ok();
      } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
        const Tensor af = nn::to_float<T>(*a), bf = nn::to_float<T>(*b);
        Tensor cf;
        if (use_c) cf = nn::to_float<T>(*c);
        std::vector<float> yf(static_cast<size_t>(M * N));
        gemm_float(trans_a_, trans_b_, M, N, K, alpha_, af.data<float>(), a->dim(1), bf.data<float>(), b->dim(1),
                   nullptr, beta_, use_c ? cf.data<float>() : nullptr, c_rows, c_cols, activation_, yf.data(), pool);
        nn::from_float<T>(yf.data(), M * N, y.data<T>());
        return Status::ok();
      } else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t> ||
                           std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>) {
        if (fused) return not_implemented(label, ": a fused activation needs float inputs, got ", dtype_name(a->dtype()));
        run(y.data<T>(), a->data<T>(), b->data<T>(), use_c ? c->data<T>() : static_cast<const T*>(nullptr));
        return Status::ok();
      } else {
        return not_implemented(label, ": Gemm of ", dtype_name(a->dtype()), " is not supported");
      }
    });
  }

  // With B packed, compute() reads only B's shape.
  bool needs_constant_data(size_t i) const override { return i != 1 || packed_b_.empty(); }

 private:
  bool trans_a_, trans_b_;
  float alpha_, beta_;
  GemmEpilogue activation_;   // FusedGemm's activation; none for Gemm
  PackedMatrix packed_b_;     // B packed at creation when it is a constant float
  Shape packed_b_shape_;
};

ONYX_REGISTER_CPU_KERNEL("", "Gemm", 1, 6, types::floats(), GemmKernel);
ONYX_REGISTER_CPU_KERNEL("", "Gemm", 7, 8, types::floats(), GemmKernel);
ONYX_REGISTER_CPU_KERNEL("", "Gemm", 9, 10, types::numeric(), GemmKernel);
ONYX_REGISTER_CPU_KERNEL("", "Gemm", 11, 12, types::numeric(), GemmKernel);
ONYX_REGISTER_CPU_KERNEL("", "Gemm", 13, kLatestVersion, types::numeric(), GemmKernel);

}  // namespace

std::unique_ptr<Kernel> make_gemm_kernel(const KernelInfo& info, const GemmEpilogue& activation) {
  return std::make_unique<GemmKernel>(info, activation);
}

}  // namespace onyx::cpu
