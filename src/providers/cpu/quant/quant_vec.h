// Per-tensor quantization loops shared by the quantized kernels
// (QuantizeLinear, DynamicQuantizeLinear, DynamicQuantizeMatMul, the QLinear
// element-wise ops), written so the compiler vectorizes them for the running
// CPU (one clone per ISA). Results equal the element-by-element reference:
// the float division, round half to even, saturation.
#pragma once

#include <cstdint>

namespace onyx::cpu::quant {

// y[i] = saturate(round_half_even(x[i] / scale) + zero) for i < n, to int8
// (is_signed) or uint8 at `y`. A NaN quotient gives the zero point
// (QuantizeLinear's reference), or with nan_to_lowest the type's lowest
// value (DynamicQuantizeLinear, as onnxruntime).
void quantize_floats(const float* x, int64_t n, float scale, int32_t zero, bool is_signed, void* y,
                     bool nan_to_lowest = false);

// lo = min(0, x...) and hi = max(0, x...): the range DynamicQuantizeLinear
// quantizes over (NaN elements are skipped).
void float_range_with_zero(const float* x, int64_t n, float& lo, float& hi);

// out[i] = (x[i * stride] - zero) * scale for i < n, x int8 (is_signed) or
// uint8; stride 0 repeats x[0] (a broadcast operand).
void dequantize_bytes(const void* x, int64_t stride, int64_t n, bool is_signed, int32_t zero, float scale, float* out);

// c[i] = saturate(round_half_even(((a[i * sa] - za) * scale_a  op  (b[i * sb]
// - zb) * scale_b) / scale_c) + zc), op + or * (mul), for i < n: QLinearAdd
// and QLinearMul over one span of int8 (is_signed) or uint8 bytes, strides 0
// (a broadcast operand) or 1. Contiguous spans multiply by scale ratios
// instead of dividing (onnxruntime's arithmetic), which can move a near-tie
// by one quantum.
void qlinear_binary(const void* a, int64_t sa, int32_t za, float scale_a, const void* b, int64_t sb, int32_t zb,
                    float scale_b, int64_t n, bool mul, bool is_signed, int32_t zc, float scale_c, void* c);

// dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows, c < cols:
// a byte matrix transposed (NCHW <-> NHWC of 8-bit tensors), 16 x 16 bytes
// at a time.
void transpose_bytes(const uint8_t* src, int64_t src_stride, int64_t rows, int64_t cols, uint8_t* dst,
                     int64_t dst_stride);

}  // namespace onyx::cpu::quant
