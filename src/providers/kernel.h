// The kernel interface every provider implements: a Kernel is created once per
// node at session start from a KernelInfo (attributes parsed, constant weights
// pre-packed), then compute() runs once per run, from many threads at once.
#pragma once

#include <climits>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "graph/graph.h"
#include "graph/shape_inference.h"
#include "onyx/status.h"
#include "onyx/value.h"
#include "providers/stream.h"

namespace onyx {

// What a kernel factory sees of its node.
class KernelInfo {
 public:
  // `inputs_are_constant`: initializers listed among the graph inputs count as
  // constants (models before IR version 4); otherwise a feed may replace them.
  KernelInfo(const graph::Graph& graph, const graph::Node& node, size_t node_index, Allocator* allocator,
             bool inputs_are_constant = false)
      : graph_(graph),
        node_(node),
        node_index_(node_index),
        allocator_(allocator),
        inputs_are_constant_(inputs_are_constant) {}

  const graph::Node& node() const { return node_; }
  const graph::Graph& graph() const { return graph_; }
  const std::string& op_type() const { return node_.op_type; }
  // The resolved schema version (since_version) this node runs at.
  int version() const { return node_.since_version; }
  // The model's opset for the node's domain.
  int opset() const { return node_.opset; }
  size_t input_count() const { return node_.inputs.size(); }
  size_t output_count() const { return node_.outputs.size(); }
  bool has_input(size_t i) const { return i < node_.inputs.size() && node_.inputs[i] != graph::kNoValue; }
  // "Conv 'conv1'": prefix for error messages.
  std::string label() const { return node_.label(node_index_); }
  Allocator* allocator() const { return allocator_; }

  // The value of input i when it is a constant initializer of this graph, or,
  // for a node of a subgraph (an If, Loop or Scan body), of an enclosing
  // graph (weights a kernel may pre-pack), else nullptr. An initializer that
  // is also a graph input is not constant: a feed may replace it.
  const Tensor* constant_input(size_t i) const;
  // True when input i is a constant of this graph that this node alone reads
  // and that the session drops as soon as the kernel exists, unless the
  // kernel says it needs the data (needs_constant_data). A kernel that does
  // not may discard the pages it has consumed while it packs them
  // (model::discard_weight_pages). An enclosing graph's constant never is.
  bool consumes_constant(size_t i) const {
    return has_input(i) && graph_.initializers.count(node_.inputs[i]) != 0 && constant_input(i) != nullptr &&
           sole_reader_ && sole_reader_(node_.inputs[i]);
  }
  // Set by the session planner: whether this node is the only reader left of
  // an initializer that is dropped once its readers exist.
  void set_sole_reader(std::function<bool(int32_t)> sole_reader) { sole_reader_ = std::move(sole_reader); }
  // Set by the session planner for the nodes of a subgraph: the constant an
  // enclosing graph holds under a name, or nullptr. The enclosing graphs keep
  // those constants' data for as long as the session lives.
  using OuterConstants = std::function<const Tensor*(const std::string&)>;
  void set_outer_constants(OuterConstants outer) { outer_constants_ = std::move(outer); }
  // Static type and shape of input i, when known.
  const graph::TypeAndShape* input_info(size_t i) const;

  bool has_attr(const std::string& name) const { return node_.attribute(name) != nullptr; }
  const graph::Attribute* attr(const std::string& name) const { return node_.attribute(name); }
  int64_t attr_int(const std::string& name, int64_t default_value) const;
  float attr_float(const std::string& name, float default_value) const;
  std::string attr_string(const std::string& name, const std::string& default_value) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> default_value = {}) const;
  std::vector<float> attr_floats(const std::string& name, std::vector<float> default_value = {}) const;
  std::vector<std::string> attr_strings(const std::string& name, std::vector<std::string> default_value = {}) const;
  const Tensor* attr_tensor(const std::string& name) const;

 private:
  const graph::Graph& graph_;
  const graph::Node& node_;
  size_t node_index_;
  Allocator* allocator_;
  bool inputs_are_constant_;
  std::function<bool(int32_t)> sole_reader_;
  OuterConstants outer_constants_;
};

// What compute() sees of one run: its inputs, where to put outputs, the pool.
class KernelContext {
 public:
  virtual ~KernelContext() = default;

  virtual size_t input_count() const = 0;
  // nullptr when the input is omitted (an optional input with an empty name).
  virtual const Value* input(size_t i) const = 0;
  // nullptr when omitted or not a tensor.
  const Tensor* input_tensor(size_t i) const {
    const Value* v = input(i);
    return (v != nullptr && v->is_tensor()) ? &v->tensor() : nullptr;
  }

  virtual size_t output_count() const = 0;
  // False for an omitted optional output: the kernel may skip computing it.
  virtual bool output_requested(size_t i) const = 0;
  // Allocates output i from the provider's allocator. Throws onyx::Error when
  // the size overflows or memory runs out (the executor reports it with the node).
  virtual Tensor& allocate_output(size_t i, DataType dtype, const Shape& shape) = 0;
  // Sets output i to a value made elsewhere (a sequence, a map, or a tensor
  // that shares an input's buffer, such as Reshape's output).
  virtual void set_output(size_t i, Value value) = 0;
  // Output i in input `input`'s buffer, when nothing reads that buffer after
  // this node (this node is the input's last reader, no other value shares
  // the buffer) and it has the dtype and the byte size of the output; else
  // nullptr and the kernel allocates as usual. The kernel must read each
  // input element before it writes the output element at the same place.
  virtual Tensor* reuse_input_as_output(size_t /*input*/, size_t /*output*/, DataType /*dtype*/,
                                        const Shape& /*shape*/) {
    return nullptr;
  }

  virtual ThreadPool* thread_pool() const = 0;
  virtual Allocator* allocator() const = 0;
  // The stream of this run on the provider's device, where a device kernel
  // queues its work; nullptr for host kernels.
  virtual Stream* stream() const { return nullptr; }
  // Runs the subgraph held by attribute `attr_name` of this node with `inputs`
  // bound to its graph inputs; outer-scope names resolve in the current run.
  virtual Status run_subgraph(const std::string& attr_name, const std::vector<Value>& inputs,
                              std::vector<Value>& outputs) = 0;
  // "Conv 'conv1'": prefix for error messages.
  virtual std::string label() const = 0;
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Must be safe to call from several threads at once: keep per-run state local.
  virtual Status compute(KernelContext& ctx) const = 0;
  // False when compute() reads only the element type and shape of constant
  // input i, never its data, because the kernel keeps its own copy (weights
  // pre-packed at creation). When no reader of an initializer needs its data,
  // the session frees it.
  virtual bool needs_constant_data(size_t i) const {
    (void)i;
    return true;
  }
};

using KernelFactory = std::function<Result<std::unique_ptr<Kernel>>(const KernelInfo&)>;

constexpr int kLatestVersion = INT_MAX;

// A kernel's definition: what it runs, for which opset versions and element
// types, and which of its inputs and outputs stay in host memory.
struct KernelDef {
  std::string domain;  // "" (ai.onnx), "ai.onnx.ml", "com.microsoft", ...
  std::string op_type;
  int since_version = 1;
  int last_version = kLatestVersion;  // inclusive
  // Element types of the main type constraint: `type_constraint` when named,
  // else the constraint of the schema's first input that has one. Empty: any
  // type. Ops without an ONNX schema (contrib ops) are not matched by type.
  std::vector<DataType> types;
  KernelFactory factory;
  std::string type_constraint;
  // Further constraints a node must satisfy (name as in the op schema, e.g.
  // "T1"), for kernels typed on more than one.
  std::vector<std::pair<std::string, std::vector<DataType>>> more_type_constraints;
  // Inputs and outputs the kernel reads or writes in host memory even when
  // its provider is a device (shape tensors, axes): they are never copied to
  // the device.
  std::vector<size_t> host_inputs;
  std::vector<size_t> host_outputs;
  // Shape inference for an op without an ONNX schema (users' custom ops);
  // empty for the others.
  graph::ExternalInference infer;

  bool input_on_host(size_t i) const;
  bool output_on_host(size_t i) const;
};

// One provider's kernels. A (domain, op, version, type) has at most one
// kernel: add() refuses a definition that overlaps one already there.
class KernelRegistry {
 public:
  // Fails when a kernel for the same domain and op already covers one of
  // the versions for one of the same types.
  Status add(KernelDef def);
  // The kernel for `node` of `graph`: its domain, op and resolved version,
  // and the element types of its inputs and outputs where they are known.
  // `why_not` (optional) says which type failed when some version matched.
  const KernelDef* find(const graph::Graph& graph, const graph::Node& node, std::string* why_not = nullptr) const;
  // By version only, ignoring types.
  const KernelDef* find(const std::string& domain, const std::string& op_type, int version) const;
  // True when some version of the op is registered.
  bool has_op(const std::string& domain, const std::string& op_type) const;
  // Its own definitions (not its base's).
  const std::vector<KernelDef>& all() const { return defs_; }
  // A registry consulted after this one's own definitions (a session's
  // custom ops over the CPU kernels): find and has_op see both, this
  // registry's definitions first.
  void set_base(const KernelRegistry* base) { base_ = base; }
  // Definitions refused at static-initialisation time (registrars cannot
  // report an error there); a provider checks it when it is created.
  const std::vector<std::string>& refused() const { return refused_; }
  void note_refused(std::string message) { refused_.push_back(std::move(message)); }

 private:
  const KernelDef* find_own(const graph::Graph& graph, const graph::Node& node, std::string* why_not) const;
  const KernelDef* find_own(const std::string& domain, const std::string& op_type, int version) const;

  std::vector<KernelDef> defs_;
  std::vector<std::string> refused_;
  const KernelRegistry* base_ = nullptr;
};

// The CPU provider's registry, filled by the registrars in each kernel file.
KernelRegistry& cpu_kernel_registry();

// Registers at static-initialisation time; used through ONYX_REGISTER_CPU_KERNEL.
struct KernelRegistrar {
  explicit KernelRegistrar(KernelDef def) {
    Status added = cpu_kernel_registry().add(std::move(def));
    if (!added.is_ok()) cpu_kernel_registry().note_refused(added.message());
  }
};

// A factory for kernels whose constructor is `Class(const KernelInfo&)`; a
// constructor that finds a bad attribute throws onyx::Error.
template <typename Class>
KernelFactory make_factory() {
  return [](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new Class(info));
  };
}

// A definition with the main type constraint's types only.
inline KernelDef make_kernel_def(std::string domain, std::string op_type, int since, int last,
                                 std::vector<DataType> types, KernelFactory factory) {
  KernelDef def;
  def.domain = std::move(domain);
  def.op_type = std::move(op_type);
  def.since_version = since;
  def.last_version = last;
  def.types = std::move(types);
  def.factory = std::move(factory);
  return def;
}

// Element-type lists for KernelDef::types.
namespace types {
inline std::vector<DataType> floats() {
  return {DataType::kFloat, DataType::kDouble, DataType::kFloat16, DataType::kBFloat16};
}
inline std::vector<DataType> signed_ints() {
  return {DataType::kInt8, DataType::kInt16, DataType::kInt32, DataType::kInt64};
}
inline std::vector<DataType> unsigned_ints() {
  return {DataType::kUInt8, DataType::kUInt16, DataType::kUInt32, DataType::kUInt64};
}
std::vector<DataType> numeric();  // floats + all integers
std::vector<DataType> all();      // numeric + bool + string
// all + the 8-, 4- and 2-bit formats (float8, float4, int4, int2, ...).
std::vector<DataType> all_with_small_formats();
}  // namespace types

}  // namespace onyx

// ONYX_REGISTER_CPU_KERNEL("", "Relu", 6, 12, onyx::types::floats(), ReluKernel);
#define ONYX_REGISTER_CPU_KERNEL(domain, op_type, since, last, type_list, Class) \
  static ::onyx::KernelRegistrar ONYX_CONCAT(onyx_registrar_, __COUNTER__)(      \
      ::onyx::make_kernel_def(domain, op_type, since, last, type_list, ::onyx::make_factory<Class>()))
