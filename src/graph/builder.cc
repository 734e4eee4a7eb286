// ModelProto -> Graph. Function calls are expanded into their bodies first,
// then values are numbered, subgraphs built, and nodes sorted topologically.
#include "graph/builder.h"

#include <functional>
#include <map>
#include <queue>
#include <unordered_set>

#include "graph/schema.h"
#include "model/reader.h"
#include "model/tensor_proto.h"

namespace onyx::graph {
namespace {

using model::AttributeProto;
using model::FunctionProto;
using model::GraphProto;
using model::NodeProto;
using OpsetMap = std::map<std::string, int64_t>;

std::string canonical_domain(const std::string& domain) { return domain == "ai.onnx" ? std::string() : domain; }

struct FlatNode {
  NodeProto proto;
  const OpsetMap* opsets;
};

class Builder {
 public:
  Builder(const model::ModelProto& model, const BuildLimits& limits) : limits_(limits) {
    model_opsets_ = opset_map(model.opset_import);
    for (const FunctionProto& f : model.functions) {
      functions_[{canonical_domain(f.domain), f.name}] = &f;
      function_opsets_.emplace(&f, opset_map(f.opset_import));
    }
  }

  Result<std::unique_ptr<Graph>> build(const GraphProto& proto, const std::unordered_set<std::string>& outer,
                                       int depth) {
    if (depth > limits_.max_nesting_depth) {
      return invalid_model("subgraphs are nested more than ", limits_.max_nesting_depth, " deep");
    }
    auto graph = std::make_unique<Graph>();
    graph->name = proto.name;

    // Graph inputs, then initializers (an initializer named like an input is
    // that input's default value).
    std::unordered_set<std::string> defined;
    for (const auto& input : proto.input) {
      if (input.name.empty()) return invalid_model("graph '", proto.name, "' has an input with an empty name");
      if (!defined.insert(input.name).second) {
        return invalid_model("graph '", proto.name, "' declares input '", input.name, "' twice");
      }
      const int32_t id = graph->value_id(input.name);
      ValueEntry& v = graph->values[static_cast<size_t>(id)];
      v.is_graph_input = true;
      if (input.has_type) v.info = type_and_shape(input.type);
      graph->inputs.push_back(id);
    }
    for (const auto& init : proto.initializer) {
      ONYX_ASSIGN_OR_RETURN(Tensor t, model::tensor_from_proto(init));
      const bool is_input = defined.count(init.name) > 0;
      if (!is_input && !defined.insert(init.name).second) {
        return invalid_model("graph '", proto.name, "' has two initializers named '", init.name, "'");
      }
      const int32_t id = graph->value_id(init.name);
      ValueEntry& v = graph->values[static_cast<size_t>(id)];
      v.is_initializer = true;
      if (!v.info.has_shape) {
        v.info.type = ValueType::tensor(t.dtype());
        v.info.has_shape = true;
        v.info.shape.clear();
        for (int64_t d : t.shape()) v.info.shape.push_back(Dim::known(d));
      }
      graph->initializers[id] = std::move(t);
    }
    for (const auto& sparse : proto.sparse_initializer) {
      ONYX_ASSIGN_OR_RETURN(Tensor t, model::tensor_from_sparse_proto(sparse));
      const std::string& name = sparse.values.name;
      if (!defined.insert(name).second) return invalid_model("graph '", proto.name, "' defines '", name, "' twice");
      const int32_t id = graph->value_id(name);
      graph->values[static_cast<size_t>(id)].is_initializer = true;
      graph->values[static_cast<size_t>(id)].info = TypeAndShape{ValueType::tensor(t.dtype()), false, {}};
      graph->initializers[id] = std::move(t);
    }

    // Expand function calls, then number every node output.
    std::vector<FlatNode> flat;
    for (const NodeProto& node : proto.node) ONYX_RETURN_IF_ERROR(expand(node, &model_opsets_, 0, flat));
    for (size_t n = 0; n < flat.size(); ++n) {
      for (const std::string& out : flat[n].proto.output) {
        if (out.empty()) continue;
        if (!defined.insert(out).second) {
          return invalid_model(label(flat[n].proto, n), ": output '", out,
                               "' is already defined by another node, a graph input or an initializer");
        }
        graph->value_id(out);
      }
    }

    // Names visible to subgraphs: everything here plus the enclosing scopes.
    std::unordered_set<std::string> visible = outer;
    visible.insert(defined.begin(), defined.end());

    std::vector<Node> nodes;
    nodes.reserve(flat.size());
    for (size_t n = 0; n < flat.size(); ++n) {
      const NodeProto& np = flat[n].proto;
      Node node;
      node.name = np.name;
      node.op_type = np.op_type;
      node.domain = canonical_domain(np.domain);
      auto opset = flat[n].opsets->find(node.domain);
      node.opset = opset == flat[n].opsets->end() ? 0 : static_cast<int32_t>(opset->second);
      // Optimizers write com.microsoft (and com.microsoft.nchwc) nodes without
      // importing the domain; such models run elsewhere, so the version defaults to 1.
      if (node.opset == 0 && (node.domain == "com.microsoft" || node.domain == "com.microsoft.nchwc")) node.opset = 1;
      node.since_version = node.opset;
      for (const std::string& in : np.input) {
        if (in.empty()) {
          node.inputs.push_back(kNoValue);
          continue;
        }
        if (defined.count(in) == 0) {
          if (outer.count(in) == 0) {
            return invalid_model(label(np, n), ": input '", in,
                                 "' is not produced by any node and is not a graph input or initializer");
          }
          const int32_t id = graph->value_id(in);
          ValueEntry& v = graph->values[static_cast<size_t>(id)];
          if (!v.is_outer_scope) {
            v.is_outer_scope = true;
            graph->outer_scope_values.push_back(id);
          }
        }
        node.inputs.push_back(graph->value_id(in));
      }
      for (const std::string& out : np.output) node.outputs.push_back(out.empty() ? kNoValue : graph->value_id(out));
      for (const AttributeProto& a : np.attribute) {
        if (a.name.empty()) return invalid_model(label(np, n), ": an attribute has no name");
        ONYX_ASSIGN_OR_RETURN(Attribute attr, convert_attribute(a, visible, depth));
        if (!node.attributes.emplace(a.name, std::move(attr)).second) {
          return invalid_model(label(np, n), ": attribute '", a.name, "' is given twice");
        }
      }
      nodes.push_back(std::move(node));
    }
    ONYX_RETURN_IF_ERROR(sort_nodes(*graph, nodes));

    for (const auto& vi : proto.value_info) {
      const int32_t id = graph->find_value(vi.name);
      if (id >= 0 && vi.has_type && !graph->values[static_cast<size_t>(id)].is_initializer) {
        graph->values[static_cast<size_t>(id)].info = type_and_shape(vi.type);
      }
    }
    for (const auto& output : proto.output) {
      if (output.name.empty()) return invalid_model("graph '", proto.name, "' has an output with an empty name");
      if (defined.count(output.name) == 0 && outer.count(output.name) == 0) {
        return invalid_model("graph output '", output.name, "' is not produced by any node, input or initializer");
      }
      const int32_t id = graph->value_id(output.name);
      ValueEntry& v = graph->values[static_cast<size_t>(id)];
      if (defined.count(output.name) == 0 && !v.is_outer_scope) {
        v.is_outer_scope = true;
        graph->outer_scope_values.push_back(id);
      }
      if (output.has_type && v.info.type.kind == ValueType::Kind::kUnknown) v.info = type_and_shape(output.type);
      graph->outputs.push_back(id);
    }
    return graph;
  }

 private:
  static std::string label(const NodeProto& node, size_t index) {
    if (!node.name.empty()) return node.op_type + " '" + node.name + "'";
    return node.op_type + " #" + std::to_string(index);
  }

  static TypeAndShape type_and_shape(const model::TypeProto& type) {
    TypeAndShape info;
    info.type = model::value_type_from_proto(type);
    if ((type.value_case == model::TypeProto::Case::kTensorType ||
         type.value_case == model::TypeProto::Case::kSparseTensorType) &&
        type.has_shape) {
      info.has_shape = true;
      for (const auto& d : type.shape.dim) {
        info.shape.push_back(d.has_value ? Dim::known(d.dim_value) : Dim::symbolic(d.dim_param));
      }
    }
    return info;
  }

  // Replaces a call of a model-local function by its body, renaming the
  // body's internal values so that two calls never collide.
  Status expand(const NodeProto& node, const OpsetMap* opsets, int depth, std::vector<FlatNode>& out) {
    if (++expanded_ > limits_.max_nodes) {
      return invalid_model("the model holds more than ", limits_.max_nodes,
                           " nodes and function calls once its functions are expanded");
    }
    auto it = functions_.find({canonical_domain(node.domain), node.op_type});
    if (it == functions_.end()) {
      ONYX_ASSIGN_OR_RETURN(const FunctionProto* body, schema_function(node, *opsets));
      if (body == nullptr) {
        out.push_back({node, opsets});
        return Status::ok();
      }
      return expand_call(node, *body, depth, out);
    }
    return expand_call(node, *it->second, depth, out);
  }

  // The function body from the ONNX schema table for a node that must run
  // through it, with the schema's attribute defaults; nullptr for none.
  Result<const FunctionProto*> schema_function(const NodeProto& node, const OpsetMap& opsets) {
    if (!limits_.expand_schema_function) return nullptr;
    const std::string domain = canonical_domain(node.domain);
    auto opset = opsets.find(domain);
    if (opset == opsets.end()) return nullptr;
    const OpSchema* schema = find_schema(domain, node.op_type, static_cast<int>(opset->second));
    if (schema == nullptr) return nullptr;
    const FunctionBody* body = schema->function_body(static_cast<int>(opset->second));
    if (body == nullptr || !limits_.expand_schema_function(domain, node.op_type, schema->since_version)) return nullptr;
    auto cached = schema_functions_.find(body);
    if (cached != schema_functions_.end()) return cached->second.get();
    ONYX_ASSIGN_OR_RETURN(FunctionProto fn, model::read_function_proto(body->data()));
    if (fn.opset_import.empty()) fn.opset_import.push_back({domain, opset->second});
    // Attributes the caller may omit take the schema's defaults.
    for (int i = 0; i < schema->attribute_count; ++i) {
      const AttributeSchema& a = schema->attributes[i];
      if (!a.has_default) continue;
      AttributeProto d;
      d.name = a.name;
      switch (a.type) {
        case AttributeType::kInt: d.type = AttributeProto::INT; d.i = a.default_int; break;
        case AttributeType::kFloat: d.type = AttributeProto::FLOAT; d.f = a.default_float; break;
        case AttributeType::kString: d.type = AttributeProto::STRING; d.s = a.default_string ? a.default_string : ""; break;
        case AttributeType::kInts:
          d.type = AttributeProto::INTS;
          d.ints.assign(a.default_ints, a.default_ints + a.default_ints_count);
          break;
        case AttributeType::kFloats:
          d.type = AttributeProto::FLOATS;
          d.floats.assign(a.default_floats, a.default_floats + a.default_floats_count);
          break;
        case AttributeType::kStrings:
          d.type = AttributeProto::STRINGS;
          for (int k = 0; k < a.default_strings_count; ++k) d.strings.emplace_back(a.default_strings[k]);
          break;
        default: continue;
      }
      fn.attribute_proto.push_back(std::move(d));
    }
    auto owned = std::make_unique<FunctionProto>(std::move(fn));
    const FunctionProto* result = owned.get();
    function_opsets_.emplace(result, opset_map(result->opset_import));
    schema_functions_.emplace(body, std::move(owned));
    return result;
  }

  Status expand_call(const NodeProto& node, const FunctionProto& fn, int depth, std::vector<FlatNode>& out) {
    if (depth >= limits_.max_function_depth) {
      return invalid_model("function '", node.op_type, "' calls functions more than ", limits_.max_function_depth,
                           " deep (recursive?)");
    }
    const std::string prefix = "_" + fn.name + "_" + std::to_string(++call_counter_) + "/";
    std::map<std::string, std::string> rename;
    for (size_t i = 0; i < fn.input.size(); ++i) rename[fn.input[i]] = i < node.input.size() ? node.input[i] : "";
    for (size_t i = 0; i < fn.output.size(); ++i) rename[fn.output[i]] = i < node.output.size() ? node.output[i] : "";
    auto map_name = [&](const std::string& name) -> std::string {
      if (name.empty()) return name;
      auto r = rename.find(name);
      return r != rename.end() ? r->second : prefix + name;
    };
    std::map<std::string, const AttributeProto*> caller_attrs;
    for (const auto& a : node.attribute) caller_attrs[a.name] = &a;
    for (const auto& a : fn.attribute_proto) caller_attrs.emplace(a.name, &a);  // defaults

    const OpsetMap* body_opsets = &function_opsets_.at(&fn);
    // Renames values and binds attribute references in a body node and, the
    // same way, in every subgraph it holds (their names live in the body's scope).
    std::function<Status(NodeProto&)> rewrite = [&](NodeProto& n) -> Status {
      for (auto& in : n.input) in = map_name(in);
      for (auto& o : n.output) o = map_name(o);
      if (!n.name.empty()) n.name = prefix + n.name;
      std::vector<AttributeProto> attrs;
      for (auto& a : n.attribute) {
        if (!a.ref_attr_name.empty()) {
          auto bound = caller_attrs.find(a.ref_attr_name);
          if (bound == caller_attrs.end()) continue;  // optional attribute not given: omitted
          AttributeProto resolved = *bound->second;
          resolved.name = a.name;
          resolved.ref_attr_name.clear();
          attrs.push_back(std::move(resolved));
          continue;
        }
        auto rewrite_graph = [&](std::shared_ptr<GraphProto>& g) -> Status {
          if (!g) return Status::ok();
          g = std::make_shared<GraphProto>(*g);
          for (auto& v : g->input) v.name = map_name(v.name);
          for (auto& v : g->output) v.name = map_name(v.name);
          for (auto& v : g->value_info) v.name = map_name(v.name);
          for (auto& t : g->initializer) t.name = map_name(t.name);
          for (NodeProto& sub : g->node) ONYX_RETURN_IF_ERROR(rewrite(sub));
          return Status::ok();
        };
        ONYX_RETURN_IF_ERROR(rewrite_graph(a.g));
        for (auto& g : a.graphs) ONYX_RETURN_IF_ERROR(rewrite_graph(g));
        attrs.push_back(a);
      }
      n.attribute = std::move(attrs);
      return Status::ok();
    };
    for (const NodeProto& body_node : fn.node) {
      NodeProto copy = body_node;
      ONYX_RETURN_IF_ERROR(rewrite(copy));
      ONYX_RETURN_IF_ERROR(expand(copy, body_opsets, depth + 1, out));
    }
    return Status::ok();
  }

  Result<Attribute> convert_attribute(const AttributeProto& a, const std::unordered_set<std::string>& visible,
                                      int depth) {
    Attribute attr;
    attr.name = a.name;
    switch (a.type) {
      case AttributeProto::FLOAT: attr.type = AttributeType::kFloat; attr.f = a.f; break;
      case AttributeProto::INT: attr.type = AttributeType::kInt; attr.i = a.i; break;
      case AttributeProto::STRING: attr.type = AttributeType::kString; attr.s = a.s; break;
      case AttributeProto::FLOATS: attr.type = AttributeType::kFloats; attr.floats = a.floats; break;
      case AttributeProto::INTS: attr.type = AttributeType::kInts; attr.ints = a.ints; break;
      case AttributeProto::STRINGS: attr.type = AttributeType::kStrings; attr.strings = a.strings; break;
      case AttributeProto::TENSOR: {
        attr.type = AttributeType::kTensor;
        if (!a.t) return invalid_model("attribute '", a.name, "' has type TENSOR but no tensor");
        ONYX_ASSIGN_OR_RETURN(attr.t, model::tensor_from_proto(*a.t));
        break;
      }
      case AttributeProto::SPARSE_TENSOR: {
        attr.type = AttributeType::kSparseTensor;
        if (!a.sparse_tensor) return invalid_model("attribute '", a.name, "' has no sparse tensor");
        ONYX_ASSIGN_OR_RETURN(attr.t, model::tensor_from_sparse_proto(*a.sparse_tensor));
        break;
      }
      case AttributeProto::TENSORS: {
        attr.type = AttributeType::kTensors;
        for (const auto& t : a.tensors) {
          ONYX_ASSIGN_OR_RETURN(Tensor tensor, model::tensor_from_proto(t));
          attr.tensors.push_back(std::move(tensor));
        }
        break;
      }
      case AttributeProto::GRAPH: {
        attr.type = AttributeType::kGraph;
        if (!a.g) return invalid_model("attribute '", a.name, "' has type GRAPH but no graph");
        ONYX_ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, build(*a.g, visible, depth + 1));
        attr.g = std::move(g);
        break;
      }
      case AttributeProto::GRAPHS: {
        attr.type = AttributeType::kGraphs;
        for (const auto& gp : a.graphs) {
          if (!gp) return invalid_model("attribute '", a.name, "' holds an empty graph");
          ONYX_ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, build(*gp, visible, depth + 1));
          attr.graphs.push_back(std::move(g));
        }
        break;
      }
      case AttributeProto::TYPE_PROTO: {
        attr.type = AttributeType::kTypeProto;
        if (a.tp) attr.tp = model::value_type_from_proto(*a.tp);
        break;
      }
      case AttributeProto::TYPE_PROTOS: {
        attr.type = AttributeType::kTypeProtos;
        for (const auto& tp : a.type_protos) attr.type_protos.push_back(model::value_type_from_proto(tp));
        break;
      }
      case AttributeProto::SPARSE_TENSORS: {
        attr.type = AttributeType::kTensors;
        for (const auto& s : a.sparse_tensors) {
          ONYX_ASSIGN_OR_RETURN(Tensor tensor, model::tensor_from_sparse_proto(s));
          attr.tensors.push_back(std::move(tensor));
        }
        break;
      }
      default: return invalid_model("attribute '", a.name, "' has unknown type ", a.type);
    }
    return attr;
  }

  BuildLimits limits_;
  OpsetMap model_opsets_;
  std::map<std::pair<std::string, std::string>, const FunctionProto*> functions_;
  std::map<const FunctionProto*, OpsetMap> function_opsets_;
  std::map<const FunctionBody*, std::unique_ptr<FunctionProto>> schema_functions_;
  int call_counter_ = 0;
  int64_t expanded_ = 0;  // nodes and calls expanded so far, bounded by limits_.max_nodes
};

}  // namespace

// Kahn's algorithm, keeping the given order among ready nodes.
Status sort_nodes(Graph& graph, std::vector<Node>& nodes) {
  std::vector<int32_t> producer(graph.values.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int32_t out : nodes[n].outputs) {
      if (out != kNoValue) producer[static_cast<size_t>(out)] = static_cast<int32_t>(n);
    }
  }
  // Subgraphs read outer values too: a node waits for every value its
  // subgraphs use from this graph.
  std::vector<std::vector<int32_t>> deps(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    std::unordered_set<int32_t> seen;
    auto add = [&](int32_t v) {
      if (v != kNoValue && producer[static_cast<size_t>(v)] >= 0 && seen.insert(v).second) {
        deps[n].push_back(producer[static_cast<size_t>(v)]);
      }
    };
    for (int32_t in : nodes[n].inputs) add(in);
    std::function<void(const Graph&)> visit = [&](const Graph& sub) {
      for (int32_t v : sub.outer_scope_values) add(graph.find_value(sub.value_name(v)));
      for (const Node& sn : sub.nodes) {
        for (const auto& [name, a] : sn.attributes) {
          if (a.g) visit(*a.g);
          for (const auto& g : a.graphs) visit(*g);
        }
      }
    };
    for (const auto& [name, a] : nodes[n].attributes) {
      if (a.g) visit(*a.g);
      for (const auto& g : a.graphs) visit(*g);
    }
  }
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<size_t>> users(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    for (int32_t d : deps[n]) {
      if (static_cast<size_t>(d) == n) {
        return invalid_model(nodes[n].label(n), " uses its own output as an input (a cycle)");
      }
      ++pending[n];
      users[static_cast<size_t>(d)].push_back(n);
    }
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> ready;
  for (size_t n = 0; n < nodes.size(); ++n) {
    if (pending[n] == 0) ready.push(n);
  }
  std::vector<size_t> order;
  while (!ready.empty()) {
    const size_t n = ready.top();
    ready.pop();
    order.push_back(n);
    for (size_t u : users[n]) {
      if (--pending[u] == 0) ready.push(u);
    }
  }
  if (order.size() != nodes.size()) {
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (pending[n] > 0) return invalid_model("the graph has a cycle through ", nodes[n].label(n));
    }
  }
  graph.nodes.clear();
  graph.nodes.reserve(nodes.size());
  for (size_t n : order) graph.nodes.push_back(std::move(nodes[n]));
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    for (int32_t out : graph.nodes[n].outputs) {
      if (out != kNoValue) graph.values[static_cast<size_t>(out)].producer = static_cast<int32_t>(n);
    }
  }
  return Status::ok();
}


std::map<std::string, int64_t> opset_map(const std::vector<model::OperatorSetIdProto>& imports) {
  std::map<std::string, int64_t> out;
  for (const auto& o : imports) out[canonical_domain(o.domain)] = o.version;
  return out;
}

Result<std::unique_ptr<Graph>> build_graph(const model::ModelProto& model, const BuildLimits& limits) {
  if (!model.graph) return invalid_model("the model has no graph");
  Builder builder(model, limits);
  return builder.build(*model.graph, {}, 0);
}

}  // namespace onyx::graph
