// The ExecutionProvider interface: a provider claims the nodes it can run,
// owns an allocator and a kernel registry, and copies tensors to and from the
// host. Providers are asked in the session's order; what none claims runs on
// the CPU provider, which is always present.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "providers/kernel.h"

namespace onyx {

class ExecutionProvider {
 public:
  virtual ~ExecutionProvider() = default;

  virtual std::string name() const = 0;
  virtual Device device() const = 0;
  virtual Allocator* allocator() const = 0;
  virtual const KernelRegistry& kernels() const = 0;

  // Of the `candidates` (node indices of `graph` that no earlier provider
  // took), the ones this provider runs. The default claims every node its
  // registry has a kernel for at the node's version.
  virtual std::vector<size_t> claim(const graph::Graph& graph, const std::vector<size_t>& candidates) const;

  // Copies between this provider's memory and the host. `dst` is allocated
  // by the caller with the same dtype and shape.
  virtual Status copy_to_host(const Tensor& src, Tensor& dst) const = 0;
  virtual Status copy_from_host(const Tensor& src, Tensor& dst) const = 0;
};

using ProviderFactory = std::function<std::unique_ptr<ExecutionProvider>()>;

// Provider names known to this process ("CPUExecutionProvider" always).
void register_provider(const std::string& name, ProviderFactory factory);
std::unique_ptr<ExecutionProvider> create_provider(const std::string& name);
std::vector<std::string> registered_providers();

// The CPU provider.
std::unique_ptr<ExecutionProvider> make_cpu_provider();
constexpr const char* kCpuProviderName = "CPUExecutionProvider";

}  // namespace onyx
