// com.microsoft GatherBlockQuantized: Gather over a block-quantized tensor,
// dequantizing the gathered elements: out = (q - zero_point) * scale, with
// one scale (and zero point) per `block_size` consecutive elements along
// quantize_axis. It is the embedding lookup of decoders whose table is stored
// in 4 bits and shared with the lm_head's MatMulNBits (tied embeddings).
//
// data is int4/uint4 (one element per byte in memory), or uint8 holding
// 8 / bits codes per byte along its last axis, low bits first (quantize_axis
// must then be that axis). scales has data's logical shape with the
// quantize_axis dimension cut to ceil(d / block_size); zero_points, when
// given, is of data's type and packed like it. Without zero points the codes
// are centred: 2^(bits - 1) for uint8 and uint4 data, 0 for int4.
#include <cstdint>
#include <string>
#include <vector>

#include "providers/cpu/contrib/float_io.h"
#include "providers/cpu/tensor/tensor_util.h"

namespace onyx::cpu {
namespace {

class GatherBlockQuantizedKernel final : public Kernel {
 public:
  explicit GatherBlockQuantizedKernel(const KernelInfo& info)
      : gather_axis_(info.attr_int("gather_axis", 0)),
        quantize_axis_(info.attr_int("quantize_axis", 1)),
        block_size_(info.attr_int("block_size", 128)),
        bits_(info.attr_int("bits", 4)) {
    if (block_size_ < 16 || (block_size_ & (block_size_ - 1)) != 0) {
      throw Error(invalid_model(info.label(), ": attribute block_size is ", block_size_, ", expected a power of 2, at least 16"));
    }
    if (bits_ != 2 && bits_ != 4 && bits_ != 8) {
      throw Error(invalid_model(info.label(), ": attribute bits is ", bits_, ", expected 2, 4 or 8"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* data = ctx.input_tensor(0);
    const Tensor* indices = ctx.input_tensor(1);
    const Tensor* scales = ctx.input_tensor(2);
    const Tensor* zero_points = ctx.input_count() > 3 ? ctx.input_tensor(3) : nullptr;
    const std::string label = ctx.label();
    if (data == nullptr || (data->dtype() != DataType::kUInt8 && data->dtype() != DataType::kInt4 && data->dtype() != DataType::kUInt4) ||
        data->rank() < 1) {
      return invalid_argument(label, ": input data is ", describe_or_missing(data), ", expected uint8, int4 or uint4 of rank >= 1");
    }
    if (indices == nullptr || (indices->dtype() != DataType::kInt32 && indices->dtype() != DataType::kInt64)) {
      return invalid_argument(label, ": input indices is ", describe_or_missing(indices), ", expected int32 or int64");
    }
    const bool packed = data->dtype() == DataType::kUInt8;
    const int64_t per_byte = packed ? 8 / bits_ : 1;
    if (!packed && bits_ != 4) {
      return invalid_argument(label, ": attribute bits is ", bits_, ", but data is ", dtype_name(data->dtype()), " (4 bits)");
    }
    const int64_t rank = data->rank();
    Result<int64_t> gather_axis = normalize_axis(gather_axis_, rank, label, "gather_axis");
    if (!gather_axis.is_ok()) return gather_axis.status();
    Result<int64_t> quantize_axis = normalize_axis(quantize_axis_, rank, label, "quantize_axis");
    if (!quantize_axis.is_ok()) return quantize_axis.status();
    const int64_t ga = gather_axis.value(), qa = quantize_axis.value();
    if (packed && qa != rank - 1) {
      return invalid_argument(label, ": attribute quantize_axis is ", quantize_axis_, ", but uint8 data packs codes along its last axis ",
                              rank - 1);
    }
    // The logical (unpacked) shape of data, and of the scales.
    Shape logical = data->shape();
    logical[static_cast<size_t>(rank - 1)] *= per_byte;
    Shape scales_shape = logical;
    const int64_t qdim = logical[static_cast<size_t>(qa)];
    const int64_t qblocks = (qdim + block_size_ - 1) / block_size_;
    scales_shape[static_cast<size_t>(qa)] = qblocks;
    if (scales == nullptr || !is_float_type(scales->dtype()) || scales->shape() != scales_shape) {
      return invalid_argument(label, ": input scales is ", describe_or_missing(scales), ", expected a float tensor of shape ",
                              shape_to_string(scales_shape), " (data's ", shape_to_string(logical), " in blocks of ", block_size_, ")");
    }
    if (zero_points != nullptr) {
      Shape zp_shape = scales_shape;
      if (packed) zp_shape[static_cast<size_t>(rank - 1)] = (scales_shape[static_cast<size_t>(rank - 1)] + per_byte - 1) / per_byte;
      if (zero_points->dtype() != data->dtype() || zero_points->shape() != zp_shape) {
        return invalid_argument(label, ": input zero_points is ", zero_points->describe(), ", expected ", dtype_name(data->dtype()),
                                shape_to_string(zp_shape));
      }
    }

    std::vector<int64_t> idx(static_cast<size_t>(indices->size()));
    for (int64_t i = 0; i < indices->size(); ++i) {
      idx[static_cast<size_t>(i)] = indices->dtype() == DataType::kInt32 ? indices->data<int32_t>()[i] : indices->data<int64_t>()[i];
    }
    const int64_t gdim = logical[static_cast<size_t>(ga)];
    for (int64_t& i : idx) {
      if (i < -gdim || i >= gdim) {
        return invalid_argument(label, ": input indices holds ", i, ", out of range [", -gdim, ", ", gdim, ") of data's axis ", ga);
      }
      if (i < 0) i += gdim;
    }

    Shape out_shape(logical.begin(), logical.begin() + ga);
    out_shape.insert(out_shape.end(), indices->shape().begin(), indices->shape().end());
    out_shape.insert(out_shape.end(), logical.begin() + ga + 1, logical.end());
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < ga; ++d) outer *= logical[static_cast<size_t>(d)];
    for (int64_t d = ga + 1; d < rank; ++d) inner *= logical[static_cast<size_t>(d)];
    int64_t q_stride = 1;  // logical elements between neighbours along quantize_axis
    for (int64_t d = qa + 1; d < rank; ++d) q_stride *= logical[static_cast<size_t>(d)];

    const uint8_t* codes = static_cast<const uint8_t*>(data->raw_data());
    const uint8_t* zps = zero_points ? static_cast<const uint8_t*>(zero_points->raw_data()) : nullptr;
    const int64_t mask = (int64_t{1} << bits_) - 1;
    // Code of logical element f (packed codes low bits first along the last axis).
    auto code_at = [&](const uint8_t* base, int64_t f) -> int32_t {
      if (!packed) {
        return data->dtype() == DataType::kInt4 ? static_cast<int32_t>(static_cast<int8_t>(base[f])) : static_cast<int32_t>(base[f]);
      }
      const int64_t byte = f / per_byte, shift = (f % per_byte) * bits_;
      return static_cast<int32_t>((base[byte] >> shift) & mask);
    };
    const int32_t default_zero = data->dtype() == DataType::kInt4 ? 0 : static_cast<int32_t>(int64_t{1} << (bits_ - 1));
    const int64_t scales_last = scales_shape[static_cast<size_t>(rank - 1)];
    const int64_t zp_row = packed ? (scales_last + per_byte - 1) / per_byte : scales_last;  // zero-point bytes per last-axis row

    Tensor& output = ctx.allocate_output(0, scales->dtype(), out_shape);
    // Only the gathered elements and their scales are read: the table may be
    // a decoder's whole vocabulary.
    return dispatch_float(scales->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      const T* scale = scales->data<T>();
      T* out = output.data<T>();
      int64_t o = 0;
      for (int64_t a = 0; a < outer; ++a) {
        for (int64_t i : idx) {
          const int64_t base = (a * gdim + i) * inner;
          for (int64_t e = 0; e < inner; ++e) {
            const int64_t f = base + e;
            const int64_t q = (f / q_stride) % qdim;
            const int64_t s = ((f / (q_stride * qdim)) * qblocks + q / block_size_) * q_stride + f % q_stride;
            int32_t zero = default_zero;
            if (zps != nullptr) {
              // The zero point of scale element s, packed like data along the last axis.
              const int64_t row = s / scales_last, col = s % scales_last;
              zero =
                  packed
                      ? static_cast<int32_t>((zps[row * zp_row + col / per_byte] >> ((col % per_byte) * bits_)) & mask)
                      : code_at(zps, s);
            }
            const float sc = static_cast<float>(static_cast<compute_t<T>>(scale[s]));
            out[o++] = static_cast<T>(static_cast<compute_t<T>>(static_cast<float>(code_at(codes, f) - zero) * sc));
          }
        }
      }
      return Status::ok();
    });
  }

 private:
  int64_t gather_axis_;
  int64_t quantize_axis_;
  int64_t block_size_;
  int64_t bits_;
};

// The kernel is typed by its data (uint8 codes, int4, uint4); the output is
// the scales' float type.
ONYX_REGISTER_CPU_KERNEL("com.microsoft", "GatherBlockQuantized", 1, kLatestVersion,
                         (std::vector<DataType>{DataType::kUInt8, DataType::kInt4, DataType::kUInt4}), GatherBlockQuantizedKernel);

}  // namespace
}  // namespace onyx::cpu
