// Sessions of models the caller has already read and perhaps rewritten in
// memory (the generator's int8 KV cache rewrite): the model's external data
// was loaded (mapped) when it was read, so nothing is written to disk.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "model/onnx_proto.h"
#include "onyx/session.h"

namespace onyx::session {

struct SessionFactory {
  static std::unique_ptr<InferenceSession> from_model(model::ModelProto model, const SessionOptions& options,
                                                      const std::vector<std::string>& providers);
};

}  // namespace onyx::session
