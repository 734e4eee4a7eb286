// One-node kernel runner for kernel unit tests.
#include "kernel_test_util.h"

#include <memory>

namespace onyx::testing {
namespace {

class TestContext final : public KernelContext {
 public:
  TestContext(const std::vector<Value>& inputs, size_t outputs, ThreadPool* pool)
      : inputs_(inputs), outputs_(outputs), pool_(pool) {}
  size_t input_count() const override { return inputs_.size(); }
  const Value* input(size_t i) const override {
    if (i >= inputs_.size() || (inputs_[i].is_none() && !inputs_[i].is_optional())) return nullptr;
    return &inputs_[i];
  }
  size_t output_count() const override { return outputs_.size(); }
  bool output_requested(size_t i) const override { return i < outputs_.size(); }
  Tensor& allocate_output(size_t i, DataType dtype, const Shape& shape) override {
    outputs_[i] = Value(Tensor(dtype, shape));
    return outputs_[i].tensor();
  }
  void set_output(size_t i, Value value) override { outputs_[i] = std::move(value); }
  ThreadPool* thread_pool() const override { return pool_; }
  Allocator* allocator() const override { return cpu_allocator(); }
  Status run_subgraph(const std::string&, const std::vector<Value>&, std::vector<Value>&) override {
    return not_implemented("subgraphs are not available in the one-node test runner");
  }
  std::string label() const override { return "test node"; }
  std::vector<Value>& outputs() { return outputs_; }

 private:
  const std::vector<Value>& inputs_;
  std::vector<Value> outputs_;
  ThreadPool* pool_;
};

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
