// CUDAExecutionProvider: a kernel provider over one NVIDIA GPU. Its memory
// is an arena over cudaMalloc (with pinned host memory beside it), its copies
// are cudaMemcpyAsync on the session's one stream, its events cudaEvent_t.
// It registers itself when this library is loaded and the CUDA runtime
// reports a device; otherwise it records why, for the error a session that
// asks for it gets.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <optional>

#include "providers/cuda/cuda_kernel.h"
#include "providers/execution_provider.h"

namespace onyx::cuda {
namespace {

Result<uint64_t> parse_count(const std::string& key, const std::string& value, uint64_t max) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(value.c_str(), &end, 0);
  if (value.empty() || value[0] == '-' || *end != '\0' || errno != 0 || v > max) {
    return invalid_argument(kProviderName, ": option ", key, " is '", value, "', expected a count from 0 to ", max);
  }
  return static_cast<uint64_t>(v);
}

Result<bool> parse_flag(const std::string& key, const std::string& value) {
  if (value == "1" || value == "true" || value == "True") return true;
  if (value == "0" || value == "false" || value == "False") return false;
  return invalid_argument(kProviderName, ": option ", key, " is '", value, "', expected 0 or 1");
}

constexpr const char* kKnownOptions =
    "device_id, gpu_mem_limit, arena_extend_strategy, use_tf32, cudnn_conv_algo_search, user_compute_stream, "
    "has_user_compute_stream, enable_cuda_graph";

Result<CudaOptions> parse_options(const std::map<std::string, std::string>& values, int devices) {
  CudaOptions o;
  o.given = values;
  for (const auto& [key, value] : values) {
    if (key == "device_id") {
      ONYX_ASSIGN_OR_RETURN(uint64_t id, parse_count(key, value, 1u << 20));
      if (id >= static_cast<uint64_t>(devices)) {
        return invalid_argument(kProviderName, ": option device_id is ", id, ", but this machine has ", devices,
                                " CUDA device(s)");
      }
      o.device_id = static_cast<int>(id);
    } else if (key == "gpu_mem_limit") {
      ONYX_ASSIGN_OR_RETURN(uint64_t limit, parse_count(key, value, SIZE_MAX));
      o.gpu_mem_limit = static_cast<size_t>(limit == SIZE_MAX ? 0 : limit);
    } else if (key == "arena_extend_strategy") {
      if (value == "kNextPowerOfTwo" || value == "0") {
        o.arena_extend_strategy = ArenaExtendStrategy::kNextPowerOfTwo;
      } else if (value == "kSameAsRequested" || value == "1") {
        o.arena_extend_strategy = ArenaExtendStrategy::kSameAsRequested;
      } else {
        return invalid_argument(kProviderName, ": option arena_extend_strategy is '", value,
                                "', expected kNextPowerOfTwo or kSameAsRequested");
      }
    } else if (key == "use_tf32") {
      ONYX_ASSIGN_OR_RETURN(o.use_tf32, parse_flag(key, value));
    } else if (key == "cudnn_conv_algo_search") {
      if (value == "EXHAUSTIVE") {
        o.conv_algo_search = ConvAlgoSearch::kExhaustive;
      } else if (value == "HEURISTIC") {
        o.conv_algo_search = ConvAlgoSearch::kHeuristic;
      } else if (value == "DEFAULT") {
        o.conv_algo_search = ConvAlgoSearch::kDefault;
      } else {
        return invalid_argument(kProviderName, ": option cudnn_conv_algo_search is '", value,
                                "', expected EXHAUSTIVE, HEURISTIC or DEFAULT");
      }
    } else if (key == "user_compute_stream") {
      // The address of the caller's cudaStream_t, as onnxruntime takes it
      // (Python: str(torch.cuda.current_stream().cuda_stream)).
      ONYX_ASSIGN_OR_RETURN(uint64_t address, parse_count(key, value, UINTPTR_MAX));
      o.user_stream = reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(address));
    } else if (key == "has_user_compute_stream") {
      ONYX_ASSIGN_OR_RETURN(bool has, parse_flag(key, value));
      (void)has;  // implied by user_compute_stream, as in onnxruntime
    } else if (key == "enable_cuda_graph") {
      ONYX_ASSIGN_OR_RETURN(bool graphs, parse_flag(key, value));
      if (graphs) {
        return not_implemented(kProviderName,
                               ": option enable_cuda_graph=1: CUDA graph capture is not done yet in "
                               "onyx (docs/architecture.md, \"Optional providers: CUDA\")");
      }
    } else {
      return invalid_argument(kProviderName, ": unknown option '", key, "' (known: ", kKnownOptions, ")");
    }
  }
  return o;
}

// What the kernels take beyond their registered types, checked on the
// graph's static types and attributes, so that a node a kernel would refuse
// at run time stays on the CPU instead.
bool kernel_takes(const graph::Graph& graph, const graph::Node& node) {
  auto type_of = [&](size_t i) -> std::optional<DataType> {
    if (i >= node.inputs.size() || node.inputs[i] == graph::kNoValue) return std::nullopt;
    const graph::TypeAndShape& info = graph.values[static_cast<size_t>(node.inputs[i])].info;
    if (info.type.kind != ValueType::Kind::kTensor) return std::nullopt;
    return info.type.elem_type;
  };
  auto rank_of = [&](size_t i) -> int64_t {
    if (i >= node.inputs.size() || node.inputs[i] == graph::kNoValue) return -1;
    const graph::TypeAndShape& info = graph.values[static_cast<size_t>(node.inputs[i])].info;
    return info.has_shape ? static_cast<int64_t>(info.shape.size()) : -1;
  };
  auto extra_outputs = [&]() {
    for (size_t o = 1; o < node.outputs.size(); ++o) {
      if (node.outputs[o] != graph::kNoValue) return true;
    }
    return false;
  };
  const std::string& op = node.op_type;
  if (op == "Max" || op == "Min") {
    if (node.inputs.size() != 2) return false;
  }
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow" || op == "Max" || op == "Min" ||
      op == "PRelu" || op == "MatMul" || op == "Gemm" || op == "LayerNormalization" || op == "Conv") {
    // One element type for every operand (Pow's exponent may be another).
    const std::optional<DataType> first = type_of(0);
    for (size_t i = 1; i < node.inputs.size(); ++i) {
      const std::optional<DataType> t = type_of(i);
      if (node.inputs[i] != graph::kNoValue && (!first || !t || *t != *first)) return false;
    }
  }
  if (op == "Cast") {
    const graph::Attribute* to = node.attribute("to");
    if (to == nullptr ||
        (to->i != static_cast<int64_t>(DataType::kFloat) && to->i != static_cast<int64_t>(DataType::kFloat16))) {
      return false;
    }
  }
  if (op == "LayerNormalization" && extra_outputs()) return false;
  if (op == "Conv") {
    const int64_t r = rank_of(0);
    if (r < 3 || r > 5) return false;
    // cuDNN pads symmetrically; SAME padding may not be.
    const graph::Attribute* auto_pad = node.attribute("auto_pad");
    if (auto_pad != nullptr && auto_pad->s != "NOTSET" && auto_pad->s != "VALID" && !auto_pad->s.empty()) return false;
    const graph::Attribute* pads = node.attribute("pads");
    if (pads != nullptr) {
      const size_t half = pads->ints.size() / 2;
      for (size_t d = 0; d < half; ++d) {
        if (pads->ints[d] != pads->ints[d + half]) return false;
      }
    }
  }
  return true;
}

class CudaProvider final : public ExecutionProvider {
 public:
  explicit CudaProvider(std::shared_ptr<CudaContext> context) : context_(std::move(context)) {
    const CudaOptions& o = context_->options();
    ArenaConfig arena;
    arena.max_mem = o.gpu_mem_limit;
    arena.arena_extend_strategy = o.arena_extend_strategy;
    arena.bypass_bytes = 0;  // cudaFree waits for the device: keep every block in the arena
    allocator_ = std::make_shared<DeviceArena>(o.device_id, arena);
    pinned_ = std::make_shared<CudaMemory>(o.device_id, MemoryType::kHostPinned);
    std::vector<KernelDef> defs;
    add_elementwise_kernels(defs, context_);
    add_matmul_kernels(defs, context_);
    add_normalization_kernels(defs, context_);
    add_tensor_kernels(defs, context_);
    add_conv_kernels(defs, context_);
    for (KernelDef& def : defs) {
      Status added = registry_.add(std::move(def));
      if (!added.is_ok()) throw Error(added);
    }
  }
  std::string name() const override { return kProviderName; }
  Device device() const override { return context_->device(); }
  Allocator* allocator(MemoryType type) const override {
    if (type == MemoryType::kDefault) return allocator_.get();
    if (type == MemoryType::kHostPinned) return pinned_.get();
    return nullptr;
  }
  const KernelRegistry& kernels() const override { return registry_; }
  std::shared_ptr<const DataTransfer> data_transfer() const override {
    return std::make_shared<CudaTransfer>(context_->device_id());
  }
  std::unique_ptr<Stream> create_stream() const override { return std::make_unique<CudaStream>(context_); }

  // The options as given, and the defaults of the rest.
  std::map<std::string, std::string> options() const override {
    std::map<std::string, std::string> out = context_->options().given;
    out.insert({{"device_id", "0"},
                {"gpu_mem_limit", std::to_string(SIZE_MAX)},
                {"arena_extend_strategy", "kNextPowerOfTwo"},
                {"use_tf32", "0"},
                {"cudnn_conv_algo_search", "EXHAUSTIVE"},
                {"enable_cuda_graph", "0"}});
    return out;
  }

  std::vector<NodeGroup> claim(const graph::Graph& graph, const std::vector<size_t>& candidates) const override {
    std::vector<NodeGroup> claimed;
    for (size_t n : candidates) {
      const graph::Node& node = graph.nodes[n];
      if (registry_.find(graph, node) != nullptr && kernel_takes(graph, node)) claimed.push_back(NodeGroup{{n}});
    }
    return claimed;
  }

 private:
  std::shared_ptr<CudaContext> context_;
  std::shared_ptr<DeviceArena> allocator_;
  std::shared_ptr<CudaMemory> pinned_;
  KernelRegistry registry_;
};

Result<std::unique_ptr<ExecutionProvider>> make_provider(const ProviderOptions& options) {
  int devices = 0;
  ONYX_RETURN_IF_ERROR(cuda_status(cudaGetDeviceCount(&devices), str_cat(kProviderName, ": cudaGetDeviceCount")));
  ONYX_ASSIGN_OR_RETURN(CudaOptions parsed, parse_options(options.values, devices));
  Result<std::shared_ptr<CudaContext>> context = CudaContext::create(parsed);
  if (!context.is_ok()) return context.status();
  try {
    return std::unique_ptr<ExecutionProvider>(new CudaProvider(std::move(context).value()));
  } catch (const Error& e) {
    return Status(e.code(), std::string(kProviderName) + ": " + e.what());
  }
}

// Registered when the library loads, where the CUDA runtime reports a
// device (so that get_available_providers() does not offer a provider that
// cannot be created); otherwise the reason is recorded for the error a
// session asking for it gets. ONYX_DEBUG_PROVIDERS=1 prints it at once.
struct Registrar {
  Registrar() {
    int devices = 0;
    const cudaError_t counted = cudaGetDeviceCount(&devices);
    if (counted != cudaSuccess || devices == 0) {
      const std::string reason = counted != cudaSuccess
                                     ? str_cat("no CUDA device (cudaGetDeviceCount: ", cudaGetErrorName(counted), ": ",
                                               cudaGetErrorString(counted), ")")
                                     : std::string("no CUDA device (cudaGetDeviceCount reports 0)");
      register_unavailable_provider(kProviderName, reason);
      const char* debug = std::getenv("ONYX_DEBUG_PROVIDERS");
      if (debug != nullptr && std::string(debug) == "1") {
        std::fprintf(stderr, "onyx: %s is not available: %s\n", kProviderName, reason.c_str());
      }
      return;
    }
    register_provider(kProviderName, make_provider, DeviceType::kCuda);
  }
};
const Registrar registrar;

}  // namespace
}  // namespace onyx::cuda
