// Types and shapes of the internal ops gradient graphs use (their kernels
// are in src/providers/cpu/training/). They have no ONNX schema, so without
// this their outputs would be of unknown type, and providers that claim
// nodes by type, or passes that need shapes, would not see through them.
#include "training/gradient.h"

namespace onyx::training {
namespace {

using graph::TypeAndShape;

const TypeAndShape* at(const std::vector<const TypeAndShape*>& inputs, size_t i) {
  return i < inputs.size() ? inputs[i] : nullptr;
}

// `type_of`'s element type with `shape_of`'s shape (either may be missing).
TypeAndShape like(const TypeAndShape* type_of, const TypeAndShape* shape_of) {
  TypeAndShape out;
  if (type_of != nullptr) out.type = type_of->type;
  if (shape_of != nullptr) {
    out.has_shape = shape_of->has_shape;
    out.shape = shape_of->shape;
  }
  return out;
}

}  // namespace

Result<bool> infer_internal_op(const graph::Node& node, const std::vector<const TypeAndShape*>& inputs,
                               std::vector<TypeAndShape>& outputs) {
  if (node.domain != kInternalDomain || outputs.empty()) return false;
  const std::string& op = node.op_type;
  if (op == "FillLike" || op == "ReluGrad") {  // (like) and (gradient, x): the first input's type and shape
    outputs[0] = like(at(inputs, 0), at(inputs, 0));
  } else if (op == "SumToShapeOf") {  // (gradient, like)
    outputs[0] = like(at(inputs, 0), at(inputs, 1));
  } else if (op == "MaxPoolGrad") {  // (dY, Indices, X) -> dX
    outputs[0] = like(at(inputs, 0), at(inputs, 2));
  } else if (op == "AveragePoolGrad") {  // (dY, X) -> dX
    outputs[0] = like(at(inputs, 0), at(inputs, 1));
  } else if (op == "ConvGrad") {  // (dY, X, W) -> dX, dW, dB
    outputs[0] = like(at(inputs, 0), at(inputs, 1));
    if (outputs.size() > 1) outputs[1] = like(at(inputs, 0), at(inputs, 2));
    if (outputs.size() > 2) outputs[2] = like(at(inputs, 0), nullptr);
  } else if (op == "NegativeLogLikelihoodLossGrad") {  // (dLoss, input, ...) -> d input
    outputs[0] = like(at(inputs, 1), at(inputs, 1));
  } else if (op == "SliceGrad") {  // (gradient, shape, ...): the shape is a value
    outputs[0] = like(at(inputs, 0), nullptr);
  } else {
    return false;
  }
  return true;
}

}  // namespace onyx::training
