// The provider registry and what every provider shares.
#include "providers/execution_provider.h"

#include <algorithm>
#include <map>
#include <mutex>

namespace onyx {

std::vector<NodeGroup> ExecutionProvider::claim(const graph::Graph& graph,
                                                const std::vector<size_t>& candidates) const {
  std::vector<NodeGroup> claimed;
  for (size_t n : candidates) {
    if (kernels().find(graph, graph.nodes[n]) != nullptr) claimed.push_back(NodeGroup{{n}});
  }
  return claimed;
}

namespace {

struct RegisteredProvider {
  ProviderFactory factory;
  std::optional<DeviceType> device;
  size_t order = 0;  // registration order, for providers_for_device
};

struct ProviderTable {
  std::mutex mutex;
  std::map<std::string, RegisteredProvider> factories;
  size_t registered = 0;
};

ProviderTable& provider_table() {
  static ProviderTable table;
  return table;
}

}  // namespace

void register_provider(const std::string& name, ProviderFactory factory, std::optional<DeviceType> device) {
  ProviderTable& t = provider_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.factories.find(name);
  // Registering a name again replaces its factory but keeps its place.
  const size_t order = it != t.factories.end() ? it->second.order : t.registered++;
  t.factories[name] = RegisteredProvider{std::move(factory), device, order};
}

Result<std::unique_ptr<ExecutionProvider>> create_provider(const std::string& name, const ProviderOptions& options) {
  if (name == kCpuProviderName) {
    const KernelRegistry& registry = cpu_kernel_registry();
    if (!registry.refused().empty()) {
      // A build defect (two kernels for one op, version and type), reported
      // by every session rather than silently running one of them.
      return runtime_error("the CPU kernel registry refused ", registry.refused().size(),
                           " definition(s); first: ", registry.refused().front());
    }
    return make_cpu_provider(options);
  }
  ProviderFactory factory;
  {
    ProviderTable& t = provider_table();
    std::lock_guard<std::mutex> lock(t.mutex);
    auto it = t.factories.find(name);
    if (it == t.factories.end()) {
      std::string known;
      for (const auto& [n, f] : t.factories) known += n + ", ";
      return invalid_argument("unknown execution provider '", name, "'; this build has ", known, kCpuProviderName);
    }
    factory = it->second.factory;
  }
  return factory(options);
}

std::vector<std::string> registered_providers() {
  ProviderTable& t = provider_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::vector<std::string> names;
  for (const auto& [name, f] : t.factories) names.push_back(name);
  names.push_back(kCpuProviderName);
  return names;
}

std::vector<std::string> providers_for_device(DeviceType device) {
  ProviderTable& t = provider_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::vector<std::pair<size_t, std::string>> serving;
  for (const auto& [name, entry] : t.factories) {
    if (entry.device == device) serving.emplace_back(entry.order, name);
  }
  std::sort(serving.begin(), serving.end());
  std::vector<std::string> names;
  for (auto& [order, name] : serving) names.push_back(std::move(name));
  return names;
}

}  // namespace onyx
