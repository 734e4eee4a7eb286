// Conversions between the reader's TensorProto and onyx Tensors/Values. Raw
// data that is suitably aligned is borrowed in place (the tensor keeps the
// model's bytes alive), so large weights are never copied.
#pragma once

#include "model/onnx_proto.h"
#include "model/reader.h"
#include "onyx/status.h"
#include "onyx/value.h"

namespace onyx::model {

Result<Tensor> tensor_from_proto(const TensorProto& proto);
// Densifies a SparseTensorProto (values + indices, linear or coordinate form).
Result<Tensor> tensor_from_sparse_proto(const SparseTensorProto& proto);
// A host tensor as a TensorProto with raw_data (strings go to string_data).
TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name = "");

// Test data: SequenceProto / OptionalProto / MapProto to Values.
Result<Value> value_from_sequence_proto(const SequenceProto& proto);
Result<Value> value_from_optional_proto(const OptionalProto& proto);

// The ValueType a TypeProto describes (shape not included).
ValueType value_type_from_proto(const TypeProto& proto);

}  // namespace onyx::model
