// The ExecutionProvider interface. A provider owns a device's memory
// (allocators per memory type), the transfers between that memory and the
// host, a stream type, and either kernels (a kernel provider: it claims the
// single nodes its typed registry has kernels for) or a compiler (a compiling
// provider: it claims connected groups of nodes, which the session fuses into
// one node that the provider compiles once). Providers are asked in the
// session's order; what none claims runs on the CPU provider, always last.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "onyx/options.h"
#include "optimizer/pass.h"
#include "providers/data_transfer.h"
#include "providers/kernel.h"
#include "providers/stream.h"

namespace onyx {

// Nodes a provider takes: one node (kernel providers), or a connected group
// that becomes one fused node compiled by the provider.
struct NodeGroup {
  std::vector<size_t> nodes;  // indices into the graph's nodes
};

// Options a session hands every provider it creates: the session's own
// settings, and the provider's options as the user gave them (name -> value,
// as onnxruntime's provider options).
struct ProviderOptions {
  std::map<std::string, std::string> values;
  const SessionOptions* session = nullptr;  // valid while the provider is created
};

class ExecutionProvider {
 public:
  enum class Kind { kKernels, kCompiler };

  virtual ~ExecutionProvider() = default;

  virtual std::string name() const = 0;
  // The memory its kernels read and write (MemoryType::kDefault).
  virtual Device device() const = 0;
  virtual Kind kind() const { return Kind::kKernels; }
  // Memory of the given type on this provider's device; kDefault is where
  // kernels allocate outputs. nullptr when the device has no such memory.
  virtual Allocator* allocator(MemoryType type = MemoryType::kDefault) const = 0;
  // Kernels by (domain, op, versions, types). A compiling provider may have
  // none.
  virtual const KernelRegistry& kernels() const = 0;
  // Copies between this provider's memory and the host (and other devices it
  // reaches directly). nullptr for the CPU provider: host copies are built in.
  virtual std::shared_ptr<const DataTransfer> data_transfer() const { return nullptr; }
  // A new stream on this provider's device; one per run and provider. The
  // default runs work synchronously on the calling thread.
  virtual std::unique_ptr<Stream> create_stream() const { return std::make_unique<SynchronousStream>(device()); }

  // Of the `candidates` (node indices of `graph` that no earlier provider
  // took, in topological order), what this provider runs. The default claims
  // each node its registry has a kernel for, by types as well as version.
  virtual std::vector<NodeGroup> claim(const graph::Graph& graph, const std::vector<size_t>& candidates) const;
  // For a compiling provider: a kernel that runs `fused` (a standalone graph
  // of the nodes of one claimed group: its inputs are what enters the group,
  // its outputs what leaves it, its initializers the constants the group
  // reads). Called once per group at session creation.
  virtual Result<std::unique_ptr<Kernel>> compile(const graph::Graph& fused, const KernelInfo& info) const {
    (void)fused;
    return not_implemented(info.label(), ": provider ", name(), " compiles no fused nodes");
  }
  // Graph passes of this provider, run after partitioning on the nodes it
  // owns only (its fusions and layouts), for the session's level: lists run
  // one after the other, each to a fixed point.
  virtual std::vector<optimizer::PassList> passes(GraphOptimizationLevel level) const {
    (void)level;
    return {};
  }
  // What the provider's ops can do for the optimizer (constant folding,
  // fusion checks); nullptr when it offers nothing.
  virtual const optimizer::OpSupport* op_support() const { return nullptr; }
  // The options it was created with, as get_provider_options() reports them.
  virtual std::map<std::string, std::string> options() const { return {}; }
};

using ProviderFactory = std::function<Result<std::unique_ptr<ExecutionProvider>>(const ProviderOptions&)>;

// Provider names known to this process ("CPUExecutionProvider" always).
// `device` is the device type whose memory the provider serves, so that
// memory outside any session (an OrtValue made on "cuda") finds a provider
// for its allocator and copies; none for providers of host memory only.
void register_provider(const std::string& name, ProviderFactory factory,
                       std::optional<DeviceType> device = std::nullopt);
// Records that a provider whose library loaded cannot be offered in this
// process, and why (its library found no device): it stays out of
// registered_providers(), and create_provider's error for its name gives the
// reason instead of calling the name unknown.
void register_unavailable_provider(const std::string& name, const std::string& reason);
// Creates a provider by name; an unknown name or a provider that cannot load
// (its library or device missing) is an error saying so.
Result<std::unique_ptr<ExecutionProvider>> create_provider(const std::string& name,
                                                           const ProviderOptions& options = {});
std::vector<std::string> registered_providers();
// The registered providers that serve `device`'s memory, in the order they
// were registered (never the CPU provider: host memory needs none).
std::vector<std::string> providers_for_device(DeviceType device);

// The CPU provider over the process's host allocator.
std::unique_ptr<ExecutionProvider> make_cpu_provider();
// The CPU provider a session makes: with SessionOptions::enable_cpu_mem_arena
// its allocator is an arena of its own, configured by onnxruntime's arena
// keys in the provider options (max_mem, arena_extend_strategy, ...).
Result<std::unique_ptr<ExecutionProvider>> make_cpu_provider(const ProviderOptions& options);
constexpr const char* kCpuProviderName = "CPUExecutionProvider";

}  // namespace onyx
