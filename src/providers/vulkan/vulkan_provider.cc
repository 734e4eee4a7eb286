// VulkanExecutionProvider: a kernel provider over one Vulkan device. Its
// memory is the device's arena; copies go through staging buffers; its
// stream is the device's one queue, in host order, with timeline-semaphore
// values as events (recording one submits the work batched so far). It registers itself when this library is loaded and the
// loader lists a device that can run it.
#include <cstdio>
#include <cstdlib>

#include "providers/execution_provider.h"
#include "providers/vulkan/vulkan_kernel.h"

namespace onyx::vulkan {

Result<BufferRange> VulkanKernel::range(const std::string& label, const Tensor& t, const std::string& what) const {
  if (t.device().type != DeviceType::kVulkan || t.device().id != device_->id()) {
    return runtime_error(label, ": ", what, " is in ", device_to_string(t.device()), " memory, not on ",
                         device_to_string(device_->device()), " (a copy is missing)");
  }
  Result<BufferRange> r = device_->resolve(t.raw_data(), t.bytes());
  if (!r.is_ok()) return Status(r.status().code(), label + ": " + what + ": " + r.status().message());
  return r;
}

Result<const Tensor*> VulkanKernel::float_input(KernelContext& ctx, size_t i) const {
  const Tensor* t = ctx.input_tensor(i);
  if (t == nullptr) return invalid_argument(ctx.label(), ": input ", i, " is missing");
  if (t->dtype() != DataType::kFloat) {
    return invalid_argument(ctx.label(), ": input ", i, " has element type ", dtype_name(t->dtype()),
                            ", expected float");
  }
  return t;
}

namespace {
constexpr uint64_t kMaxGroups = 65535;

Status dispatch_groups(VulkanDevice& device, const Pipeline& p, const std::vector<BufferRange>& buffers,
                       const void* push, size_t push_bytes, uint64_t groups) {
  if (groups == 0) return Status::ok();
  const uint64_t x = groups < kMaxGroups ? groups : kMaxGroups;
  const uint64_t y = (groups + x - 1) / x;
  if (y > kMaxGroups) return runtime_error("Vulkan: ", groups, " workgroups are more than one dispatch holds");
  return device.dispatch(p, buffers, push, push_bytes, static_cast<uint32_t>(x), static_cast<uint32_t>(y));
}
}  // namespace

Status VulkanKernel::dispatch_flat(const Pipeline& p, const std::vector<BufferRange>& buffers, const void* push,
                                   size_t push_bytes, uint64_t n) const {
  return dispatch_groups(*device_, p, buffers, push, push_bytes, (n + p.local_size_x - 1) / p.local_size_x);
}

Status VulkanKernel::dispatch_rows(const Pipeline& p, const std::vector<BufferRange>& buffers, const void* push,
                                   size_t push_bytes, uint64_t rows) const {
  return dispatch_groups(*device_, p, buffers, push, push_bytes, rows);
}

Status dispatch_gemm(VulkanDevice& device, const std::string& label, const std::string& shader,
                     const std::vector<int32_t>& specialisation, const std::vector<BufferRange>& buffers,
                     const void* push, size_t push_bytes, uint64_t m, uint64_t n, uint64_t layers) {
  if (m == 0 || n == 0 || layers == 0) return Status::ok();
  uint64_t x = 0, y = 0;
  const Pipeline* p = nullptr;
  if (device.tiled_gemm()) {
    // 64x64 blocks of 16x16 invocations.
    x = (n + 63) / 64;
    y = (m + 63) / 64;
    ONYX_ASSIGN_OR_RETURN(p, device.pipeline(shader, static_cast<uint32_t>(buffers.size()), specialisation, 16));
  } else {
    // One invocation per 8x8 block, 64 to a workgroup, wrapped into y.
    const uint64_t groups = (((m + 7) / 8) * ((n + 7) / 8) + 63) / 64;
    x = groups < kMaxGroups ? groups : kMaxGroups;
    y = (groups + x - 1) / x;
    ONYX_ASSIGN_OR_RETURN(
        p, device.pipeline(shader + "_flat", static_cast<uint32_t>(buffers.size()), specialisation, 64));
  }
  if (x > kMaxGroups || y > kMaxGroups || layers > kMaxGroups) {
    return not_implemented(label, ": a product of ", m, " x ", n, " over ", layers,
                           " layers is more workgroups than one dispatch holds");
  }
  return device.dispatch(*p, buffers, push, push_bytes, static_cast<uint32_t>(x), static_cast<uint32_t>(y),
                         static_cast<uint32_t>(layers));
}

Status strided_copy(VulkanDevice& device, const std::string& label, const BufferRange& src, const BufferRange& dst,
                    StridedCopy c) {
  // Drop dims of 1, then merge neighbours that are contiguous in both.
  StridedCopy m;
  m.src_offset = c.src_offset;
  m.dst_offset = c.dst_offset;
  int64_t n = 1;
  for (size_t d = 0; d < c.dims.size(); ++d) {
    n *= c.dims[d];
    if (c.dims[d] == 1) continue;
    if (!m.dims.empty() && m.src_strides.back() == c.src_strides[d] * c.dims[d] &&
        m.dst_strides.back() == c.dst_strides[d] * c.dims[d]) {
      m.dims.back() *= c.dims[d];
      m.src_strides.back() = c.src_strides[d];
      m.dst_strides.back() = c.dst_strides[d];
      continue;
    }
    m.dims.push_back(c.dims[d]);
    m.src_strides.push_back(c.src_strides[d]);
    m.dst_strides.push_back(c.dst_strides[d]);
  }
  if (n == 0) return Status::ok();
  if (m.dims.size() > 6) return not_implemented(label, ": a copy over ", m.dims.size(), " dims (at most 6)");
  if (n > 0xffffffffll) return not_implemented(label, ": a copy of ", n, " words");
  struct {
    uint32_t n, rank;
    int32_t src_offset, dst_offset;
    uint32_t dims[6];
    int32_t src_stride[6];
    int32_t dst_stride[6];
  } push{};
  push.n = static_cast<uint32_t>(n);
  push.rank = static_cast<uint32_t>(m.dims.size());
  push.src_offset = static_cast<int32_t>(m.src_offset);
  push.dst_offset = static_cast<int32_t>(m.dst_offset);
  for (size_t d = 0; d < m.dims.size(); ++d) {
    push.dims[d] = static_cast<uint32_t>(m.dims[d]);
    push.src_stride[d] = static_cast<int32_t>(m.src_strides[d]);
    push.dst_stride[d] = static_cast<int32_t>(m.dst_strides[d]);
  }
  ONYX_ASSIGN_OR_RETURN(const Pipeline* p, device.pipeline("copy_strided", 2, {}));
  return dispatch_groups(device, *p, {src, dst}, &push, sizeof(push), (static_cast<uint64_t>(n) + 63) / 64);
}

namespace {

constexpr const char* kProviderName = "VulkanExecutionProvider";

bool is_vulkan(const Device& d) { return d.type == DeviceType::kVulkan; }

class VulkanTransfer final : public DataTransfer {
 public:
  explicit VulkanTransfer(DevicePtr device) : device_(std::move(device)) {}
  bool can_copy(const Device& src, const Device& dst) const override {
    const bool src_here = is_vulkan(src) && src.id == device_->id();
    const bool dst_here = is_vulkan(dst) && dst.id == device_->id();
    return (src_here && (dst_here || dst.host_readable())) || (dst_here && src.host_readable());
  }
  Status copy(const Tensor& src, Tensor& dst, Stream* /*stream*/) const override {
    if (src.dtype() == DataType::kString) return not_implemented("Vulkan: device memory holds no strings");
    if (src.dtype() != dst.dtype() || src.bytes() != dst.bytes()) {
      return invalid_argument("Vulkan copy from ", src.describe(), " into ", dst.describe());
    }
    const size_t bytes = src.bytes();
    if (is_vulkan(src.device()) && is_vulkan(dst.device())) {
      ONYX_ASSIGN_OR_RETURN(BufferRange from, device_->resolve(src.raw_data(), bytes));
      ONYX_ASSIGN_OR_RETURN(BufferRange to, device_->resolve(dst.raw_data(), bytes));
      return device_->copy(from, to);
    }
    if (is_vulkan(dst.device())) {
      ONYX_ASSIGN_OR_RETURN(BufferRange to, device_->resolve(dst.raw_data(), bytes));
      return device_->upload(src.raw_data(), to);
    }
    // To the host: complete when this returns, whether or not a stream is given.
    ONYX_ASSIGN_OR_RETURN(BufferRange from, device_->resolve(src.raw_data(), bytes));
    return device_->download(from, dst.raw_data());
  }

 private:
  DevicePtr device_;
};

class VulkanEvent final : public Event {
 public:
  VulkanEvent(DevicePtr device, uint64_t value) : device_(std::move(device)), value_(value) {}
  Status wait_on_host() const override { return device_->wait(value_); }

 private:
  DevicePtr device_;
  uint64_t value_;
};

// The device's one queue runs work in the order the host issued it, so a
// wait between streams of this device is already met; an event is the
// timeline value of the last submission.
class VulkanStream final : public Stream {
 public:
  explicit VulkanStream(DevicePtr device) : device_(std::move(device)) {}
  Device device() const override { return device_->device(); }
  std::shared_ptr<Event> record_event() override {
    // The open batch goes to the queue, so that the event's value covers it
    // (an event that fails to submit waits for nothing newer).
    Result<uint64_t> value = device_->flush();
    return std::make_shared<VulkanEvent>(device_, value.is_ok() ? value.value() : 0);
  }
  Status wait_for(const Event&) override { return Status::ok(); }
  Status synchronize() override {
    ONYX_ASSIGN_OR_RETURN(uint64_t value, device_->flush());
    return device_->wait(value);
  }

 private:
  DevicePtr device_;
};

// What the kernels take beyond their registered types: checked on the
// graph's static shapes and attributes, so that a node a kernel would refuse
// at run time stays on the CPU instead.
bool kernel_takes(const graph::Graph& graph, const graph::Node& node) {
  auto rank_of = [&](size_t i) -> int64_t {
    if (i >= node.inputs.size() || node.inputs[i] == graph::kNoValue) return -1;
    const graph::TypeAndShape& info = graph.values[static_cast<size_t>(node.inputs[i])].info;
    return info.has_shape ? static_cast<int64_t>(info.shape.size()) : -1;
  };
  auto int_attr = [&](const char* name, int64_t dflt) {
    const graph::Attribute* a = node.attribute(name);
    return a != nullptr ? a->i : dflt;
  };
  auto extra_outputs = [&]() {
    for (size_t o = 1; o < node.outputs.size(); ++o) {
      if (node.outputs[o] != graph::kNoValue) return true;
    }
    return false;
  };
  // Tensors only (an Identity of a sequence or an optional stays on the CPU).
  for (const std::vector<int32_t>* values : {&node.inputs, &node.outputs}) {
    for (int32_t v : *values) {
      if (v == graph::kNoValue) continue;
      const ValueType::Kind kind = graph.values[static_cast<size_t>(v)].info.type.kind;
      if (kind != ValueType::Kind::kTensor && kind != ValueType::Kind::kUnknown) return false;
    }
  }
  const std::string& op = node.op_type;
  if (op == "Conv" || op == "MaxPool" || op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    const int64_t r = rank_of(0);
    if (r != 3 && r != 4) return false;
    if (op == "MaxPool" && extra_outputs()) return false;
  }
  if (op == "ConvTranspose") {
    const int64_t r = rank_of(0);
    if (r != 3 && r != 4) return false;
  }
  if (op == "Resize") {
    const graph::Attribute* mode = node.attribute("mode");
    const graph::Attribute* coord = node.attribute("coordinate_transformation_mode");
    const graph::Attribute* policy = node.attribute("keep_aspect_ratio_policy");
    if ((mode != nullptr && mode->s != "nearest" && mode->s != "linear") || int_attr("antialias", 0) != 0 ||
        node.attribute("axes") != nullptr || (coord != nullptr && coord->s == "tf_crop_and_resize") ||
        (policy != nullptr && policy->s != "stretch")) {
      return false;
    }
    const int64_t r = rank_of(0);
    if (r < 1 || r > 4) return false;
  }
  // Casts that touch float only: integer-only casts are shape arithmetic,
  // which stays on the host.
  if (op == "Cast") {
    const int32_t in = node.inputs.empty() ? graph::kNoValue : node.inputs[0];
    if (in == graph::kNoValue) return false;
    const DataType from = graph.values[static_cast<size_t>(in)].info.type.elem_type;
    const auto to = static_cast<DataType>(int_attr("to", 0));
    auto held = [](DataType t) { return t == DataType::kFloat || t == DataType::kInt32 || t == DataType::kInt64; };
    if (!held(from) || !held(to) || (from != DataType::kFloat && to != DataType::kFloat)) return false;
  }
  if (op == "Attention") {
    // No cache, no extra outputs, no softcap or windows, a float mask.
    for (size_t i = 4; i < node.inputs.size(); ++i) {
      if (node.inputs[i] != graph::kNoValue) return false;
    }
    if (extra_outputs() || int_attr("qk_matmul_output_mode", 0) != 0) return false;
    const graph::Attribute* softcap = node.attribute("softcap");
    if (softcap != nullptr && softcap->f != 0.0f) return false;
    if (int_attr("left_window_size", -1) != -1 || int_attr("right_window_size", -1) != -1) return false;
    if (node.inputs.size() > 3 && node.inputs[3] != graph::kNoValue &&
        graph.values[static_cast<size_t>(node.inputs[3])].info.type.elem_type != DataType::kFloat) {
      return false;
    }
    const int64_t r = rank_of(0);
    if (r != 3 && r != 4) return false;
  }
  if (op == "BatchNormalization" && (int_attr("training_mode", 0) != 0 || extra_outputs())) return false;
  if (op == "LayerNormalization" && int_attr("stash_type", 1) != 1) return false;
  if ((op == "Max" || op == "Min") && node.inputs.size() != 2) return false;
  // Ranks the strided shaders hold (after merging, at least these).
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (rank_of(i) > 6) return false;
  }
  return true;
}

class VulkanProvider final : public ExecutionProvider {
 public:
  VulkanProvider(DevicePtr device, std::map<std::string, std::string> options)
      : device_(std::move(device)), options_(std::move(options)), allocator_(device_->allocator()) {
    std::vector<KernelDef> defs;
    add_elementwise_kernels(defs, device_);
    add_matmul_kernels(defs, device_);
    add_normalization_kernels(defs, device_);
    add_tensor_kernels(defs, device_);
    add_nn_kernels(defs, device_);
    for (KernelDef& def : defs) {
      Status added = registry_.add(std::move(def));
      if (!added.is_ok()) throw Error(added);
    }
  }
  std::string name() const override { return kProviderName; }
  Device device() const override { return device_->device(); }
  Allocator* allocator(MemoryType type) const override {
    return type == MemoryType::kDefault ? allocator_.get() : nullptr;
  }
  const KernelRegistry& kernels() const override { return registry_; }
  std::shared_ptr<const DataTransfer> data_transfer() const override {
    return std::make_shared<VulkanTransfer>(device_);
  }
  std::unique_ptr<Stream> create_stream() const override { return std::make_unique<VulkanStream>(device_); }
  std::map<std::string, std::string> options() const override { return options_; }

  // The nodes its registry has kernels for, except those with a tensor
  // known to be larger than one binding may be.
  std::vector<NodeGroup> claim(const graph::Graph& graph, const std::vector<size_t>& candidates) const override {
    std::vector<NodeGroup> claimed;
    for (size_t n : candidates) {
      const graph::Node& node = graph.nodes[n];
      if (registry_.find(graph, node) == nullptr || !kernel_takes(graph, node)) continue;
      bool fits = true;
      auto check = [&](int32_t v) {
        if (v == graph::kNoValue) return;
        const graph::TypeAndShape& info = graph.values[static_cast<size_t>(v)].info;
        if (!info.has_shape) return;
        uint64_t elements = 1;
        for (const graph::Dim& d : info.shape) {
          if (d.is_known()) elements *= static_cast<uint64_t>(d.value);
        }
        if (elements * 8 > device_->max_binding_bytes()) fits = false;
      };
      for (int32_t v : node.inputs) check(v);
      for (int32_t v : node.outputs) check(v);
      if (fits) claimed.push_back(NodeGroup{{n}});
    }
    return claimed;
  }

 private:
  DevicePtr device_;
  std::map<std::string, std::string> options_;
  std::shared_ptr<Allocator> allocator_;
  KernelRegistry registry_;
};

Result<std::unique_ptr<ExecutionProvider>> make_provider(const ProviderOptions& options) {
  int device_id = -1;
  for (const auto& [key, value] : options.values) {
    if (key == "device_id") {
      char* end = nullptr;
      const long id = std::strtol(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || id < 0 || id > 1024) {
        return invalid_argument(kProviderName, ": option device_id is '", value, "', expected a device number");
      }
      device_id = static_cast<int>(id);
    } else {
      return invalid_argument(kProviderName, ": unknown option '", key, "' (known: device_id)");
    }
  }
  Result<DevicePtr> device = VulkanDevice::get(device_id);
  if (!device.is_ok()) return Status(device.status().code(), std::string(kProviderName) + ": " + device.status().message());
  try {
    return std::unique_ptr<ExecutionProvider>(new VulkanProvider(device.value(), options.values));
  } catch (const Error& e) {
    return Status(e.code(), std::string(kProviderName) + ": " + e.what());
  }
}

// Registered when the library loads, where the loader lists a usable device
// (so that get_available_providers() does not offer a provider that cannot
// be created). ONYX_DEBUG_PROVIDERS=1 says why it was not.
struct Registrar {
  Registrar() {
    Result<std::vector<std::string>> devices = VulkanDevice::list_devices();
    if (!devices.is_ok() || devices.value().empty()) {
      const std::string why = devices.is_ok() ? "the Vulkan loader lists no device (is a driver such as "
                                                "mesa-vulkan-drivers installed?)"
                                              : devices.status().message();
      // Asking for it by name then says why.
      register_unavailable_provider(kProviderName, why);
      const char* debug = std::getenv("ONYX_DEBUG_PROVIDERS");
      if (debug != nullptr && std::string(debug) == "1") {
        std::fprintf(stderr, "onyx: %s is not available: %s\n", kProviderName, why.c_str());
      }
      return;
    }
    register_provider(kProviderName, make_provider, DeviceType::kVulkan);
  }
};
const Registrar registrar;

}  // namespace
}  // namespace onyx::vulkan

// The device's transfer counters, for tests and benchmarks: copies and
// bytes each way and the dispatches made since the process started.
extern "C" __attribute__((visibility("default"))) int onyx_vulkan_counters(int device_id, long long* out,
                                                                           int count) {
  onyx::Result<onyx::vulkan::DevicePtr> device = onyx::vulkan::VulkanDevice::get(device_id);
  if (!device.is_ok() || out == nullptr || count < 6) return -1;
  onyx::vulkan::TransferCounters& c = device.value()->counters();
  out[0] = c.host_to_device.load();
  out[1] = c.host_to_device_bytes.load();
  out[2] = c.device_to_host.load();
  out[3] = c.device_to_host_bytes.load();
  out[4] = c.dispatches.load();
  out[5] = c.submissions.load();
  return 6;
}
