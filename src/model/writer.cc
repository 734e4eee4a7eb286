// Encodes ONNX models and tensors in the protobuf wire format, fields in
// field-number order and repeated scalars packed where onnx.proto packs them.
#include "model/writer.h"

#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "model/wire.h"

namespace onyx::model {
namespace {

static_assert(std::endian::native == std::endian::little,
              "packed float/double fields are written as the host's bytes");

using wire::WireType;
using wire::Writer;

constexpr int32_t kExternal = 1;  // TensorProto.DataLocation.EXTERNAL

void write(Writer& w, const StringStringEntryProto& m);
void write(Writer& w, const OperatorSetIdProto& m);
void write(Writer& w, const TensorProto& m);
void write(Writer& w, const SparseTensorProto& m);
void write(Writer& w, const TensorShapeProto& m);
void write(Writer& w, const TypeProto& m);
void write(Writer& w, const ValueInfoProto& m);
void write(Writer& w, const AttributeProto& m);
void write(Writer& w, const NodeProto& m);
void write(Writer& w, const GraphProto& m);
void write(Writer& w, const FunctionProto& m);
void write(Writer& w, const ModelProto& m);

template <typename Message>
void message_field(Writer& w, uint32_t field, const Message& m) {
  const size_t body = w.begin_message(field);
  write(w, m);
  w.end_message(body);
}

template <typename Message>
void message_list(Writer& w, uint32_t field, const std::vector<Message>& list) {
  for (const Message& m : list) message_field(w, field, m);
}

void string_field(Writer& w, uint32_t field, const std::string& s) {
  if (!s.empty()) w.bytes_field(field, s);
}

// Every element is written, empty ones too: an empty node input name means
// "optional input omitted" and must keep its position.
void string_list(Writer& w, uint32_t field, const std::vector<std::string>& list) {
  for (const std::string& s : list) w.bytes_field(field, s);
}

// Fields onnx.proto declares without [packed = true] are written one per tag,
// as protobuf does for proto2, so other readers see what they expect.
void int_list(Writer& w, uint32_t field, const std::vector<int64_t>& list) {
  for (int64_t v : list) w.int_field(field, v);
}

template <typename T>
void packed_varints(Writer& w, uint32_t field, const std::vector<T>& list) {
  if (list.empty()) return;
  const size_t body = w.begin_message(field);
  for (T v : list) {
    if constexpr (std::is_signed_v<T>) {
      w.varint(static_cast<uint64_t>(static_cast<int64_t>(v)));  // int32 sign-extends, as protobuf does
    } else {
      w.varint(static_cast<uint64_t>(v));
    }
  }
  w.end_message(body);
}

template <typename T>
void packed_fixed(Writer& w, uint32_t field, const std::vector<T>& list) {
  if (list.empty()) return;
  w.tag(field, WireType::kLengthDelimited);
  w.varint(list.size() * sizeof(T));
  w.out().append(reinterpret_cast<const char*>(list.data()), list.size() * sizeof(T));
}

void write(Writer& w, const StringStringEntryProto& m) {
  w.bytes_field(1, m.key);
  w.bytes_field(2, m.value);
}

void write(Writer& w, const OperatorSetIdProto& m) {
  w.bytes_field(1, m.domain);  // "" is the default ai.onnx domain; onnx writes it explicitly too
  w.int_field(2, m.version);
}

void write(Writer& w, const TensorProto& m) {
  int_list(w, 1, m.dims);
  if (m.data_type != 0) w.int_field(2, m.data_type);
  packed_fixed(w, 4, m.float_data);
  packed_varints(w, 5, m.int32_data);
  string_list(w, 6, m.string_data);
  packed_varints(w, 7, m.int64_data);
  string_field(w, 8, m.name);
  // A tensor whose bytes live in an external file keeps pointing there (the
  // reader may have mapped them into raw_data, but they are not inlined).
  if (m.has_raw_data && m.data_location != kExternal) w.bytes_field(9, m.raw_data);
  packed_fixed(w, 10, m.double_data);
  packed_varints(w, 11, m.uint64_data);
  string_field(w, 12, m.doc_string);
  message_list(w, 13, m.external_data);
  if (m.data_location != 0) w.int_field(14, m.data_location);
}

void write(Writer& w, const SparseTensorProto& m) {
  message_field(w, 1, m.values);
  message_field(w, 2, m.indices);
  int_list(w, 3, m.dims);
}

void write(Writer& w, const TensorShapeProto& m) {
  for (const TensorShapeProto::Dimension& d : m.dim) {
    const size_t body = w.begin_message(1);
    if (d.has_value) {
      w.int_field(1, d.dim_value);
    } else {
      string_field(w, 2, d.dim_param);
    }
    string_field(w, 3, d.denotation);
    w.end_message(body);
  }
}

// TypeProto.Tensor and TypeProto.SparseTensor share their layout.
void write_tensor_type(Writer& w, uint32_t field, const TypeProto& m) {
  const size_t body = w.begin_message(field);
  if (m.elem_type != 0) w.int_field(1, m.elem_type);
  if (m.has_shape) message_field(w, 2, m.shape);
  w.end_message(body);
}

// TypeProto.Sequence and TypeProto.Optional: one elem_type field.
void write_elem_type(Writer& w, uint32_t field, const TypeProto& m) {
  const size_t body = w.begin_message(field);
  if (m.elem) message_field(w, 1, *m.elem);
  w.end_message(body);
}

void write(Writer& w, const TypeProto& m) {
  using Case = TypeProto::Case;
  switch (m.value_case) {
    case Case::kTensorType: write_tensor_type(w, 1, m); break;
    case Case::kSequenceType: write_elem_type(w, 4, m); break;
    case Case::kMapType: {
      const size_t body = w.begin_message(5);
      w.int_field(1, m.key_type);
      if (m.elem) message_field(w, 2, *m.elem);
      w.end_message(body);
      break;
    }
    default: break;
  }
  string_field(w, 6, m.denotation);
  if (m.value_case == Case::kSparseTensorType) write_tensor_type(w, 8, m);
  if (m.value_case == Case::kOptionalType) write_elem_type(w, 9, m);
}

void write(Writer& w, const ValueInfoProto& m) {
  string_field(w, 1, m.name);
  if (m.has_type) message_field(w, 2, m.type);
  string_field(w, 3, m.doc_string);
  message_list(w, 4, m.metadata_props);
}

void write(Writer& w, const AttributeProto& m) {
  string_field(w, 1, m.name);
  // The value field named by `type` is written even when it holds the
  // default, so that e.g. an INT attribute equal to 0 keeps its `i`.
  if (m.type == AttributeProto::FLOAT || m.f != 0.0f) w.float_field(2, m.f);
  if (m.type == AttributeProto::INT || m.i != 0) w.int_field(3, m.i);
  if (m.type == AttributeProto::STRING || !m.s.empty()) w.bytes_field(4, m.s);
  if (m.t) message_field(w, 5, *m.t);
  if (m.g) message_field(w, 6, *m.g);
  for (float v : m.floats) w.float_field(7, v);
  int_list(w, 8, m.ints);
  string_list(w, 9, m.strings);
  message_list(w, 10, m.tensors);
  for (const auto& g : m.graphs) {
    if (g) {
      message_field(w, 11, *g);
    } else {
      message_field(w, 11, GraphProto{});
    }
  }
  string_field(w, 13, m.doc_string);
  if (m.tp) message_field(w, 14, *m.tp);
  message_list(w, 15, m.type_protos);
  if (m.type != AttributeProto::UNDEFINED) w.int_field(20, m.type);
  string_field(w, 21, m.ref_attr_name);
  if (m.sparse_tensor) message_field(w, 22, *m.sparse_tensor);
  message_list(w, 23, m.sparse_tensors);
}

void write(Writer& w, const NodeProto& m) {
  string_list(w, 1, m.input);
  string_list(w, 2, m.output);
  string_field(w, 3, m.name);
  string_field(w, 4, m.op_type);
  message_list(w, 5, m.attribute);
  string_field(w, 6, m.doc_string);
  string_field(w, 7, m.domain);
  string_field(w, 8, m.overload);
  message_list(w, 9, m.metadata_props);
}

void write(Writer& w, const GraphProto& m) {
  message_list(w, 1, m.node);
  string_field(w, 2, m.name);
  message_list(w, 5, m.initializer);
  string_field(w, 10, m.doc_string);
  message_list(w, 11, m.input);
  message_list(w, 12, m.output);
  message_list(w, 13, m.value_info);
  message_list(w, 15, m.sparse_initializer);
  message_list(w, 16, m.metadata_props);
}

void write(Writer& w, const FunctionProto& m) {
  string_field(w, 1, m.name);
  string_list(w, 4, m.input);
  string_list(w, 5, m.output);
  string_list(w, 6, m.attribute);
  message_list(w, 7, m.node);
  string_field(w, 8, m.doc_string);
  message_list(w, 9, m.opset_import);
  string_field(w, 10, m.domain);
  message_list(w, 11, m.attribute_proto);
  message_list(w, 12, m.value_info);
  string_field(w, 13, m.overload);
  message_list(w, 14, m.metadata_props);
}

void write(Writer& w, const ModelProto& m) {
  if (m.ir_version != 0) w.int_field(1, m.ir_version);
  string_field(w, 2, m.producer_name);
  string_field(w, 3, m.producer_version);
  string_field(w, 4, m.domain);
  if (m.model_version != 0) w.int_field(5, m.model_version);
  string_field(w, 6, m.doc_string);
  if (m.graph) message_field(w, 7, *m.graph);
  message_list(w, 8, m.opset_import);
  message_list(w, 14, m.metadata_props);
  message_list(w, 25, m.functions);
}

}  // namespace

std::string serialize_model(const ModelProto& model) {
  std::string out;
  Writer w(out);
  write(w, model);
  return out;
}

std::string serialize_tensor(const TensorProto& tensor) {
  std::string out;
  Writer w(out);
  write(w, tensor);
  return out;
}

Status write_model_file(const ModelProto& model, const std::string& path) {
  const std::string bytes = serialize_model(model);
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return invalid_argument("cannot write model file '", path, "': ", std::strerror(errno));
  const size_t written = std::fwrite(bytes.data(), 1, bytes.size(), file);
  const int write_error = written == bytes.size() ? 0 : errno;
  if (std::fclose(file) != 0 || write_error != 0 || written != bytes.size()) {
    return runtime_error("cannot write model file '", path, "': ",
                         std::strerror(write_error != 0 ? write_error : errno), " (", written, " of ", bytes.size(),
                         " bytes written)");
  }
  return {};
}

}  // namespace onyx::model
