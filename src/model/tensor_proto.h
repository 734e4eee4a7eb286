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

// For a kernel that has consumed part of a weight nothing else will read
// (KernelInfo::consumes_constant): drops the resident pages of [data, data +
// bytes) when they lie in a model file mapping (they would come back from the
// file) or in a mapping of onyx's own (a weight copied out of the model, a
// folded constant of 64 MiB or more; they would read as zeros), and returns
// true; does nothing to other memory. Lets a kernel pack a weight without
// holding both copies whole.
bool discard_weight_pages(const void* data, size_t bytes);
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
