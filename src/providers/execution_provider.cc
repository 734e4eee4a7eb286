// The provider registry and what every provider shares.
#include "providers/execution_provider.h"

#include <algorithm>
#include <map>
#include <mutex>

#ifdef ONYX_PROVIDER_LIBRARIES
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#endif

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
  std::map<std::string, std::string> unavailable;  // name -> why it is not offered
  size_t registered = 0;
};

ProviderTable& provider_table() {
  static ProviderTable table;
  return table;
}

// Optional providers live in libraries of their own beside libonyx.so (they
// link libraries the core must not need, such as libopenvino.so). Each
// registers itself from a static initializer when loaded. A library that
// does not load (its dependencies gone) leaves its provider unregistered;
// ONYX_DEBUG_PROVIDERS=1 prints why.
void load_provider_libraries() {
#ifdef ONYX_PROVIDER_LIBRARIES
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info self{};
    if (dladdr(reinterpret_cast<void*>(&load_provider_libraries), &self) == 0 || self.dli_fname == nullptr) return;
    std::string dir = self.dli_fname;
    const size_t slash = dir.rfind('/');
    dir = slash == std::string::npos ? std::string(".") : dir.substr(0, slash);
    // File names separated by ':' (the build's list of optional providers).
    const std::string libraries = ONYX_PROVIDER_LIBRARIES;
    for (size_t start = 0; start < libraries.size();) {
      size_t end = libraries.find(':', start);
      if (end == std::string::npos) end = libraries.size();
      const std::string path = dir + "/" + libraries.substr(start, end - start);
      start = end + 1;
      // Never closed: the providers it registered point into it.
      if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
        const char* debug = std::getenv("ONYX_DEBUG_PROVIDERS");
        if (debug != nullptr && std::string(debug) == "1") std::fprintf(stderr, "onyx: %s\n", dlerror());
      }
    }
  });
#endif
}

}  // namespace

void register_provider(const std::string& name, ProviderFactory factory, std::optional<DeviceType> device) {
  ProviderTable& t = provider_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.factories.find(name);
  // Registering a name again replaces its factory but keeps its place.
  const size_t order = it != t.factories.end() ? it->second.order : t.registered++;
  t.factories[name] = RegisteredProvider{std::move(factory), device, order};
  t.unavailable.erase(name);
}

void register_unavailable_provider(const std::string& name, const std::string& reason) {
  ProviderTable& t = provider_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  if (t.factories.count(name) == 0) t.unavailable[name] = reason;
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
  load_provider_libraries();
  ProviderFactory factory;
  {
    ProviderTable& t = provider_table();
    std::lock_guard<std::mutex> lock(t.mutex);
    auto it = t.factories.find(name);
    if (it == t.factories.end()) {
      auto why = t.unavailable.find(name);
      if (why != t.unavailable.end()) return runtime_error(name, " is not available: ", why->second);
      std::string known;
      for (const auto& [n, f] : t.factories) known += n + ", ";
      return invalid_argument("unknown execution provider '", name, "'; this build has ", known, kCpuProviderName);
    }
    factory = it->second.factory;
  }
  return factory(options);
}

std::vector<std::string> registered_providers() {
  load_provider_libraries();
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
