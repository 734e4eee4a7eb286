// com.microsoft MatMulNBits: Y = A * dequant(B)^T (+ bias), with B [N, K]
// block-quantized along K to `bits` (2, 4 or 8) bits: B is uint8
// [N, n_blocks, blob_size] with codes packed low bits first, scales
// [N * n_blocks], optional zero points either packed like B (uint8,
// ceil(n_blocks * bits / 8) bytes per column) or unpacked of A's type
// [N * n_blocks]; absent, the zero point is 2^(bits - 1). Optional g_idx
// (int32 [K]) names each k's block; optional bias is [N].
//
// accuracy_level 4 with constant 4-bit weights (integer zero points, no
// g_idx) keeps the codes as they are and multiplies
// them with A quantized to int8 per block (int4_gemv.h; many rows of A
// instead dequantize panels of columns for the SGEMM): an eighth of the
// float weights' memory and 2-4x faster at batch 1. Otherwise the weights are
// dequantized to float once (when constant) and multiplied in float.
#include <cstdint>
#include <string>
#include <vector>

#include "providers/cpu/contrib/float_io.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/quant/int4_gemv.h"

namespace onyx::cpu {
namespace {

class MatMulNBitsKernel final : public Kernel {
 public:
  explicit MatMulNBitsKernel(const KernelInfo& info)
      : k_(info.attr_int("K", 0)),
        n_(info.attr_int("N", 0)),
        bits_(info.attr_int("bits", 4)),
        block_size_(info.attr_int("block_size", 0)),
        accuracy_level_(info.attr_int("accuracy_level", 0)) {
    // Constant weights (the usual case: an exported decoder) are dequantized
    // and packed for the GEMM once, here, instead of on every run.
    const Tensor* b = info.constant_input(1);
    const Tensor* scales = info.constant_input(2);
    const Tensor* zp = info.has_input(3) ? info.constant_input(3) : nullptr;
    const Tensor* g_idx = info.has_input(4) ? info.constant_input(4) : nullptr;
    if (b == nullptr || scales == nullptr || (info.has_input(3) && zp == nullptr) ||
        (info.has_input(4) && g_idx == nullptr) || !is_float_type(scales->dtype())) {
      return;
    }
    const std::string label = info.label();
    if (!check_attributes(label).is_ok() || !check_weights(label, scales->dtype(), b, scales, zp, g_idx).is_ok() ||
        !check_group_index(label, g_idx).is_ok()) {
      return;  // compute() reports what is wrong
    }
    weights_dtype_ = scales->dtype();
    if (accuracy_level_ >= 4 && bits_ == 4 && g_idx == nullptr && (zp == nullptr || zp->dtype() == DataType::kUInt8)) {
      int4_ = pack_int4(int4_weights(*b, *scales, zp));
      return;
    }
    const std::vector<float> w = dequantize(*b, *scales, zp, g_idx, nullptr);
    packed_ = pack_b(true, k_, n_, w.data(), k_);
  }

  // Once the weights are prepared, their constants' data is not read again.
  bool needs_constant_data(size_t i) const override { return !prepared() || i < 1 || i > 4; }

  Status compute(KernelContext& ctx) const override {
    const std::string label = ctx.label();
    Status status = check_attributes(label);
    if (!status.is_ok()) return status;
    const Tensor* a = ctx.input_tensor(0);
    const Tensor* b = ctx.input_tensor(1);
    const Tensor* scales = ctx.input_tensor(2);
    const Tensor* zp = ctx.input_tensor(3);
    const Tensor* g_idx = ctx.input_tensor(4);
    const Tensor* bias = ctx.input_tensor(5);
    if (a == nullptr || !is_float_type(a->dtype()) || a->rank() < 1 || a->shape().back() != k_) {
      return invalid_argument(label, ": input A is ", a ? a->describe() : std::string("missing"),
                              ", expected a float tensor [..., ", k_, "] (attribute K)");
    }
    if (g_idx != nullptr && g_idx->size() == 0) g_idx = nullptr;
    // Types and sizes only: the data of packed constants may be freed.
    status = check_weights(label, a->dtype(), b, scales, zp, g_idx);
    if (!status.is_ok()) return status;
    if (bias != nullptr && (bias->dtype() != a->dtype() || bias->size() != n_)) {
      return invalid_argument(label, ": input bias is ", bias->describe(), ", expected ", dtype_name(a->dtype()), " [",
                              n_, "]");
    }

    Shape out_shape = a->shape();
    out_shape.back() = n_;
    const int64_t m = a->size() / k_;
    Tensor& out = ctx.allocate_output(0, a->dtype(), out_shape);
    // float32 (the usual case) is read from A and written into the output
    // where it lies; other float types go through float buffers.
    const bool direct = a->dtype() == DataType::kFloat;
    std::vector<float> a_buffer, y_buffer;
    if (!direct) {
      a_buffer = read_floats(*a);
      y_buffer.resize(static_cast<size_t>(m * n_));
    }
    const float* av = direct ? a->data<float>() : a_buffer.data();
    float* y = direct ? out.data<float>() : y_buffer.data();
    if (m > 0) {
      if (int4_.n > 0 && weights_dtype_ == a->dtype()) {
        int4_matmul(int4_, av, m, y, ctx.thread_pool());
      } else if (!packed_.empty() && weights_dtype_ == a->dtype()) {
        sgemm_packed_b(false, m, 1.0f, av, k_, packed_, 0.0f, y, n_, ctx.thread_pool());
      } else {
        status = check_group_index(label, g_idx);
        if (!status.is_ok()) return status;
        const std::vector<float> w = dequantize(*b, *scales, zp, g_idx, ctx.thread_pool());
        sgemm(false, true, m, n_, k_, 1.0f, av, k_, w.data(), k_, 0.0f, y, n_, ctx.thread_pool());
      }
    }
    if (bias != nullptr) {
      const std::vector<float> bv = read_floats(*bias);
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n_; ++j) y[i * n_ + j] += bv[static_cast<size_t>(j)];
      }
    }
    if (!direct) write_floats(out, y, m * n_);
    return Status::ok();
  }

 private:
  int64_t n_blocks() const { return (k_ + block_size_ - 1) / block_size_; }
  int64_t blob_bytes() const { return block_size_ * bits_ / 8; }
  int64_t zero_point_row_bytes() const { return (n_blocks() * bits_ + 7) / 8; }

  Status check_attributes(const std::string& label) const {
    if (k_ <= 0 || n_ <= 0)
      return invalid_argument(label, ": attributes K and N are ", k_, " and ", n_, ", expected > 0");
    if (bits_ != 2 && bits_ != 4 && bits_ != 8) {
      return not_implemented(label, ": attribute bits is ", bits_, ", expected 2, 4 or 8");
    }
    if (block_size_ < 16 || (block_size_ & (block_size_ - 1)) != 0) {
      return invalid_argument(label, ": attribute block_size is ", block_size_, ", expected a power of two >= 16");
    }
    return Status::ok();
  }

  // B, scales, zero points and g_idx have the types and sizes the attributes
  // say; `dtype` is A's (float) type, which scales and float zero points share.
  Status check_weights(const std::string& label, DataType dtype, const Tensor* b, const Tensor* scales,
                       const Tensor* zp, const Tensor* g_idx) const {
    const int64_t blocks = n_blocks();
    if (b == nullptr || b->dtype() != DataType::kUInt8 || b->size() != n_ * blocks * blob_bytes()) {
      return invalid_argument(label, ": input B is ", b ? b->describe() : std::string("missing"), ", expected uint8 [",
                              n_, ", ", blocks, ", ", blob_bytes(), "] (N, blocks of ", block_size_, " in K = ", k_,
                              ", bytes per block of ", bits_, "-bit codes)");
    }
    if (scales == nullptr || scales->dtype() != dtype || scales->size() != n_ * blocks) {
      return invalid_argument(label, ": input scales is ", scales ? scales->describe() : std::string("missing"),
                              ", expected ", dtype_name(dtype), " [", n_ * blocks, "] (N * blocks)");
    }
    if (zp != nullptr) {
      const bool packed_ok = zp->dtype() == DataType::kUInt8 && zp->size() == n_ * zero_point_row_bytes();
      const bool float_ok = zp->dtype() == dtype && zp->size() == n_ * blocks;
      if (!packed_ok && !float_ok) {
        return invalid_argument(label, ": input zero_points is ", zp->describe(), ", expected uint8 [",
                                n_ * zero_point_row_bytes(), "] (packed) or ", dtype_name(dtype), " [", n_ * blocks,
                                "]");
      }
    }
    if (g_idx != nullptr && (g_idx->dtype() != DataType::kInt32 || g_idx->size() != k_)) {
      return invalid_argument(label, ": input g_idx is ", g_idx->describe(), ", expected int32 [", k_, "]");
    }
    return Status::ok();
  }

  Status check_group_index(const std::string& label, const Tensor* g_idx) const {
    if (g_idx == nullptr) return Status::ok();
    for (int64_t i = 0; i < k_; ++i) {
      const int32_t g = g_idx->data<int32_t>()[i];
      if (g < 0 || g >= n_blocks()) {
        return invalid_argument(label, ": input g_idx[", i, "] is ", g, ", expected in [0, ", n_blocks(), ")");
      }
    }
    return Status::ok();
  }

  // B dequantized to W [N, K] (row n is output column n).
  std::vector<float> dequantize(const Tensor& b, const Tensor& scales, const Tensor* zp, const Tensor* g_idx,
                                ThreadPool* pool) const {
    const int64_t blocks = n_blocks();
    const int64_t blob = blob_bytes();
    const int64_t zp_row = zero_point_row_bytes();
    const std::vector<float> sc = read_floats(scales);
    std::vector<float> zf;
    if (zp != nullptr && zp->dtype() != DataType::kUInt8) zf = read_floats(*zp);
    const uint8_t* zq = zp != nullptr && zp->dtype() == DataType::kUInt8 ? zp->data<uint8_t>() : nullptr;
    const int32_t* groups = g_idx != nullptr ? g_idx->data<int32_t>() : nullptr;
    const uint8_t* pb = b.data<uint8_t>();
    const int mask = (1 << bits_) - 1;
    const float default_zp = static_cast<float>(1 << (bits_ - 1));
    std::vector<float> w(static_cast<size_t>(n_ * k_));
    parallel_for(pool, n_, 4.0 * static_cast<double>(k_), [&](int64_t begin, int64_t end) {
      std::vector<float> scale(static_cast<size_t>(blocks)), zero(static_cast<size_t>(blocks));
      for (int64_t n = begin; n < end; ++n) {
        for (int64_t blk = 0; blk < blocks; ++blk) {
          const size_t i = static_cast<size_t>(n * blocks + blk);
          scale[static_cast<size_t>(blk)] = sc[i];
          if (zq != nullptr) {
            const int64_t bit = blk * bits_;
            zero[static_cast<size_t>(blk)] = static_cast<float>((zq[n * zp_row + bit / 8] >> (bit % 8)) & mask);
          } else {
            zero[static_cast<size_t>(blk)] = zf.empty() ? default_zp : zf[i];
          }
        }
        const uint8_t* row = pb + n * blocks * blob;
        float* out = w.data() + n * k_;
        for (int64_t kk = 0; kk < k_; ++kk) {
          // Codes stay in their position (kk's own block); g_idx only picks the scale.
          const int64_t bit = kk * bits_;
          const float q = static_cast<float>((row[bit / 8] >> (bit % 8)) & mask);
          const size_t g = static_cast<size_t>(groups != nullptr ? groups[kk] : kk / block_size_);
          out[kk] = (q - zero[g]) * scale[g];
        }
      }
    });
    return w;
  }

  int64_t k_, n_, bits_, block_size_;
  bool prepared() const { return !packed_.empty() || int4_.n > 0; }

  // The codes as they are, the scales as float and the zero points one per
  // block (8 when absent).
  Int4Weights int4_weights(const Tensor& b, const Tensor& scales, const Tensor* zp) const {
    Int4Weights w;
    w.n = n_;
    w.k = k_;
    w.block_size = block_size_;
    w.blocks = n_blocks();
    const auto* codes = b.data<uint8_t>();
    w.codes.assign(codes, codes + b.size());
    w.scales = read_floats(scales);
    w.zero_points.assign(static_cast<size_t>(n_ * w.blocks), 8);
    if (zp != nullptr) {
      const auto* packed = zp->data<uint8_t>();
      for (int64_t col = 0; col < n_; ++col) {
        for (int64_t blk = 0; blk < w.blocks; ++blk) {
          const uint8_t byte = packed[col * zero_point_row_bytes() + blk / 2];
          w.zero_points[static_cast<size_t>(col * w.blocks + blk)] = blk % 2 == 0 ? (byte & 0x0F) : (byte >> 4);
        }
      }
    }
    return w;
  }

  int64_t accuracy_level_;
  // The weights prepared at creation when B, scales, zero points and g_idx
  // are constant: 4-bit codes for int8 products (accuracy_level 4), else
  // W = dequant(B) packed for the float GEMM.
  PackedInt4 int4_;
  PackedMatrix packed_;
  DataType weights_dtype_ = DataType::kUndefined;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "MatMulNBits", 1, kLatestVersion, types::floats(), MatMulNBitsKernel);

}  // namespace
}  // namespace onyx::cpu
