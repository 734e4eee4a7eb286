// Lookup over the generated op schema table: which schema version is in force
// for an op at a model's opset.
#include "graph/schema.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>

namespace onyx::graph {
namespace {

const std::string& canonical_domain(const std::string& domain) {
  static const std::string kEmpty;
  return domain == "ai.onnx" ? kEmpty : domain;
}

struct SchemaIndex {
  // "domain\nop_type" -> versions ascending by since_version.
  std::unordered_map<std::string, std::vector<const OpSchema*>> by_op;
  std::unordered_map<std::string, int> latest_by_domain;
};

std::string key_of(const std::string& domain, const std::string& op_type) {
  std::string key;
  key.reserve(domain.size() + op_type.size() + 1);
  key += domain;
  key += '\n';
  key += op_type;
  return key;
}

// Built once on first use and never changed afterwards (thread-safe static init).
const SchemaIndex& schema_index() {
  static const SchemaIndex index = [] {
    SchemaIndex built;
    size_t count = 0;
    const OpSchema* schemas = all_schemas(&count);
    for (size_t i = 0; i < count; ++i) {
      const OpSchema& schema = schemas[i];
      built.by_op[key_of(schema.domain, schema.op_type)].push_back(&schema);
      int& latest = built.latest_by_domain[schema.domain];
      latest = std::max(latest, schema.since_version);
    }
    for (auto& entry : built.by_op) {
      std::sort(entry.second.begin(), entry.second.end(),
                [](const OpSchema* a, const OpSchema* b) { return a->since_version < b->since_version; });
    }
    return built;
  }();
  return index;
}

const std::vector<const OpSchema*>* versions_of(const std::string& domain, const std::string& op_type) {
  const SchemaIndex& index = schema_index();
  auto it = index.by_op.find(key_of(canonical_domain(domain), op_type));
  return it == index.by_op.end() ? nullptr : &it->second;
}

int formal_index(const FormalParam* params, int count, int index) {
  if (index < 0 || count <= 0) return -1;
  if (index < count) return index;
  return params[count - 1].option == ParamOption::kVariadic ? count - 1 : -1;
}

}  // namespace

const AttributeSchema* OpSchema::attribute(std::string_view name) const {
  for (int i = 0; i < attribute_count; ++i) {
    if (name == attributes[i].name) return &attributes[i];
  }
  return nullptr;
}

const TypeConstraint* OpSchema::type_constraint(std::string_view type_param) const {
  for (int i = 0; i < type_constraint_count; ++i) {
    if (type_param == type_constraints[i].type_param) return &type_constraints[i];
  }
  return nullptr;
}

const FunctionBody* OpSchema::function_body(int opset) const {
  const FunctionBody* best = nullptr;
  for (int i = 0; i < function_count; ++i) {
    if (functions[i].opset <= opset) best = &functions[i];
  }
  return best;
}

int OpSchema::formal_input_index(int index) const { return formal_index(inputs, input_count, index); }
int OpSchema::formal_output_index(int index) const { return formal_index(outputs, output_count, index); }

const OpSchema* find_schema_including_deprecated(const std::string& domain, const std::string& op_type,
                                                 int opset) {
  const auto* versions = versions_of(domain, op_type);
  if (versions == nullptr) return nullptr;
  const OpSchema* found = nullptr;
  for (const OpSchema* schema : *versions) {
    if (schema->since_version > opset) break;
    found = schema;
  }
  return found;
}

const OpSchema* find_schema(const std::string& domain, const std::string& op_type, int opset) {
  const OpSchema* schema = find_schema_including_deprecated(domain, op_type, opset);
  // A deprecated schema marks the version at which the op was removed.
  if (schema != nullptr && schema->deprecated) return nullptr;
  return schema;
}

std::vector<int> schema_versions(const std::string& domain, const std::string& op_type) {
  std::vector<int> result;
  const auto* versions = versions_of(domain, op_type);
  if (versions == nullptr) return result;
  for (const OpSchema* schema : *versions) result.push_back(schema->since_version);
  return result;
}

bool is_known_domain(const std::string& domain) {
  const SchemaIndex& index = schema_index();
  return index.latest_by_domain.count(canonical_domain(domain)) > 0;
}

int latest_opset(const std::string& domain) {
  const SchemaIndex& index = schema_index();
  auto it = index.latest_by_domain.find(canonical_domain(domain));
  return it == index.latest_by_domain.end() ? 0 : it->second;
}

}  // namespace onyx::graph
