// The CPU provider: host memory, the CPU kernel registry, its graph passes
// (the extended fusions into com.microsoft ops and the NCHWc layout), and the
// evaluation of single nodes the optimizer folds.
#include <memory>

#include "providers/cpu/layout/layout_passes.h"
#include "providers/execution_provider.h"
#include "tensor/arena.h"

namespace onyx {
namespace {

// Evaluates one node on host tensors; no subgraphs, no thread pool.
class EvaluationContext final : public KernelContext {
 public:
  EvaluationContext(const std::vector<const Value*>& inputs, const std::vector<char>& requested, std::string label)
      : inputs_(inputs), requested_(requested), outputs_(requested.size()), label_(std::move(label)) {}
  size_t input_count() const override { return inputs_.size(); }
  const Value* input(size_t i) const override { return i < inputs_.size() ? inputs_[i] : nullptr; }
  size_t output_count() const override { return outputs_.size(); }
  bool output_requested(size_t i) const override { return i < requested_.size() && requested_[i]; }
  Tensor& allocate_output(size_t i, DataType dtype, const Shape& shape) override {
    outputs_.at(i) = Value(Tensor(dtype, shape));
    return outputs_[i].tensor();
  }
  void set_output(size_t i, Value value) override { outputs_.at(i) = std::move(value); }
  ThreadPool* thread_pool() const override { return nullptr; }
  Allocator* allocator() const override { return cpu_allocator(); }
  Status run_subgraph(const std::string&, const std::vector<Value>&, std::vector<Value>&) override {
    return not_implemented(label_, ": a node evaluated on its own runs no subgraphs");
  }
  std::string label() const override { return label_; }
  std::vector<Value>& outputs() { return outputs_; }

 private:
  const std::vector<const Value*>& inputs_;
  const std::vector<char>& requested_;
  std::vector<Value> outputs_;
  std::string label_;
};

class CpuOpSupport final : public optimizer::OpSupport {
 public:
  bool has_op(const std::string& domain, const std::string& op_type) const override {
    return cpu_kernel_registry().has_op(domain, op_type);
  }
  bool has_kernel(const std::string& domain, const std::string& op_type, int version) const override {
    return cpu_kernel_registry().find(domain, op_type, version) != nullptr;
  }
  Status evaluate(const graph::Graph& graph, size_t node_index, const std::vector<const Value*>& inputs,
                  const std::vector<char>& requested, std::vector<Value>& outputs) const override {
    const graph::Node& node = graph.nodes[node_index];
    const KernelDef* def = cpu_kernel_registry().find(graph, node);
    if (def == nullptr) return not_implemented(node.label(node_index), ": no CPU kernel");
    KernelInfo info(graph, node, node_index, cpu_allocator());
    ONYX_ASSIGN_OR_RETURN(std::unique_ptr<Kernel> kernel, def->factory(info));
    EvaluationContext run(inputs, requested, node.label(node_index));
    ONYX_RETURN_IF_ERROR(kernel->compute(run));
    outputs = std::move(run.outputs());
    return Status::ok();
  }
};

class CpuProvider final : public ExecutionProvider {
 public:
  // With an arena (SessionOptions::enable_cpu_mem_arena), host buffers come
  // from the session's own ArenaAllocator over the process's host allocator;
  // tensors keep it alive, so outputs may outlive the session.
  // `custom`: users' kernels (custom ops) over the CPU registry, or nullptr.
  explicit CpuProvider(std::shared_ptr<ArenaAllocator> arena = nullptr,
                       std::unique_ptr<KernelRegistry> custom = nullptr)
      : arena_(std::move(arena)), custom_(std::move(custom)) {}
  std::string name() const override { return kCpuProviderName; }
  Device device() const override { return Device{}; }
  Allocator* allocator(MemoryType type) const override {
    if (type != MemoryType::kDefault) return nullptr;
    return arena_ ? static_cast<Allocator*>(arena_.get()) : cpu_allocator();
  }
  const KernelRegistry& kernels() const override { return custom_ ? *custom_ : cpu_kernel_registry(); }
  std::vector<optimizer::PassList> passes(GraphOptimizationLevel level) const override {
    std::vector<optimizer::PassList> levels;
    if (static_cast<int>(level) >= static_cast<int>(GraphOptimizationLevel::kEnableExtended)) {
      levels.push_back(optimizer::extended_passes());
    }
    if (static_cast<int>(level) >= static_cast<int>(GraphOptimizationLevel::kEnableLayout)) {
      optimizer::PassList layout;
      layout.push_back(cpu::make_nchwc_transformer_pass());
      layout.push_back(cpu::make_nchwc_pointwise_depthwise_fusion_pass());
      layout.push_back(cpu::make_qlinear_nhwc_transformer_pass());
      // Last: the extended fusions want MatMul + bias Add apart.
      layout.push_back(optimizer::make_flattened_matmul_gemm_fusion_pass());
      // The original weights of the convolutions it rewrote.
      layout.push_back(optimizer::make_dead_code_elimination_pass());
      levels.push_back(std::move(layout));
    }
    return levels;
  }
  const optimizer::OpSupport* op_support() const override { return &support_; }

 private:
  CpuOpSupport support_;
  std::shared_ptr<ArenaAllocator> arena_;
  std::unique_ptr<KernelRegistry> custom_;
};

// The session's custom op domains in one registry over the CPU kernels; an
// op two domains both define for the same versions is an error.
Result<std::unique_ptr<KernelRegistry>> custom_kernels(const SessionOptions& session) {
  if (session.custom_op_registries.empty()) return std::unique_ptr<KernelRegistry>();
  auto registry = std::make_unique<KernelRegistry>();
  for (const auto& domain : session.custom_op_registries) {
    for (const KernelDef& def : domain->all()) {
      Status added = registry->add(def);
      if (!added.is_ok()) return invalid_argument("custom operators: ", added.message());
    }
  }
  registry->set_base(&cpu_kernel_registry());
  return registry;
}

}  // namespace

std::unique_ptr<ExecutionProvider> make_cpu_provider() { return std::make_unique<CpuProvider>(); }

Result<std::unique_ptr<ExecutionProvider>> make_cpu_provider(const ProviderOptions& options) {
  if (options.session == nullptr) return make_cpu_provider();
  ONYX_ASSIGN_OR_RETURN(std::unique_ptr<KernelRegistry> custom, custom_kernels(*options.session));
  if (!options.session->enable_cpu_mem_arena)
    return std::unique_ptr<ExecutionProvider>(new CpuProvider(nullptr, std::move(custom)));
  // The arena's settings: onnxruntime's OrtArenaCfg keys, as CPU provider
  // options.
  Result<ArenaConfig> config = parse_arena_config(options.values);
  if (!config.is_ok())
    return Status(config.status().code(), str_cat("CPUExecutionProvider: ", config.status().message()));
  return std::unique_ptr<ExecutionProvider>(
      new CpuProvider(std::make_shared<ArenaAllocator>(cpu_allocator(), std::move(config).value()), std::move(custom)));
}

}  // namespace onyx
