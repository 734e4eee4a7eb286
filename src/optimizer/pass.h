// What every optimizer pass shares: the read-only view of the graph a pass
// matches against (PassContext), the change it proposes (Patch) and the Pass
// interface the pass manager (optimizer.cc) drives to a fixed point.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "optimizer/optimizer.h"

namespace onyx::optimizer {

// Ids a patch hands out for values it creates; the pass manager maps them to
// real ids when it applies the patch.
constexpr int32_t kPatchValueBase = 1 << 30;

// A change to the graph: nodes removed, nodes added, uses of one value moved
// to another. Values a removed node produced must be re-produced by an added
// node, replaced, turned into constants, or have no other use: the manager
// rejects a patch that would leave a dangling use.
struct Patch {
  struct NewValue {
    std::string name;
    graph::TypeAndShape info;
    std::optional<Tensor> constant;  // set: the value is a new initializer
  };
  std::vector<size_t> remove_nodes;
  std::vector<graph::Node> add_nodes;
  std::vector<std::pair<int32_t, int32_t>> replace_uses;  // every use of .first reads .second
  std::vector<std::pair<int32_t, Tensor>> make_constant;  // value becomes an initializer (its producer is removed)
  std::vector<NewValue> new_values;
  // Existing values whose type and shape the patch knows better than shape
  // inference will (outputs of com.microsoft ops, which it does not cover).
  std::vector<std::pair<int32_t, graph::TypeAndShape>> refine_info;

  int32_t new_value(std::string name, graph::TypeAndShape info) {
    new_values.push_back({std::move(name), std::move(info), std::nullopt});
    return kPatchValueBase + static_cast<int32_t>(new_values.size() - 1);
  }
  int32_t new_constant(std::string name, Tensor tensor);
  void remove(size_t node) { remove_nodes.push_back(node); }
  void replace(int32_t from, int32_t to) { replace_uses.emplace_back(from, to); }
};

class PassContext {
 public:
  PassContext(const graph::Graph& graph, const OptimizerOptions& options);

  const graph::Graph& graph() const { return graph_; }
  const OptimizerOptions& options() const { return options_; }
  const graph::Node& node(size_t index) const { return graph_.nodes[index]; }
  size_t node_count() const { return graph_.nodes.size(); }
  const graph::ValueEntry& value(int32_t id) const { return graph_.values[static_cast<size_t>(id)]; }
  const graph::TypeAndShape& info(int32_t id) const { return value(id).info; }

  // Node indices reading `value` (a node once per input slot that reads it).
  const std::vector<size_t>& consumers(int32_t value) const;
  // A graph output, or read by name from a subgraph: uses the manager cannot
  // see or move, so the value must keep its name and producer.
  bool is_pinned(int32_t value) const;
  bool is_graph_output(int32_t value) const;
  // True when `value`'s only use is one input slot of node `consumer`.
  bool only_used_by(int32_t value, size_t consumer) const;
  // The node producing `value`, or nullptr.
  const graph::Node* producer(int32_t value) const;
  int32_t producer_index(int32_t value) const;
  // The tensor behind `value` when it is a constant: an initializer the
  // caller cannot override. nullptr otherwise.
  const Tensor* constant(int32_t value) const;
  // A constant with one element, as double (float, double, integer types).
  std::optional<double> scalar(int32_t value) const;
  // True when `value` is a constant whose every element equals `expected`
  // within `tolerance` (relative).
  bool is_constant_value(int32_t value, double expected, double tolerance = 1e-4) const;
  // Element type of a value when inferred, else kUndefined.
  DataType elem_type(int32_t value) const;
  // The value's shape when fully known.
  std::optional<Shape> known_shape(int32_t value) const;
  // True when the provider the passes run for has a kernel for some version
  // of the op (fusions make only ops that exist); false without OpSupport.
  bool has_op(const std::string& domain, const std::string& op_type) const {
    return options_.ops != nullptr && options_.ops->has_op(domain, op_type);
  }
  bool has_kernel(const std::string& domain, const std::string& op_type, int version) const {
    return options_.ops != nullptr && options_.ops->has_kernel(domain, op_type, version);
  }
  // True when a patch may remove node `index` (see OptimizerOptions::owner).
  bool owns(size_t index) const {
    return options_.owner.empty() || graph_.nodes[index].execution_provider == options_.owner;
  }

 private:
  const graph::Graph& graph_;
  const OptimizerOptions& options_;
  std::vector<std::vector<size_t>> consumers_;
  std::vector<char> pinned_;
  std::vector<char> graph_output_;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  // Called once per sweep before match() sees any node.
  virtual void begin_sweep(const PassContext& /*ctx*/) {}
  // Looks at node `index`: no change (nullopt) or a patch.
  virtual std::optional<Patch> match(const PassContext& ctx, size_t index) = 0;
  // Whole-graph clean-up after a sweep (e.g. unused initializers); returns
  // how many things it removed.
  virtual int finish(graph::Graph& /*graph*/) { return 0; }
};

// A new node for a patch. Domain "" resolves its since_version from the ONNX
// schema at `opset`; other domains (com.microsoft) get since_version = opset = 1.
graph::Node make_node(const std::string& op_type, const std::string& domain, int opset, std::vector<int32_t> inputs,
                      std::vector<int32_t> outputs, const std::string& name);
// Integer attribute with a default.
int64_t attribute_int(const graph::Node& node, const std::string& name, int64_t default_value);
float attribute_float(const graph::Node& node, const std::string& name, float default_value);
// True when every value of the ints attribute `name` is `value` (or it is absent).
bool attribute_ints_all(const graph::Node& node, const std::string& name, int64_t value);
// True when a node is `op_type` in the ONNX domain.
inline bool is_op(const graph::Node& node, const char* op_type) {
  return node.domain.empty() && node.op_type == op_type;
}
// TypeAndShape of a tensor.
graph::TypeAndShape info_of(const Tensor& tensor);

// Pass factories, one per file under basic/, extended/ and layout/.
// after_qdq: the extended level's second folding, after the QDQ fusions,
// which folds the DequantizeLinear of constants they left.
std::unique_ptr<Pass> make_constant_folding_pass(bool after_qdq = false);
std::unique_ptr<Pass> make_shape_folding_pass();
std::unique_ptr<Pass> make_dead_code_elimination_pass();
std::unique_ptr<Pass> make_noop_elimination_pass();
std::unique_ptr<Pass> make_reduce_to_global_pool_pass();
std::unique_ptr<Pass> make_transpose_optimization_pass();
std::unique_ptr<Pass> make_common_subexpression_elimination_pass();
std::unique_ptr<Pass> make_conv_batchnorm_fusion_pass();
std::unique_ptr<Pass> make_conv_add_mul_fusion_pass();
std::unique_ptr<Pass> make_matmul_add_gemm_fusion_pass();
std::unique_ptr<Pass> make_activation_fusion_pass();
std::unique_ptr<Pass> make_silu_fusion_pass();
std::unique_ptr<Pass> make_flattened_matmul_gemm_fusion_pass();
std::unique_ptr<Pass> make_conv_residual_fusion_pass();
std::unique_ptr<Pass> make_gelu_fusion_pass();
std::unique_ptr<Pass> make_fast_gelu_fusion_pass();
std::unique_ptr<Pass> make_layer_norm_fusion_pass();
std::unique_ptr<Pass> make_rms_norm_fusion_pass();
std::unique_ptr<Pass> make_skip_layer_norm_fusion_pass();
std::unique_ptr<Pass> make_embed_layer_norm_fusion_pass();
std::unique_ptr<Pass> make_matmul_scale_fusion_pass();
std::unique_ptr<Pass> make_reshaped_matmul_fusion_pass();
std::unique_ptr<Pass> make_attention_fusion_pass();
std::unique_ptr<Pass> make_quantize_activation_fusion_pass();
std::unique_ptr<Pass> make_qdq_drop_fusion_pass();
std::unique_ptr<Pass> make_qdq_conv_matmul_fusion_pass();
std::unique_ptr<Pass> make_qdq_elementwise_fusion_pass();
std::unique_ptr<Pass> make_dequantize_quantize_elimination_pass();
std::unique_ptr<Pass> make_dynamic_quantize_matmul_fusion_pass();
std::unique_ptr<Pass> make_dq_matmul_nbits_fusion_pass();

}  // namespace onyx::optimizer
