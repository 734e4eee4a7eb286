// QLinearMatMul: matmul of two quantized int8/uint8 tensors (NumPy batching),
// accumulated in int32 and requantized with a_scale * b_scale / y_scale.
// Scales and zero points broadcast NumPy-style (per tensor, per row of a,
// per column of b), as the ONNX reference does. The common case (a's scale
// and zero point and y's per tensor, b's per tensor or per column) runs on
// the int8 GEMM, with a constant b packed once at kernel creation; other
// broadcasts take the plain loop.
#include <cstdint>
#include <memory>
#include <vector>

#include "providers/cpu/broadcast.h"
#include "providers/cpu/dispatch.h"
#include "providers/cpu/quant/qgemm_int8.h"
#include "providers/cpu/quant/quant_util.h"
#include "providers/cpu/quant/requantize.h"
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

// One value for the whole tensor.
bool per_tensor(const Tensor* t) { return t == nullptr || t->size() == 1; }

// One value per column of an [.., n] matrix: [n] or [1, n] (or one value).
bool per_column(const Tensor* t, int64_t n) {
  if (per_tensor(t)) return true;
  return t->size() == n && t->rank() <= 2 && t->shape().back() == n;
}

// The zero point as int32 values (none: 0 values).
std::vector<int32_t> zero_values(const Tensor* zp) {
  return zp == nullptr ? std::vector<int32_t>() : quant::int8_as_int32(*zp);
}

// b's [k, n] matrix (a 1-D b is one column) as the GEMM reads it.
Int8Matrix matrix_view(const Tensor& t, int64_t offset, int64_t rows, int64_t cols) {
  return Int8Matrix{
      static_cast<const uint8_t*>(t.raw_data()) + offset, t.dtype() == DataType::kInt8, rows, cols, cols, false};
}

class QLinearMatMulKernel final : public Kernel {
 public:
  explicit QLinearMatMulKernel(const KernelInfo& info) {
    // A constant 2-D (or 1-D) b with a constant per-tensor or per-column zero
    // point is packed for the GEMM here, once.
    const Tensor* b = info.constant_input(3);
    const Tensor* b_zp = info.input_count() > 5 && info.has_input(5) ? info.constant_input(5) : nullptr;
    const bool zp_given = info.input_count() > 5 && info.has_input(5);
    if (b == nullptr || !is_int8_type(b->dtype()) || b->rank() < 1 || b->rank() > 2 || (zp_given && b_zp == nullptr)) {
      return;
    }
    const int64_t k = b->dim(0), n = b->rank() == 2 ? b->dim(1) : 1;
    if (b_zp != nullptr && (b_zp->dtype() != b->dtype() || !per_column(b_zp, n))) return;
    const std::vector<int32_t> zp = zero_values(b_zp);
    packed_b_ = pack_int8_b(matrix_view(*b, 0, k, n), zp.data(), static_cast<int64_t>(zp.size()));
    packed_b_shape_ = b->shape();
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(bool done, compute_with_gemm(ctx));
    if (done) return Status::ok();
    return compute_reference(ctx);
  }

 private:
  // The GEMM path, for per-tensor a and y quantization and per-tensor or
  // per-column b: false (nothing written) when the inputs need the general
  // broadcasting of compute_reference, whose checks then report any error.
  Result<bool> compute_with_gemm(KernelContext& ctx) const {
    const Tensor* a = ctx.input_tensor(0);
    const Tensor* a_scale = ctx.input_tensor(1);
    const Tensor* a_zp = ctx.input_tensor(2);
    const Tensor* b = ctx.input_tensor(3);
    const Tensor* b_scale = ctx.input_tensor(4);
    const Tensor* b_zp = ctx.input_tensor(5);
    const Tensor* y_scale = ctx.input_tensor(6);
    const Tensor* y_zp = ctx.input_tensor(7);
    if (a == nullptr || b == nullptr || a_scale == nullptr || b_scale == nullptr || y_scale == nullptr) return false;
    if (!is_int8_type(a->dtype()) || !is_int8_type(b->dtype()) || a->rank() < 1 || b->rank() < 1) return false;
    const DataType out_type = y_zp != nullptr ? y_zp->dtype() : a->dtype();
    if (!is_int8_type(out_type)) return false;
    if ((a_zp != nullptr && a_zp->dtype() != a->dtype()) || (b_zp != nullptr && b_zp->dtype() != b->dtype())) {
      return false;
    }
    Shape a_shape = a->shape(), b_shape = b->shape();
    if (a_shape.size() == 1) a_shape.insert(a_shape.begin(), 1);
    if (b_shape.size() == 1) b_shape.push_back(1);
    const int64_t m = a_shape[a_shape.size() - 2], k = a_shape.back();
    const int64_t n = b_shape.back();
    if (b_shape[b_shape.size() - 2] != k) return false;
    if (!per_tensor(a_zp) || !per_tensor(a_scale) || !per_tensor(y_scale) || !per_tensor(y_zp) ||
        !per_column(b_zp, n) || !per_column(b_scale, n)) {
      return false;
    }
    // Per-column b quantization must not broadcast into a 1-D b's missing column dimension.
    if (b->rank() == 1 && (!per_tensor(b_zp) || !per_tensor(b_scale))) return false;
    const Shape a_batch(a_shape.begin(), a_shape.end() - 2), b_batch(b_shape.begin(), b_shape.end() - 2);
    ONYX_ASSIGN_OR_RETURN(Shape batch, broadcast_shapes(ctx.label(), {a_batch, b_batch}, {"a", "b"}));
    Shape out_shape = batch;
    if (a->rank() > 1) out_shape.push_back(m);
    if (b->rank() > 1) out_shape.push_back(n);
    // Ranks that broadcast (the reference's checks name any that do not).
    const auto fits = [](const Tensor* t, int64_t rank) { return t == nullptr || t->rank() <= rank; };
    const auto out_rank = static_cast<int64_t>(out_shape.size());
    if (!fits(a_zp, a->rank()) || !fits(b_zp, b->rank()) || !fits(a_scale, out_rank) || !fits(b_scale, out_rank) ||
        !fits(y_scale, out_rank) || !fits(y_zp, out_rank)) {
      return false;
    }

    // The multiplier per column, computed in the scales' type as the reference does.
    ONYX_ASSIGN_OR_RETURN(std::vector<double> as, quant::to_doubles(*a_scale, ctx.label(), "a_scale"));
    ONYX_ASSIGN_OR_RETURN(std::vector<double> bs, quant::to_doubles(*b_scale, ctx.label(), "b_scale"));
    ONYX_ASSIGN_OR_RETURN(std::vector<double> ys, quant::to_doubles(*y_scale, ctx.label(), "y_scale"));
    double yz = 0.0;
    if (y_zp != nullptr) {
      ONYX_ASSIGN_OR_RETURN(std::vector<double> z, quant::to_doubles(*y_zp, ctx.label(), "y_zero_point"));
      yz = z[0];
    }
    const DataType scale_type = a_scale->dtype() == b_scale->dtype() && b_scale->dtype() == y_scale->dtype()
                                    ? a_scale->dtype()
                                    : DataType::kFloat;
    std::vector<double> multiplier(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      const double b_j = bs[bs.size() == 1 ? 0 : static_cast<size_t>(j)];
      multiplier[static_cast<size_t>(j)] = round_to_type(round_to_type(as[0] * b_j, scale_type) / ys[0], scale_type);
    }

    Tensor& y = ctx.allocate_output(0, out_type, out_shape);
    if (y.size() == 0) return true;
    const std::vector<int32_t> a_zero = zero_values(a_zp), b_zero = zero_values(b_zp);
    const bool b_packed = !packed_b_.empty() && b->shape() == packed_b_shape_;
    const int64_t batches = shape_size(batch);
    const bool b_shared = shape_size(b_batch) == 1;
    const bool signed_out = out_type == DataType::kInt8;
    uint8_t* raw = static_cast<uint8_t*>(y.raw_data());
    // Every batch of a against one b: a's batches (broadcast to the output's)
    // are consecutive rows of one product when a has all of them.
    const bool fold = b_shared && shape_size(a_batch) == batches;
    const int64_t products = fold ? 1 : batches, rows = fold ? batches * m : m;
    for (int64_t bi = 0; bi < products; ++bi) {
      const int64_t a_index = fold ? 0 : broadcast_index(batch, a_batch, bi);
      const int64_t b_index = b_shared ? 0 : broadcast_index(batch, b_batch, bi);
      const PackedInt8 pa =
          pack_int8_a(matrix_view(*a, a_index * m * k, rows, k), a_zero.data(), static_cast<int64_t>(a_zero.size()),
                      b_packed ? packed_b_.isa() : Int8Isa::kAuto);
      PackedInt8 pb = b_packed ? packed_b_
                               : pack_int8_b(matrix_view(*b, b_index * k * n, k, n), b_zero.data(),
                                             static_cast<int64_t>(b_zero.size()), pa.isa(), ctx.thread_pool());
      uint8_t* out = raw + bi * rows * n;
      qgemm_int8(pa, pb, nullptr, n, ctx.thread_pool(),
                 [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1, const int32_t* block, int64_t ld) {
                   quant::requantize_block(block, ld, i1 - i0, j1 - j0, nullptr, multiplier.data() + j0,
                                           multiplier.size() > 1, yz, signed_out, out + i0 * n + j0, n);
                 });
    }
    return true;
  }

  // The index of the matrix of an operand with batch dims `own` (right-aligned
  // to `batch`, size-1 dims broadcast) used by output batch `bi`.
  static int64_t broadcast_index(const Shape& batch, const Shape& own, int64_t bi) {
    int64_t rest = bi, index = 0, stride = 1;
    const size_t rank = batch.size(), skip = rank - own.size();
    for (size_t d = rank; d-- > 0;) {
      const int64_t at = rest % batch[d];
      rest /= batch[d];
      if (d >= skip) {
        const int64_t dim = own[d - skip];
        if (dim != 1) index += at * stride;
        stride *= dim;
      }
    }
    return index;
  }

  Status compute_reference(KernelContext& ctx) const {
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

  PackedInt8 packed_b_;  // a constant b, packed at creation
  Shape packed_b_shape_;
};

ONYX_REGISTER_CPU_KERNEL("", "QLinearMatMul", 10, 20, (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}),
                         QLinearMatMulKernel);
ONYX_REGISTER_CPU_KERNEL("", "QLinearMatMul", 21, kLatestVersion,
                         (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}), QLinearMatMulKernel);

}  // namespace
}  // namespace onyx::cpu
