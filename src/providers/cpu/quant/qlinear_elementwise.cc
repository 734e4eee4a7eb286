// The com.microsoft QLinear element-wise ops on int8/uint8 tensors with
// per-tensor scales and zero points: each dequantizes its inputs to float,
// computes, and quantizes the result (round half to even, saturate).
//   QLinearAdd, QLinearMul: A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp
//     (NumPy broadcasting of A and B).
//   QLinearSigmoid, QLinearLeakyRelu (alpha): X, X_scale, X_zp, Y_scale, Y_zp;
//     a 256-entry table per run, as onnxruntime builds.
//   QLinearGlobalAveragePool (channels_last): X [N, C, D...] or [N, D..., C];
//     int32 sums requantized by x_scale / (y_scale * D).
//   QLinearConcat (axis): Y_scale, Y_zp, then (X, X_scale, X_zp) per input;
//     each input requantized to Y's scale and zero point.
// Absent zero points are 0.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "providers/cpu/broadcast.h"
#include "providers/cpu/dispatch.h"
#include "providers/cpu/quant/quant_util.h"
#include "providers/cpu/quant/quant_vec.h"
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

using quant::is_int8_type;

struct QParams {
  float scale = 1.0f;
  int32_t zero = 0;
};

// The per-tensor scale (a float scalar) and zero point (a scalar of `type`,
// optional) at inputs `scale_index` and `zp_index`.
Result<QParams> read_qparams(const KernelContext& ctx, size_t scale_index, size_t zp_index, DataType type,
                             const char* scale_name, const char* zp_name, bool zp_required = false) {
  QParams q;
  const Tensor* s = ctx.input_tensor(scale_index);
  if (s == nullptr || s->dtype() != DataType::kFloat || s->size() != 1) {
    return invalid_argument(ctx.label(), ": input ", scale_name, " is ", describe_or_missing(s),
                            ", expected a float scalar (per-tensor scale)");
  }
  q.scale = s->data<float>()[0];
  const Tensor* z = ctx.input_tensor(zp_index);
  if (z == nullptr) {
    if (zp_required) return invalid_argument(ctx.label(), ": input ", zp_name, " is missing");
    return q;
  }
  if (z->dtype() != type || z->size() != 1) {
    return invalid_argument(ctx.label(), ": input ", zp_name, " is ", z->describe(), ", expected a ", dtype_name(type),
                            " scalar (per-tensor zero point)");
  }
  q.zero = type == DataType::kInt8 ? z->data<int8_t>()[0] : z->data<uint8_t>()[0];
  return q;
}

int32_t element(const Tensor& t, int64_t i) {
  return t.dtype() == DataType::kInt8 ? t.data<int8_t>()[i] : t.data<uint8_t>()[i];
}

float dequantize(int32_t v, const QParams& q) { return static_cast<float>(v - q.zero) * q.scale; }

// onnxruntime's QuantizeLinear: v / scale, rounded half to even, plus the
// zero point, saturated to the type's range.
int32_t quantize(float v, const QParams& q, DataType type) {
  const float low = type == DataType::kInt8 ? -128.0f : 0.0f, high = type == DataType::kInt8 ? 127.0f : 255.0f;
  float r = std::nearbyint(v / q.scale) + static_cast<float>(q.zero);
  if (std::isnan(r)) r = static_cast<float>(q.zero);
  r = r < low ? low : (r > high ? high : r);
  return static_cast<int32_t>(r);
}

void store(Tensor& t, int64_t i, int32_t v) {
  if (t.dtype() == DataType::kInt8) {
    t.data<int8_t>()[i] = static_cast<int8_t>(v);
  } else {
    t.data<uint8_t>()[i] = static_cast<uint8_t>(v);
  }
}

Status check_int8(const KernelContext& ctx, const Tensor* t, const char* name) {
  if (t == nullptr || !is_int8_type(t->dtype())) {
    return invalid_argument(ctx.label(), ": input ", name, " is ", describe_or_missing(t), ", expected int8 or uint8");
  }
  return Status::ok();
}

template <bool kMul>
class QLinearBinaryKernel final : public Kernel {
 public:
  explicit QLinearBinaryKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* a = ctx.input_tensor(0);
    const Tensor* b = ctx.input_tensor(3);
    ONYX_RETURN_IF_ERROR(check_int8(ctx, a, "A"));
    if (b == nullptr || b->dtype() != a->dtype()) {
      return invalid_argument(ctx.label(), ": input B is ", describe_or_missing(b), ", expected ",
                              dtype_name(a->dtype()), " (A's type)");
    }
    const DataType type = a->dtype();
    ONYX_ASSIGN_OR_RETURN(QParams qa, read_qparams(ctx, 1, 2, type, "A_scale", "A_zero_point"));
    ONYX_ASSIGN_OR_RETURN(QParams qb, read_qparams(ctx, 4, 5, type, "B_scale", "B_zero_point"));
    ONYX_ASSIGN_OR_RETURN(QParams qc, read_qparams(ctx, 6, 7, type, "C_scale", "C_zero_point"));
    ONYX_ASSIGN_OR_RETURN(BroadcastPlan plan, BroadcastPlan::make(ctx.label(), {a->shape(), b->shape()}, {"A", "B"}));
    Tensor& c = ctx.allocate_output(0, type, plan.output_shape());
    const int64_t sa = plan.inner_stride(0), sb = plan.inner_stride(1);
    const bool is_signed = type == DataType::kInt8;
    const auto* pa = static_cast<const uint8_t*>(a->raw_data());
    const auto* pb = static_cast<const uint8_t*>(b->raw_data());
    auto* pc = static_cast<uint8_t*>(c.raw_data());
    parallel_for(ctx.thread_pool(), plan.output_size(), 4.0, [&](int64_t begin, int64_t end) {
      plan.for_each_span(begin, end, [&](const int64_t* offsets, int64_t out, int64_t count) {
        quant::qlinear_binary(pa + offsets[0], sa, qa.zero, qa.scale, pb + offsets[1], sb, qb.zero, qb.scale, count,
                              kMul, is_signed, qc.zero, qc.scale, pc + out);
      });
    });
    return Status::ok();
  }
};

// Sigmoid and LeakyRelu: y = f(x) through a table of the 256 values.
template <bool kSigmoid>
class QLinearLookupKernel final : public Kernel {
 public:
  explicit QLinearLookupKernel(const KernelInfo& info) : alpha_(info.attr_float("alpha", 0.01f)) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    ONYX_RETURN_IF_ERROR(check_int8(ctx, x, "X"));
    const DataType type = x->dtype();
    ONYX_ASSIGN_OR_RETURN(QParams qx, read_qparams(ctx, 1, 2, type, "X_scale", "X_zero_point"));
    ONYX_ASSIGN_OR_RETURN(QParams qy, read_qparams(ctx, 3, 4, type, "Y_scale", "Y_zero_point"));
    const int32_t first = type == DataType::kInt8 ? -128 : 0;
    int32_t table[256];
    for (int32_t i = 0; i < 256; ++i) {
      const float v = dequantize(first + i, qx);
      const float f = kSigmoid ? 1.0f / (1.0f + std::exp(-v)) : (v >= 0.0f ? v : v * alpha_);
      table[i] = quantize(f, qy, type);
    }
    Tensor& y = ctx.allocate_output(0, type, x->shape());
    const uint8_t* px = x->data<uint8_t>();
    uint8_t* py = y.data<uint8_t>();
    const int bias = type == DataType::kInt8 ? 128 : 0;
    for (int64_t i = 0; i < x->size(); ++i) {
      const int index = type == DataType::kInt8 ? static_cast<int8_t>(px[i]) + bias : px[i];
      py[i] = static_cast<uint8_t>(table[index] & 0xFF);
    }
    return Status::ok();
  }

 private:
  float alpha_;
};

class QLinearGlobalAveragePoolKernel final : public Kernel {
 public:
  explicit QLinearGlobalAveragePoolKernel(const KernelInfo& info)
      : channels_last_(info.attr_int("channels_last", 0) != 0) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    ONYX_RETURN_IF_ERROR(check_int8(ctx, x, "X"));
    if (x->rank() < 3) {
      return invalid_argument(ctx.label(), ": input X is ", x->describe(), ", expected rank >= 3 ([N, C, D...]",
                              channels_last_ ? " with channels_last: [N, D..., C])" : ")");
    }
    const DataType type = x->dtype();
    ONYX_ASSIGN_OR_RETURN(QParams qx, read_qparams(ctx, 1, 2, type, "x_scale", "x_zero_point"));
    ONYX_ASSIGN_OR_RETURN(QParams qy, read_qparams(ctx, 3, 4, type, "y_scale", "y_zero_point"));
    const Shape& s = x->shape();
    const int64_t batch = s[0];
    const int64_t channels = channels_last_ ? s.back() : s[1];
    const int64_t image = channels == 0 || batch == 0 ? 0 : x->size() / (batch * channels);
    Shape out_shape(s.size(), 1);
    out_shape[0] = batch;
    out_shape[channels_last_ ? s.size() - 1 : 1] = channels;
    Tensor& y = ctx.allocate_output(0, type, out_shape);
    if (image == 0) return Status::ok();
    // onnxruntime's requantization: sum (x) - x_zp * D, times x_scale / (y_scale * D).
    const float multiplier = qx.scale / (qy.scale * static_cast<float>(image));
    parallel_for(ctx.thread_pool(), batch * channels, static_cast<double>(image), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t n = r / channels, c = r % channels;
        int32_t acc = 0;
        for (int64_t i = 0; i < image; ++i) {
          const int64_t at = channels_last_ ? (n * image + i) * channels + c : r * image + i;
          acc += element(*x, at);
        }
        acc -= qx.zero * static_cast<int32_t>(image);
        const float low = type == DataType::kInt8 ? -128.0f : 0.0f, high = type == DataType::kInt8 ? 127.0f : 255.0f;
        float q = std::nearbyint(static_cast<float>(acc) * multiplier) + static_cast<float>(qy.zero);
        q = q < low ? low : (q > high ? high : q);
        store(y, r, static_cast<int32_t>(q));
      }
    });
    return Status::ok();
  }

 private:
  bool channels_last_;
};

class QLinearConcatKernel final : public Kernel {
 public:
  explicit QLinearConcatKernel(const KernelInfo& info) : axis_(info.attr_int("axis", 0)) {}

  Status compute(KernelContext& ctx) const override {
    const std::string label = ctx.label();
    const size_t count = ctx.input_count();
    if (count < 5 || (count - 2) % 3 != 0) {
      return invalid_argument(label, ": has ", count,
                              " inputs, expected Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input");
    }
    const Tensor* first = ctx.input_tensor(2);
    ONYX_RETURN_IF_ERROR(check_int8(ctx, first, "X 0"));
    const DataType type = first->dtype();
    ONYX_ASSIGN_OR_RETURN(QParams qy, read_qparams(ctx, 0, 1, type, "Y_scale", "Y_zero_point", true));
    const int64_t rank = first->rank();
    if (axis_ < -rank || axis_ >= rank) {
      return invalid_argument(label, ": attribute axis ", axis_, " is out of range for inputs of rank ", rank);
    }
    const size_t axis = static_cast<size_t>(axis_ < 0 ? axis_ + rank : axis_);
    Shape out_shape = first->shape();
    out_shape[axis] = 0;
    const size_t inputs = (count - 2) / 3;
    std::vector<const Tensor*> xs(inputs);
    std::vector<QParams> qs(inputs);
    for (size_t i = 0; i < inputs; ++i) {
      const std::string name = "X " + std::to_string(i);
      const Tensor* x = ctx.input_tensor(2 + 3 * i);
      if (x == nullptr || x->dtype() != type || x->rank() != rank) {
        return invalid_argument(label, ": input ", name, " (input ", 2 + 3 * i, ") is ", describe_or_missing(x),
                                ", expected ", dtype_name(type), " of rank ", rank);
      }
      for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
        if (d != axis && x->shape()[d] != first->shape()[d]) {
          return invalid_argument(label, ": input ", name, " has shape ", shape_to_string(x->shape()), ", expected ",
                                  shape_to_string(first->shape()), " except on axis ", axis);
        }
      }
      const std::string scale_name = "X_scale " + std::to_string(i), zp_name = "X_zero_point " + std::to_string(i);
      ONYX_ASSIGN_OR_RETURN(qs[i],
                            read_qparams(ctx, 3 + 3 * i, 4 + 3 * i, type, scale_name.c_str(), zp_name.c_str(), true));
      xs[i] = x;
      out_shape[axis] += x->shape()[axis];
    }
    Tensor& y = ctx.allocate_output(0, type, out_shape);
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
      if (d < axis) outer *= out_shape[d];
      if (d > axis) inner *= out_shape[d];
    }
    const int64_t out_row = out_shape[axis] * inner;
    uint8_t* py = y.data<uint8_t>();
    int64_t column = 0;
    const int32_t first_value = type == DataType::kInt8 ? -128 : 0;
    for (size_t i = 0; i < inputs; ++i) {
      const int64_t row = xs[i]->shape()[axis] * inner;
      const uint8_t* px = xs[i]->data<uint8_t>();
      const bool same = qs[i].scale == qy.scale && qs[i].zero == qy.zero;
      uint8_t table[256];
      for (int32_t v = 0; v < 256; ++v) {
        table[v] = static_cast<uint8_t>(quantize(dequantize(first_value + v, qs[i]), qy, type) & 0xFF);
      }
      for (int64_t o = 0; o < outer; ++o) {
        const uint8_t* src = px + o * row;
        uint8_t* dst = py + o * out_row + column;
        if (same) {
          if (row > 0) std::memcpy(dst, src, static_cast<size_t>(row));
        } else {
          for (int64_t k = 0; k < row; ++k) {
            const int index = type == DataType::kInt8 ? static_cast<int8_t>(src[k]) + 128 : src[k];
            dst[k] = table[index];
          }
        }
      }
      column += row;
    }
    return Status::ok();
  }

 private:
  int64_t axis_;
};

const std::vector<DataType> kInt8Types{DataType::kInt8, DataType::kUInt8};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "QLinearAdd", 1, kLatestVersion, kInt8Types, QLinearBinaryKernel<false>);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "QLinearMul", 1, kLatestVersion, kInt8Types, QLinearBinaryKernel<true>);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "QLinearSigmoid", 1, kLatestVersion, kInt8Types, QLinearLookupKernel<true>);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "QLinearLeakyRelu", 1, kLatestVersion, kInt8Types,
                         QLinearLookupKernel<false>);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "QLinearGlobalAveragePool", 1, kLatestVersion, kInt8Types,
                         QLinearGlobalAveragePoolKernel);
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "QLinearConcat", 1, kLatestVersion, kInt8Types, QLinearConcatKernel);

}  // namespace
}  // namespace onyx::cpu
