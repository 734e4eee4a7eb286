// com.microsoft QGemm: Gemm of two quantized 8-bit matrices,
//   acc = (A' - a_zero_point) * (B' - b_zero_point) + C    (exact, int32)
//   Y   = acc * alpha * a_scale * b_scale                   (float output)
//   Y   = saturate(round_half_even(acc * alpha * a_scale * b_scale / y_scale) + y_zero_point)
// with A' = transA ? A^T : A ([M, K]), B' = transB ? B^T : B ([K, N]); a_scale
// and a_zero_point per tensor, b_scale and b_zero_point per tensor or per
// column of B' ([N]); C an optional int32 bias (scale a_scale * b_scale, zero
// point 0) that broadcasts to [M, N]. The output is float when y_scale is
// absent, else quantized to y_zero_point's type. onnxruntime folds the scales
// into one float multiplier per column, as here. The product is the exact
// int8 GEMM's, with a constant B packed at kernel creation.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "providers/cpu/contrib/float_io.h"
#include "providers/cpu/dispatch.h"
#include "providers/cpu/quant/qgemm_int8.h"
#include "providers/cpu/quant/quant_util.h"
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

using quant::int8_as_int32;
using quant::is_int8_type;

bool is_scalar_like(const Tensor& t) { return t.size() == 1 && t.rank() <= 1; }

class QGemmKernel final : public Kernel {
 public:
  explicit QGemmKernel(const KernelInfo& info)
      : alpha_(info.attr_float("alpha", 1.0f)),
        trans_a_(info.attr_int("transA", 0) != 0),
        trans_b_(info.attr_int("transB", 0) != 0) {
    const Tensor* b = info.constant_input(3);
    const bool zp_given = info.has_input(5);
    const Tensor* zp = zp_given ? info.constant_input(5) : nullptr;
    if (b == nullptr || !is_int8_type(b->dtype()) || b->rank() != 2 || (zp_given && zp == nullptr)) return;
    const int64_t n = trans_b_ ? b->dim(0) : b->dim(1);
    if (zp != nullptr && (zp->dtype() != b->dtype() || zp->rank() > 1 || (zp->size() != 1 && zp->size() != n))) return;
    packed_b_ = pack_b(*b, zp);
    packed_b_shape_ = b->shape();
  }

  Status compute(KernelContext& ctx) const override {
    const std::string label = ctx.label();
    const Tensor* a = ctx.input_tensor(0);
    const Tensor* a_scale = ctx.input_tensor(1);
    const Tensor* a_zp = ctx.input_tensor(2);
    const Tensor* b = ctx.input_tensor(3);
    const Tensor* b_scale = ctx.input_tensor(4);
    const Tensor* b_zp = ctx.input_tensor(5);
    const Tensor* c = ctx.input_tensor(6);
    const Tensor* y_scale = ctx.input_tensor(7);
    const Tensor* y_zp = ctx.input_tensor(8);

    if (a == nullptr || !is_int8_type(a->dtype()) || a->rank() != 2) {
      return invalid_argument(label, ": input A is ", describe_or_missing(a), ", expected int8 or uint8 of rank 2");
    }
    if (b == nullptr || !is_int8_type(b->dtype()) || b->rank() != 2) {
      return invalid_argument(label, ": input B is ", describe_or_missing(b), ", expected int8 or uint8 of rank 2");
    }
    const int64_t m = trans_a_ ? a->dim(1) : a->dim(0), k = trans_a_ ? a->dim(0) : a->dim(1);
    const int64_t kb = trans_b_ ? b->dim(1) : b->dim(0), n = trans_b_ ? b->dim(0) : b->dim(1);
    if (k != kb) {
      return invalid_argument(label, ": inputs A ", shape_to_string(a->shape()), " (transA=", trans_a_ ? 1 : 0,
                              ") and B ", shape_to_string(b->shape()), " (transB=", trans_b_ ? 1 : 0,
                              ") have inner dimensions ", k, " and ", kb, ", expected them equal");
    }
    if (a_scale == nullptr || a_scale->dtype() != DataType::kFloat || !is_scalar_like(*a_scale)) {
      return invalid_argument(label, ": input a_scale is ", describe_or_missing(a_scale), ", expected a float scalar");
    }
    if (a_zp != nullptr && (a_zp->dtype() != a->dtype() || !is_scalar_like(*a_zp))) {
      return invalid_argument(label, ": input a_zero_point is ", a_zp->describe(), ", expected a ",
                              dtype_name(a->dtype()), " scalar (the type of A)");
    }
    if (b_scale == nullptr || b_scale->dtype() != DataType::kFloat || b_scale->rank() > 1 ||
        (b_scale->size() != 1 && b_scale->size() != n)) {
      return invalid_argument(label, ": input b_scale is ", describe_or_missing(b_scale),
                              ", expected a float scalar or [", n, "] (per column of B)");
    }
    if (b_zp != nullptr &&
        (b_zp->dtype() != b->dtype() || b_zp->rank() > 1 || (b_zp->size() != 1 && b_zp->size() != n))) {
      return invalid_argument(label, ": input b_zero_point is ", b_zp->describe(), ", expected a ",
                              dtype_name(b->dtype()), " scalar or [", n, "] (per column of B)");
    }
    if (c != nullptr && c->dtype() != DataType::kInt32) {
      return invalid_argument(label, ": input C is ", c->describe(),
                              ", expected int32 (bias at scale a_scale * b_scale)");
    }
    if (y_scale != nullptr && (y_scale->dtype() != DataType::kFloat || !is_scalar_like(*y_scale))) {
      return invalid_argument(label, ": input y_scale is ", y_scale->describe(), ", expected a float scalar");
    }
    if (y_zp != nullptr && (!is_int8_type(y_zp->dtype()) || !is_scalar_like(*y_zp))) {
      return invalid_argument(label, ": input y_zero_point is ", y_zp->describe(),
                              ", expected an int8 or uint8 scalar");
    }
    if (y_zp != nullptr && y_scale == nullptr) {
      return invalid_argument(label, ": input y_zero_point is given without y_scale, expected both or neither");
    }
    if (y_scale != nullptr && y_zp == nullptr) {
      return invalid_argument(label, ": input y_scale is given without y_zero_point, expected both (y_zero_point ",
                              "sets the output type) or neither (float output)");
    }

    const Shape out_shape{m, n};
    std::vector<double> bias;
    if (c != nullptr) {
      ONYX_ASSIGN_OR_RETURN(bias, quant::expand_to(*c, out_shape, label, "C"));
    }
    // One float multiplier per column: a_scale * b_scale * alpha [/ y_scale].
    const float as = a_scale->data<float>()[0];
    const float* bs = b_scale->data<float>();
    const float ys = y_scale != nullptr ? y_scale->data<float>()[0] : 1.0f;
    std::vector<float> multiplier(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      float s = as * bs[b_scale->size() == 1 ? 0 : j] * alpha_;
      if (y_scale != nullptr) s /= ys;
      multiplier[static_cast<size_t>(j)] = s;
    }

    const DataType out_type = y_zp != nullptr ? y_zp->dtype() : DataType::kFloat;
    Tensor& y = ctx.allocate_output(0, out_type, out_shape);
    if (y.size() == 0) return Status::ok();
    const double y_zero = y_zp != nullptr ? static_cast<double>(int8_as_int32(*y_zp)[0]) : 0.0;
    double low = 0, high = 0;
    quant::integer_range(out_type, low, high);
    const int32_t a_zero = a_zp != nullptr ? int8_as_int32(*a_zp)[0] : 0;
    const bool b_packed = !packed_b_.empty() && b->shape() == packed_b_shape_;
    const PackedInt8 pa =
        pack_int8_a(Int8Matrix{a->raw_data(), a->dtype() == DataType::kInt8, m, k, a->dim(1), trans_a_}, &a_zero, 1,
                    b_packed ? packed_b_.isa() : Int8Isa::kAuto);
    const PackedInt8 pb = b_packed ? packed_b_ : pack_b(*b, b_zp, pa.isa(), ctx.thread_pool());
    qgemm_int8(pa, pb, nullptr, n, ctx.thread_pool(),
               [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1, const int32_t* block, int64_t ld) {
                 for (int64_t i = i0; i < i1; ++i) {
                   for (int64_t j = j0; j < j1; ++j) {
                     const size_t js = static_cast<size_t>(j), o = static_cast<size_t>(i * n + j);
                     const int32_t acc = block[(i - i0) * ld + j - j0];
                     const int32_t sum = bias.empty() ? acc : acc + static_cast<int32_t>(bias[o]);
                     const float scaled = static_cast<float>(sum) * multiplier[js];
                     if (out_type == DataType::kFloat) {
                       y.data<float>()[o] = scaled;
                       continue;
                     }
                     const double q = quant::round_saturate(static_cast<double>(scaled) + y_zero, low, high);
                     if (out_type == DataType::kInt8) {
                       y.data<int8_t>()[o] = static_cast<int8_t>(q);
                     } else {
                       y.data<uint8_t>()[o] = static_cast<uint8_t>(q);
                     }
                   }
                 }
               });
    return Status::ok();
  }

 private:
  // op(B) as the GEMM's right operand, with its zero point (scalar or per column).
  PackedInt8 pack_b(const Tensor& b, const Tensor* zp, Int8Isa isa = Int8Isa::kAuto, ThreadPool* pool = nullptr) const {
    const int64_t k = trans_b_ ? b.dim(1) : b.dim(0), n = trans_b_ ? b.dim(0) : b.dim(1);
    const std::vector<int32_t> zero = zp != nullptr ? int8_as_int32(*zp) : std::vector<int32_t>();
    return pack_int8_b(Int8Matrix{b.raw_data(), b.dtype() == DataType::kInt8, k, n, b.dim(1), trans_b_}, zero.data(),
                       static_cast<int64_t>(zero.size()), isa, pool);
  }

  PackedInt8 packed_b_;  // a constant B, packed at creation
  Shape packed_b_shape_;
  float alpha_;
  bool trans_a_;
  bool trans_b_;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "QGemm", 1, kLatestVersion,
                         (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}), QGemmKernel);

}  // namespace
}  // namespace onyx::cpu
