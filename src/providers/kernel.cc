// KernelInfo attribute access and the kernel registry.
#include "providers/kernel.h"

#include <algorithm>

namespace onyx {

const Tensor* KernelInfo::constant_input(size_t i) const {
  if (!has_input(i)) return nullptr;
  auto it = graph_.initializers.find(node_.inputs[i]);
  if (it == graph_.initializers.end()) return nullptr;
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

void KernelRegistry::add(KernelDef def) { defs_.push_back(std::move(def)); }

const KernelDef* KernelRegistry::find(const std::string& domain, const std::string& op_type, int version) const {
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
                     [&](const KernelDef& d) { return d.domain == domain && d.op_type == op_type; });
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
}  // namespace types

}  // namespace onyx
