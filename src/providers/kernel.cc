// KernelInfo attribute access and the kernel registry.
#include "providers/kernel.h"

#include <algorithm>

#include "graph/schema.h"

namespace onyx {

const Tensor* KernelInfo::constant_input(size_t i) const {
  if (!has_input(i)) return nullptr;
  auto it = graph_.initializers.find(node_.inputs[i]);
  if (it == graph_.initializers.end()) {
    const graph::ValueEntry& value = graph_.values[static_cast<size_t>(node_.inputs[i])];
    return value.is_outer_scope && outer_constants_ ? outer_constants_(value.name) : nullptr;
  }
  if (!inputs_are_constant_ && graph_.values[static_cast<size_t>(it->first)].is_graph_input) return nullptr;
  return &it->second;
}

const graph::TypeAndShape* KernelInfo::input_info(size_t i) const {
  if (!has_input(i)) return nullptr;
  return &graph_.values[static_cast<size_t>(node_.inputs[i])].info;
}

int64_t KernelInfo::attr_int(const std::string& name, int64_t default_value) const {
  const graph::Attribute* a = attr(name);
  return a ? a->i : default_value;
}

float KernelInfo::attr_float(const std::string& name, float default_value) const {
  const graph::Attribute* a = attr(name);
  return a ? a->f : default_value;
}

std::string KernelInfo::attr_string(const std::string& name, const std::string& default_value) const {
  const graph::Attribute* a = attr(name);
  return a ? a->s : default_value;
}

std::vector<int64_t> KernelInfo::attr_ints(const std::string& name, std::vector<int64_t> default_value) const {
  const graph::Attribute* a = attr(name);
  return a ? a->ints : default_value;
}

std::vector<float> KernelInfo::attr_floats(const std::string& name, std::vector<float> default_value) const {
  const graph::Attribute* a = attr(name);
  return a ? a->floats : default_value;
}

std::vector<std::string> KernelInfo::attr_strings(const std::string& name,
                                                  std::vector<std::string> default_value) const {
  const graph::Attribute* a = attr(name);
  return a ? a->strings : default_value;
}

const Tensor* KernelInfo::attr_tensor(const std::string& name) const {
  const graph::Attribute* a = attr(name);
  return (a && a->t.defined()) ? &a->t : nullptr;
}

bool KernelDef::input_on_host(size_t i) const {
  return std::find(host_inputs.begin(), host_inputs.end(), i) != host_inputs.end();
}

bool KernelDef::output_on_host(size_t i) const {
  return std::find(host_outputs.begin(), host_outputs.end(), i) != host_outputs.end();
}

namespace {

bool ranges_overlap(const KernelDef& a, const KernelDef& b) {
  return a.since_version <= b.last_version && b.since_version <= a.last_version;
}

// Types both definitions accept for their main constraint; an empty list
// accepts every type.
std::vector<DataType> shared_types(const KernelDef& a, const KernelDef& b) {
  if (a.type_constraint != b.type_constraint && !a.types.empty() && !b.types.empty()) return {};
  if (a.types.empty()) return b.types.empty() ? std::vector<DataType>{DataType::kUndefined} : b.types;
  if (b.types.empty()) return a.types;
  std::vector<DataType> out;
  for (DataType t : a.types) {
    if (std::find(b.types.begin(), b.types.end(), t) != b.types.end()) out.push_back(t);
  }
  return out;
}

std::string version_range(const KernelDef& def) {
  return def.last_version == kLatestVersion ? str_cat(def.since_version, "+")
                                            : str_cat(def.since_version, "-", def.last_version);
}

std::string domain_name(const std::string& domain) { return domain.empty() ? "ai.onnx" : domain; }

// The element type bound to type variable `constraint` at `node`: the type of
// the first input (else output) the schema declares with it. kUndefined when
// no such value has a known tensor type. An empty `constraint` means the
// schema's first input that has a type variable, or the node's first input
// for ops with no schema.
DataType bound_type(const graph::Graph& graph, const graph::Node& node, const std::string& constraint) {
  auto elem = [&](int32_t id) {
    if (id == graph::kNoValue || id < 0 || static_cast<size_t>(id) >= graph.values.size()) return DataType::kUndefined;
    const ValueType& t = graph.values[static_cast<size_t>(id)].info.type;
    // An element type onyx does not know is left to the kernel to refuse.
    if (t.kind != ValueType::Kind::kTensor || dtype_size(t.elem_type) == 0) return DataType::kUndefined;
    return t.elem_type;
  };
  // Without a schema (contrib ops) nothing says which input carries the
  // constraint: such kernels check their types themselves.
  const graph::OpSchema* schema = graph::find_schema(node.domain, node.op_type, node.since_version);
  if (schema == nullptr) return DataType::kUndefined;
  // The main constraint is the type variable of the first input that has one;
  // any input or output bound to that variable tells its type (MatMul's A may
  // come from a contrib op inference does not cover while B is a typed weight).
  std::string variable = constraint;
  if (variable.empty()) {
    for (size_t i = 0; i < node.inputs.size() && variable.empty(); ++i) {
      const int formal = schema->formal_input_index(static_cast<int>(i));
      if (formal >= 0 && schema->type_constraint(schema->inputs[formal].type_str) != nullptr) {
        variable = schema->inputs[formal].type_str;
      }
    }
    if (variable.empty()) return DataType::kUndefined;
  }
  auto matches = [&](const graph::FormalParam& p) { return p.type_str == variable; };
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const int formal = schema->formal_input_index(static_cast<int>(i));
    if (formal < 0 || !matches(schema->inputs[formal])) continue;
    const DataType t = elem(node.inputs[i]);
    if (t != DataType::kUndefined) return t;
  }
  for (size_t o = 0; o < node.outputs.size(); ++o) {
    const int formal = schema->formal_output_index(static_cast<int>(o));
    if (formal < 0 || !matches(schema->outputs[formal])) continue;
    const DataType t = elem(node.outputs[o]);
    if (t != DataType::kUndefined) return t;
  }
  return DataType::kUndefined;
}

bool accepts(const std::vector<DataType>& types, DataType t) {
  return types.empty() || t == DataType::kUndefined || std::find(types.begin(), types.end(), t) != types.end();
}

}  // namespace

Status KernelRegistry::add(KernelDef def) {
  if (def.op_type.empty() || !def.factory || def.since_version > def.last_version) {
    return invalid_argument("kernel definition for (", domain_name(def.domain), ", '", def.op_type,
                            "') needs an op type, a factory and since_version <= last_version");
  }
  for (const KernelDef& other : defs_) {
    if (other.domain != def.domain || other.op_type != def.op_type || !ranges_overlap(other, def)) continue;
    const std::vector<DataType> both = shared_types(other, def);
    if (both.empty()) continue;
    const std::string type = both[0] == DataType::kUndefined ? std::string("every type") : dtype_name(both[0]);
    return invalid_argument("kernel (", domain_name(def.domain), ", ", def.op_type, ", versions ", version_range(def),
                            ") is registered twice: it overlaps versions ", version_range(other), " for ", type);
  }
  defs_.push_back(std::move(def));
  return Status::ok();
}

const KernelDef* KernelRegistry::find(const graph::Graph& graph, const graph::Node& node, std::string* why_not) const {
  const KernelDef* own = find_own(graph, node, why_not);
  if (own != nullptr || base_ == nullptr) return own;
  return base_->find(graph, node, why_not);
}

const KernelDef* KernelRegistry::find(const std::string& domain, const std::string& op_type, int version) const {
  const KernelDef* own = find_own(domain, op_type, version);
  if (own != nullptr || base_ == nullptr) return own;
  return base_->find(domain, op_type, version);
}

const KernelDef* KernelRegistry::find_own(const graph::Graph& graph, const graph::Node& node,
                                          std::string* why_not) const {
  const KernelDef* best = nullptr;
  for (const KernelDef& def : defs_) {
    if (def.domain != node.domain || def.op_type != node.op_type) continue;
    if (node.since_version < def.since_version || node.since_version > def.last_version) continue;
    const DataType main = bound_type(graph, node, def.type_constraint);
    bool typed = accepts(def.types, main);
    if (!typed && why_not) {
      *why_not = str_cat(def.type_constraint.empty() ? "T" : def.type_constraint, " = ", dtype_name(main));
    }
    for (const auto& [constraint, types] : def.more_type_constraints) {
      if (!typed) break;
      const DataType t = bound_type(graph, node, constraint);
      typed = accepts(types, t);
      if (!typed && why_not) *why_not = str_cat(constraint, " = ", dtype_name(t));
    }
    if (!typed) continue;
    if (best == nullptr || def.since_version > best->since_version) best = &def;
  }
  return best;
}

const KernelDef* KernelRegistry::find_own(const std::string& domain, const std::string& op_type, int version) const {
  const KernelDef* best = nullptr;
  for (const KernelDef& def : defs_) {
    if (def.domain != domain || def.op_type != op_type) continue;
    if (version < def.since_version || version > def.last_version) continue;
    if (best == nullptr || def.since_version > best->since_version) best = &def;
  }
  return best;
}

bool KernelRegistry::has_op(const std::string& domain, const std::string& op_type) const {
  return std::any_of(defs_.begin(), defs_.end(),
                     [&](const KernelDef& d) { return d.domain == domain && d.op_type == op_type; }) ||
         (base_ != nullptr && base_->has_op(domain, op_type));
}

KernelRegistry& cpu_kernel_registry() {
  static KernelRegistry registry;
  return registry;
}

namespace types {
std::vector<DataType> numeric() {
  std::vector<DataType> out = floats();
  for (auto t : signed_ints()) out.push_back(t);
  for (auto t : unsigned_ints()) out.push_back(t);
  return out;
}
std::vector<DataType> all() {
  std::vector<DataType> out = numeric();
  out.push_back(DataType::kBool);
  out.push_back(DataType::kString);
  return out;
}
std::vector<DataType> all_with_small_formats() {
  std::vector<DataType> out = all();
  for (DataType t : {DataType::kFloat8E4M3FN, DataType::kFloat8E4M3FNUZ, DataType::kFloat8E5M2,
                     DataType::kFloat8E5M2FNUZ, DataType::kUInt4, DataType::kInt4, DataType::kFloat4E2M1,
                     DataType::kFloat8E8M0, DataType::kUInt2, DataType::kInt2}) {
    out.push_back(t);
  }
  return out;
}
}  // namespace types

}  // namespace onyx
