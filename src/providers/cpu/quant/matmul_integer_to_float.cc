// com.microsoft MatMulIntegerToFloat and DynamicQuantizeMatMul: an 8-bit
// integer matmul whose int32 sums are scaled back to float,
//   Y = ((A - a_zero_point) * (B - b_zero_point)) * a_scale * b_scale + bias,
// with A [..., M, K] (or [K]) and B [K, N]; a_scale and a_zero_point per
// tensor, b_scale and b_zero_point per tensor or per column ([N]), bias [N].
// DynamicQuantizeMatMul takes a float A and quantizes it to uint8 first, as
// onnxruntime's DynamicQuantizeLinear does (range widened to include 0,
// scale = (max - min) / 255, zero point and values rounded half to even).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "providers/cpu/contrib/float_io.h"
#include "providers/cpu/quant/quant_util.h"
#include "providers/cpu/tensor/tensor_util.h"

namespace onyx::cpu {
namespace {

using quant::int8_as_int32;
using quant::is_int8_type;

// The B side and the output: B [K, N] with its per-tensor or per-column scale
// and zero point, an optional bias [N]. `av` is A (already minus its zero
// point) as int32 [rows, K]; `a_scale` its scale.
Status integer_matmul_to_float(KernelContext& ctx, const std::vector<int32_t>& av, const Shape& a_shape, float a_scale,
                               const Tensor* b, const Tensor* b_scale, const Tensor* b_zp, const Tensor* bias,
                               DataType out_type, const char* b_scale_name, const char* b_zp_name,
                               const char* bias_name) {
  const std::string label = ctx.label();
  if (b == nullptr || !is_int8_type(b->dtype()) || b->rank() != 2) {
    return invalid_argument(label, ": input B is ", describe_or_missing(b), ", expected int8 or uint8 [K, N]");
  }
  const int64_t k = b->dim(0), n = b->dim(1);
  if (a_shape.empty() || a_shape.back() != k) {
    return invalid_argument(label, ": input A has shape ", shape_to_string(a_shape), ", expected its last dimension ",
                            k, " (B's first)");
  }
  if (b_scale == nullptr || !is_float_type(b_scale->dtype()) || (b_scale->size() != 1 && b_scale->size() != n) ||
      b_scale->rank() > 2) {
    return invalid_argument(label, ": input ", b_scale_name, " is ", describe_or_missing(b_scale),
                            ", expected a float scalar or [", n, "] (per column of B)");
  }
  if (b_zp != nullptr && (b_zp->dtype() != b->dtype() || (b_zp->size() != 1 && b_zp->size() != n))) {
    return invalid_argument(label, ": input ", b_zp_name, " is ", b_zp->describe(), ", expected ",
                            dtype_name(b->dtype()), " scalar or [", n, "]");
  }
  if (bias != nullptr && (!is_float_type(bias->dtype()) || bias->size() != n)) {
    return invalid_argument(label, ": input ", bias_name, " is ", bias->describe(), ", expected a float [", n, "]");
  }
  std::vector<int32_t> bv = int8_as_int32(*b);
  if (b_zp != nullptr) {
    const std::vector<int32_t> zp = int8_as_int32(*b_zp);
    for (int64_t p = 0; p < k; ++p) {
      for (int64_t j = 0; j < n; ++j) bv[static_cast<size_t>(p * n + j)] -= zp[zp.size() == 1 ? 0 : j];
    }
  }
  const std::vector<float> bs = read_floats(*b_scale);
  std::vector<float> multiplier(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) multiplier[static_cast<size_t>(j)] = a_scale * bs[bs.size() == 1 ? 0 : j];
  const std::vector<float> bias_v = bias != nullptr ? read_floats(*bias) : std::vector<float>();

  Shape out_shape = a_shape;
  out_shape.back() = n;
  const int64_t rows = shape_size(Shape(a_shape.begin(), a_shape.end() - 1));
  std::vector<float> y(static_cast<size_t>(rows * n));
  parallel_for(ctx.thread_pool(), rows, 2.0 * static_cast<double>(k * n), [&](int64_t begin, int64_t end) {
    std::vector<int32_t> acc(static_cast<size_t>(n));
    for (int64_t r = begin; r < end; ++r) {
      std::fill(acc.begin(), acc.end(), 0);
      quant::add_row_product(av.data() + r * k, bv.data(), k, n, acc.data());
      float* out = y.data() + r * n;
      for (int64_t j = 0; j < n; ++j) {
        const size_t js = static_cast<size_t>(j);
        out[j] = static_cast<float>(acc[js]) * multiplier[js] + (bias_v.empty() ? 0.0f : bias_v[js]);
      }
    }
  });
  Tensor& out = ctx.allocate_output(0, out_type, out_shape);
  write_floats(out, y.data(), rows * n);
  return Status::ok();
}

class MatMulIntegerToFloatKernel final : public Kernel {
 public:
  explicit MatMulIntegerToFloatKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    const std::string label = ctx.label();
    const Tensor* a = ctx.input_tensor(0);
    const Tensor* b = ctx.input_tensor(1);
    const Tensor* a_scale = ctx.input_tensor(2);
    const Tensor* b_scale = ctx.input_tensor(3);
    const Tensor* a_zp = ctx.input_tensor(4);
    const Tensor* b_zp = ctx.input_tensor(5);
    const Tensor* bias = ctx.input_tensor(6);
    if (a == nullptr || !is_int8_type(a->dtype()) || a->rank() < 1) {
      return invalid_argument(label, ": input A is ", describe_or_missing(a), ", expected int8 or uint8 [..., K]");
    }
    if (a_scale == nullptr || !is_float_type(a_scale->dtype()) || a_scale->size() != 1) {
      return invalid_argument(label, ": input a_scale is ", describe_or_missing(a_scale), ", expected a float scalar");
    }
    if (a_zp != nullptr && (a_zp->dtype() != a->dtype() || a_zp->size() != 1)) {
      return invalid_argument(label, ": input a_zero_point is ", a_zp->describe(), ", expected a ",
                              dtype_name(a->dtype()), " scalar");
    }
    std::vector<int32_t> av = int8_as_int32(*a);
    if (a_zp != nullptr) {
      const int32_t zp = int8_as_int32(*a_zp)[0];
      for (int32_t& v : av) v -= zp;
    }
    return integer_matmul_to_float(ctx, av, a->shape(), read_floats(*a_scale)[0], b, b_scale, b_zp, bias,
                                   a_scale->dtype(), "b_scale", "b_zero_point", "bias");
  }
};

class DynamicQuantizeMatMulKernel final : public Kernel {
 public:
  explicit DynamicQuantizeMatMulKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    const std::string label = ctx.label();
    const Tensor* a = ctx.input_tensor(0);
    if (a == nullptr || !is_float_type(a->dtype()) || a->rank() < 1) {
      return invalid_argument(label, ": input A is ", describe_or_missing(a), ", expected a float [..., K]");
    }
    // Quantize A to uint8 over its whole range (widened to include 0).
    const std::vector<float> af = read_floats(*a);
    float lo = 0.0f, hi = 0.0f;
    for (float v : af) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    const float scale = (hi - lo) / 255.0f;
    float zero = 0.0f;
    if (scale != 0.0f) zero = std::clamp(std::nearbyint(0.0f - lo / scale), 0.0f, 255.0f);
    std::vector<int32_t> av(af.size());
    for (size_t i = 0; i < af.size(); ++i) {
      const float q = scale != 0.0f ? std::nearbyint(af[i] / scale) + zero : zero;
      av[i] = static_cast<int32_t>(std::clamp(q, 0.0f, 255.0f)) - static_cast<int32_t>(zero);
    }
    return integer_matmul_to_float(ctx, av, a->shape(), scale, ctx.input_tensor(1), ctx.input_tensor(2),
                                   ctx.input_tensor(3), ctx.input_tensor(4), a->dtype(), "b_scale", "b_zero_point",
                                   "bias");
  }
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "MatMulIntegerToFloat", 1, kLatestVersion,
                         (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}), MatMulIntegerToFloatKernel);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "DynamicQuantizeMatMul", 1, kLatestVersion,
                         (std::vector<DataType>{DataType::kFloat}), DynamicQuantizeMatMulKernel);

}  // namespace
}  // namespace onyx::cpu
