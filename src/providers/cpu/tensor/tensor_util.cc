// The strided copier and small helpers shared by the CPU tensor kernels.
#include "providers/cpu/tensor/tensor_util.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

namespace onyx::cpu {
namespace {

struct Dim {
  int64_t size;
  int64_t dst_stride;
  int64_t src_stride;
};

// Copies one run of n elements; the fast path is a single memcpy.
template <typename T>
void copy_run(T* dst, int64_t dst_step, const T* src, int64_t src_step, int64_t n) {
  if constexpr (!std::is_same_v<T, std::string>) {
    if (dst_step == 1 && src_step == 1) {
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(T));
      return;
    }
    if (src_step == 0) {
      const T v = *src;
      for (int64_t i = 0; i < n; ++i) dst[i * dst_step] = v;
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i) dst[i * dst_step] = src[i * src_step];
}

// dst[c * dst_ld + r] = src[r * src_ld + c] for r, c < 4.
inline void transpose_tile4(const char* src, int64_t src_ld, char* dst, int64_t dst_ld) {
#if defined(__SSE2__)
  const float* s = reinterpret_cast<const float*>(src);
  float* d = reinterpret_cast<float*>(dst);
  __m128 r0 = _mm_loadu_ps(s), r1 = _mm_loadu_ps(s + src_ld), r2 = _mm_loadu_ps(s + 2 * src_ld),
         r3 = _mm_loadu_ps(s + 3 * src_ld);
  _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
  _mm_storeu_ps(d, r0);
  _mm_storeu_ps(d + dst_ld, r1);
  _mm_storeu_ps(d + 2 * dst_ld, r2);
  _mm_storeu_ps(d + 3 * dst_ld, r3);
#else
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 4; ++c) std::memcpy(dst + (c * dst_ld + r) * 4, src + (r * src_ld + c) * 4, 4);
#endif
}

// The transposes of 4-byte elements: the destination's inner dim walks the
// source with a stride, and another dim walks it contiguously (NCHW <->
// NHWC, attention's head split). Copied in 4 x 4 tiles, each four loads of
// source rows and four stores of destination rows, where the element-wise
// gather read a new cache line per element (ConvNeXt's [1,56,56,96] ->
// [1,96,56,56]: 0.39 ms). False when the copy has no such shape.
template <typename T>
bool copy_transposed(T* dst, const T* src, const std::vector<Dim>& dims, ThreadPool* pool) {
  if constexpr (sizeof(T) != 4 || std::is_same_v<T, std::string>) {
    return false;
  } else {
    constexpr int64_t kTile = 4, kBand = 64;  // tiles of 4 x 4, tasks of 64 source columns
    if (dims.size() < 2) return false;
    const size_t last = dims.size() - 1;
    const Dim inner = dims[last];
    size_t k = last;
    for (size_t d = 0; d < last; ++d) {
      if (dims[d].src_stride == 1) k = d;
    }
    if (k == last || inner.dst_stride != 1 || inner.src_stride < kTile || inner.size < kTile) return false;
    const Dim across = dims[k];
    if (across.dst_stride < kTile || across.size < kTile) return false;
    std::vector<Dim> outer;
    for (size_t d = 0; d < last; ++d) {
      if (d == k) continue;
      if (dims[d].src_stride < 0 || dims[d].dst_stride < 0) return false;
      outer.push_back(dims[d]);
    }
    int64_t outer_count = 1;
    for (const Dim& d : outer) outer_count *= d.size;
    const int64_t bands = (across.size + kBand - 1) / kBand;
    const int64_t rows = inner.size, src_ld = inner.src_stride, dst_ld = across.dst_stride;
    parallel_for(pool, outer_count * bands, static_cast<double>(rows * kBand), [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        int64_t rest = task / bands, src_off = 0, dst_off = 0;
        for (size_t i = outer.size(); i-- > 0;) {
          const int64_t index = rest % outer[i].size;
          rest /= outer[i].size;
          src_off += index * outer[i].src_stride;
          dst_off += index * outer[i].dst_stride;
        }
        // Rows r of the source (the destination's inner dim) by columns c
        // (the source's contiguous dim) of this band.
        const T* s = src + src_off;
        T* d = dst + dst_off;
        const int64_t c0 = task % bands * kBand, c1 = std::min(across.size, c0 + kBand);
        int64_t r = 0;
        for (; r + kTile <= rows; r += kTile) {
          int64_t c = c0;
          for (; c + kTile <= c1; c += kTile) {
            transpose_tile4(reinterpret_cast<const char*>(s + r * src_ld + c), src_ld,
                            reinterpret_cast<char*>(d + c * dst_ld + r), dst_ld);
          }
          for (; c < c1; ++c)
            for (int64_t i = r; i < r + kTile; ++i) d[c * dst_ld + i] = s[i * src_ld + c];
        }
        for (; r < rows; ++r)
          for (int64_t c = c0; c < c1; ++c) d[c * dst_ld + r] = s[r * src_ld + c];
      }
    });
    return true;
  }
}

template <typename T>
void copy_box(T* dst, const T* src, const std::vector<Dim>& dims, ThreadPool* pool) {
  if (copy_transposed(dst, src, dims, pool)) return;
  const Dim inner = dims.back();
  const size_t outer_rank = dims.size() - 1;
  int64_t outer_count = 1;
  for (size_t i = 0; i < outer_rank; ++i) outer_count *= dims[i].size;
  parallel_for(pool, outer_count, static_cast<double>(inner.size), [&](int64_t begin, int64_t end) {
    // Odometer over the outer dims, started at `begin`.
    std::vector<int64_t> index(outer_rank, 0);
    int64_t rest = begin;
    int64_t dst_off = 0, src_off = 0;
    for (size_t i = outer_rank; i-- > 0;) {
      index[i] = rest % dims[i].size;
      rest /= dims[i].size;
      dst_off += index[i] * dims[i].dst_stride;
      src_off += index[i] * dims[i].src_stride;
    }
    for (int64_t r = begin; r < end; ++r) {
      copy_run(dst + dst_off, inner.dst_stride, src + src_off, inner.src_stride, inner.size);
      for (size_t i = outer_rank; i-- > 0;) {
        dst_off += dims[i].dst_stride;
        src_off += dims[i].src_stride;
        if (++index[i] < dims[i].size) break;
        dst_off -= dims[i].size * dims[i].dst_stride;
        src_off -= dims[i].size * dims[i].src_stride;
        index[i] = 0;
      }
    }
  });
}

}  // namespace

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

void strided_copy(DataType dtype, void* dst, const std::vector<int64_t>& dst_strides, const void* src,
                  const std::vector<int64_t>& src_strides, const Shape& shape, ThreadPool* pool) {
  std::vector<Dim> dims;
  dims.reserve(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return;
    if (shape[i] == 1) continue;
    const Dim d{shape[i], dst_strides[i], src_strides[i]};
    // Merge with the dim outside when stepping this dim's full extent equals
    // one step of the outer dim in both buffers.
    if (!dims.empty() && dims.back().dst_stride == d.size * d.dst_stride &&
        dims.back().src_stride == d.size * d.src_stride) {
      dims.back().size *= d.size;
      dims.back().dst_stride = d.dst_stride;
      dims.back().src_stride = d.src_stride;
    } else {
      dims.push_back(d);
    }
  }
  if (dims.empty()) dims.push_back(Dim{1, 1, 1});
  dispatch_storage(dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    copy_box(static_cast<T*>(dst), static_cast<const T*>(src), dims, pool);
  });
}

void copy_elements(DataType dtype, void* dst, const void* src, int64_t count) {
  if (count <= 0) return;
  if (dtype == DataType::kString) {
    auto* d = static_cast<std::string*>(dst);
    const auto* s = static_cast<const std::string*>(src);
    for (int64_t i = 0; i < count; ++i) d[i] = s[i];
    return;
  }
  std::memcpy(dst, src, static_cast<size_t>(count) * dtype_size(dtype));
}

void fill_elements(DataType dtype, void* dst, const void* value, int64_t count) {
  if (count <= 0) return;
  dispatch_storage(dtype, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    T v;
    if constexpr (std::is_same_v<T, std::string>) {
      v = *static_cast<const std::string*>(value);
    } else {
      std::memcpy(&v, value, sizeof(T));
    }
    T* d = static_cast<T*>(dst);
    for (int64_t i = 0; i < count; ++i) d[i] = v;
  });
}

void zero_fill(Tensor& t) {
  if (t.dtype() == DataType::kString) {
    auto* d = t.data<std::string>();
    for (int64_t i = 0; i < t.size(); ++i) d[i].clear();
    return;
  }
  if (t.bytes() > 0) std::memset(t.raw_data(), 0, t.bytes());
}

Result<int64_t> normalize_axis(int64_t axis, int64_t rank, const std::string& label, const char* what) {
  if (axis < -rank || axis >= rank) {
    return invalid_argument(label, ": ", what, " ", axis, " is out of range for rank ", rank, " (expected [",
                            -rank, ", ", rank - 1, "])");
  }
  return axis < 0 ? axis + rank : axis;
}

Result<std::vector<int64_t>> read_ints(const Tensor& t, const std::string& label, const char* input_name) {
  std::vector<int64_t> out(static_cast<size_t>(t.size()));
  auto convert = [&](auto* p) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(p[i]);
  };
  switch (t.dtype()) {
    case DataType::kInt64: convert(t.data<int64_t>()); break;
    case DataType::kInt32: convert(t.data<int32_t>()); break;
    case DataType::kInt16: convert(t.data<int16_t>()); break;
    case DataType::kInt8: convert(t.data<int8_t>()); break;
    case DataType::kUInt8: convert(t.data<uint8_t>()); break;
    case DataType::kUInt16: convert(t.data<uint16_t>()); break;
    case DataType::kUInt32: convert(t.data<uint32_t>()); break;
    case DataType::kUInt64: convert(t.data<uint64_t>()); break;
    default:
      return invalid_argument(label, ": input ", input_name, " has element type ", dtype_name(t.dtype()),
                              ", expected an integer type");
  }
  return out;
}

Result<double> read_scalar_double(const Tensor& t, const std::string& label, const char* input_name) {
  if (t.size() < 1) return invalid_argument(label, ": input ", input_name, " is empty, expected one value");
  switch (t.dtype()) {
    case DataType::kFloat: return static_cast<double>(t.data<float>()[0]);
    case DataType::kDouble: return t.data<double>()[0];
    case DataType::kFloat16: return static_cast<double>(static_cast<float>(t.data<Float16>()[0]));
    case DataType::kBFloat16: return static_cast<double>(static_cast<float>(t.data<BFloat16>()[0]));
    case DataType::kBool: return t.data<bool>()[0] ? 1.0 : 0.0;
    default: {
      ONYX_ASSIGN_OR_RETURN(auto values, read_ints(t, label, input_name));
      return static_cast<double>(values[0]);
    }
  }
}

Result<const Tensor*> required_input(const KernelContext& ctx, size_t i, const char* name) {
  const Tensor* t = ctx.input_tensor(i);
  if (t == nullptr) return invalid_argument(ctx.label(), ": required input ", i, " (", name, ") is missing or not a tensor");
  return t;
}

std::string describe_or_missing(const Tensor* t) { return t != nullptr ? t->describe() : std::string("missing"); }

}  // namespace onyx::cpu
