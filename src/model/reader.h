// Reads ONNX models with onyx's own protobuf wire-format decoder.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "model/onnx_proto.h"
#include "onyx/status.h"

namespace onyx::model {

// Limits that keep a hostile file from exhausting memory or the stack.
struct ReaderLimits {
  int max_nesting_depth = 64;  // subgraphs inside attributes inside subgraphs...
};

// Reads a model from a file (memory-mapped; raw_data views point into the
// mapping). External data is resolved relative to the file's folder and is
// confined to it.
Result<ModelProto> read_model_file(const std::string& path, const ReaderLimits& limits = {});

// Reads a model from bytes. The bytes are copied once into a buffer the model
// owns; `base_dir` (may be empty) is where external data is looked up.
Result<ModelProto> read_model_bytes(std::string_view bytes, const std::string& base_dir = "",
                                    const ReaderLimits& limits = {});

// Decoders for single messages (test data: input_0.pb is a TensorProto).
Result<TensorProto> read_tensor_proto(std::string_view bytes);
Result<TypeProto> read_type_proto(std::string_view bytes);
// The ONNX schema table's function bodies are serialized FunctionProtos.
Result<FunctionProto> read_function_proto(std::string_view bytes);

// ONNX SequenceProto / OptionalProto / MapProto as used by the backend test data.
struct SequenceProto;
struct MapProto;
struct OptionalProto {
  std::string name;
  int32_t elem_type = 0;  // 0 UNDEFINED, 1 TENSOR, 2 SPARSE_TENSOR, 3 SEQUENCE, 4 MAP, 5 OPTIONAL
  std::shared_ptr<TensorProto> tensor_value;
  std::shared_ptr<SequenceProto> sequence_value;
  std::shared_ptr<MapProto> map_value;
  std::shared_ptr<OptionalProto> optional_value;
};
struct SequenceProto {
  std::string name;
  int32_t elem_type = 0;
  std::vector<TensorProto> tensor_values;
  std::vector<SequenceProto> sequence_values;
  std::vector<MapProto> map_values;
  std::vector<OptionalProto> optional_values;
};
struct MapProto {
  std::string name;
  int32_t key_type = 0;
  std::vector<int64_t> keys;
  std::vector<std::string> string_keys;
  std::shared_ptr<SequenceProto> values;
};
Result<SequenceProto> read_sequence_proto(std::string_view bytes);
Result<OptionalProto> read_optional_proto(std::string_view bytes);

// Resolves a tensor whose data_location is EXTERNAL: maps the file named by its
// `location` entry (relative to base_dir, no escaping it) and points raw_data at
// [offset, offset+length).
Status load_external_data(TensorProto& tensor, const std::string& base_dir);

// Lowers resident memory once weights read from a model file have been copied
// or pre-packed: drops the resident pages of [data, data + bytes) when those
// bytes lie in a live model or external-data file mapping, and returns true;
// does nothing to other memory. The bytes stay readable: a later read brings
// the pages back from the file, unchanged.
bool release_mapped_pages(const void* data, size_t bytes);
// The same for the whole mapping a ModelProto's or TensorProto's `backing`
// owns, when it is a file mapping.
bool release_mapped_pages(const std::shared_ptr<const void>& backing);

}  // namespace onyx::model
