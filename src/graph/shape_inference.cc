// The shape-inference driver: walks a graph's nodes in order, runs each op's
// inference function (or the schema's type constraints for ops without one),
// merges the result with what the model declared, and recurses into subgraphs.
#include "graph/shape_inference.h"

#include <algorithm>
#include <cstring>

#include "graph/shape_inference_context.h"

namespace onyx::graph {
namespace inference {

// ---- InferenceContext ----

int InferenceContext::since_version() const {
  return schema_ != nullptr ? schema_->since_version : node_.since_version;
}

DataType InferenceContext::input_type(size_t i) const {
  const TypeAndShape* info = input(i);
  if (info == nullptr || info->type.kind != ValueType::Kind::kTensor) return DataType::kUndefined;
  return info->type.elem_type;
}

const std::vector<Dim>* InferenceContext::input_shape(size_t i) const {
  const TypeAndShape* info = input(i);
  if (info == nullptr || !info->has_shape) return nullptr;
  return &info->shape;
}

int64_t InferenceContext::input_rank(size_t i) const {
  const std::vector<Dim>* shape = input_shape(i);
  return shape == nullptr ? -1 : static_cast<int64_t>(shape->size());
}

std::optional<std::vector<int64_t>> InferenceContext::input_ints(size_t i) const {
  const TrackedValue* value = input_value(i);
  if (value == nullptr) return std::nullopt;
  std::vector<int64_t> result;
  result.reserve(value->elements.size());
  for (const TrackedElement& e : value->elements) {
    if (!e.known) return std::nullopt;
    result.push_back(e.value);
  }
  return result;
}

std::optional<std::vector<double>> InferenceContext::input_doubles(size_t i) const {
  const Tensor* tensor = constant_input(i);
  if (tensor == nullptr) return std::nullopt;
  std::vector<double> result(static_cast<size_t>(tensor->size()));
  switch (tensor->dtype()) {
    case DataType::kFloat:
      for (size_t k = 0; k < result.size(); ++k) result[k] = tensor->data<float>()[k];
      return result;
    case DataType::kDouble:
      for (size_t k = 0; k < result.size(); ++k) result[k] = tensor->data<double>()[k];
      return result;
    case DataType::kFloat16:
      for (size_t k = 0; k < result.size(); ++k) result[k] = static_cast<float>(tensor->data<Float16>()[k]);
      return result;
    case DataType::kBFloat16:
      for (size_t k = 0; k < result.size(); ++k) result[k] = static_cast<float>(tensor->data<BFloat16>()[k]);
      return result;
    default:
      break;
  }
  auto ints = input_ints(i);
  if (!ints) return std::nullopt;
  return std::vector<double>(ints->begin(), ints->end());
}

void InferenceContext::set_output_type(size_t i, DataType type) {
  if (i >= outputs_.size() || type == DataType::kUndefined) return;
  outputs_[i].type = ValueType::tensor(type);
}

void InferenceContext::set_output_type(size_t i, const ValueType& type) {
  if (i >= outputs_.size()) return;
  outputs_[i].type = type;
}

void InferenceContext::set_output_shape(size_t i, std::vector<Dim> shape) {
  if (i >= outputs_.size()) return;
  outputs_[i].has_shape = true;
  outputs_[i].shape = std::move(shape);
}

void InferenceContext::set_output(size_t i, DataType type, const std::vector<Dim>* shape) {
  set_output_type(i, type);
  if (shape != nullptr) set_output_shape(i, *shape);
}

void InferenceContext::set_output_value(size_t i, TrackedValue value) {
  if (i >= output_values_.size() || !options_.propagate_shape_values) return;
  if (static_cast<int64_t>(value.elements.size()) > options_.max_tracked_elements) return;
  output_values_[i] = std::move(value);
}

int64_t InferenceContext::attr_int(const std::string& name, int64_t default_value) const {
  const Attribute* a = node_.attribute(name);
  return a != nullptr && a->type == AttributeType::kInt ? a->i : default_value;
}

float InferenceContext::attr_float(const std::string& name, float default_value) const {
  const Attribute* a = node_.attribute(name);
  return a != nullptr && a->type == AttributeType::kFloat ? a->f : default_value;
}

std::string InferenceContext::attr_string(const std::string& name, const std::string& default_value) const {
  const Attribute* a = node_.attribute(name);
  return a != nullptr && a->type == AttributeType::kString ? a->s : default_value;
}

std::optional<std::vector<int64_t>> InferenceContext::attr_ints(const std::string& name) const {
  const Attribute* a = node_.attribute(name);
  if (a == nullptr || a->type != AttributeType::kInts) return std::nullopt;
  return a->ints;
}

std::optional<std::vector<float>> InferenceContext::attr_floats(const std::string& name) const {
  const Attribute* a = node_.attribute(name);
  if (a == nullptr || a->type != AttributeType::kFloats) return std::nullopt;
  return a->floats;
}

// ---- Dim helpers ----

bool same_dim(const Dim& a, const Dim& b) {
  if (a.is_known() || b.is_known()) return a.is_known() && b.is_known() && a.value == b.value;
  return !a.symbol.empty() && a.symbol == b.symbol;
}

std::string dims_to_string(const std::vector<Dim>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ",";
    if (dims[i].is_known()) {
      out += std::to_string(dims[i].value);
    } else {
      out += dims[i].symbol.empty() ? "?" : dims[i].symbol;
    }
  }
  return out + "]";
}

Result<std::vector<Dim>> broadcast_shapes(const std::vector<const std::vector<Dim>*>& shapes) {
  size_t rank = 0;
  for (const auto* shape : shapes) rank = std::max(rank, shape->size());
  std::vector<Dim> result(rank);
  for (size_t d = 0; d < rank; ++d) {
    // Gather the dims aligned at the right; a missing dim acts as 1.
    std::optional<int64_t> fixed;  // a known dim other than 1
    bool all_one = true;
    std::string symbol;
    bool symbol_consistent = true;
    bool has_unknown = false;
    for (const auto* shape : shapes) {
      const size_t offset = rank - shape->size();
      if (d < offset) continue;
      const Dim& dim = (*shape)[d - offset];
      if (dim.is_known()) {
        if (dim.value == 1) continue;
        all_one = false;
        if (fixed && *fixed != dim.value) {
          std::string detail;
          for (size_t k = 0; k < shapes.size(); ++k) detail += (k ? " and " : "") + dims_to_string(*shapes[k]);
          return invalid_model("shapes ", detail, " cannot be broadcast (dim ", *fixed, " vs ", dim.value, ")");
        }
        fixed = dim.value;
      } else {
        all_one = false;
        if (dim.symbol.empty()) {
          has_unknown = true;
        } else if (symbol.empty()) {
          symbol = dim.symbol;
        } else if (symbol != dim.symbol) {
          symbol_consistent = false;
        }
      }
    }
    if (fixed) {
      result[d] = Dim::known(*fixed);  // a symbol broadcast against a fixed dim > 1 must equal it
    } else if (all_one) {
      result[d] = Dim::known(1);
    } else if (!symbol.empty() && symbol_consistent && !has_unknown) {
      result[d] = Dim::symbolic(symbol);
    } else {
      result[d] = unknown_dim();
    }
  }
  return result;
}

Dim product_of(const std::vector<Dim>& dims, size_t begin, size_t end) {
  int64_t product = 1;
  const Dim* lone = nullptr;
  size_t unknown_count = 0;
  for (size_t i = begin; i < end && i < dims.size(); ++i) {
    if (dims[i].is_known()) {
      product *= dims[i].value;
    } else {
      ++unknown_count;
      lone = &dims[i];
    }
  }
  if (unknown_count == 0) return Dim::known(product);
  if (product == 0) return Dim::known(0);
  if (unknown_count == 1 && product == 1) return *lone;
  return unknown_dim();
}

std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

std::vector<Dim> dims_from_ints(const std::vector<int64_t>& values) {
  std::vector<Dim> dims;
  dims.reserve(values.size());
  for (int64_t v : values) dims.push_back(v >= 0 ? Dim::known(v) : unknown_dim());
  return dims;
}

DataType dtype_from_type_string(const std::string& type_str) {
  if (type_str.size() < 9 || type_str.compare(0, 7, "tensor(") != 0 || type_str.back() != ')') {
    return DataType::kUndefined;
  }
  const std::string name = type_str.substr(7, type_str.size() - 8);
  for (int32_t v = 1; v <= 26; ++v) {
    if (!dtype_is_known(v)) continue;
    if (name == dtype_name(static_cast<DataType>(v))) return static_cast<DataType>(v);
  }
  return DataType::kUndefined;
}

bool is_integer_type(DataType type) {
  switch (type) {
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kUInt8:
    case DataType::kUInt16:
    case DataType::kUInt32:
    case DataType::kUInt64:
      return true;
    default:
      return false;
  }
}

namespace {

// Parses a schema type string: tensor(T), sparse_tensor(T), seq(X), optional(X), map(K, V).
std::optional<ValueType> parse_type_string(const std::string& text) {
  auto inner_of = [&](const char* prefix) -> std::optional<std::string> {
    const size_t n = std::strlen(prefix);
    if (text.size() > n + 1 && text.compare(0, n, prefix) == 0 && text.back() == ')') {
      return text.substr(n, text.size() - n - 1);
    }
    return std::nullopt;
  };
  if (text.compare(0, 7, "tensor(") == 0) {
    DataType dtype = dtype_from_type_string(text);
    if (dtype == DataType::kUndefined) return std::nullopt;
    return ValueType::tensor(dtype);
  }
  if (auto inner = inner_of("sparse_tensor(")) {
    DataType dtype = dtype_from_type_string("tensor(" + *inner + ")");
    if (dtype == DataType::kUndefined) return std::nullopt;
    ValueType t = ValueType::tensor(dtype);
    t.kind = ValueType::Kind::kSparseTensor;
    return t;
  }
  for (const auto& [prefix, kind] : {std::pair<const char*, ValueType::Kind>{"seq(", ValueType::Kind::kSequence},
                                     std::pair<const char*, ValueType::Kind>{"optional(", ValueType::Kind::kOptional}}) {
    if (auto inner = inner_of(prefix)) {
      auto element = parse_type_string(*inner);
      if (!element) return std::nullopt;
      ValueType t;
      t.kind = kind;
      t.inner = std::make_shared<ValueType>(*element);
      return t;
    }
  }
  if (auto inner = inner_of("map(")) {
    const size_t comma = inner->find(',');
    if (comma == std::string::npos) return std::nullopt;
    DataType key = dtype_from_type_string("tensor(" + inner->substr(0, comma) + ")");
    std::string rest = inner->substr(comma + 1);
    while (!rest.empty() && rest.front() == ' ') rest.erase(rest.begin());
    auto value = parse_type_string(rest);
    if (key == DataType::kUndefined || !value) return std::nullopt;
    ValueType t;
    t.kind = ValueType::Kind::kMap;
    t.key_type = key;
    t.inner = std::make_shared<ValueType>(*value);
    return t;
  }
  return std::nullopt;
}

// Output types the schema fixes: a concrete type string, a constraint that
// allows one type only, or a type variable shared with an input of known type.
void apply_schema_types(InferenceContext& ctx) {
  const OpSchema* schema = ctx.schema();
  if (schema == nullptr) return;
  for (size_t i = 0; i < ctx.output_count(); ++i) {
    if (!ctx.has_output(i) || ctx.output(i).type.kind != ValueType::Kind::kUnknown) continue;
    const int formal = schema->formal_output_index(static_cast<int>(i));
    if (formal < 0) continue;
    const std::string type_str = schema->outputs[formal].type_str;
    if (auto concrete = parse_type_string(type_str)) {
      ctx.set_output_type(i, *concrete);
      continue;
    }
    bool found = false;
    for (size_t k = 0; k < ctx.input_count() && !found; ++k) {
      const int in_formal = schema->formal_input_index(static_cast<int>(k));
      if (in_formal < 0 || type_str != schema->inputs[in_formal].type_str) continue;
      const TypeAndShape* info = ctx.input(k);
      if (info == nullptr || info->type.kind == ValueType::Kind::kUnknown) continue;
      if (info->type.kind == ValueType::Kind::kTensor && info->type.elem_type == DataType::kUndefined) continue;
      ctx.set_output_type(i, info->type);
      found = true;
    }
    if (found) continue;
    const TypeConstraint* constraint = schema->type_constraint(type_str);
    if (constraint != nullptr && constraint->allowed_count == 1) {
      if (auto only = parse_type_string(constraint->allowed_types[0])) ctx.set_output_type(i, *only);
    }
  }
}

const InferenceTable& inference_table() {
  static const InferenceTable table = [] {
    InferenceTable built;
    register_elementwise_inference(built);
    register_tensor_inference(built);
    register_nn_inference(built);
    register_misc_inference(built);
    return built;
  }();
  return table;
}

// Values visible to a graph: its own constants and tracked contents, then its
// enclosing graph's (for If/Loop/Scan bodies).
struct Scope {
  Graph* graph = nullptr;
  const Scope* parent = nullptr;
  const InferenceOptions* options = nullptr;
  // Constant nodes' tensors and the enclosing graphs' constants this graph
  // reads; its own initializers are read in place (constant()), not copied:
  // the optimizer infers a whole graph after each change, and a large graph
  // holds thousands of folded constants.
  std::unordered_map<int32_t, Tensor> constants;
  std::unordered_map<int32_t, TrackedValue> tracked;

  // An initializer is a constant unless it is also a graph input (then it is
  // only a default the caller may override).
  bool initializer_is_constant(int32_t id) const {
    return !graph->values[static_cast<size_t>(id)].is_graph_input || options->initializers_in_inputs_are_constant;
  }
  const Tensor* constant(int32_t id) const {
    auto it = constants.find(id);
    if (it != constants.end()) return &it->second;
    auto init = graph->initializers.find(id);
    if (init == graph->initializers.end() || !initializer_is_constant(id)) return nullptr;
    return &init->second;
  }
  const TrackedValue* tracked_value(int32_t id) const {
    auto it = tracked.find(id);
    return it == tracked.end() ? nullptr : &it->second;
  }
};

std::optional<TrackedValue> track_tensor(const Tensor& tensor, const InferenceOptions& options) {
  if (!options.propagate_shape_values || tensor.rank() > 1 || tensor.size() > options.max_tracked_elements) {
    return std::nullopt;
  }
  TrackedValue value;
  value.is_scalar = tensor.rank() == 0;
  const int64_t n = tensor.size();
  auto fill = [&](auto tag) {
    using T = decltype(tag);
    for (int64_t k = 0; k < n; ++k) value.elements.push_back(TrackedElement::number(static_cast<int64_t>(tensor.data<T>()[k])));
  };
  switch (tensor.dtype()) {
    case DataType::kInt64: fill(int64_t{}); break;
    case DataType::kInt32: fill(int32_t{}); break;
    case DataType::kInt16: fill(int16_t{}); break;
    case DataType::kInt8: fill(int8_t{}); break;
    case DataType::kUInt8: fill(uint8_t{}); break;
    case DataType::kUInt16: fill(uint16_t{}); break;
    case DataType::kUInt32: fill(uint32_t{}); break;
    default: return std::nullopt;
  }
  return value;
}

TypeAndShape info_of_tensor(const Tensor& tensor) {
  TypeAndShape info;
  info.type = ValueType::tensor(tensor.dtype());
  info.has_shape = true;
  info.shape = dims_from_ints(tensor.shape());
  return info;
}

// True when `info` already says exactly `tensor`'s type and shape.
bool info_is_tensor(const TypeAndShape& info, const Tensor& tensor) {
  if (info.type.kind != ValueType::Kind::kTensor || info.type.elem_type != tensor.dtype() || !info.has_shape ||
      info.shape.size() != tensor.shape().size()) {
    return false;
  }
  for (size_t d = 0; d < info.shape.size(); ++d) {
    if (info.shape[d].value != tensor.shape()[d] || !info.shape[d].symbol.empty()) return false;
  }
  return true;
}

// The tensor a Constant node produces, from whichever value attribute it has.
std::optional<Tensor> constant_node_tensor(const Node& node) {
  for (const auto& [name, attr] : node.attributes) {
    if ((name == "value" || name == "sparse_value") && attr.t.defined()) return attr.t;
    if (name == "value_float") return Tensor::scalar<float>(attr.f);
    if (name == "value_floats") {
      return Tensor::from_vector<float>(attr.floats, {static_cast<int64_t>(attr.floats.size())});
    }
    if (name == "value_int") return Tensor::scalar<int64_t>(attr.i);
    if (name == "value_ints") return Tensor::from_vector<int64_t>(attr.ints, {static_cast<int64_t>(attr.ints.size())});
    if (name == "value_string") return Tensor::scalar<std::string>(attr.s);
    if (name == "value_strings") {
      return Tensor::from_vector<std::string>(attr.strings, {static_cast<int64_t>(attr.strings.size())});
    }
  }
  return std::nullopt;
}

std::string info_to_string(const TypeAndShape& info) {
  std::string out = info.type.to_string();
  if (info.has_shape) out += dims_to_string(info.shape);
  return out;
}

// Folds `inferred` into `declared`: the more precise of the two wins per dim;
// an error when they can never agree. With `shape_is_hint` (the value_info of
// an intermediate value whose inferred shape is a fact: a Constant's, which
// exporters sometimes declare wrong; onnxruntime-genai's builder declares its
// [1] constants as scalars), a shape that cannot agree gives way to the
// inferred one, as onnxruntime's lenient merge lets it; element types must
// still agree.
// `where` gives the error's prefix; it is called only on a mismatch, so the
// label is not built for every value of every inference.
template <typename Where>
Status merge_info(TypeAndShape& declared, const TypeAndShape& inferred, const Where& where,
                  const InferenceOptions& options, bool shape_is_hint = false) {
  using Kind = ValueType::Kind;
  auto mismatch = [&]() -> Status {
    if (!options.error_on_mismatch) return Status::ok();
    return invalid_model(where(), ": declared ", info_to_string(declared), " but inferred ", info_to_string(inferred));
  };
  // Every check comes before any change: a mismatch leaves `declared` as it was.
  bool take_type = false;
  if (inferred.type.kind != Kind::kUnknown) {
    if (declared.type.kind == Kind::kUnknown) {
      take_type = true;
    } else if (declared.type.kind != inferred.type.kind) {
      return mismatch();
    } else if (declared.type.kind == Kind::kTensor) {
      if (declared.type.elem_type == DataType::kUndefined) {
        take_type = true;
      } else if (inferred.type.elem_type != DataType::kUndefined &&
                 inferred.type.elem_type != declared.type.elem_type) {
        return mismatch();
      }
    }
  }
  bool take_shape = false;
  if (inferred.has_shape) {
    const bool conflict =
        declared.has_shape &&
        (declared.shape.size() != inferred.shape.size() ||
         [&] {
           for (size_t d = 0; d < declared.shape.size(); ++d) {
             if (conflicting_dims(declared.shape[d], inferred.shape[d])) return true;
           }
           return false;
         }());
    take_shape = !declared.has_shape || (conflict && shape_is_hint);
    if (!take_shape && conflict) return mismatch();
  }
  if (take_type) declared.type = inferred.type;
  if (take_shape) {
    declared.has_shape = true;
    declared.shape = inferred.shape;
  } else if (inferred.has_shape) {
    for (size_t d = 0; d < declared.shape.size(); ++d) {
      const Dim& got = inferred.shape[d];
      Dim& keep = declared.shape[d];
      if (keep.is_known()) continue;
      if (got.is_known() || !got.symbol.empty()) keep = got;
    }
  }
  return Status::ok();
}

Status infer_graph(Graph& graph, const Scope* parent, const InferenceOptions& options);

bool is_unknown(const TypeAndShape& info) { return info.type.kind == ValueType::Kind::kUnknown; }

// Infers a subgraph whose inputs the caller has typed as far as it can.
Status infer_subgraph(Graph& body, const Scope& outer, const InferenceOptions& options) {
  return infer_graph(body, &outer, options);
}

void set_if_unknown(Graph& body, size_t input_position, const TypeAndShape& info) {
  if (input_position >= body.inputs.size()) return;
  const int32_t id = body.inputs[input_position];
  if (id < 0 || static_cast<size_t>(id) >= body.values.size()) return;
  TypeAndShape& target = body.values[static_cast<size_t>(id)].info;
  if (is_unknown(target)) {
    target.type = info.type;
  }
  if (!target.has_shape && info.has_shape) {
    target.has_shape = true;
    target.shape = info.shape;
  }
}

const TypeAndShape* body_output(const Graph& body, size_t position) {
  if (position >= body.outputs.size()) return nullptr;
  const int32_t id = body.outputs[position];
  if (id < 0 || static_cast<size_t>(id) >= body.values.size()) return nullptr;
  return &body.values[static_cast<size_t>(id)].info;
}

// Dims both shapes agree on; the rest unknown. No shape when the ranks differ.
TypeAndShape join_infos(const TypeAndShape& a, const TypeAndShape& b) {
  TypeAndShape result;
  result.type = is_unknown(a) ? b.type : a.type;
  if (a.has_shape && b.has_shape && a.shape.size() == b.shape.size()) {
    result.has_shape = true;
    for (size_t d = 0; d < a.shape.size(); ++d) result.shape.push_back(same_dim(a.shape[d], b.shape[d]) ? a.shape[d] : unknown_dim());
  }
  return result;
}

Status infer_control_flow(InferenceContext& ctx, const Scope& scope) {
  const Node& node = ctx.node();
  const std::string& op = node.op_type;
  if (op == "If") {
    const Attribute* then_branch = node.attribute("then_branch");
    const Attribute* else_branch = node.attribute("else_branch");
    if (then_branch == nullptr || !then_branch->g || else_branch == nullptr || !else_branch->g) return Status::ok();
    ONYX_RETURN_IF_ERROR(infer_subgraph(*then_branch->g, scope, ctx.options()));
    ONYX_RETURN_IF_ERROR(infer_subgraph(*else_branch->g, scope, ctx.options()));
    for (size_t i = 0; i < ctx.output_count(); ++i) {
      const TypeAndShape* a = body_output(*then_branch->g, i);
      const TypeAndShape* b = body_output(*else_branch->g, i);
      if (a == nullptr || b == nullptr) continue;
      ctx.output(i) = join_infos(*a, *b);
    }
    return Status::ok();
  }
  if (op == "Loop") {
    const Attribute* body_attr = node.attribute("body");
    if (body_attr == nullptr || !body_attr->g) return Status::ok();
    Graph& body = *body_attr->g;
    TypeAndShape scalar_int;
    scalar_int.type = ValueType::tensor(DataType::kInt64);
    scalar_int.has_shape = true;
    TypeAndShape scalar_bool = scalar_int;
    scalar_bool.type = ValueType::tensor(DataType::kBool);
    set_if_unknown(body, 0, scalar_int);
    set_if_unknown(body, 1, scalar_bool);
    const size_t carried = ctx.input_count() > 2 ? ctx.input_count() - 2 : 0;
    for (size_t k = 0; k < carried; ++k) {
      // Only the type: a loop-carried value may change shape between iterations.
      if (const TypeAndShape* initial = ctx.input(2 + k)) {
        TypeAndShape type_only;
        type_only.type = initial->type;
        set_if_unknown(body, 2 + k, type_only);
      }
    }
    ONYX_RETURN_IF_ERROR(infer_subgraph(body, scope, ctx.options()));
    for (size_t i = 0; i < ctx.output_count(); ++i) {
      const TypeAndShape* produced = body_output(body, 1 + i);
      if (produced == nullptr) continue;
      if (i < carried) {
        const TypeAndShape* initial = ctx.input(2 + i);
        ctx.output(i) = initial != nullptr ? join_infos(*produced, *initial) : join_infos(*produced, TypeAndShape{});
        if (is_unknown(ctx.output(i))) ctx.output(i).type = produced->type;
      } else {
        // Scan outputs stack one value per iteration.
        TypeAndShape stacked;
        stacked.type = produced->type;
        if (produced->has_shape) {
          stacked.has_shape = true;
          stacked.shape.push_back(unknown_dim());
          stacked.shape.insert(stacked.shape.end(), produced->shape.begin(), produced->shape.end());
        }
        ctx.output(i) = stacked;
      }
    }
    return Status::ok();
  }
  if (op == "Scan") {
    const Attribute* body_attr = node.attribute("body");
    if (body_attr == nullptr || !body_attr->g) return Status::ok();
    Graph& body = *body_attr->g;
    const bool has_batch = ctx.since_version() < 9;  // Scan-8 has a batch axis and sequence_lens first
    const size_t first = has_batch ? 1 : 0;
    const int64_t scan_inputs = ctx.attr_int("num_scan_inputs", 0);
    const size_t total = ctx.input_count() > first ? ctx.input_count() - first : 0;
    if (scan_inputs < 0 || static_cast<size_t>(scan_inputs) > total) {
      return ctx.error("num_scan_inputs ", scan_inputs, " exceeds the ", total, " inputs");
    }
    const size_t states = total - static_cast<size_t>(scan_inputs);
    const auto input_axes = ctx.attr_ints("scan_input_axes");
    const auto output_axes = ctx.attr_ints("scan_output_axes");
    Dim sequence_length;
    for (size_t k = 0; k < total; ++k) {
      const TypeAndShape* in = ctx.input(first + k);
      if (in == nullptr) continue;
      TypeAndShape element;
      element.type = in->type;
      if (in->has_shape && !has_batch) {
        if (k < states) {
          element = *in;
        } else {
          const size_t scan_index = k - states;
          const int64_t rank = static_cast<int64_t>(in->shape.size());
          int64_t axis = input_axes && scan_index < input_axes->size() ? (*input_axes)[scan_index] : 0;
          if (auto normalized = normalize_axis(axis, rank)) {
            element.has_shape = true;
            element.shape = in->shape;
            if (scan_index == 0) sequence_length = in->shape[static_cast<size_t>(*normalized)];
            element.shape.erase(element.shape.begin() + *normalized);
          }
        }
      }
      set_if_unknown(body, k, element);
    }
    ONYX_RETURN_IF_ERROR(infer_subgraph(body, scope, ctx.options()));
    for (size_t i = 0; i < ctx.output_count(); ++i) {
      const TypeAndShape* produced = body_output(body, i);
      if (produced == nullptr) continue;
      if (i < states || has_batch) {
        TypeAndShape out;
        out.type = produced->type;
        if (!has_batch) out = *produced;
        ctx.output(i) = out;
        continue;
      }
      TypeAndShape stacked;
      stacked.type = produced->type;
      if (produced->has_shape) {
        const size_t scan_index = i - states;
        const int64_t rank = static_cast<int64_t>(produced->shape.size()) + 1;
        int64_t axis = output_axes && scan_index < output_axes->size() ? (*output_axes)[scan_index] : 0;
        if (auto normalized = normalize_axis(axis, rank)) {
          stacked.has_shape = true;
          stacked.shape = produced->shape;
          stacked.shape.insert(stacked.shape.begin() + *normalized, sequence_length);
        }
      }
      ctx.output(i) = stacked;
    }
    return Status::ok();
  }
  // Other ops with graph attributes (SequenceMap, ...): infer inside, type outputs from the schema.
  for (const auto& [name, attr] : node.attributes) {
    if (attr.g) ONYX_RETURN_IF_ERROR(infer_subgraph(*attr.g, scope, ctx.options()));
  }
  return Status::ok();
}

bool has_subgraphs(const Node& node) {
  for (const auto& [name, attr] : node.attributes) {
    if (attr.g) return true;
  }
  return false;
}

// Looks a name up in the enclosing graphs, nearest first.
void import_outer_value(Scope& scope, int32_t id) {
  ValueEntry& entry = scope.graph->values[static_cast<size_t>(id)];
  for (const Scope* outer = scope.parent; outer != nullptr; outer = outer->parent) {
    const int32_t outer_id = outer->graph->find_value(entry.name);
    if (outer_id < 0) continue;
    const TypeAndShape& info = outer->graph->values[static_cast<size_t>(outer_id)].info;
    if (is_unknown(entry.info)) entry.info.type = info.type;
    if (!entry.info.has_shape && info.has_shape) {
      entry.info.has_shape = true;
      entry.info.shape = info.shape;
    }
    if (const Tensor* constant = outer->constant(outer_id)) scope.constants.emplace(id, *constant);
    if (const TrackedValue* tracked = outer->tracked_value(outer_id)) scope.tracked.emplace(id, *tracked);
    return;
  }
}

Status infer_graph(Graph& graph, const Scope* parent, const InferenceOptions& options) {
  Scope scope;
  scope.graph = &graph;
  scope.parent = parent;
  scope.options = &options;

  if (parent != nullptr) {
    for (size_t id = 0; id < graph.values.size(); ++id) {
      const ValueEntry& entry = graph.values[id];
      const bool from_outside = entry.is_outer_scope ||
                                (entry.producer < 0 && !entry.is_graph_input && !entry.is_initializer);
      if (from_outside) import_outer_value(scope, static_cast<int32_t>(id));
    }
  }
  for (auto& [id, tensor] : graph.initializers) {
    if (id < 0 || static_cast<size_t>(id) >= graph.values.size()) continue;
    ValueEntry& entry = graph.values[static_cast<size_t>(id)];
    // An initializer that is also a graph input is only a default: the caller may feed another.
    if (scope.initializer_is_constant(id)) {
      if (!info_is_tensor(entry.info, tensor)) entry.info = info_of_tensor(tensor);
      if (auto tracked = track_tensor(tensor, options)) scope.tracked.emplace(id, std::move(*tracked));
    } else if (is_unknown(entry.info)) {
      entry.info.type = ValueType::tensor(tensor.dtype());
    }
  }

  const InferenceTable& table = inference_table();
  for (size_t index = 0; index < graph.nodes.size(); ++index) {
    const Node& node = graph.nodes[index];
    const std::string domain = node.domain == "ai.onnx" ? std::string() : node.domain;
    int opset = node.opset > 0 ? node.opset : node.since_version;
    if (opset <= 0) opset = latest_opset(domain);
    const OpSchema* schema = find_schema_including_deprecated(domain, node.op_type, opset);

    InferenceContext ctx(node, index, schema, options);
    ctx.inputs_.resize(node.inputs.size(), nullptr);
    ctx.constants_.resize(node.inputs.size(), nullptr);
    ctx.values_.resize(node.inputs.size(), nullptr);
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int32_t id = node.inputs[i];
      if (id == kNoValue) continue;
      if (id < 0 || static_cast<size_t>(id) >= graph.values.size()) {
        return invalid_model(node.label(index), ": input ", i, " refers to value ", id, " which does not exist");
      }
      ctx.inputs_[i] = &graph.values[static_cast<size_t>(id)].info;
      ctx.constants_[i] = scope.constant(id);
      ctx.values_[i] = scope.tracked_value(id);
    }
    for (int32_t id : node.outputs) {
      if (id != kNoValue && (id < 0 || static_cast<size_t>(id) >= graph.values.size())) {
        return invalid_model(node.label(index), ": an output refers to value ", id, " which does not exist");
      }
    }
    ctx.outputs_.resize(node.outputs.size());
    ctx.output_values_.resize(node.outputs.size());

    Status status;
    if (has_subgraphs(node)) {
      status = infer_control_flow(ctx, scope);
    } else if (domain.empty() || domain == "ai.onnx.ml") {
      const std::string key = domain.empty() ? node.op_type : domain + ":" + node.op_type;
      auto it = table.find(key);
      if (it != table.end()) status = it->second(ctx);
    }
    if (schema == nullptr && options.external && !has_subgraphs(node)) {
      Result<bool> known = options.external(node, ctx.inputs_, ctx.outputs_);
      if (!known.is_ok()) status = known.status();
    }
    if (!status.is_ok()) {
      if (options.error_on_mismatch) return status;
      // Keep going with what the schema alone says.
      for (auto& out : ctx.outputs_) out = TypeAndShape{};
    }
    apply_schema_types(ctx);

    if (node.op_type == "Constant" && domain.empty() && !node.outputs.empty() && node.outputs[0] != kNoValue) {
      if (auto tensor = constant_node_tensor(node)) {
        ctx.outputs_[0] = info_of_tensor(*tensor);
        if (auto tracked = track_tensor(*tensor, options)) ctx.output_values_[0] = std::move(*tracked);
        scope.constants[node.outputs[0]] = std::move(*tensor);
      }
    }

    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const int32_t id = node.outputs[i];
      if (id == kNoValue) continue;
      ValueEntry& entry = graph.values[static_cast<size_t>(id)];
      const bool exact_constant = node.op_type == "Constant" && domain.empty() &&
                                  std::find(graph.outputs.begin(), graph.outputs.end(), id) == graph.outputs.end();
      auto where = [&] { return node.label(index) + ": output '" + entry.name + "'"; };
      ONYX_RETURN_IF_ERROR(merge_info(entry.info, ctx.outputs_[i], where, options, exact_constant));
      if (ctx.output_values_[i]) scope.tracked[id] = std::move(*ctx.output_values_[i]);
    }
  }
  return Status::ok();
}

}  // namespace
}  // namespace inference

Status infer_shapes(Graph& graph, const InferenceOptions& options) {
  return inference::infer_graph(graph, nullptr, options);
}

}  // namespace onyx::graph
