// The OpenVINO execution provider: a compiling provider that claims the
// groups of nodes OpenVINO's ONNX frontend converts and its device plugin
// supports, and compiles each fused group with OpenVINO once per session.
// Built into libonyx_openvino.so where the openvino wheel is found.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include <openvino/openvino.hpp>

#include "providers/execution_provider.h"

namespace onyx::openvino {

constexpr const char* kProviderName = "OpenVINOExecutionProvider";

// The provider options, named as onnxruntime's OpenVINO provider names them.
struct OpenVinoOptions {
  std::string device_type = "CPU";  // CPU, GPU, NPU, AUTO (or GPU.1, AUTO:GPU,CPU, ...)
  std::string precision;            // FP32, FP16, ACCURACY; empty: the device's default
  int64_t num_of_threads = 0;       // 0: OpenVINO's choice
  int64_t num_streams = 0;          // 0: OpenVINO's choice (one, for latency)
  std::string cache_dir;            // OpenVINO's compiled-model cache; empty: none

  // Parses onnxruntime-style options; an unknown key or a bad value is an
  // InvalidArgument naming the key.
  static Result<OpenVinoOptions> parse(const std::map<std::string, std::string>& values);
  // The compile_model properties these options stand for.
  ov::AnyMap compile_properties() const;
};

// Maps onyx element types to OpenVINO's; ov::element::dynamic where
// OpenVINO has none (strings, complex, sub-byte and 8-bit float types).
ov::element::Type to_ov_type(DataType dtype);

// A standalone graph (a fused group, or the candidates of claim) as the
// ONNX model bytes OpenVINO's ONNX frontend reads.
std::string serialize_for_openvino(const graph::Graph& graph);
// Converts ONNX bytes with the ONNX frontend; `partially`: unconvertible
// nodes become framework nodes instead of an exception.
std::shared_ptr<ov::Model> convert_onnx(const std::string& bytes, bool partially);

class OpenVinoProvider final : public ExecutionProvider {
 public:
  OpenVinoProvider(OpenVinoOptions options, std::shared_ptr<ov::Core> core);

  std::string name() const override { return kProviderName; }
  // OpenVINO reads and writes host memory: every device plugin copies to its
  // device itself (the CPU plugin works in place). So the fused nodes' inputs
  // and outputs are host tensors and the session plans no copies around them.
  Device device() const override { return Device{}; }
  Kind kind() const override { return Kind::kCompiler; }
  Allocator* allocator(MemoryType type) const override;
  const KernelRegistry& kernels() const override { return registry_; }
  std::vector<NodeGroup> claim(const graph::Graph& graph, const std::vector<size_t>& candidates) const override;
  Result<std::unique_ptr<Kernel>> compile(const graph::Graph& fused, const KernelInfo& info) const override;
  std::map<std::string, std::string> options() const override;

  // Of `candidates`, the nodes OpenVINO can run (exposed for tests).
  std::vector<bool> supported_nodes(const graph::Graph& graph, const std::vector<size_t>& candidates) const;

 private:
  OpenVinoOptions options_;
  std::shared_ptr<ov::Core> core_;
  KernelRegistry registry_;  // empty: everything runs compiled
};

// The fused-group kernel (openvino_kernel.cc).
Result<std::unique_ptr<Kernel>> compile_fused_graph(ov::Core& core, const OpenVinoOptions& options,
                                                    const graph::Graph& fused, const std::string& label);

}  // namespace onyx::openvino
