// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear: linear
// (de)quantization per tensor, per axis (v13+) and blocked (v21+), to and from
// 8/16-bit integers, int4/uint4 (v21+), int2/uint2 (v25+), float8 (v19+) and
// float4 E2M1 (v23+).
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/quant/float8.h"
#include "providers/cpu/quant/quant_util.h"
#include "providers/cpu/quant/quant_vec.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

using quant::ScaleLayout;

// Rounds a double to the precision the division is done in (the scale's
// type unless `precision` says otherwise), as the spec asks.
double round_to(double v, DataType precision) {
  switch (precision) {
    case DataType::kFloat: return static_cast<double>(static_cast<float>(v));
    case DataType::kFloat16: return static_cast<double>(static_cast<float>(Float16(static_cast<float>(v))));
    case DataType::kBFloat16: return static_cast<double>(static_cast<float>(BFloat16(static_cast<float>(v))));
    default: return v;
  }
}

bool is_quantized_output(DataType t) {
  double low, high;
  return quant::integer_range(t, low, high) || minifloat_format(t) != nullptr;
}

class QuantizeLinearKernel final : public Kernel {
 public:
  explicit QuantizeLinearKernel(const KernelInfo& info)
      : version_(info.version()),
        axis_(info.attr_int("axis", 1)),
        saturate_(info.attr_int("saturate", 1) != 0),
        block_size_(info.attr_int("block_size", 0)),
        output_dtype_(static_cast<DataType>(info.attr_int("output_dtype", 0))),
        precision_(static_cast<DataType>(info.attr_int("precision", 0))) {
    if (output_dtype_ != DataType::kUndefined && !is_quantized_output(output_dtype_)) {
      throw Error(invalid_model(info.label(), ": attribute output_dtype is ", static_cast<int>(output_dtype_),
                                ", expected a quantized type (int8, uint8, int16, uint16, int4, uint4, float8, ...)"));
    }
    if (precision_ != DataType::kUndefined && precision_ != DataType::kFloat && precision_ != DataType::kFloat16 &&
        precision_ != DataType::kBFloat16 && precision_ != DataType::kDouble) {
      throw Error(invalid_model(info.label(), ": attribute precision is ", static_cast<int>(precision_),
                                ", expected float, float16 or bfloat16"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* scale = ctx.input_tensor(1);
    const Tensor* zero_point = ctx.input_tensor(2);
    if (x == nullptr || scale == nullptr) return invalid_argument(ctx.label(), ": inputs x and y_scale are required");
    DataType out_type = DataType::kUInt8;
    if (zero_point != nullptr) {
      out_type = zero_point->dtype();
      if (output_dtype_ != DataType::kUndefined && output_dtype_ != out_type) {
        return invalid_argument(ctx.label(), ": input y_zero_point has type ", dtype_name(out_type),
                                " but attribute output_dtype is ", dtype_name(output_dtype_));
      }
      if (zero_point->shape() != scale->shape() && !(zero_point->size() == 1 && scale->size() == 1)) {
        return invalid_argument(ctx.label(), ": input y_zero_point has shape ", shape_to_string(zero_point->shape()),
                                ", expected the shape of y_scale ", shape_to_string(scale->shape()));
      }
    } else if (output_dtype_ != DataType::kUndefined) {
      out_type = output_dtype_;
    }
    double low = 0, high = 0;
    const bool integer_out = quant::integer_range(out_type, low, high);
    const MiniFloatFormat* float_out = minifloat_format(out_type);
    if (!integer_out && float_out == nullptr) {
      return not_implemented(ctx.label(), ": output type ", dtype_name(out_type), " is not supported");
    }
    const int64_t block = version_ >= 21 ? block_size_ : 0;
    ONYX_ASSIGN_OR_RETURN(ScaleLayout layout,
                          quant::make_scale_layout(ctx.label(), x->shape(), scale->shape(), axis_, block, "y_scale"));
    ONYX_ASSIGN_OR_RETURN(std::vector<double> scales, quant::to_doubles(*scale, ctx.label(), "y_scale"));
    std::vector<double> zero_points(scales.size(), 0.0);
    if (zero_point != nullptr) {
      ONYX_ASSIGN_OR_RETURN(zero_points, quant::to_doubles(*zero_point, ctx.label(), "y_zero_point"));
    }
    // The division runs in the scale's type (or `precision`); NumPy's
    // promotion makes int32 / float a double division.
    DataType precision = precision_;
    if (precision == DataType::kUndefined) {
      if (x->dtype() == DataType::kInt32) {
        precision = DataType::kDouble;
      } else if (x->dtype() == scale->dtype()) {
        precision = scale->dtype();
      } else {
        precision = DataType::kFloat;
      }
    }

    Tensor& y = ctx.allocate_output(0, out_type, x->shape());
    if (x->size() == 0) return Status::ok();
    if (x->dtype() == DataType::kFloat && precision == DataType::kFloat && scales.size() == 1 &&
        (out_type == DataType::kUInt8 || out_type == DataType::kInt8)) {
      // Per tensor, float to 8 bits: the vector loop (the same results).
      const float* xp = x->data<float>();
      auto* yp = static_cast<uint8_t*>(y.raw_data());
      const float s = static_cast<float>(scales[0]);
      const auto z = static_cast<int32_t>(zero_points[0]);
      parallel_for(ctx.thread_pool(), x->size(), 2.0, [&](int64_t begin, int64_t end) {
        quant::quantize_floats(xp + begin, end - begin, s, z, out_type == DataType::kInt8, yp + begin);
      });
      return Status::ok();
    }

    auto run = [&](auto x_tag, auto out_tag) -> Status {
      using X = typename decltype(x_tag)::type;
      using Out = typename decltype(out_tag)::type;
      const X* xp = x->data<X>();
      Out* yp = y.data<Out>();
      const int64_t rows = layout.outer * layout.axis_dim;
      const int64_t inner = layout.inner;
      const bool saturate = saturate_;
      parallel_for(ctx.thread_pool(), rows, 8.0 * static_cast<double>(inner), [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const int64_t o = row / layout.axis_dim;
          const int64_t i = row % layout.axis_dim;
          for (int64_t j = 0; j < inner; ++j) {
            const int64_t k = row * inner + j;
            const size_t s = static_cast<size_t>(layout.index(o, i, j));
            const double q = round_to(static_cast<double>(xp[k]) / scales[s], precision);
            if (integer_out) {
              yp[k] = static_cast<Out>(quant::round_saturate(q, low - zero_points[s], high - zero_points[s]) +
                                       zero_points[s]);
            } else {
              const float v = static_cast<float>(q) + static_cast<float>(zero_points[s]);
              yp[k] = static_cast<Out>(float_to_minifloat(v, *float_out, saturate));
            }
          }
        }
      });
      return Status::ok();
    };
    auto with_out = [&](auto x_tag) -> Status {
      switch (out_type) {
        case DataType::kInt8:
        case DataType::kInt4:
        case DataType::kInt2: return run(x_tag, TypeTag<int8_t>{});
        case DataType::kInt16: return run(x_tag, TypeTag<int16_t>{});
        case DataType::kUInt16: return run(x_tag, TypeTag<uint16_t>{});
        default: return run(x_tag, TypeTag<uint8_t>{});  // uint8, uint4, uint2, float8, float4 codes
      }
    };
    switch (x->dtype()) {
      case DataType::kFloat: return with_out(TypeTag<float>{});
      case DataType::kDouble: return with_out(TypeTag<double>{});
      case DataType::kFloat16: return with_out(TypeTag<Float16>{});
      case DataType::kBFloat16: return with_out(TypeTag<BFloat16>{});
      case DataType::kInt32: return with_out(TypeTag<int32_t>{});
      default:
        return not_implemented(ctx.label(), ": input x has element type ", dtype_name(x->dtype()),
                               ", expected float, float16, bfloat16 or int32");
    }
  }

 private:
  int version_;
  int64_t axis_;
  bool saturate_;
  int64_t block_size_;
  DataType output_dtype_;
  DataType precision_;
};

class DequantizeLinearKernel final : public Kernel {
 public:
  explicit DequantizeLinearKernel(const KernelInfo& info)
      : version_(info.version()),
        axis_(info.attr_int("axis", 1)),
        block_size_(info.attr_int("block_size", 0)),
        output_dtype_(static_cast<DataType>(info.attr_int("output_dtype", 0))) {
    if (output_dtype_ != DataType::kUndefined && output_dtype_ != DataType::kFloat &&
        output_dtype_ != DataType::kFloat16 && output_dtype_ != DataType::kBFloat16) {
      throw Error(invalid_model(info.label(), ": attribute output_dtype is ", static_cast<int>(output_dtype_),
                                ", expected float, float16 or bfloat16"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* scale = ctx.input_tensor(1);
    const Tensor* zero_point = ctx.input_tensor(2);
    if (x == nullptr || scale == nullptr) return invalid_argument(ctx.label(), ": inputs x and x_scale are required");
    if (zero_point != nullptr) {
      if (zero_point->dtype() != x->dtype()) {
        return invalid_argument(ctx.label(), ": input x_zero_point has type ", dtype_name(zero_point->dtype()),
                                ", expected the type of x (", dtype_name(x->dtype()), ")");
      }
      if (zero_point->shape() != scale->shape() && !(zero_point->size() == 1 && scale->size() == 1)) {
        return invalid_argument(ctx.label(), ": input x_zero_point has shape ", shape_to_string(zero_point->shape()),
                                ", expected the shape of x_scale ", shape_to_string(scale->shape()));
      }
    }
    DataType out_type = output_dtype_;
    if (out_type == DataType::kUndefined) {
      out_type = scale->dtype() == DataType::kFloat8E8M0 ? DataType::kFloat : scale->dtype();
    }
    if (out_type != DataType::kFloat && out_type != DataType::kFloat16 && out_type != DataType::kBFloat16) {
      return not_implemented(ctx.label(), ": output type ", dtype_name(out_type),
                             " is not supported (expected float, float16 or bfloat16)");
    }
    const int64_t block = version_ >= 21 ? block_size_ : 0;
    ONYX_ASSIGN_OR_RETURN(ScaleLayout layout,
                          quant::make_scale_layout(ctx.label(), x->shape(), scale->shape(), axis_, block, "x_scale"));
    ONYX_ASSIGN_OR_RETURN(std::vector<double> scale_values, quant::to_doubles(*scale, ctx.label(), "x_scale"));
    std::vector<float> scales(scale_values.begin(), scale_values.end());
    std::vector<float> zero_points(scales.size(), 0.0f);
    // Float8 zero points must be zero (spec); they are not subtracted.
    if (zero_point != nullptr && !is_float8(x->dtype()) && x->dtype() != DataType::kFloat4E2M1) {
      ONYX_ASSIGN_OR_RETURN(std::vector<double> zp, quant::to_doubles(*zero_point, ctx.label(), "x_zero_point"));
      zero_points.assign(zp.begin(), zp.end());
    }

    Tensor& y = ctx.allocate_output(0, out_type, x->shape());
    if (x->size() == 0) return Status::ok();

    // One-byte inputs go through a 256-entry table of their float values.
    std::array<float, 256> table{};
    bool use_table = true;
    switch (x->dtype()) {
      case DataType::kInt8:
      case DataType::kInt4:
      case DataType::kInt2:
        for (int c = 0; c < 256; ++c) table[static_cast<size_t>(c)] = static_cast<float>(static_cast<int8_t>(c));
        break;
      case DataType::kUInt8:
      case DataType::kUInt4:
      case DataType::kUInt2:
        for (int c = 0; c < 256; ++c) table[static_cast<size_t>(c)] = static_cast<float>(c);
        break;
      case DataType::kFloat8E4M3FN:
      case DataType::kFloat8E4M3FNUZ:
      case DataType::kFloat8E5M2:
      case DataType::kFloat8E5M2FNUZ:
      case DataType::kFloat8E8M0:
      case DataType::kFloat4E2M1:
        for (int c = 0; c < 256; ++c) {
          table[static_cast<size_t>(c)] = small_float_to_float(x->dtype(), static_cast<uint8_t>(c));
        }
        break;
      case DataType::kInt16:
      case DataType::kUInt16:
      case DataType::kInt32: use_table = false; break;
      default:
        return not_implemented(ctx.label(), ": input x has element type ", dtype_name(x->dtype()),
                               ", which DequantizeLinear does not accept");
    }

    return dispatch_float(out_type, [&](auto out_tag) -> Status {
      using Out = typename decltype(out_tag)::type;
      auto run = [&](auto load) {
        Out* yp = y.data<Out>();
        const int64_t rows = layout.outer * layout.axis_dim;
        const int64_t inner = layout.inner;
        parallel_for(ctx.thread_pool(), rows, 4.0 * static_cast<double>(inner), [&](int64_t begin, int64_t end) {
          for (int64_t row = begin; row < end; ++row) {
            const int64_t o = row / layout.axis_dim;
            const int64_t i = row % layout.axis_dim;
            for (int64_t j = 0; j < inner; ++j) {
              const int64_t k = row * inner + j;
              const size_t s = static_cast<size_t>(layout.index(o, i, j));
              yp[k] = static_cast<Out>((load(k) - zero_points[s]) * scales[s]);
            }
          }
        });
      };
      if (use_table) {
        const uint8_t* xp = static_cast<const uint8_t*>(x->raw_data());
        run([&](int64_t k) { return table[xp[k]]; });
      } else if (x->dtype() == DataType::kInt16) {
        const int16_t* xp = x->data<int16_t>();
        run([&](int64_t k) { return static_cast<float>(xp[k]); });
      } else if (x->dtype() == DataType::kUInt16) {
        const uint16_t* xp = x->data<uint16_t>();
        run([&](int64_t k) { return static_cast<float>(xp[k]); });
      } else {
        const int32_t* xp = x->data<int32_t>();
        run([&](int64_t k) { return static_cast<float>(xp[k]); });
      }
      return Status::ok();
    });
  }

 private:
  int version_;
  int64_t axis_;
  int64_t block_size_;
  DataType output_dtype_;
};

// uint8 quantization with a scale and zero point computed from the data's
// range, which is widened to include 0 (spec formula).
class DynamicQuantizeLinearKernel final : public Kernel {
 public:
  explicit DynamicQuantizeLinearKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input x is required");
    if (x->dtype() != DataType::kFloat) {
      return not_implemented(ctx.label(), ": input x has element type ", dtype_name(x->dtype()), ", expected float");
    }
    const float* xp = x->data<float>();
    const int64_t n = x->size();
    float min_value = 0.0f, max_value = 0.0f;
    quant::float_range_with_zero(xp, n, min_value, max_value);
    constexpr float kQMin = 0.0f, kQMax = 255.0f;
    const float scale = (max_value == min_value ? 1.0f : max_value - min_value) / (kQMax - kQMin);
    const float initial_zero_point = kQMin - min_value / scale;
    const float zero_point = std::nearbyint(std::clamp(initial_zero_point, kQMin, kQMax));

    Tensor& y = ctx.allocate_output(0, DataType::kUInt8, x->shape());
    uint8_t* yp = y.data<uint8_t>();
    parallel_for(ctx.thread_pool(), n, 2.0, [&](int64_t begin, int64_t end) {
      quant::quantize_floats(xp + begin, end - begin, scale, static_cast<int32_t>(zero_point), false, yp + begin,
                             /*nan_to_lowest=*/true);
    });
    ctx.allocate_output(1, DataType::kFloat, {}).data<float>()[0] = scale;
    ctx.allocate_output(2, DataType::kUInt8, {}).data<uint8_t>()[0] = static_cast<uint8_t>(zero_point);
    return Status::ok();
  }
};

std::vector<DataType> quantize_inputs() {
  return {DataType::kFloat, DataType::kFloat16, DataType::kBFloat16, DataType::kInt32};
}
std::vector<DataType> quantized_types() {
  return {DataType::kInt8,          DataType::kUInt8,          DataType::kInt16,       DataType::kUInt16,
          DataType::kInt4,          DataType::kUInt4,          DataType::kInt2,        DataType::kUInt2,
          DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2, DataType::kFloat8E5M2FNUZ,
          DataType::kFloat4E2M1,   DataType::kInt32};
}

// Versions: 13 per-axis, 19 float8 + saturate, 21 blocked + int4 + 16-bit,
// 23 precision/output_dtype + float4, 24 E8M0 scales, 25 int2.
ONYX_REGISTER_CPU_KERNEL("", "QuantizeLinear", 10, 12, quantize_inputs(), QuantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "QuantizeLinear", 13, 18, quantize_inputs(), QuantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "QuantizeLinear", 19, 20, quantize_inputs(), QuantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "QuantizeLinear", 21, 22, quantize_inputs(), QuantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "QuantizeLinear", 23, 23, quantize_inputs(), QuantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "QuantizeLinear", 24, 24, quantize_inputs(), QuantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "QuantizeLinear", 25, kLatestVersion, quantize_inputs(), QuantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "DequantizeLinear", 10, 12, quantized_types(), DequantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "DequantizeLinear", 13, 18, quantized_types(), DequantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "DequantizeLinear", 19, 20, quantized_types(), DequantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "DequantizeLinear", 21, 22, quantized_types(), DequantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "DequantizeLinear", 23, 23, quantized_types(), DequantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "DequantizeLinear", 24, 24, quantized_types(), DequantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "DequantizeLinear", 25, kLatestVersion, quantized_types(), DequantizeLinearKernel);
ONYX_REGISTER_CPU_KERNEL("", "DynamicQuantizeLinear", 11, kLatestVersion, {DataType::kFloat},
                         DynamicQuantizeLinearKernel);

}  // namespace
}  // namespace onyx::cpu
