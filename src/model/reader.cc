// Decodes ONNX models (onnx.proto) and test data (onnx-data.proto) from the
// protobuf wire format: bounds-checked, depth-limited, zero-copy for raw_data.
#include "model/reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_map>

#include "model/wire.h"

namespace onyx::model {
namespace {

static_assert(std::endian::native == std::endian::little,
              "packed float/double fields are copied as little-endian bytes");

using wire::Cursor;
using wire::WireType;

struct Context {
  const ReaderLimits& limits;
  std::shared_ptr<const void> backing;  // owner of the bytes being decoded
  int depth = 0;
};

// ---- Names for error messages ------------------------------------------------

std::string quoted_name(const char* kind, const std::string& name) {
  return name.empty() ? std::string(kind) : str_cat(kind, " '", name, "'");
}
std::string describe(const ModelProto&) { return "ModelProto"; }
std::string describe(const GraphProto& m) { return quoted_name("GraphProto", m.name); }
std::string describe(const NodeProto& m) {
  return m.op_type.empty() ? quoted_name("NodeProto", m.name) : str_cat(quoted_name("NodeProto", m.name), " (", m.op_type, ")");
}
std::string describe(const AttributeProto& m) { return quoted_name("AttributeProto", m.name); }
std::string describe(const TensorProto& m) { return quoted_name("TensorProto", m.name); }
std::string describe(const SparseTensorProto&) { return "SparseTensorProto"; }
std::string describe(const ValueInfoProto& m) { return quoted_name("ValueInfoProto", m.name); }
std::string describe(const TypeProto&) { return "TypeProto"; }
std::string describe(const TensorShapeProto&) { return "TensorShapeProto"; }
std::string describe(const TensorShapeProto::Dimension&) { return "TensorShapeProto.Dimension"; }
std::string describe(const OperatorSetIdProto&) { return "OperatorSetIdProto"; }
std::string describe(const StringStringEntryProto&) { return "StringStringEntryProto"; }
std::string describe(const FunctionProto& m) { return quoted_name("FunctionProto", m.name); }
std::string describe(const SequenceProto& m) { return quoted_name("SequenceProto", m.name); }
std::string describe(const MapProto& m) { return quoted_name("MapProto", m.name); }
std::string describe(const OptionalProto& m) { return quoted_name("OptionalProto", m.name); }

// TypeProto's nested messages (Tensor, Sequence, Map, Optional, SparseTensor)
// are folded into the flat TypeProto mirror; these views decode into it.
struct TensorTypeBody {
  TypeProto& type;
};
struct ElemTypeBody {  // TypeProto.Sequence and TypeProto.Optional
  TypeProto& type;
};
struct MapTypeBody {
  TypeProto& type;
};
std::string describe(const TensorTypeBody&) { return "TypeProto.Tensor"; }
std::string describe(const ElemTypeBody&) { return "TypeProto.Sequence/Optional"; }
std::string describe(const MapTypeBody&) { return "TypeProto.Map"; }

// ---- Field primitives --------------------------------------------------------

Status read_tag(Cursor& in, uint32_t& field, WireType& type) {
  in.mark_field_start();
  const size_t at = in.offset();
  uint64_t tag = 0;
  if (!in.read_varint(tag)) return invalid_model("truncated or malformed field tag at byte ", at);
  const uint64_t number = tag >> 3;
  const uint32_t wire_type = static_cast<uint32_t>(tag & 7);
  if (number == 0 || number > wire::kMaxFieldNumber) return invalid_model("invalid field number ", number, " at byte ", at);
  if (wire_type == 3 || wire_type == 4) {
    return invalid_model("field ", number, " at byte ", at, " is a protobuf group (wire type ", wire_type,
                         "), which ONNX messages never contain");
  }
  if (wire_type > 5) return invalid_model("field ", number, " at byte ", at, " has invalid wire type ", wire_type);
  field = static_cast<uint32_t>(number);
  type = static_cast<WireType>(wire_type);
  return {};
}

// Unknown fields (and known fields sent with an unexpected wire type) are
// skipped, as protobuf itself does, so newer producers stay readable.
Status skip_field(Cursor& in, uint32_t field, WireType type) {
  const size_t at = in.field_start();
  if (type == WireType::kLengthDelimited) {
    Cursor probe = in;
    uint64_t length = 0;
    if (probe.read_varint(length) && length > probe.remaining()) {
      return invalid_model("field ", field, " at byte ", at, " announces ", length, " bytes but only ", probe.remaining(),
                           " remain");
    }
  }
  if (!in.skip(type)) {
    return invalid_model("truncated field ", field, " (wire type ", static_cast<int>(type), ") at byte ", at);
  }
  return {};
}

Status read_bytes(Cursor& in, uint32_t field, std::string_view& bytes) {
  const size_t at = in.field_start();
  if (in.read_length_delimited(bytes)) return {};
  Cursor probe = in;
  uint64_t length = 0;
  if (!probe.read_varint(length)) return invalid_model("truncated or malformed length of field ", field, " at byte ", at);
  return invalid_model("field ", field, " at byte ", at, " announces ", length, " bytes but only ", probe.remaining(),
                       " remain");
}

Status read_varint(Cursor& in, uint32_t field, uint64_t& value) {
  const size_t at = in.field_start();
  if (!in.read_varint(value)) return invalid_model("truncated or malformed varint in field ", field, " at byte ", at);
  return {};
}

Status field_int64(Cursor& in, uint32_t field, WireType type, int64_t& out) {
  if (type != WireType::kVarint) return skip_field(in, field, type);
  uint64_t value = 0;
  ONYX_RETURN_IF_ERROR(read_varint(in, field, value));
  out = static_cast<int64_t>(value);
  return {};
}

// int32 and enum fields travel as sign-extended 64-bit varints; keep the low 32 bits.
Status field_int32(Cursor& in, uint32_t field, WireType type, int32_t& out) {
  int64_t value = out;
  ONYX_RETURN_IF_ERROR(field_int64(in, field, type, value));
  out = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(value)));
  return {};
}

Status field_float(Cursor& in, uint32_t field, WireType type, float& out) {
  if (type != WireType::kFixed32) return skip_field(in, field, type);
  const size_t at = in.field_start();
  uint32_t bits = 0;
  if (!in.read_fixed32(bits)) return invalid_model("truncated float in field ", field, " at byte ", at);
  std::memcpy(&out, &bits, 4);
  return {};
}

Status field_string(Cursor& in, uint32_t field, WireType type, std::string& out) {
  if (type != WireType::kLengthDelimited) return skip_field(in, field, type);
  std::string_view bytes;
  ONYX_RETURN_IF_ERROR(read_bytes(in, field, bytes));
  out.assign(bytes.data(), bytes.size());
  return {};
}

Status field_string_list(Cursor& in, uint32_t field, WireType type, std::vector<std::string>& out) {
  if (type != WireType::kLengthDelimited) return skip_field(in, field, type);
  std::string_view bytes;
  ONYX_RETURN_IF_ERROR(read_bytes(in, field, bytes));
  out.emplace_back(bytes);
  return {};
}

// Repeated int32/int64/uint64/enum: one varint per field, or packed in one
// length-delimited field. Both encodings are valid for any repeated scalar.
template <typename T>
Status field_varint_list(Cursor& in, uint32_t field, WireType type, std::vector<T>& out) {
  if (type == WireType::kVarint) {
    uint64_t value = 0;
    ONYX_RETURN_IF_ERROR(read_varint(in, field, value));
    out.push_back(static_cast<T>(value));
    return {};
  }
  if (type != WireType::kLengthDelimited) return skip_field(in, field, type);
  std::string_view bytes;
  ONYX_RETURN_IF_ERROR(read_bytes(in, field, bytes));
  // Every varint ends in exactly one byte without the high bit, so counting
  // those bounds the allocation by the bytes really present.
  size_t count = 0;
  for (char c : bytes) count += (static_cast<unsigned char>(c) & 0x80) == 0;
  out.reserve(out.size() + count);
  Cursor packed = in.sub(bytes);
  while (!packed.at_end()) {
    uint64_t value = 0;
    const size_t at = packed.offset();
    if (!packed.read_varint(value)) return invalid_model("malformed varint in packed field ", field, " at byte ", at);
    out.push_back(static_cast<T>(value));
  }
  return {};
}

// Repeated float (fixed32) or double (fixed64), packed or not.
template <typename T>
Status field_fixed_list(Cursor& in, uint32_t field, WireType type, std::vector<T>& out) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  constexpr WireType kSingle = sizeof(T) == 4 ? WireType::kFixed32 : WireType::kFixed64;
  const size_t at = in.field_start();
  if (type == kSingle) {
    T value;
    if constexpr (sizeof(T) == 4) {
      uint32_t bits = 0;
      if (!in.read_fixed32(bits)) return invalid_model("truncated value of field ", field, " at byte ", at);
      std::memcpy(&value, &bits, 4);
    } else {
      uint64_t bits = 0;
      if (!in.read_fixed64(bits)) return invalid_model("truncated value of field ", field, " at byte ", at);
      std::memcpy(&value, &bits, 8);
    }
    out.push_back(value);
    return {};
  }
  if (type != WireType::kLengthDelimited) return skip_field(in, field, type);
  std::string_view bytes;
  ONYX_RETURN_IF_ERROR(read_bytes(in, field, bytes));
  if (bytes.size() % sizeof(T) != 0) {
    return invalid_model("packed field ", field, " at byte ", at, " holds ", bytes.size(), " bytes, not a multiple of ",
                         sizeof(T));
  }
  const size_t old_size = out.size();
  out.resize(old_size + bytes.size() / sizeof(T));
  if (!bytes.empty()) std::memcpy(out.data() + old_size, bytes.data(), bytes.size());
  return {};
}

// One decoder per message, declared up front because messages nest
// recursively (GraphProto > NodeProto > AttributeProto > GraphProto).
Status parse(Cursor& in, Context& ctx, StringStringEntryProto& out);
Status parse(Cursor& in, Context& ctx, OperatorSetIdProto& out);
Status parse(Cursor& in, Context& ctx, TensorProto& out);
Status parse(Cursor& in, Context& ctx, SparseTensorProto& out);
Status parse(Cursor& in, Context& ctx, TensorShapeProto::Dimension& out);
Status parse(Cursor& in, Context& ctx, TensorShapeProto& out);
Status parse(Cursor& in, Context& ctx, TensorTypeBody& out);
Status parse(Cursor& in, Context& ctx, ElemTypeBody& out);
Status parse(Cursor& in, Context& ctx, MapTypeBody& out);
Status parse(Cursor& in, Context& ctx, TypeProto& out);
Status parse(Cursor& in, Context& ctx, ValueInfoProto& out);
Status parse(Cursor& in, Context& ctx, AttributeProto& out);
Status parse(Cursor& in, Context& ctx, NodeProto& out);
Status parse(Cursor& in, Context& ctx, GraphProto& out);
Status parse(Cursor& in, Context& ctx, FunctionProto& out);
Status parse(Cursor& in, Context& ctx, ModelProto& out);
Status parse(Cursor& in, Context& ctx, SequenceProto& out);
Status parse(Cursor& in, Context& ctx, MapProto& out);
Status parse(Cursor& in, Context& ctx, OptionalProto& out);

// Decodes an embedded message into `out` (merging, as protobuf does when a
// singular message field repeats). Depth is counted on every level so that
// no input can recurse without bound.
template <typename Message>
Status field_message(Cursor& in, uint32_t field, WireType type, Context& ctx, Message& out) {
  if (type != WireType::kLengthDelimited) return skip_field(in, field, type);
  const size_t at = in.field_start();
  std::string_view bytes;
  ONYX_RETURN_IF_ERROR(read_bytes(in, field, bytes));
  if (ctx.depth >= ctx.limits.max_nesting_depth) {
    return invalid_model("field ", field, " at byte ", at, " nests messages deeper than the limit of ",
                         ctx.limits.max_nesting_depth, " levels");
  }
  Cursor body = in.sub(bytes);
  ++ctx.depth;
  Status status = parse(body, ctx, out);
  --ctx.depth;
  if (!status.is_ok()) return invalid_model(status.message(), " in ", describe(out));
  return {};
}

template <typename Message>
Status field_message_list(Cursor& in, uint32_t field, WireType type, Context& ctx, std::vector<Message>& out) {
  if (type != WireType::kLengthDelimited) return skip_field(in, field, type);
  out.emplace_back();
  return field_message(in, field, type, ctx, out.back());
}

template <typename Message>
Status field_message_ptr(Cursor& in, uint32_t field, WireType type, Context& ctx, std::shared_ptr<Message>& out) {
  if (type != WireType::kLengthDelimited) return skip_field(in, field, type);
  if (!out) out = std::make_shared<Message>();
  return field_message(in, field, type, ctx, *out);
}

template <typename Message>
Status field_message_ptr_list(Cursor& in, uint32_t field, WireType type, Context& ctx,
                              std::vector<std::shared_ptr<Message>>& out) {
  if (type != WireType::kLengthDelimited) return skip_field(in, field, type);
  out.push_back(std::make_shared<Message>());
  return field_message(in, field, type, ctx, *out.back());
}

// The field loop every message shares: `on_field` returns the Status of
// decoding one field it knows, or skips it.
template <typename OnField>
Status for_each_field(Cursor& in, OnField&& on_field) {
  while (!in.at_end()) {
    uint32_t field = 0;
    WireType type = WireType::kVarint;
    ONYX_RETURN_IF_ERROR(read_tag(in, field, type));
    ONYX_RETURN_IF_ERROR(on_field(field, type));
  }
  return {};
}

// ---- onnx.proto messages -----------------------------------------------------

Status parse(Cursor& in, Context&, StringStringEntryProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_string(in, field, type, out.key);
      case 2: return field_string(in, field, type, out.value);
      default: return skip_field(in, field, type);
    }
  });
}

Status parse(Cursor& in, Context&, OperatorSetIdProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_string(in, field, type, out.domain);
      case 2: return field_int64(in, field, type, out.version);
      default: return skip_field(in, field, type);
    }
  });
}

Status parse(Cursor& in, Context& ctx, TensorProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_varint_list(in, field, type, out.dims);
      case 2: return field_int32(in, field, type, out.data_type);
      case 4: return field_fixed_list(in, field, type, out.float_data);
      case 5: return field_varint_list(in, field, type, out.int32_data);
      case 6: return field_string_list(in, field, type, out.string_data);
      case 7: return field_varint_list(in, field, type, out.int64_data);
      case 8: return field_string(in, field, type, out.name);
      case 9: {
        if (type != WireType::kLengthDelimited) return skip_field(in, field, type);
        ONYX_RETURN_IF_ERROR(read_bytes(in, field, out.raw_data));
        out.has_raw_data = true;
        out.backing = ctx.backing;  // the view points into the decoded buffer
        return {};
      }
      case 10: return field_fixed_list(in, field, type, out.double_data);
      case 11: return field_varint_list(in, field, type, out.uint64_data);
      case 12: return field_string(in, field, type, out.doc_string);
      case 13: return field_message_list(in, field, type, ctx, out.external_data);
      case 14: return field_int32(in, field, type, out.data_location);
      default: return skip_field(in, field, type);  // 3 segment, 16 metadata_props: not kept
    }
  });
}

Status parse(Cursor& in, Context& ctx, SparseTensorProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_message(in, field, type, ctx, out.values);
      case 2: return field_message(in, field, type, ctx, out.indices);
      case 3: return field_varint_list(in, field, type, out.dims);
      default: return skip_field(in, field, type);
    }
  });
}

Status parse(Cursor& in, Context&, TensorShapeProto::Dimension& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1:
        if (type != WireType::kVarint) return skip_field(in, field, type);
        // oneof value: dim_value replaces a dim_param seen before.
        out.has_value = true;
        out.dim_param.clear();
        return field_int64(in, field, type, out.dim_value);
      case 2:
        if (type != WireType::kLengthDelimited) return skip_field(in, field, type);
        out.has_value = false;
        out.dim_value = 0;
        return field_string(in, field, type, out.dim_param);
      case 3: return field_string(in, field, type, out.denotation);
      default: return skip_field(in, field, type);
    }
  });
}

Status parse(Cursor& in, Context& ctx, TensorShapeProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    if (field == 1) return field_message_list(in, field, type, ctx, out.dim);
    return skip_field(in, field, type);
  });
}

Status parse(Cursor& in, Context& ctx, TensorTypeBody& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_int32(in, field, type, out.type.elem_type);
      case 2:
        if (type != WireType::kLengthDelimited) return skip_field(in, field, type);
        out.type.has_shape = true;
        return field_message(in, field, type, ctx, out.type.shape);
      default: return skip_field(in, field, type);
    }
  });
}

Status parse(Cursor& in, Context& ctx, ElemTypeBody& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    if (field == 1) return field_message_ptr(in, field, type, ctx, out.type.elem);
    return skip_field(in, field, type);
  });
}

Status parse(Cursor& in, Context& ctx, MapTypeBody& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_int32(in, field, type, out.type.key_type);
      case 2: return field_message_ptr(in, field, type, ctx, out.type.elem);
      default: return skip_field(in, field, type);
    }
  });
}

// Switching the oneof to another member drops what the previous one held.
void set_type_case(TypeProto& type, TypeProto::Case value_case) {
  if (type.value_case == value_case) return;
  type.value_case = value_case;
  type.elem_type = 0;
  type.has_shape = false;
  type.shape = {};
  type.elem.reset();
  type.key_type = 0;
}

Status parse(Cursor& in, Context& ctx, TypeProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    if (type != WireType::kLengthDelimited) return skip_field(in, field, type);
    switch (field) {
      case 1:
      case 8: {
        set_type_case(out, field == 1 ? TypeProto::Case::kTensorType : TypeProto::Case::kSparseTensorType);
        TensorTypeBody body{out};
        return field_message(in, field, type, ctx, body);
      }
      case 4:
      case 9: {
        set_type_case(out, field == 4 ? TypeProto::Case::kSequenceType : TypeProto::Case::kOptionalType);
        ElemTypeBody body{out};
        return field_message(in, field, type, ctx, body);
      }
      case 5: {
        set_type_case(out, TypeProto::Case::kMapType);
        MapTypeBody body{out};
        return field_message(in, field, type, ctx, body);
      }
      case 6: return field_string(in, field, type, out.denotation);
      default: return skip_field(in, field, type);  // 7 opaque_type: no mirror, left unset
    }
  });
}

Status parse(Cursor& in, Context& ctx, ValueInfoProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_string(in, field, type, out.name);
      case 2:
        if (type != WireType::kLengthDelimited) return skip_field(in, field, type);
        out.has_type = true;
        return field_message(in, field, type, ctx, out.type);
      case 3: return field_string(in, field, type, out.doc_string);
      case 4: return field_message_list(in, field, type, ctx, out.metadata_props);
      default: return skip_field(in, field, type);
    }
  });
}

Status parse(Cursor& in, Context& ctx, AttributeProto& out) {
  // Which value fields appeared, to infer `type` for old files that omit it.
  uint32_t seen_kinds = 0;
  int32_t only_kind = AttributeProto::UNDEFINED;
  auto saw = [&](int32_t kind) {
    if (only_kind != kind) ++seen_kinds;
    only_kind = kind;
  };
  Status status = for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_string(in, field, type, out.name);
      case 2:
        if (type == WireType::kFixed32) saw(AttributeProto::FLOAT);
        return field_float(in, field, type, out.f);
      case 3:
        if (type == WireType::kVarint) saw(AttributeProto::INT);
        return field_int64(in, field, type, out.i);
      case 4:
        if (type == WireType::kLengthDelimited) saw(AttributeProto::STRING);
        return field_string(in, field, type, out.s);
      case 5:
        if (type == WireType::kLengthDelimited) saw(AttributeProto::TENSOR);
        return field_message_ptr(in, field, type, ctx, out.t);
      case 6:
        if (type == WireType::kLengthDelimited) saw(AttributeProto::GRAPH);
        return field_message_ptr(in, field, type, ctx, out.g);
      case 7: saw(AttributeProto::FLOATS); return field_fixed_list(in, field, type, out.floats);
      case 8: saw(AttributeProto::INTS); return field_varint_list(in, field, type, out.ints);
      case 9: saw(AttributeProto::STRINGS); return field_string_list(in, field, type, out.strings);
      case 10: saw(AttributeProto::TENSORS); return field_message_list(in, field, type, ctx, out.tensors);
      case 11: saw(AttributeProto::GRAPHS); return field_message_ptr_list(in, field, type, ctx, out.graphs);
      case 13: return field_string(in, field, type, out.doc_string);
      case 14:
        if (type == WireType::kLengthDelimited) saw(AttributeProto::TYPE_PROTO);
        return field_message_ptr(in, field, type, ctx, out.tp);
      case 15: saw(AttributeProto::TYPE_PROTOS); return field_message_list(in, field, type, ctx, out.type_protos);
      case 20: return field_int32(in, field, type, out.type);
      case 21: return field_string(in, field, type, out.ref_attr_name);
      case 22:
        if (type == WireType::kLengthDelimited) saw(AttributeProto::SPARSE_TENSOR);
        return field_message_ptr(in, field, type, ctx, out.sparse_tensor);
      case 23:
        saw(AttributeProto::SPARSE_TENSORS);
        return field_message_list(in, field, type, ctx, out.sparse_tensors);
      default: return skip_field(in, field, type);
    }
  });
  if (status.is_ok() && out.type == AttributeProto::UNDEFINED && seen_kinds == 1 && out.ref_attr_name.empty()) {
    out.type = only_kind;
  }
  return status;
}

Status parse(Cursor& in, Context& ctx, NodeProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_string_list(in, field, type, out.input);
      case 2: return field_string_list(in, field, type, out.output);
      case 3: return field_string(in, field, type, out.name);
      case 4: return field_string(in, field, type, out.op_type);
      case 5: return field_message_list(in, field, type, ctx, out.attribute);
      case 6: return field_string(in, field, type, out.doc_string);
      case 7: return field_string(in, field, type, out.domain);
      case 8: return field_string(in, field, type, out.overload);
      case 9: return field_message_list(in, field, type, ctx, out.metadata_props);
      default: return skip_field(in, field, type);  // 10 device_configurations: not kept
    }
  });
}

Status parse(Cursor& in, Context& ctx, GraphProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_message_list(in, field, type, ctx, out.node);
      case 2: return field_string(in, field, type, out.name);
      case 5: return field_message_list(in, field, type, ctx, out.initializer);
      case 10: return field_string(in, field, type, out.doc_string);
      case 11: return field_message_list(in, field, type, ctx, out.input);
      case 12: return field_message_list(in, field, type, ctx, out.output);
      case 13: return field_message_list(in, field, type, ctx, out.value_info);
      case 15: return field_message_list(in, field, type, ctx, out.sparse_initializer);
      case 16: return field_message_list(in, field, type, ctx, out.metadata_props);
      default: return skip_field(in, field, type);  // 14 quantization_annotation: not kept
    }
  });
}

Status parse(Cursor& in, Context& ctx, FunctionProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_string(in, field, type, out.name);
      case 4: return field_string_list(in, field, type, out.input);
      case 5: return field_string_list(in, field, type, out.output);
      case 6: return field_string_list(in, field, type, out.attribute);
      case 7: return field_message_list(in, field, type, ctx, out.node);
      case 8: return field_string(in, field, type, out.doc_string);
      case 9: return field_message_list(in, field, type, ctx, out.opset_import);
      case 10: return field_string(in, field, type, out.domain);
      case 11: return field_message_list(in, field, type, ctx, out.attribute_proto);
      case 12: return field_message_list(in, field, type, ctx, out.value_info);
      case 13: return field_string(in, field, type, out.overload);
      case 14: return field_message_list(in, field, type, ctx, out.metadata_props);
      default: return skip_field(in, field, type);
    }
  });
}

Status parse(Cursor& in, Context& ctx, ModelProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_int64(in, field, type, out.ir_version);
      case 2: return field_string(in, field, type, out.producer_name);
      case 3: return field_string(in, field, type, out.producer_version);
      case 4: return field_string(in, field, type, out.domain);
      case 5: return field_int64(in, field, type, out.model_version);
      case 6: return field_string(in, field, type, out.doc_string);
      case 7: return field_message_ptr(in, field, type, ctx, out.graph);
      case 8: return field_message_list(in, field, type, ctx, out.opset_import);
      case 14: return field_message_list(in, field, type, ctx, out.metadata_props);
      case 25: return field_message_list(in, field, type, ctx, out.functions);
      default: return skip_field(in, field, type);  // 20 training_info, 26 configuration: not kept
    }
  });
}

// ---- onnx-data.proto messages ------------------------------------------------
// sparse_tensor_values / sparse_tensor_value (field 4) have no mirror and are skipped.

Status parse(Cursor& in, Context& ctx, SequenceProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_string(in, field, type, out.name);
      case 2: return field_int32(in, field, type, out.elem_type);
      case 3: return field_message_list(in, field, type, ctx, out.tensor_values);
      case 5: return field_message_list(in, field, type, ctx, out.sequence_values);
      case 6: return field_message_list(in, field, type, ctx, out.map_values);
      case 7: return field_message_list(in, field, type, ctx, out.optional_values);
      default: return skip_field(in, field, type);
    }
  });
}

Status parse(Cursor& in, Context& ctx, MapProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_string(in, field, type, out.name);
      case 2: return field_int32(in, field, type, out.key_type);
      case 3: return field_varint_list(in, field, type, out.keys);
      case 4: return field_string_list(in, field, type, out.string_keys);
      case 5: return field_message_ptr(in, field, type, ctx, out.values);
      default: return skip_field(in, field, type);
    }
  });
}

Status parse(Cursor& in, Context& ctx, OptionalProto& out) {
  return for_each_field(in, [&](uint32_t field, WireType type) -> Status {
    switch (field) {
      case 1: return field_string(in, field, type, out.name);
      case 2: return field_int32(in, field, type, out.elem_type);
      case 3: return field_message_ptr(in, field, type, ctx, out.tensor_value);
      case 5: return field_message_ptr(in, field, type, ctx, out.sequence_value);
      case 6: return field_message_ptr(in, field, type, ctx, out.map_value);
      case 7: return field_message_ptr(in, field, type, ctx, out.optional_value);
      default: return skip_field(in, field, type);
    }
  });
}

// Decodes a whole buffer as one top-level message; `backing` owns the bytes.
template <typename Message>
Result<Message> decode(std::string_view bytes, std::shared_ptr<const void> backing, const ReaderLimits& limits) {
  Message message;
  Context ctx{limits, std::move(backing)};
  Cursor in(bytes);
  Status status = parse(in, ctx, message);
  if (!status.is_ok()) return invalid_model(status.message(), " in ", describe(message));
  return message;
}

// Copies caller-owned bytes once so that raw_data views outlive the caller's buffer.
std::shared_ptr<const std::string> own_bytes(std::string_view bytes) {
  return std::make_shared<const std::string>(bytes);
}

// ---- Files -------------------------------------------------------------------

struct MappedFile;

// The live file mappings, so that release_mapped_pages touches nothing else:
// dropping the pages of heap memory would zero it.
std::mutex& mappings_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::set<const MappedFile*>& live_mappings() {
  static std::set<const MappedFile*> mappings;
  return mappings;
}

// A read-only mapping, unmapped when the last TensorProto/ModelProto viewing it goes.
struct MappedFile {
  void* address = nullptr;
  size_t size = 0;
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (address == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mappings_mutex());
      live_mappings().erase(this);
    }
    munmap(address, size);
  }
  std::string_view bytes() const { return {static_cast<const char*>(address), size}; }
  bool contains(const void* data, size_t bytes) const {
    const auto begin = reinterpret_cast<uintptr_t>(address), p = reinterpret_cast<uintptr_t>(data);
    return p >= begin && p - begin <= size && bytes <= size - (p - begin);
  }
};

// Drops the whole pages inside [data, data + bytes), which a live mapping holds. Needs mappings_mutex().
void drop_pages(const void* data, size_t bytes) {
  static const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto p = reinterpret_cast<uintptr_t>(data);
  const uintptr_t first = (p + page - 1) / page * page;
  const uintptr_t last = (p + bytes) / page * page;
  // A private read-only file mapping is never written, so dropped pages come
  // back from the file, unchanged, on the next read.
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

Result<std::shared_ptr<const MappedFile>> map_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return invalid_argument("cannot open '", path, "': ", std::strerror(errno));
  struct stat info {};
  if (fstat(fd, &info) != 0) {
    const int error = errno;
    close(fd);
    return invalid_argument("cannot stat '", path, "': ", std::strerror(error));
  }
  if (!S_ISREG(info.st_mode)) {
    close(fd);
    return invalid_argument("'", path, "' is not a regular file");
  }
  auto file = std::make_shared<MappedFile>();
  file->size = static_cast<size_t>(info.st_size);
  if (file->size > 0) {
    void* address = mmap(nullptr, file->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      const int error = errno;
      close(fd);
      return invalid_argument("cannot map '", path, "' (", file->size, " bytes): ", std::strerror(error));
    }
    file->address = address;
    std::lock_guard<std::mutex> lock(mappings_mutex());
    live_mappings().insert(file.get());
  }
  close(fd);  // the mapping stays valid without the descriptor
  return std::shared_ptr<const MappedFile>(std::move(file));
}

// ---- External data -----------------------------------------------------------

bool parse_decimal(const std::string& text, uint64_t& value) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t result = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (result > (UINT64_MAX - digit) / 10) return false;
    result = result * 10 + digit;
  }
  value = result;
  return true;
}

// A location must stay inside the model's folder: relative, no '..' step.
// Backslashes count as separators too, so Windows-made paths cannot escape.
Status check_location(const std::string& location, const std::string& label) {
  if (location.empty()) return invalid_model(label, ": external data has an empty 'location'");
  if (location.find('\0') != std::string::npos) return invalid_model(label, ": external data location contains a NUL byte");
  if (location.front() == '/' || location.front() == '\\') {
    return invalid_model(label, ": external data location '", location, "' is an absolute path; it must be relative to the model's folder");
  }
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find_first_of("/\\", start);
    if (end == std::string::npos) end = location.size();
    if (location.compare(start, end - start, "..") == 0) {
      return invalid_model(label, ": external data location '", location, "' contains a '..' component; it must stay inside the model's folder");
    }
    start = end + 1;
  }
  return {};
}

Result<std::string> real_path(const std::string& path) {
  char* resolved = realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return invalid_model("cannot resolve '", path, "': ", std::strerror(errno));
  std::string result(resolved);
  std::free(resolved);
  return result;
}

// Resolves the external data of many tensors, mapping each file once.
class ExternalDataLoader {
 public:
  explicit ExternalDataLoader(std::string base_dir) : base_dir_(std::move(base_dir)) {}

  Status load(TensorProto& tensor) {
    const std::string label = quoted_name("tensor", tensor.name);
    std::string location;
    uint64_t offset = 0;
    uint64_t length = 0;
    bool has_length = false;
    for (const StringStringEntryProto& entry : tensor.external_data) {
      if (entry.key == "location") {
        location = entry.value;
      } else if (entry.key == "offset") {
        if (!parse_decimal(entry.value, offset)) return invalid_model(label, ": external data offset '", entry.value, "' is not a non-negative integer");
      } else if (entry.key == "length") {
        if (!parse_decimal(entry.value, length)) return invalid_model(label, ": external data length '", entry.value, "' is not a non-negative integer");
        has_length = true;
      }  // "checksum" and unknown keys are not needed to read the bytes
    }
    ONYX_RETURN_IF_ERROR(check_location(location, label));
    if (base_dir_.empty()) {
      return invalid_model(label, " keeps its data in external file '", location,
                           "', but the model was read from bytes without a base directory to find it in");
    }
    if (real_base_.empty()) {
      auto base = real_path(base_dir_);
      if (!base.is_ok()) return invalid_model(label, ": external data folder: ", base.status().message());
      real_base_ = std::move(base).value();
      if (real_base_.back() != '/') real_base_ += '/';
    }
    // Symlinks may point anywhere: judge where the path really leads.
    auto resolved = real_path(real_base_ + location);
    if (!resolved.is_ok()) return invalid_model(label, ": external data file: ", resolved.status().message());
    const std::string& file_path = resolved.value();
    if (file_path.compare(0, real_base_.size(), real_base_) != 0) {
      return invalid_model(label, ": external data location '", location, "' resolves to '", file_path,
                           "', outside the model's folder '", real_base_, "'");
    }
    std::shared_ptr<const MappedFile>& file = files_[file_path];
    if (!file) {
      auto mapped = map_file(file_path);
      if (!mapped.is_ok()) return invalid_model(label, ": external data file: ", mapped.status().message());
      file = std::move(mapped).value();
    }
    if (offset > file->size) {
      return invalid_model(label, ": external data offset ", offset, " is past the end of '", location, "' (", file->size, " bytes)");
    }
    if (!has_length) length = file->size - offset;
    if (length > file->size - offset) {
      return invalid_model(label, ": external data [", offset, ", ", offset, "+", length, ") runs past the end of '", location,
                           "' (", file->size, " bytes)");
    }
    tensor.raw_data = file->bytes().substr(static_cast<size_t>(offset), static_cast<size_t>(length));
    tensor.has_raw_data = true;
    tensor.backing = file;
    return {};
  }

 private:
  std::string base_dir_;
  std::string real_base_;
  std::unordered_map<std::string, std::shared_ptr<const MappedFile>> files_;
};

constexpr int32_t kExternal = 1;  // TensorProto.DataLocation.EXTERNAL

// Visits every tensor a model holds (initializers, attribute tensors, sparse
// tensors, in subgraphs and functions too) and loads the external ones.
class ExternalDataResolver {
 public:
  explicit ExternalDataResolver(ExternalDataLoader& loader) : loader_(loader) {}

  Status tensor(TensorProto& t) { return t.data_location == kExternal ? loader_.load(t) : Status(); }
  Status sparse(SparseTensorProto& s) {
    ONYX_RETURN_IF_ERROR(tensor(s.values));
    return tensor(s.indices);
  }
  Status attribute(AttributeProto& a) {
    if (a.t) ONYX_RETURN_IF_ERROR(tensor(*a.t));
    for (TensorProto& t : a.tensors) ONYX_RETURN_IF_ERROR(tensor(t));
    if (a.sparse_tensor) ONYX_RETURN_IF_ERROR(sparse(*a.sparse_tensor));
    for (SparseTensorProto& s : a.sparse_tensors) ONYX_RETURN_IF_ERROR(sparse(s));
    if (a.g) ONYX_RETURN_IF_ERROR(graph(*a.g));
    for (auto& g : a.graphs) {
      if (g) ONYX_RETURN_IF_ERROR(graph(*g));
    }
    return {};
  }
  Status nodes(std::vector<NodeProto>& nodes) {
    for (NodeProto& node : nodes) {
      for (AttributeProto& a : node.attribute) ONYX_RETURN_IF_ERROR(attribute(a));
    }
    return {};
  }
  Status graph(GraphProto& g) {
    for (TensorProto& t : g.initializer) ONYX_RETURN_IF_ERROR(tensor(t));
    for (SparseTensorProto& s : g.sparse_initializer) ONYX_RETURN_IF_ERROR(sparse(s));
    return nodes(g.node);
  }
  Status model(ModelProto& m) {
    if (m.graph) ONYX_RETURN_IF_ERROR(graph(*m.graph));
    for (FunctionProto& f : m.functions) {
      ONYX_RETURN_IF_ERROR(nodes(f.node));
      for (AttributeProto& a : f.attribute_proto) ONYX_RETURN_IF_ERROR(attribute(a));
    }
    return {};
  }

 private:
  ExternalDataLoader& loader_;
};

Result<ModelProto> decode_model(std::string_view bytes, std::shared_ptr<const void> backing, const std::string& base_dir,
                                const ReaderLimits& limits) {
  auto model = decode<ModelProto>(bytes, backing, limits);
  if (!model.is_ok()) return model.status();
  model->backing = std::move(backing);
  ExternalDataLoader loader(base_dir);
  ONYX_RETURN_IF_ERROR(ExternalDataResolver(loader).model(model.value()));
  return model;
}

std::string parent_folder(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Result<ModelProto> read_model_file(const std::string& path, const ReaderLimits& limits) {
  auto file = map_file(path);
  if (!file.is_ok()) return invalid_argument("cannot read model: ", file.status().message());
  std::shared_ptr<const MappedFile> mapping = std::move(file).value();
  if (mapping->size == 0) return invalid_model("model file '", path, "' is empty");
  const std::string_view bytes = mapping->bytes();
  auto model = decode_model(bytes, std::move(mapping), parent_folder(path), limits);
  if (!model.is_ok()) return invalid_model("model '", path, "': ", model.status().message());
  return model;
}

Result<ModelProto> read_model_bytes(std::string_view bytes, const std::string& base_dir, const ReaderLimits& limits) {
  auto owned = own_bytes(bytes);
  const std::string_view view = *owned;
  return decode_model(view, std::move(owned), base_dir, limits);
}

Result<TensorProto> read_tensor_proto(std::string_view bytes) {
  auto owned = own_bytes(bytes);
  const std::string_view view = *owned;
  return decode<TensorProto>(view, std::move(owned), ReaderLimits{});
}

Result<FunctionProto> read_function_proto(std::string_view bytes) {
  auto owned = own_bytes(bytes);
  const std::string_view view = *owned;
  return decode<FunctionProto>(view, std::move(owned), ReaderLimits{});
}

Result<TypeProto> read_type_proto(std::string_view bytes) {
  auto owned = own_bytes(bytes);
  const std::string_view view = *owned;
  return decode<TypeProto>(view, std::move(owned), ReaderLimits{});
}

Result<SequenceProto> read_sequence_proto(std::string_view bytes) {
  auto owned = own_bytes(bytes);
  const std::string_view view = *owned;
  return decode<SequenceProto>(view, std::move(owned), ReaderLimits{});
}

Result<OptionalProto> read_optional_proto(std::string_view bytes) {
  auto owned = own_bytes(bytes);
  const std::string_view view = *owned;
  return decode<OptionalProto>(view, std::move(owned), ReaderLimits{});
}

bool release_mapped_pages(const void* data, size_t bytes) {
  if (data == nullptr || bytes == 0) return false;
  std::lock_guard<std::mutex> lock(mappings_mutex());
  for (const MappedFile* file : live_mappings()) {
    if (file->contains(data, bytes)) {
      drop_pages(data, bytes);
      return true;
    }
  }
  return false;
}

bool release_mapped_pages(const std::shared_ptr<const void>& backing) {
  if (!backing) return false;
  std::lock_guard<std::mutex> lock(mappings_mutex());
  const auto* file = static_cast<const MappedFile*>(backing.get());
  if (live_mappings().count(file) == 0) return false;
  drop_pages(file->address, file->size);
  return true;
}

Status load_external_data(TensorProto& tensor, const std::string& base_dir) {
  if (tensor.data_location != kExternal) return {};
  ExternalDataLoader loader(base_dir);
  return loader.load(tensor);
}

}  // namespace onyx::model
