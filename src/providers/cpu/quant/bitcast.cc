// BitCast (v26): reinterprets each element's bits as another type of the same
// bit width. Sub-byte types are held one per byte, so 4- and 2-bit casts move
// the low bits and sign-extend for int4/int2; anything cast to bool becomes 0/1.
#include <cstring>

#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

int bit_width(DataType t) {
  switch (t) {
    case DataType::kInt4:
    case DataType::kUInt4:
    case DataType::kFloat4E2M1: return 4;
    case DataType::kInt2:
    case DataType::kUInt2: return 2;
    case DataType::kString:
    case DataType::kUndefined: return 0;
    default: return static_cast<int>(dtype_size(t)) * 8;
  }
}

class BitCastKernel final : public Kernel {
 public:
  explicit BitCastKernel(const KernelInfo& info) : to_(static_cast<DataType>(info.attr_int("to", 0))) {
    if (bit_width(to_) == 0 || !dtype_is_known(static_cast<int32_t>(to_))) {
      throw Error(invalid_model(info.label(), ": attribute to is ", static_cast<int>(to_),
                                ", expected a non-string element type"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input input is required");
    const int from_bits = bit_width(x->dtype());
    if (from_bits == 0 || from_bits != bit_width(to_)) {
      return invalid_argument(ctx.label(), ": input has type ", dtype_name(x->dtype()), " (", from_bits,
                              " bits), which differs in width from 'to' ", dtype_name(to_), " (", bit_width(to_),
                              " bits)");
    }
    Tensor& y = ctx.allocate_output(0, to_, x->shape());
    const int64_t n = x->size();
    if (n == 0) return Status::ok();
    if (from_bits >= 8 && to_ != DataType::kBool) {
      std::memcpy(y.raw_data(), x->raw_data(), x->bytes());
      return Status::ok();
    }
    const uint8_t* src = static_cast<const uint8_t*>(x->raw_data());
    uint8_t* dst = static_cast<uint8_t*>(y.raw_data());
    if (to_ == DataType::kBool) {
      for (int64_t i = 0; i < n; ++i) dst[i] = src[i] != 0 ? 1 : 0;
      return Status::ok();
    }
    const uint8_t mask = static_cast<uint8_t>((1u << from_bits) - 1);
    const bool sign_extend = to_ == DataType::kInt4 || to_ == DataType::kInt2;
    const uint8_t sign = static_cast<uint8_t>(1u << (from_bits - 1));
    for (int64_t i = 0; i < n; ++i) {
      uint8_t v = static_cast<uint8_t>(src[i] & mask);
      if (sign_extend && (v & sign)) v = static_cast<uint8_t>(v | ~mask);
      dst[i] = v;
    }
    return Status::ok();
  }

 private:
  DataType to_;
};

ONYX_REGISTER_CPU_KERNEL("", "BitCast", 26, kLatestVersion, types::all(), BitCastKernel);

}  // namespace
}  // namespace onyx::cpu
