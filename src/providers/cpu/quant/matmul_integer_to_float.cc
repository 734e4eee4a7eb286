// com.microsoft MatMulIntegerToFloat and DynamicQuantizeMatMul: an 8-bit
// integer matmul whose int32 sums are scaled back to float,
//   Y = ((A - a_zero_point) * (B - b_zero_point)) * a_scale * b_scale + bias,
// with A [..., M, K] (or [K]) and B [K, N]; a_scale and a_zero_point per
// tensor, b_scale and b_zero_point per tensor or per column ([N]), bias [N].
// DynamicQuantizeMatMul takes a float A and quantizes it to uint8 first, as
// onnxruntime's DynamicQuantizeLinear does (range widened to include 0,
// scale = (max - min) / 255, zero point and values rounded half to even).
// The integer product is the exact int8 GEMM's, with a constant B packed at
// kernel creation.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "providers/cpu/contrib/float_io.h"
#include "providers/cpu/quant/qgemm_int8.h"
#include "providers/cpu/quant/quant_util.h"
#include "providers/cpu/quant/quant_vec.h"
#include "providers/cpu/tensor/tensor_util.h"

namespace onyx::cpu {
namespace {

using quant::int8_as_int32;
using quant::is_int8_type;

// B [K, N] packed once at kernel creation when it and its zero point (inputs
// b_index and zp_index) are constant and valid; empty otherwise.
struct ConstantB {
  PackedInt8 packed;
  Shape shape;

  ConstantB(const KernelInfo& info, size_t b_index, size_t zp_index) {
    const Tensor* b = info.constant_input(b_index);
    const bool zp_given = info.has_input(zp_index);
    const Tensor* zp = zp_given ? info.constant_input(zp_index) : nullptr;
    if (b == nullptr || !is_int8_type(b->dtype()) || b->rank() != 2 || (zp_given && zp == nullptr)) return;
    const int64_t k = b->dim(0), n = b->dim(1);
    if (zp != nullptr && (zp->dtype() != b->dtype() || (zp->size() != 1 && zp->size() != n))) return;
    const std::vector<int32_t> zero = zp != nullptr ? int8_as_int32(*zp) : std::vector<int32_t>();
    packed = pack_int8_b(Int8Matrix{b->raw_data(), b->dtype() == DataType::kInt8, k, n, n, false}, zero.data(),
                         static_cast<int64_t>(zero.size()));
    shape = b->shape();
  }
};

// The B side and the output: B [K, N] with its per-tensor or per-column scale
// and zero point, an optional bias [N]. `a` is A's values (uint8 or int8,
// [rows, K] with the shape a_shape) and `a_zero` its zero point; `a_scale`
// its scale.
Status integer_matmul_to_float(KernelContext& ctx, const void* a, bool a_signed, int32_t a_zero, const Shape& a_shape,
                               float a_scale, const Tensor* b, const Tensor* b_scale, const Tensor* b_zp,
                               const Tensor* bias, DataType out_type, const ConstantB& constant_b) {
  const char* b_scale_name = "b_scale";
  const char* b_zp_name = "b_zero_point";
  const char* bias_name = "bias";
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
  const std::vector<float> bs = read_floats(*b_scale);
  std::vector<float> multiplier(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) multiplier[static_cast<size_t>(j)] = a_scale * bs[bs.size() == 1 ? 0 : j];
  const std::vector<float> bias_v = bias != nullptr ? read_floats(*bias) : std::vector<float>();

  Shape out_shape = a_shape;
  out_shape.back() = n;
  const int64_t rows = shape_size(Shape(a_shape.begin(), a_shape.end() - 1));
  Tensor& out = ctx.allocate_output(0, out_type, out_shape);
  if (rows * n == 0) return Status::ok();
  const bool b_packed = !constant_b.packed.empty() && b->shape() == constant_b.shape;
  const PackedInt8 pa = pack_int8_a(Int8Matrix{a, a_signed, rows, k, k, false}, &a_zero, 1,
                                    b_packed ? constant_b.packed.isa() : Int8Isa::kAuto);
  PackedInt8 pb = constant_b.packed;
  if (!b_packed) {
    const std::vector<int32_t> zero = b_zp != nullptr ? int8_as_int32(*b_zp) : std::vector<int32_t>();
    pb = pack_int8_b(Int8Matrix{b->raw_data(), b->dtype() == DataType::kInt8, k, n, n, false}, zero.data(),
                     static_cast<int64_t>(zero.size()), pa.isa(), ctx.thread_pool());
  }
  // A float output is written in the GEMM's block write-back; other float
  // types through a float buffer.
  std::vector<float> staging;
  float* y = out.dtype() == DataType::kFloat ? out.data<float>()
                                             : (staging.resize(static_cast<size_t>(rows * n)), staging.data());
  // Plain pointers in the write-back (no reads through the vectors, which
  // float stores might alias), so the loops vectorize.
  const float* scale_of = multiplier.data();
  const float* bias_of = bias_v.empty() ? nullptr : bias_v.data();
  qgemm_int8(
      pa, pb, nullptr, n, ctx.thread_pool(),
      [y, n, scale_of, bias_of](int64_t i0, int64_t i1, int64_t j0, int64_t j1, const int32_t* block, int64_t ld) {
        const float* scale = scale_of + j0;
        const int64_t width = j1 - j0;
        for (int64_t i = i0; i < i1; ++i) {
          const int32_t* row = block + (i - i0) * ld;
          float* o = y + i * n + j0;
          if (bias_of == nullptr) {
            for (int64_t j = 0; j < width; ++j) o[j] = static_cast<float>(row[j]) * scale[j] + 0.0f;
          } else {
            const float* add = bias_of + j0;
            for (int64_t j = 0; j < width; ++j) o[j] = static_cast<float>(row[j]) * scale[j] + add[j];
          }
        }
      });
  if (!staging.empty()) write_floats(out, staging.data(), rows * n);
  return Status::ok();
}

class MatMulIntegerToFloatKernel final : public Kernel {
 public:
  explicit MatMulIntegerToFloatKernel(const KernelInfo& info) : constant_b_(info, 1, 5) {}

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
    const int32_t zp = a_zp != nullptr ? int8_as_int32(*a_zp)[0] : 0;
    return integer_matmul_to_float(ctx, a->raw_data(), a->dtype() == DataType::kInt8, zp, a->shape(),
                                   read_floats(*a_scale)[0], b, b_scale, b_zp, bias, a_scale->dtype(), constant_b_);
  }

 private:
  ConstantB constant_b_;
};

class DynamicQuantizeMatMulKernel final : public Kernel {
 public:
  explicit DynamicQuantizeMatMulKernel(const KernelInfo& info) : constant_b_(info, 1, 3) {}

  Status compute(KernelContext& ctx) const override {
    const std::string label = ctx.label();
    const Tensor* a = ctx.input_tensor(0);
    if (a == nullptr || !is_float_type(a->dtype()) || a->rank() < 1) {
      return invalid_argument(label, ": input A is ", describe_or_missing(a), ", expected a float [..., K]");
    }
    // Quantize A to uint8 over its whole range (widened to include 0).
    std::vector<float> converted;
    const float* af = a->dtype() == DataType::kFloat ? a->data<float>() : (converted = read_floats(*a)).data();
    const int64_t count = a->size();
    float lo = 0.0f, hi = 0.0f;
    quant::float_range_with_zero(af, count, lo, hi);
    const float scale = (hi - lo) / 255.0f;
    float zero = 0.0f;
    if (scale != 0.0f) zero = std::clamp(std::nearbyint(0.0f - lo / scale), 0.0f, 255.0f);
    // With a zero scale every element is 0 (and 0 / 0, NaN, gives the zero point).
    std::vector<uint8_t> aq(static_cast<size_t>(count));
    parallel_for(ctx.thread_pool(), count, 2.0, [&](int64_t begin, int64_t end) {
      quant::quantize_floats(af + begin, end - begin, scale, static_cast<int32_t>(zero), false, aq.data() + begin);
    });
    return integer_matmul_to_float(ctx, aq.data(), false, static_cast<int32_t>(zero), a->shape(), scale,
                                   ctx.input_tensor(1), ctx.input_tensor(2), ctx.input_tensor(3), ctx.input_tensor(4),
                                   a->dtype(), constant_b_);
  }

 private:
  ConstantB constant_b_;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "MatMulIntegerToFloat", 1, kLatestVersion,
                         (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}), MatMulIntegerToFloatKernel);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "DynamicQuantizeMatMul", 1, kLatestVersion,
                         (std::vector<DataType>{DataType::kFloat}), DynamicQuantizeMatMulKernel);

}  // namespace
}  // namespace onyx::cpu
