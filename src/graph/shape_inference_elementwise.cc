// Shape inference for element-wise ops: unary ops and activations (same shape),
// broadcasting binary/variadic ops, comparisons (bool), Cast, Where, and the
// normalisations whose main output keeps the input's shape.
#include <algorithm>
#include <limits>

#include "graph/shape_inference_context.h"

namespace onyx::graph::inference {
namespace {

// Output 0 has input 0's type and shape.
Status same_as_input(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_type(0), ctx.input_shape(0));
  return Status::ok();
}

// Identity passes tracked shape values through, keeping Reshape chains precise.
Status identity(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_type(0), ctx.input_shape(0));
  if (const TrackedValue* value = ctx.input_value(0)) ctx.set_output_value(0, *value);
  return Status::ok();
}

// Neg of a tracked value (exported models compute -axis this way).
Status negate(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_type(0), ctx.input_shape(0));
  if (const TrackedValue* value = ctx.input_value(0)) {
    TrackedValue negated;
    negated.is_scalar = value->is_scalar;
    for (const TrackedElement& e : value->elements) {
      negated.elements.push_back(e.known ? TrackedElement::number(-e.value) : TrackedElement{});
    }
    ctx.set_output_value(0, std::move(negated));
  }
  return Status::ok();
}

// Broadcast of all present inputs; out_type kUndefined means input 0's type.
Status broadcast_inputs(InferenceContext& ctx, DataType out_type) {
  if (out_type == DataType::kUndefined) {
    for (size_t i = 0; i < ctx.input_count() && out_type == DataType::kUndefined; ++i) out_type = ctx.input_type(i);
  }
  ctx.set_output_type(0, out_type);
  std::vector<const std::vector<Dim>*> shapes;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    if (!ctx.has_input(i)) continue;
    const std::vector<Dim>* shape = ctx.input_shape(i);
    if (shape == nullptr) return Status::ok();  // one unknown rank: the result's rank is unknown
    shapes.push_back(shape);
  }
  if (shapes.empty()) return Status::ok();
  auto result = broadcast_shapes(shapes);
  if (!result.is_ok()) return ctx.error(result.status().message());
  ctx.set_output_shape(0, std::move(result).value());
  return Status::ok();
}

Status numeric_broadcast(InferenceContext& ctx) { return broadcast_inputs(ctx, DataType::kUndefined); }
Status compare_broadcast(InferenceContext& ctx) { return broadcast_inputs(ctx, DataType::kBool); }

// Add/Sub/Mul/Div on tracked shape values (a Shape(x)[0] * 2 feeding a Reshape).
Status arithmetic(InferenceContext& ctx) {
  ONYX_RETURN_IF_ERROR(broadcast_inputs(ctx, ctx.input_type(0)));
  const TrackedValue* a = ctx.input_value(0);
  const TrackedValue* b = ctx.input_value(1);
  if (a == nullptr || b == nullptr) return Status::ok();
  const size_t n = std::max(a->elements.size(), b->elements.size());
  if ((a->elements.size() != n && a->elements.size() != 1) || (b->elements.size() != n && b->elements.size() != 1)) {
    return Status::ok();
  }
  const std::string& op = ctx.node().op_type;
  TrackedValue result;
  result.is_scalar = a->is_scalar && b->is_scalar;
  for (size_t k = 0; k < n; ++k) {
    const TrackedElement& x = a->elements[a->elements.size() == 1 ? 0 : k];
    const TrackedElement& y = b->elements[b->elements.size() == 1 ? 0 : k];
    TrackedElement out;
    if (x.known && y.known) {
      out.known = true;
      // Overflowing shape arithmetic leaves the element unknown.
      if (op == "Add") {
        out.known = !__builtin_add_overflow(x.value, y.value, &out.value);
      } else if (op == "Sub") {
        out.known = !__builtin_sub_overflow(x.value, y.value, &out.value);
      } else if (op == "Mul") {
        out.known = !__builtin_mul_overflow(x.value, y.value, &out.value);
      } else if (y.value != 0 && !(y.value == -1 && x.value == std::numeric_limits<int64_t>::min())) {
        // Integer Div truncates toward zero in ONNX runtimes; shape values are non-negative.
        out.value = x.value / y.value;
      } else {
        out.known = false;
      }
    } else if (op == "Mul" && ((x.known && x.value == 1) || (y.known && y.value == 1))) {
      out = x.known ? y : x;
    } else if ((op == "Add" || op == "Sub") && y.known && y.value == 0) {
      out = x;
    } else if (op == "Div" && y.known && y.value == 1) {
      out = x;
    }
    result.elements.push_back(std::move(out));
  }
  ctx.set_output_value(0, std::move(result));
  return Status::ok();
}

Status cast(InferenceContext& ctx) {
  const int64_t to = ctx.attr_int("to", 0);
  if (!dtype_is_known(static_cast<int32_t>(to)) || to == 0) return ctx.error("attribute 'to' is ", to, ", not a known type");
  ctx.set_output(0, static_cast<DataType>(to), ctx.input_shape(0));
  if (is_integer_type(static_cast<DataType>(to))) {
    if (const TrackedValue* value = ctx.input_value(0)) ctx.set_output_value(0, *value);
  }
  return Status::ok();
}

Status cast_like(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_type(1), ctx.input_shape(0));
  if (is_integer_type(ctx.input_type(1))) {
    if (const TrackedValue* value = ctx.input_value(0)) ctx.set_output_value(0, *value);
  }
  return Status::ok();
}

// The result takes X's or Y's type, never the condition's (bool), whichever
// of the two is known.
Status where(InferenceContext& ctx) {
  const DataType x = ctx.input_type(1);
  return broadcast_inputs(ctx, x != DataType::kUndefined ? x : ctx.input_type(2));
}

Status bool_same_shape(InferenceContext& ctx) {
  ctx.set_output(0, DataType::kBool, ctx.input_shape(0));
  return Status::ok();
}

Status dropout(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_type(0), ctx.input_shape(0));
  // The mask is bool from opset 10 on (a copy of the input's type before).
  ctx.set_output(1, ctx.since_version() >= 10 ? DataType::kBool : ctx.input_type(0), ctx.input_shape(0));
  return Status::ok();
}

Status batch_normalization(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_type(0), ctx.input_shape(0));
  // Training outputs (running mean/var, saved mean/var) are per channel.
  const std::vector<Dim>* x = ctx.input_shape(0);
  for (size_t i = 1; i < ctx.output_count(); ++i) {
    const size_t stat_input = i == 1 || i == 3 ? 3 : 4;
    DataType type = ctx.input_type(stat_input);
    if (type == DataType::kUndefined) type = ctx.input_type(0);
    std::vector<Dim> channels{x != nullptr && x->size() >= 2 ? (*x)[1] : unknown_dim()};
    ctx.set_output(i, type, x != nullptr && x->size() >= 2 ? &channels : nullptr);
  }
  return Status::ok();
}

// LayerNormalization: Mean and InvStdDev keep the leading dims and have 1 from `axis` on.
Status layer_normalization(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_type(0), ctx.input_shape(0));
  const DataType stash = static_cast<DataType>(ctx.attr_int("stash_type", 1));
  const std::vector<Dim>* x = ctx.input_shape(0);
  std::optional<std::vector<Dim>> reduced;
  if (x != nullptr) {
    const auto axis = normalize_axis(ctx.attr_int("axis", -1), static_cast<int64_t>(x->size()));
    if (!axis) return ctx.error("axis ", ctx.attr_int("axis", -1), " is out of range for input X of rank ", x->size());
    reduced = *x;
    for (size_t d = static_cast<size_t>(*axis); d < reduced->size(); ++d) (*reduced)[d] = Dim::known(1);
  }
  for (size_t i = 1; i < ctx.output_count() && i < 3; ++i) {
    ctx.set_output(i, dtype_is_known(static_cast<int32_t>(stash)) ? stash : DataType::kFloat,
                   reduced ? &*reduced : nullptr);
  }
  return Status::ok();
}

Status dequantize_linear(InferenceContext& ctx) {
  const int64_t output_dtype = ctx.attr_int("output_dtype", 0);
  DataType type = output_dtype != 0 ? static_cast<DataType>(output_dtype) : DataType::kUndefined;
  if (type == DataType::kUndefined && ctx.since_version() >= 19) type = ctx.input_type(1);
  if (type == DataType::kUndefined && ctx.since_version() < 19) type = DataType::kFloat;
  ctx.set_output(0, type, ctx.input_shape(0));
  return Status::ok();
}

Status quantize_linear(InferenceContext& ctx) {
  const int64_t output_dtype = ctx.attr_int("output_dtype", 0);
  DataType type = output_dtype != 0 ? static_cast<DataType>(output_dtype) : ctx.input_type(2);
  if (type == DataType::kUndefined && !ctx.has_input(2)) type = DataType::kUInt8;
  ctx.set_output(0, type, ctx.input_shape(0));
  return Status::ok();
}

Status dynamic_quantize_linear(InferenceContext& ctx) {
  ctx.set_output(0, DataType::kUInt8, ctx.input_shape(0));
  const std::vector<Dim> scalar;
  ctx.set_output(1, DataType::kFloat, &scalar);
  ctx.set_output(2, DataType::kUInt8, &scalar);
  return Status::ok();
}

Status bernoulli(InferenceContext& ctx) {
  const int64_t dtype = ctx.attr_int("dtype", 0);
  ctx.set_output(0, dtype != 0 ? static_cast<DataType>(dtype) : ctx.input_type(0), ctx.input_shape(0));
  return Status::ok();
}

// RMSNormalization's Y has the scale's type (V), which may differ from X's.
Status rms_normalization(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_type(1), ctx.input_shape(0));
  return Status::ok();
}

}  // namespace

void register_elementwise_inference(InferenceTable& table) {
  for (const char* op :
       {"Abs", "Neg", "Reciprocal", "Floor", "Ceil", "Sqrt", "Relu", "LeakyRelu", "Elu", "Selu", "Exp", "Log",
        "Tanh", "Sigmoid", "HardSigmoid", "Softplus", "Softsign", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
        "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Erf", "Sign", "Round", "Not", "BitwiseNot", "Identity",
        "Celu", "Mish", "HardSwish", "Gelu", "ThresholdedRelu", "Shrink", "Clip", "Softmax", "LogSoftmax",
        "Hardmax", "LRN", "MeanVarianceNormalization", "Swish", "CumSum", "ReverseSequence", "Trilu",
        "InstanceNormalization", "LpNormalization", "GroupNormalization", "ImageScaler",
        "ScatterElements", "Scatter", "ScatterND", "ai.onnx.ml:Binarizer"}) {
    table[op] = same_as_input;
  }
  table["RMSNormalization"] = rms_normalization;
  table["Identity"] = identity;
  // PRelu's slope broadcasts to X (per channel before opset 7): Y is always X's shape.
  table["PRelu"] = same_as_input;
  table["Neg"] = negate;
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) table[op] = arithmetic;
  for (const char* op : {"Pow", "Mod", "BitShift", "And", "Or", "Xor", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Sum",
                         "Max", "Min", "Mean"}) {
    table[op] = numeric_broadcast;
  }
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) table[op] = compare_broadcast;
  for (const char* op : {"IsNaN", "IsInf"}) table[op] = bool_same_shape;
  table["Cast"] = cast;
  table["CastLike"] = cast_like;
  table["Where"] = where;
  table["Dropout"] = dropout;
  table["BatchNormalization"] = batch_normalization;
  table["LayerNormalization"] = layer_normalization;
  table["DequantizeLinear"] = dequantize_linear;
  table["QuantizeLinear"] = quantize_linear;
  table["DynamicQuantizeLinear"] = dynamic_quantize_linear;
  table["Bernoulli"] = bernoulli;
}

}  // namespace onyx::graph::inference
