// The provider registry and the CPU provider.
#include "providers/execution_provider.h"

#include <cstring>
#include <map>
#include <mutex>

namespace onyx {

std::vector<size_t> ExecutionProvider::claim(const graph::Graph& graph, const std::vector<size_t>& candidates) const {
  std::vector<size_t> claimed;
  for (size_t n : candidates) {
    const graph::Node& node = graph.nodes[n];
    if (kernels().find(node.domain, node.op_type, node.since_version) != nullptr) claimed.push_back(n);
  }
  return claimed;
}

namespace {

class CpuProvider final : public ExecutionProvider {
 public:
  std::string name() const override { return kCpuProviderName; }
  Device device() const override { return Device{}; }
  Allocator* allocator() const override { return cpu_allocator(); }
  const KernelRegistry& kernels() const override { return cpu_kernel_registry(); }
  Status copy_to_host(const Tensor& src, Tensor& dst) const override { return copy(src, dst); }
  Status copy_from_host(const Tensor& src, Tensor& dst) const override { return copy(src, dst); }

 private:
  static Status copy(const Tensor& src, Tensor& dst) {
    if (src.dtype() == DataType::kString) {
      for (int64_t i = 0; i < src.size(); ++i) dst.data<std::string>()[i] = src.data<std::string>()[i];
    } else if (src.bytes() > 0) {
      std::memcpy(dst.raw_data(), src.raw_data(), src.bytes());
    }
    return Status::ok();
  }
};

struct ProviderTable {
  std::mutex mutex;
  std::map<std::string, ProviderFactory> factories;
};

ProviderTable& provider_table() {
  static ProviderTable table;
  return table;
}

}  // namespace

std::unique_ptr<ExecutionProvider> make_cpu_provider() { return std::make_unique<CpuProvider>(); }

void register_provider(const std::string& name, ProviderFactory factory) {
  ProviderTable& t = provider_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  t.factories[name] = std::move(factory);
}

std::unique_ptr<ExecutionProvider> create_provider(const std::string& name) {
  if (name == kCpuProviderName) return make_cpu_provider();
  ProviderTable& t = provider_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.factories.find(name);
  return it == t.factories.end() ? nullptr : it->second();
}

std::vector<std::string> registered_providers() {
  ProviderTable& t = provider_table();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::vector<std::string> names;
  for (const auto& [name, f] : t.factories) names.push_back(name);
  names.push_back(kCpuProviderName);
  return names;
}

}  // namespace onyx
