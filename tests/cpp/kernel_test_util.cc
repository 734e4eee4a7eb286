// One-node kernel runner for kernel unit tests. After the CPU kernel runs,
// the same node runs on every other registered provider that takes it (the
// simulated test device always; OpenVINO and others where built), and a
// provider whose outputs differ from the CPU's fails the test: one harness
// for every provider, no test code per provider.
#include "kernel_test_util.h"

#include <cmath>
#include <memory>

#include "providers/data_transfer.h"
#include "providers/execution_provider.h"
#include "providers/testing/test_device.h"

namespace onyx::testing {
namespace {

class TestContext final : public KernelContext {
 public:
  TestContext(const std::vector<Value>& inputs, size_t outputs, ThreadPool* pool,
              Allocator* allocator = cpu_allocator())
      : inputs_(inputs), outputs_(outputs), pool_(pool), allocator_(allocator) {}
  size_t input_count() const override { return inputs_.size(); }
  const Value* input(size_t i) const override {
    if (i >= inputs_.size() || (inputs_[i].is_none() && !inputs_[i].is_optional())) return nullptr;
    return &inputs_[i];
  }
  size_t output_count() const override { return outputs_.size(); }
  bool output_requested(size_t i) const override { return i < outputs_.size(); }
  Tensor& allocate_output(size_t i, DataType dtype, const Shape& shape) override {
    outputs_[i] = Value(Tensor(dtype, shape, allocator_));
    return outputs_[i].tensor();
  }
  void set_output(size_t i, Value value) override { outputs_[i] = std::move(value); }
  ThreadPool* thread_pool() const override { return pool_; }
  Allocator* allocator() const override { return allocator_; }
  Status run_subgraph(const std::string&, const std::vector<Value>&, std::vector<Value>&) override {
    return not_implemented("subgraphs are not available in the one-node test runner");
  }
  std::string label() const override { return "test node"; }
  std::vector<Value>& outputs() { return outputs_; }

 private:
  const std::vector<Value>& inputs_;
  std::vector<Value> outputs_;
  ThreadPool* pool_;
  Allocator* allocator_;
};

// "" when `got` matches the CPU's `want`, else what differs.
std::string differ(const Value& got, const Value& want) {
  if (!want.is_tensor()) return "";  // sequences and maps: compared by the CPU tests alone
  if (!got.is_tensor()) return "not a tensor";
  const Tensor& g = got.tensor();
  const Tensor& w = want.tensor();
  if (g.dtype() != w.dtype() || g.shape() != w.shape()) return "got " + g.describe() + ", expected " + w.describe();
  if (w.dtype() == DataType::kString) {
    for (int64_t i = 0; i < w.size(); ++i) {
      if (g.data<std::string>()[i] != w.data<std::string>()[i]) return str_cat("string ", i, " differs");
    }
    return "";
  }
  if (w.dtype() == DataType::kFloat || w.dtype() == DataType::kDouble) {
    for (int64_t i = 0; i < w.size(); ++i) {
      const double a = w.dtype() == DataType::kFloat ? g.data<float>()[i] : g.data<double>()[i];
      const double b = w.dtype() == DataType::kFloat ? w.data<float>()[i] : w.data<double>()[i];
      if (a == b || (std::isnan(a) && std::isnan(b))) continue;
      if (!(std::fabs(a - b) <= 1e-4 + 1e-4 * std::fabs(b))) return str_cat("element ", i, " is ", a, ", expected ", b);
    }
    return "";
  }
  if (std::memcmp(g.raw_data(), w.raw_data(), w.bytes()) != 0) return "the values differ";
  return "";
}

// Runs the node of `g` on `provider` when it takes it; "" when it does not,
// or when its outputs match `want`.
std::string check_provider(const ExecutionProvider& provider, graph::Graph& g, const std::vector<Value>& inputs,
                           const std::vector<Value>& want) {
  const graph::Node& node = g.nodes[0];
  // What the session would give it: its claim (a kernel provider's also
  // checks what its kernels take beyond their types).
  if (provider.claim(g, {0}).empty()) return "";
  const KernelDef* def = nullptr;
  if (provider.kind() == ExecutionProvider::Kind::kKernels) {
    def = provider.kernels().find(g, node);
    if (def == nullptr) return "";
  }
  DataTransferRegistry transfers;
  transfers.add(provider.data_transfer());
  Allocator* device = provider.allocator();
  std::vector<Value> placed;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Value& v = inputs[i];
    if (!v.is_tensor() || (def != nullptr && def->input_on_host(i)) || !v.tensor().defined()) {
      placed.push_back(v);
      continue;
    }
    Result<Tensor> there = transfers.copy_to(v.tensor(), device);
    if (!there.is_ok()) return "cannot copy input " + std::to_string(i) + ": " + there.status().message();
    placed.emplace_back(std::move(there).value());
  }
  KernelInfo info(g, node, 0, device);
  Result<std::unique_ptr<Kernel>> kernel = def != nullptr ? def->factory(info) : provider.compile(g, info);
  if (!kernel.is_ok()) return "cannot create the kernel: " + kernel.status().message();
  TestContext ctx(placed, want.size(), nullptr, device);
  Status s = (*kernel)->compute(ctx);
  if (!s.is_ok()) return "failed where the CPU did not: " + s.message();
  for (size_t o = 0; o < want.size(); ++o) {
    Value got = ctx.outputs()[o];
    if (got.is_tensor() && got.tensor().defined() && !got.tensor().device().host_readable()) {
      Result<Tensor> back = transfers.copy_to(got.tensor(), cpu_allocator());
      if (!back.is_ok()) return "cannot copy output " + std::to_string(o) + " back: " + back.status().message();
      got = Value(std::move(back).value());
    }
    std::string why = differ(got, want[o]);
    if (!why.empty()) return "output " + std::to_string(o) + ": " + why;
  }
  return "";
}

// Every provider registered besides the CPU, created once.
const std::vector<std::unique_ptr<ExecutionProvider>>& other_providers() {
  static const std::vector<std::unique_ptr<ExecutionProvider>> providers = [] {
    register_test_device_providers();
    std::vector<std::unique_ptr<ExecutionProvider>> made;
    for (const std::string& name : registered_providers()) {
      if (name == kCpuProviderName) continue;
      Result<std::unique_ptr<ExecutionProvider>> p = create_provider(name);
      if (p.is_ok()) made.push_back(std::move(p).value());
    }
    return made;
  }();
  return providers;
}

}  // namespace

KernelRun run_kernel(const std::string& op_type, int opset, const std::vector<Value>& inputs,
                     const std::vector<graph::Attribute>& attributes, size_t output_count,
                     const std::string& domain, int threads) {
  graph::Graph g;
  graph::Node node;
  node.op_type = op_type;
  node.domain = domain;
  node.opset = opset;
  node.since_version = opset;
  for (size_t i = 0; i < inputs.size(); ++i) {
    node.inputs.push_back(inputs[i].is_none() && !inputs[i].is_optional() ? graph::kNoValue
                                                                            : g.value_id("in" + std::to_string(i)));
  }
  for (size_t i = 0; i < output_count; ++i) node.outputs.push_back(g.value_id("out" + std::to_string(i)));
  for (const auto& a : attributes) node.attributes[a.name] = a;
  g.nodes.push_back(node);

  KernelRun run;
  const KernelDef* def = cpu_kernel_registry().find(domain, op_type, opset);
  if (def == nullptr) {
    run.status = not_implemented("no CPU kernel for ", op_type, " at opset ", opset);
    return run;
  }
  KernelInfo info(g, g.nodes[0], 0, cpu_allocator());
  std::unique_ptr<Kernel> kernel;
  try {
    auto made = def->factory(info);
    if (!made.is_ok()) {
      run.status = made.status();
      return run;
    }
    kernel = std::move(made).value();
    std::unique_ptr<ThreadPool> pool = threads > 1 ? std::make_unique<ThreadPool>(threads) : nullptr;
    TestContext ctx(inputs, output_count, pool.get());
    run.status = kernel->compute(ctx);
    run.outputs = std::move(ctx.outputs());
  } catch (const std::exception& e) {
    run.status = runtime_error(e.what());
  }
  if (!run.status.is_ok()) return run;
  // The same node on every other provider that takes it, typed from the
  // inputs, with the CPU's outputs as the reference.
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int32_t id = g.nodes[0].inputs[i];
    if (id == graph::kNoValue || !inputs[i].is_tensor()) continue;
    graph::TypeAndShape& info_i = g.values[static_cast<size_t>(id)].info;
    info_i.type = ValueType::tensor(inputs[i].tensor().dtype());
    info_i.has_shape = true;
    info_i.shape.clear();
    for (int64_t d : inputs[i].tensor().shape()) info_i.shape.push_back(graph::Dim::known(d));
    g.values[static_cast<size_t>(id)].is_graph_input = true;
    g.inputs.push_back(id);
  }
  for (int32_t out : g.nodes[0].outputs) g.outputs.push_back(out);
  for (const auto& provider : other_providers()) {
    std::string why;
    try {
      why = check_provider(*provider, g, inputs, run.outputs);
    } catch (const std::exception& e) {
      why = std::string("threw: ") + e.what();
    }
    if (!why.empty()) {
      run.status = runtime_error(op_type, " on ", provider->name(), " disagrees with the CPU: ", why);
      return run;
    }
  }
  return run;
}

graph::Attribute attr_int(const std::string& name, int64_t v) { return graph::Attribute::make_int(name, v); }
graph::Attribute attr_float(const std::string& name, float v) { return graph::Attribute::make_float(name, v); }
graph::Attribute attr_string(const std::string& name, const std::string& v) {
  return graph::Attribute::make_string(name, v);
}
graph::Attribute attr_ints(const std::string& name, std::vector<int64_t> v) {
  return graph::Attribute::make_ints(name, std::move(v));
}
graph::Attribute attr_floats(const std::string& name, std::vector<float> v) {
  return graph::Attribute::make_floats(name, std::move(v));
}

}  // namespace onyx::testing
