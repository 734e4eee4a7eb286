// The strided copier and small helpers shared by the CPU tensor kernels.
#include "providers/cpu/tensor/tensor_util.h"

#include <cstring>

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

template <typename T>
void copy_box(T* dst, const T* src, const std::vector<Dim>& dims, ThreadPool* pool) {
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
