// Writes ONNX models in the protobuf wire format.
#pragma once

#include <string>

#include "model/onnx_proto.h"
#include "onyx/status.h"

namespace onyx::model {

std::string serialize_model(const ModelProto& model);
std::string serialize_tensor(const TensorProto& tensor);
Status write_model_file(const ModelProto& model, const std::string& path);

}  // namespace onyx::model
