// QLinearMatMul: matmul of two quantized int8/uint8 tensors (NumPy batching),
// accumulated in int32 and requantized with a_scale * b_scale / y_scale.
// Scales and zero points broadcast NumPy-style (per tensor, per row of a,
// per column of b), as the ONNX reference does.
#include <cstdint>
#include <vector>

#include "providers/cpu/broadcast.h"
#include "providers/cpu/dispatch.h"
#include "providers/cpu/quant/quant_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

double round_to_type(double v, DataType t) {
  switch (t) {
    case DataType::kFloat: return static_cast<double>(static_cast<float>(v));
    case DataType::kFloat16: return static_cast<double>(static_cast<float>(Float16(static_cast<float>(v))));
    case DataType::kBFloat16: return static_cast<double>(static_cast<float>(BFloat16(static_cast<float>(v))));
    default: return v;
  }
}

using quant::is_int8_type;

// `t` minus its zero point (broadcast to t's shape), as int32.
Result<std::vector<int32_t>> centered(const Tensor& t, const Tensor* zero_point, const std::string& label,
                                      const char* name, const char* zp_name) {
  std::vector<int32_t> out = quant::int8_as_int32(t);
  if (zero_point != nullptr) {
    if (zero_point->dtype() != t.dtype()) {
      return invalid_argument(label, ": input ", zp_name, " has type ", dtype_name(zero_point->dtype()),
                              ", expected the type of ", name, " (", dtype_name(t.dtype()), ")");
    }
    ONYX_ASSIGN_OR_RETURN(std::vector<double> zp, quant::expand_to(*zero_point, t.shape(), label, zp_name));
    for (size_t i = 0; i < out.size(); ++i) out[i] -= static_cast<int32_t>(zp[i]);
  }
  return out;
}

class QLinearMatMulKernel final : public Kernel {
 public:
  explicit QLinearMatMulKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* a = ctx.input_tensor(0);
    const Tensor* a_scale = ctx.input_tensor(1);
    const Tensor* a_zp = ctx.input_tensor(2);
    const Tensor* b = ctx.input_tensor(3);
    const Tensor* b_scale = ctx.input_tensor(4);
    const Tensor* b_zp = ctx.input_tensor(5);
    const Tensor* y_scale = ctx.input_tensor(6);
    const Tensor* y_zp = ctx.input_tensor(7);
    if (a == nullptr || b == nullptr || a_scale == nullptr || b_scale == nullptr || y_scale == nullptr) {
      return invalid_argument(ctx.label(), ": inputs a, a_scale, b, b_scale and y_scale are required");
    }
    for (const Tensor* t : {a, b}) {
      if (!is_int8_type(t->dtype())) {
        return not_implemented(ctx.label(), ": input ", t == a ? "a" : "b", " has element type ",
                               dtype_name(t->dtype()), ", expected int8 or uint8");
      }
    }
    const DataType out_type = y_zp != nullptr ? y_zp->dtype() : a->dtype();
    if (!is_int8_type(out_type)) {
      return not_implemented(ctx.label(), ": input y_zero_point has element type ", dtype_name(out_type),
                             ", expected int8 or uint8");
    }
    if (a->rank() < 1 || b->rank() < 1) {
      return invalid_argument(ctx.label(), ": inputs a and b must have rank >= 1, got ", a->rank(), " and ", b->rank());
    }
    // NumPy matmul: a 1-D a is a row [1,K], a 1-D b a column [K,1]; the
    // added dimension is dropped from the output.
    Shape a_shape = a->shape(), b_shape = b->shape();
    if (a_shape.size() == 1) a_shape.insert(a_shape.begin(), 1);
    if (b_shape.size() == 1) b_shape.push_back(1);
    const int64_t m = a_shape[a_shape.size() - 2], k = a_shape.back();
    const int64_t n = b_shape.back();
    if (b_shape[b_shape.size() - 2] != k) {
      return invalid_argument(ctx.label(), ": inputs a ", shape_to_string(a->shape()), " and b ",
                              shape_to_string(b->shape()), " have inner dimensions ", k, " and ",
                              b_shape[b_shape.size() - 2], ", expected them equal");
    }
    const Shape a_batch(a_shape.begin(), a_shape.end() - 2), b_batch(b_shape.begin(), b_shape.end() - 2);
    ONYX_ASSIGN_OR_RETURN(Shape batch, broadcast_shapes(ctx.label(), {a_batch, b_batch}, {"a", "b"}));
    Shape out_shape = batch;
    if (a->rank() > 1) out_shape.push_back(m);
    if (b->rank() > 1) out_shape.push_back(n);

    ONYX_ASSIGN_OR_RETURN(std::vector<int32_t> av, centered(*a, a_zp, ctx.label(), "a", "a_zero_point"));
    ONYX_ASSIGN_OR_RETURN(std::vector<int32_t> bv, centered(*b, b_zp, ctx.label(), "b", "b_zero_point"));
    // The multiplier a_scale * b_scale / y_scale, computed in the scales' type.
    ONYX_ASSIGN_OR_RETURN(std::vector<double> as, quant::expand_to(*a_scale, out_shape, ctx.label(), "a_scale"));
    ONYX_ASSIGN_OR_RETURN(std::vector<double> bs, quant::expand_to(*b_scale, out_shape, ctx.label(), "b_scale"));
    ONYX_ASSIGN_OR_RETURN(std::vector<double> ys, quant::expand_to(*y_scale, out_shape, ctx.label(), "y_scale"));
    std::vector<double> yz(as.size(), 0.0);
    if (y_zp != nullptr) {
      ONYX_ASSIGN_OR_RETURN(yz, quant::expand_to(*y_zp, out_shape, ctx.label(), "y_zero_point"));
    }
    const DataType scale_type = a_scale->dtype() == b_scale->dtype() && b_scale->dtype() == y_scale->dtype()
                                    ? a_scale->dtype()
                                    : DataType::kFloat;

    Tensor& y = ctx.allocate_output(0, out_type, out_shape);
    const int64_t batches = shape_size(batch);
    if (y.size() == 0) return Status::ok();
    double low, high;
    quant::integer_range(out_type, low, high);

    // Batch offsets of a and b for each output batch (broadcast dims repeat).
    auto batch_offsets = [&](const Shape& own, int64_t matrix) {
      std::vector<int64_t> offsets(static_cast<size_t>(batches));
      const size_t rank = batch.size(), skip = rank - own.size();
      for (int64_t bi = 0; bi < batches; ++bi) {
        int64_t rest = bi, offset = 0, stride = 1;
        for (size_t d = rank; d-- > 0;) {
          const int64_t index = rest % batch[d];
          rest /= batch[d];
          if (d >= skip) {
            const int64_t dim = own[d - skip];
            if (dim != 1) offset += index * stride;
            stride *= dim;
          }
        }
        offsets[static_cast<size_t>(bi)] = offset * matrix;
      }
      return offsets;
    };
    const std::vector<int64_t> a_offsets = batch_offsets(a_batch, m * k);
    const std::vector<int64_t> b_offsets = batch_offsets(b_batch, k * n);

    uint8_t* raw = static_cast<uint8_t*>(y.raw_data());
    const bool signed_out = out_type == DataType::kInt8;
    parallel_for(ctx.thread_pool(), batches * m, 2.0 * static_cast<double>(k * n), [&](int64_t begin, int64_t end) {
      std::vector<int32_t> row(static_cast<size_t>(n));
      for (int64_t r = begin; r < end; ++r) {
        const int64_t bi = r / m, i = r % m;
        std::fill(row.begin(), row.end(), 0);
        quant::add_row_product(av.data() + a_offsets[static_cast<size_t>(bi)] + i * k,
                               bv.data() + b_offsets[static_cast<size_t>(bi)], k, n, row.data());
        for (int64_t j = 0; j < n; ++j) {
          const size_t o = static_cast<size_t>(r * n + j);
          const double multiplier = round_to_type(round_to_type(as[o] * bs[o], scale_type) / ys[o], scale_type);
          const double q =
              quant::round_saturate(row[static_cast<size_t>(j)] * multiplier, low - yz[o], high - yz[o]) + yz[o];
          if (signed_out) {
            reinterpret_cast<int8_t*>(raw)[o] = static_cast<int8_t>(q);
          } else {
            raw[o] = static_cast<uint8_t>(q);
          }
        }
      }
    });
    return Status::ok();
  }
};

ONYX_REGISTER_CPU_KERNEL("", "QLinearMatMul", 10, 20, (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}),
                         QLinearMatMulKernel);
ONYX_REGISTER_CPU_KERNEL("", "QLinearMatMul", 21, kLatestVersion,
                         (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}), QLinearMatMulKernel);

}  // namespace
}  // namespace onyx::cpu
