// TensorProto <-> Tensor. Every typed field of TensorProto is honoured; sub-byte
// types (int4, uint4, float4e2m1, int2, uint2) are unpacked to one element per byte.
#include "model/tensor_proto.h"
#include "tensor/owned_pages.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>


namespace onyx::model {
namespace {

bool is_packed_4bit(DataType t) {
  return t == DataType::kInt4 || t == DataType::kUInt4 || t == DataType::kFloat4E2M1;
}
bool is_packed_2bit(DataType t) { return t == DataType::kInt2 || t == DataType::kUInt2; }

// Unpacks `count` sub-byte elements of `bits` bits each, little end first,
// sign-extending the signed integer types.
void unpack_sub_byte(const uint8_t* src, int64_t count, int bits, bool is_signed, uint8_t* dst) {
  const int per_byte = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  for (int64_t i = 0; i < count; ++i) {
    uint8_t v = static_cast<uint8_t>((src[i / per_byte] >> ((i % per_byte) * bits)) & mask);
    if (is_signed && (v & (1u << (bits - 1)))) v = static_cast<uint8_t>(v | ~mask);
    dst[i] = v;
  }
}

template <typename Src, typename Dst>
Status copy_field(const std::vector<Src>& field, Tensor& t, const char* field_name) {
  if (static_cast<int64_t>(field.size()) != t.size()) {
    return invalid_model("tensor has ", field.size(), " values in ", field_name, ", expected ", t.size(),
                         " for shape ", shape_to_string(t.shape()));
  }
  Dst* out = t.data<Dst>();
  for (size_t i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field[i]);
  return Status::ok();
}

// int32_data carries 16-bit float bit patterns in its low half.
template <typename Half>
Status copy_half_bits(const std::vector<int32_t>& field, Tensor& t) {
  if (static_cast<int64_t>(field.size()) != t.size()) {
    return invalid_model("tensor has ", field.size(), " values in int32_data, expected ", t.size());
  }
  Half* out = t.data<Half>();
  for (size_t i = 0; i < field.size(); ++i) out[i].bits = static_cast<uint16_t>(field[i]);
  return Status::ok();
}

// True when `shape` has at least one element and exactly `bytes` of `elem`-byte elements.
bool nonempty_and_fills(const Shape& shape, size_t elem, size_t bytes) {
  if (elem == 0 || bytes == 0 || bytes % elem != 0) return false;
  const uint64_t want = bytes / elem;
  uint64_t count = 1;
  for (int64_t d : shape) {
    if (d <= 0 || count > want / static_cast<uint64_t>(d)) return false;
    count *= static_cast<uint64_t>(d);
  }
  return count == want;
}

// Copies raw data out of the model's bytes. Where those are a file mapping,
// the pages already copied are dropped block by block, so that a large weight
// is never resident twice (the copy is what onyx reads from now on).
void copy_raw_data(const uint8_t* src, size_t bytes, uint8_t* dst) {
  constexpr uintptr_t kBlock = uintptr_t{4} << 20;  // a multiple of the page size
  size_t done = 0;
  while (done < bytes) {
    const uintptr_t here = reinterpret_cast<uintptr_t>(src + done);
    const size_t n = std::min<size_t>(bytes - done, static_cast<size_t>((here / kBlock + 1) * kBlock - here));
    std::memcpy(dst + done, src + done, n);
    release_mapped_pages(src + done, n);
    done += n;
  }
}

// A large weight copied out of the model gets a mapping of its own: freeing it
// (once kernels have packed their own copies) returns its memory at once and
// leaves no hole in the heap for later allocations, packed weights among them,
// to land in. Small ones come from the host allocator.
Result<Tensor> allocate_weight(DataType dtype, const Shape& shape, size_t bytes) {
  constexpr size_t kOwnMappingBytes = size_t{1} << 20;
  if (bytes >= kOwnMappingBytes) {
    if (void* p = map_owned(bytes)) {
      return Tensor::borrow(dtype, shape, p, Device{},
                            std::shared_ptr<void>(p, [bytes](void* q) { unmap_owned(q, bytes); }));
    }
  }
  return Tensor::create(dtype, shape);
}

}  // namespace

bool discard_weight_pages(const void* data, size_t bytes) {
  return release_mapped_pages(data, bytes) || discard_owned_pages(data, bytes);
}

Result<Tensor> tensor_from_proto(const TensorProto& proto) {
  if (!dtype_is_known(proto.data_type)) {
    return invalid_model("tensor '", proto.name, "' has unknown data_type ", proto.data_type);
  }
  const auto dtype = static_cast<DataType>(proto.data_type);
  Shape shape(proto.dims.begin(), proto.dims.end());
  for (int64_t d : shape) {
    if (d < 0) return invalid_model("tensor '", proto.name, "' has negative dimension ", d);
  }
  if (proto.data_location == 1 && !proto.has_raw_data) {
    return invalid_model("tensor '", proto.name, "' stores its data externally, and it was not loaded");
  }
  if (proto.has_raw_data && proto.backing && dtype != DataType::kString && !is_packed_4bit(dtype) &&
      !is_packed_2bit(dtype)) {
    const auto* src = reinterpret_cast<const uint8_t*>(proto.raw_data.data());
    const size_t align = dtype_size(dtype);
    if (reinterpret_cast<uintptr_t>(src) % align == 0 && nonempty_and_fills(shape, align, proto.raw_data.size())) {
      // In place: the tensor points into the model's bytes and keeps them alive.
      std::shared_ptr<void> keep(std::const_pointer_cast<void>(proto.backing), const_cast<uint8_t*>(src));
      return Tensor::borrow(dtype, shape, const_cast<uint8_t*>(src), Device{}, keep);
    }
  }
  if (proto.has_raw_data && dtype != DataType::kString && !is_packed_4bit(dtype) && !is_packed_2bit(dtype) &&
      nonempty_and_fills(shape, dtype_size(dtype), proto.raw_data.size())) {
    ONYX_ASSIGN_OR_RETURN(Tensor t, allocate_weight(dtype, shape, proto.raw_data.size()));
    copy_raw_data(reinterpret_cast<const uint8_t*>(proto.raw_data.data()), t.bytes(), static_cast<uint8_t*>(t.raw_data()));
    return t;
  }
  ONYX_ASSIGN_OR_RETURN(Tensor t, Tensor::create(dtype, shape));
  const int64_t n = t.size();

  if (proto.has_raw_data) {
    if (dtype == DataType::kString) return invalid_model("string tensor '", proto.name, "' cannot use raw_data");
    const auto* src = reinterpret_cast<const uint8_t*>(proto.raw_data.data());
    if (is_packed_4bit(dtype) || is_packed_2bit(dtype)) {
      const int bits = is_packed_4bit(dtype) ? 4 : 2;
      const int64_t need = (n * bits + 7) / 8;
      if (static_cast<int64_t>(proto.raw_data.size()) != need) {
        return invalid_model("tensor '", proto.name, "' has ", proto.raw_data.size(), " bytes of raw_data, expected ",
                             need);
      }
      unpack_sub_byte(src, n, bits, dtype == DataType::kInt4 || dtype == DataType::kInt2, t.data<uint8_t>());
      return t;
    }
    if (proto.raw_data.size() != t.bytes()) {
      return invalid_model("tensor '", proto.name, "' has ", proto.raw_data.size(), " bytes of raw_data, expected ",
                           t.bytes(), " for ", t.describe());
    }
    copy_raw_data(src, t.bytes(), static_cast<uint8_t*>(t.raw_data()));
    return t;
  }

  switch (dtype) {
    case DataType::kFloat: ONYX_RETURN_IF_ERROR((copy_field<float, float>(proto.float_data, t, "float_data"))); break;
    case DataType::kComplex64: {
      if (static_cast<int64_t>(proto.float_data.size()) != 2 * n) return invalid_model("complex64 tensor '", proto.name, "': wrong float_data size");
      std::memcpy(t.raw_data(), proto.float_data.data(), t.bytes());
      break;
    }
    case DataType::kComplex128: {
      if (static_cast<int64_t>(proto.double_data.size()) != 2 * n) return invalid_model("complex128 tensor '", proto.name, "': wrong double_data size");
      std::memcpy(t.raw_data(), proto.double_data.data(), t.bytes());
      break;
    }
    case DataType::kDouble: ONYX_RETURN_IF_ERROR((copy_field<double, double>(proto.double_data, t, "double_data"))); break;
    case DataType::kInt64: ONYX_RETURN_IF_ERROR((copy_field<int64_t, int64_t>(proto.int64_data, t, "int64_data"))); break;
    case DataType::kUInt64: ONYX_RETURN_IF_ERROR((copy_field<uint64_t, uint64_t>(proto.uint64_data, t, "uint64_data"))); break;
    case DataType::kUInt32: ONYX_RETURN_IF_ERROR((copy_field<uint64_t, uint32_t>(proto.uint64_data, t, "uint64_data"))); break;
    case DataType::kInt32: ONYX_RETURN_IF_ERROR((copy_field<int32_t, int32_t>(proto.int32_data, t, "int32_data"))); break;
    case DataType::kInt16: ONYX_RETURN_IF_ERROR((copy_field<int32_t, int16_t>(proto.int32_data, t, "int32_data"))); break;
    case DataType::kUInt16: ONYX_RETURN_IF_ERROR((copy_field<int32_t, uint16_t>(proto.int32_data, t, "int32_data"))); break;
    case DataType::kInt8: ONYX_RETURN_IF_ERROR((copy_field<int32_t, int8_t>(proto.int32_data, t, "int32_data"))); break;
    case DataType::kUInt8: ONYX_RETURN_IF_ERROR((copy_field<int32_t, uint8_t>(proto.int32_data, t, "int32_data"))); break;
    case DataType::kBool: ONYX_RETURN_IF_ERROR((copy_field<int32_t, bool>(proto.int32_data, t, "int32_data"))); break;
    case DataType::kFloat16: ONYX_RETURN_IF_ERROR(copy_half_bits<Float16>(proto.int32_data, t)); break;
    case DataType::kBFloat16: ONYX_RETURN_IF_ERROR(copy_half_bits<BFloat16>(proto.int32_data, t)); break;
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
      ONYX_RETURN_IF_ERROR((copy_field<int32_t, uint8_t>(proto.int32_data, t, "int32_data")));
      break;
    case DataType::kInt4:
    case DataType::kUInt4:
    case DataType::kFloat4E2M1:
    case DataType::kInt2:
    case DataType::kUInt2: {
      // Packed into int32_data, one byte of packed elements per entry.
      const int bits = is_packed_4bit(dtype) ? 4 : 2;
      const int64_t need = (n * bits + 7) / 8;
      if (static_cast<int64_t>(proto.int32_data.size()) != need) {
        return invalid_model("tensor '", proto.name, "' has ", proto.int32_data.size(), " packed values, expected ", need);
      }
      std::vector<uint8_t> packed(proto.int32_data.begin(), proto.int32_data.end());
      unpack_sub_byte(packed.data(), n, bits, dtype == DataType::kInt4 || dtype == DataType::kInt2, t.data<uint8_t>());
      break;
    }
    case DataType::kString: {
      if (static_cast<int64_t>(proto.string_data.size()) != n) {
        return invalid_model("string tensor '", proto.name, "' has ", proto.string_data.size(), " strings, expected ", n);
      }
      auto* out = t.data<std::string>();
      for (int64_t i = 0; i < n; ++i) out[i] = proto.string_data[static_cast<size_t>(i)];
      break;
    }
    case DataType::kUndefined: return invalid_model("tensor '", proto.name, "' has undefined data_type");
  }
  return t;
}

Result<Tensor> tensor_from_sparse_proto(const SparseTensorProto& proto) {
  ONYX_ASSIGN_OR_RETURN(Tensor values, tensor_from_proto(proto.values));
  ONYX_ASSIGN_OR_RETURN(Tensor indices, tensor_from_proto(proto.indices));
  Shape shape(proto.dims.begin(), proto.dims.end());
  ONYX_ASSIGN_OR_RETURN(Tensor dense, Tensor::create(values.dtype(), shape));
  if (values.dtype() == DataType::kString) return not_implemented("sparse string tensors are not supported");
  const size_t elem = dtype_size(values.dtype());
  std::memset(dense.raw_data(), 0, dense.bytes());
  if (indices.dtype() != DataType::kInt64) return invalid_model("sparse tensor indices must be int64");
  const int64_t nnz = values.size();
  const int64_t total = dense.size();
  const int64_t* idx = indices.data<int64_t>();
  const bool linear = indices.rank() == 1;
  if ((linear && indices.size() != nnz) || (!linear && (indices.rank() != 2 || indices.dim(0) != nnz ||
                                                        indices.dim(1) != static_cast<int64_t>(shape.size())))) {
    return invalid_model("sparse tensor indices ", indices.describe(), " do not match ", nnz, " values");
  }
  for (int64_t i = 0; i < nnz; ++i) {
    int64_t offset = 0;
    if (linear) {
      offset = idx[i];
    } else {
      for (size_t d = 0; d < shape.size(); ++d) {
        const int64_t c = idx[i * static_cast<int64_t>(shape.size()) + static_cast<int64_t>(d)];
        if (c < 0 || c >= shape[d]) return invalid_model("sparse tensor index out of range");
        offset = offset * shape[d] + c;
      }
    }
    if (offset < 0 || offset >= total) return invalid_model("sparse tensor index ", offset, " out of range");
    std::memcpy(static_cast<uint8_t*>(dense.raw_data()) + offset * static_cast<int64_t>(elem),
                static_cast<const uint8_t*>(values.raw_data()) + i * static_cast<int64_t>(elem), elem);
  }
  return dense;
}

TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name) {
  TensorProto proto;
  proto.name = name;
  proto.data_type = static_cast<int32_t>(tensor.dtype());
  proto.dims = tensor.shape();
  if (tensor.dtype() == DataType::kString) {
    const auto* s = tensor.data<std::string>();
    proto.string_data.assign(s, s + tensor.size());
  } else {
    proto.set_raw_data(std::string(static_cast<const char*>(tensor.raw_data()), tensor.bytes()));
  }
  return proto;
}

ValueType value_type_from_proto(const TypeProto& proto) {
  ValueType t;
  switch (proto.value_case) {
    case TypeProto::Case::kTensorType:
      t.kind = ValueType::Kind::kTensor;
      t.elem_type = static_cast<DataType>(proto.elem_type);
      break;
    case TypeProto::Case::kSparseTensorType:
      t.kind = ValueType::Kind::kSparseTensor;
      t.elem_type = static_cast<DataType>(proto.elem_type);
      break;
    case TypeProto::Case::kSequenceType:
      t.kind = ValueType::Kind::kSequence;
      if (proto.elem) t.inner = std::make_shared<ValueType>(value_type_from_proto(*proto.elem));
      break;
    case TypeProto::Case::kOptionalType:
      t.kind = ValueType::Kind::kOptional;
      if (proto.elem) t.inner = std::make_shared<ValueType>(value_type_from_proto(*proto.elem));
      break;
    case TypeProto::Case::kMapType:
      t.kind = ValueType::Kind::kMap;
      t.key_type = static_cast<DataType>(proto.key_type);
      if (proto.elem) t.inner = std::make_shared<ValueType>(value_type_from_proto(*proto.elem));
      break;
    case TypeProto::Case::kNotSet: break;
  }
  return t;
}

Result<Value> value_from_sequence_proto(const SequenceProto& proto) {
  Sequence items;
  ValueType elem;
  for (const auto& t : proto.tensor_values) {
    ONYX_ASSIGN_OR_RETURN(Tensor tensor, tensor_from_proto(t));
    elem = ValueType::tensor(tensor.dtype());
    items.emplace_back(std::move(tensor));
  }
  for (const auto& s : proto.sequence_values) {
    ONYX_ASSIGN_OR_RETURN(Value v, value_from_sequence_proto(s));
    items.push_back(std::move(v));
  }
  for (const auto& o : proto.optional_values) {
    ONYX_ASSIGN_OR_RETURN(Value v, value_from_optional_proto(o));
    items.push_back(std::move(v));
  }
  if (!proto.map_values.empty()) return not_implemented("sequences of maps in test data are not supported");
  return Value::sequence(std::move(items), elem);
}

Result<Value> value_from_optional_proto(const OptionalProto& proto) {
  Value v;
  if (proto.tensor_value) {
    ONYX_ASSIGN_OR_RETURN(Tensor tensor, tensor_from_proto(*proto.tensor_value));
    v = Value(std::move(tensor));
  } else if (proto.sequence_value) {
    ONYX_ASSIGN_OR_RETURN(v, value_from_sequence_proto(*proto.sequence_value));
  } else if (proto.optional_value) {
    ONYX_ASSIGN_OR_RETURN(v, value_from_optional_proto(*proto.optional_value));
  } else {
    return Value::none();
  }
  v.set_optional(true);
  return v;
}

}  // namespace onyx::model
