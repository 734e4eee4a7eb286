// The simulated test device: scrambled, poisoned memory; counted copies,
// streams and events; a kernel provider and a compiling provider.
#include "providers/testing/test_device.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "providers/execution_provider.h"
#include "providers/node_groups.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ONYX_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define ONYX_TEST_ASAN 1
#endif
#ifdef ONYX_TEST_ASAN
#include <sanitizer/asan_interface.h>
#endif

namespace onyx::testing {
namespace {

constexpr unsigned char kScramble = 0xA5;

size_t rounded(size_t bytes) { return ((bytes == 0 ? 1 : bytes) + 63) / 64 * 64; }

void poison(const void* p, size_t bytes) {
#ifdef ONYX_TEST_ASAN
  __asan_poison_memory_region(p, rounded(bytes));
#else
  (void)p;
  (void)bytes;
#endif
}

void unpoison(const void* p, size_t bytes) {
#ifdef ONYX_TEST_ASAN
  __asan_unpoison_memory_region(p, rounded(bytes));
#else
  (void)p;
  (void)bytes;
#endif
}

// Device memory as the device sees it: only these functions (the device's
// own "hardware") touch it, unpoisoning it for the moment they do.
void device_read(const void* device, void* host, size_t bytes) {
  unpoison(device, bytes);
  const auto* from = static_cast<const unsigned char*>(device);
  auto* to = static_cast<unsigned char*>(host);
  for (size_t i = 0; i < bytes; ++i) to[i] = from[i] ^ kScramble;
  poison(device, bytes);
}

void device_write(void* device, const void* host, size_t bytes) {
  unpoison(device, bytes);
  const auto* from = static_cast<const unsigned char*>(host);
  auto* to = static_cast<unsigned char*>(device);
  for (size_t i = 0; i < bytes; ++i) to[i] = from[i] ^ kScramble;
  poison(device, bytes);
}

class TestDeviceAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes) override {
    void* p = std::aligned_alloc(64, rounded(bytes));
    if (p == nullptr) throw Error(runtime_error("test device: out of memory for ", bytes, " bytes"));
    poison(p, bytes);
    return p;
  }
  void deallocate(void* p, size_t bytes) override {
    unpoison(p, bytes);
    std::free(p);
  }
  Device device() const override { return test_device(); }
};

std::shared_ptr<TestDeviceAllocator> device_allocator() {
  static auto allocator = std::make_shared<TestDeviceAllocator>();
  return allocator;
}

bool is_test(const Device& d) { return d.type == DeviceType::kTest; }

class TestTransfer final : public DataTransfer {
 public:
  bool can_copy(const Device& src, const Device& dst) const override {
    return (is_test(src) || is_test(dst)) && (is_test(src) || src.host_readable()) &&
           (is_test(dst) || dst.host_readable());
  }
  Status copy(const Tensor& src, Tensor& dst, Stream* /*stream*/) const override {
    if (src.dtype() == DataType::kString) return not_implemented("the test device holds no strings");
    if (src.dtype() != dst.dtype() || src.bytes() != dst.bytes()) {
      return invalid_argument("test device copy from ", src.describe(), " into ", dst.describe());
    }
    const size_t bytes = src.bytes();
    if (is_test(src.device()) && is_test(dst.device())) {
      std::vector<unsigned char> staging(bytes);
      device_read(src.raw_data(), staging.data(), bytes);
      device_write(dst.raw_data(), staging.data(), bytes);
    } else if (is_test(dst.device())) {
      ++test_device_counters().host_to_device;
      device_write(dst.raw_data(), src.raw_data(), bytes);
    } else {
      ++test_device_counters().device_to_host;
      device_read(src.raw_data(), dst.raw_data(), bytes);
    }
    return Status::ok();
  }
};

class TestEvent final : public Event {
 public:
  Status wait_on_host() const override {
    ++test_device_counters().event_waits;
    return Status::ok();
  }
};

class TestStream final : public Stream {
 public:
  TestStream() { ++test_device_counters().streams_created; }
  Device device() const override { return test_device(); }
  std::shared_ptr<Event> record_event() override {
    ++test_device_counters().events_recorded;
    return std::make_shared<TestEvent>();
  }
  Status wait_for(const Event&) override {
    ++test_device_counters().event_waits;
    return Status::ok();
  }
  Status synchronize() override { return Status::ok(); }
};

// Float data of a device tensor, read by the device.
std::vector<float> read_floats(const Tensor& t) {
  std::vector<float> v(static_cast<size_t>(t.size()));
  device_read(t.raw_data(), v.data(), t.bytes());
  return v;
}

void write_floats(Tensor& t, const std::vector<float>& v) { device_write(t.raw_data(), v.data(), t.bytes()); }

Status require_device_float(const std::string& label, const Tensor* t, size_t i) {
  if (t == nullptr) return invalid_argument(label, ": input ", i, " is missing");
  if (!is_test(t->device())) {
    return runtime_error(label, ": input ", i, " is in ", device_to_string(t->device()),
                         " memory, not on the test device (a copy is missing)");
  }
  if (t->dtype() != DataType::kFloat) return invalid_argument(label, ": input ", i, " is not float");
  return Status::ok();
}

Result<Shape> broadcast_shape(const Shape& a, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (x != y && x != 1 && y != 1) {
      return invalid_argument("shapes ", shape_to_string(a), " and ", shape_to_string(b), " do not broadcast");
    }
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// Index into a tensor of `shape` for the output index `flat` of `out`.
int64_t broadcast_index(const Shape& shape, const Shape& out, int64_t flat) {
  int64_t index = 0, stride = 1;
  for (size_t k = out.size(); k-- > 0;) {
    const int64_t coord = flat % out[k];
    flat /= out[k];
    const size_t offset = out.size() - shape.size();
    if (k >= offset) {
      const int64_t dim = shape[k - offset];
      if (dim != 1) index += coord * stride;
      stride *= dim;
    }
  }
  return index;
}

float apply(const std::string& op, float a, float b) {
  if (op == "Add") return a + b;
  if (op == "Sub") return a - b;
  if (op == "Mul") return a * b;
  if (op == "Div") return a / b;
  if (op == "Relu") return a > 0 ? a : 0;
  if (op == "Neg") return -a;
  return std::nanf("");
}

bool is_binary(const std::string& op) { return op == "Add" || op == "Sub" || op == "Mul" || op == "Div"; }
bool is_elementwise(const std::string& op) { return is_binary(op) || op == "Relu" || op == "Neg"; }

// One element-wise op on host vectors with numpy broadcasting.
Result<std::vector<float>> elementwise(const std::string& op, const std::vector<float>& a, const Shape& as,
                                       const std::vector<float>* b, const Shape* bs, Shape& out_shape) {
  out_shape = as;
  if (b != nullptr) {
    ONYX_ASSIGN_OR_RETURN(out_shape, broadcast_shape(as, *bs));
  }
  std::vector<float> out(static_cast<size_t>(shape_size(out_shape)));
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    const float x = a[static_cast<size_t>(broadcast_index(as, out_shape, i))];
    const float y = b ? (*b)[static_cast<size_t>(broadcast_index(*bs, out_shape, i))] : 0.0f;
    out[static_cast<size_t>(i)] = apply(op, x, y);
  }
  return out;
}

class ElementwiseKernel final : public Kernel {
 public:
  explicit ElementwiseKernel(const KernelInfo& info) : op_(info.op_type()) {}
  Status compute(KernelContext& ctx) const override {
    ++test_device_counters().kernels_run;
    const Tensor* a = ctx.input_tensor(0);
    ONYX_RETURN_IF_ERROR(require_device_float(ctx.label(), a, 0));
    const Tensor* b = is_binary(op_) ? ctx.input_tensor(1) : nullptr;
    if (is_binary(op_)) ONYX_RETURN_IF_ERROR(require_device_float(ctx.label(), b, 1));
    std::vector<float> bv = b ? read_floats(*b) : std::vector<float>();
    Shape out_shape;
    ONYX_ASSIGN_OR_RETURN(std::vector<float> out, elementwise(op_, read_floats(*a), a->shape(), b ? &bv : nullptr,
                                                              b ? &b->shape() : nullptr, out_shape));
    write_floats(ctx.allocate_output(0, DataType::kFloat, out_shape), out);
    return Status::ok();
  }

 private:
  std::string op_;
};

// numpy's matmul: 1-D operands promoted (and the added axis dropped),
// batch dimensions broadcast.
class MatMulKernel final : public Kernel {
 public:
  explicit MatMulKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    ++test_device_counters().kernels_run;
    const Tensor* a = ctx.input_tensor(0);
    const Tensor* b = ctx.input_tensor(1);
    ONYX_RETURN_IF_ERROR(require_device_float(ctx.label(), a, 0));
    ONYX_RETURN_IF_ERROR(require_device_float(ctx.label(), b, 1));
    if (a->rank() == 0 || b->rank() == 0) return invalid_argument(ctx.label(), ": MatMul of a scalar");
    Shape as = a->shape(), bs = b->shape();
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
    if (bs[bs.size() - 2] != k) {
      return invalid_argument(ctx.label(), ": inner dimensions differ: ", a->describe(), " and ", b->describe());
    }
    const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
    ONYX_ASSIGN_OR_RETURN(Shape batch, broadcast_shape(a_batch, b_batch));
    Shape out_shape = batch;
    if (a->rank() > 1) out_shape.push_back(m);
    if (b->rank() > 1) out_shape.push_back(n);
    const std::vector<float> av = read_floats(*a), bv = read_floats(*b);
    const int64_t batches = shape_size(batch);
    std::vector<float> out(static_cast<size_t>(batches * m * n), 0.0f);
    for (int64_t t = 0; t < batches; ++t) {
      const float* ap = av.data() + broadcast_index(a_batch, batch, t) * m * k;
      const float* bp = bv.data() + broadcast_index(b_batch, batch, t) * k * n;
      float* op = out.data() + t * m * n;
      for (int64_t r = 0; r < m; ++r) {
        for (int64_t j = 0; j < k; ++j) {
          const float x = ap[r * k + j];
          for (int64_t c = 0; c < n; ++c) op[r * n + c] += x * bp[j * n + c];
        }
      }
    }
    write_floats(ctx.allocate_output(0, DataType::kFloat, out_shape), out);
    return Status::ok();
  }
};

class SoftmaxKernel final : public Kernel {
 public:
  explicit SoftmaxKernel(const KernelInfo& info) : axis_(info.attr_int("axis", -1)) {}
  Status compute(KernelContext& ctx) const override {
    ++test_device_counters().kernels_run;
    const Tensor* x = ctx.input_tensor(0);
    ONYX_RETURN_IF_ERROR(require_device_float(ctx.label(), x, 0));
    const int64_t axis = axis_ < 0 ? axis_ + x->rank() : axis_;
    if (axis < 0 || axis >= x->rank()) return invalid_argument(ctx.label(), ": axis ", axis_, " is out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x->dim(d);
    for (int64_t d = axis + 1; d < x->rank(); ++d) inner *= x->dim(d);
    const int64_t len = x->dim(axis);
    std::vector<float> v = read_floats(*x);
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) -> float& { return v[static_cast<size_t>((o * len + j) * inner + i)]; };
        float top = -INFINITY, sum = 0;
        for (int64_t j = 0; j < len; ++j) top = std::max(top, at(j));
        for (int64_t j = 0; j < len; ++j) sum += (at(j) = std::exp(at(j) - top));
        for (int64_t j = 0; j < len; ++j) at(j) /= sum;
      }
    }
    write_floats(ctx.allocate_output(0, DataType::kFloat, x->shape()), v);
    return Status::ok();
  }

 private:
  int64_t axis_;
};

// Reshape on the device: the shape input stays on the host (a host input of
// the kernel definition), the data is not touched.
class ReshapeKernel final : public Kernel {
 public:
  explicit ReshapeKernel(const KernelInfo& info) : allowzero_(info.attr_int("allowzero", 0) != 0) {}
  Status compute(KernelContext& ctx) const override {
    ++test_device_counters().kernels_run;
    const Tensor* x = ctx.input_tensor(0);
    const Tensor* shape = ctx.input_tensor(1);
    ONYX_RETURN_IF_ERROR(require_device_float(ctx.label(), x, 0));
    if (shape == nullptr || !shape->device().host_readable() || shape->dtype() != DataType::kInt64) {
      return invalid_argument(ctx.label(), ": the shape must be an int64 tensor in host memory");
    }
    Shape out(shape->data<int64_t>(), shape->data<int64_t>() + shape->size());
    int64_t known = 1, unknown = -1;
    for (size_t d = 0; d < out.size(); ++d) {
      if (out[d] == 0 && !allowzero_ && d < x->shape().size()) out[d] = x->shape()[d];
      if (out[d] == -1) {
        unknown = static_cast<int64_t>(d);
      } else {
        known *= out[d];
      }
    }
    if (unknown >= 0) out[static_cast<size_t>(unknown)] = known > 0 ? x->size() / known : 0;
    if (shape_size(out) != x->size()) {
      return invalid_argument(ctx.label(), ": cannot reshape ", x->describe(), " to ", shape_to_string(out));
    }
    ctx.set_output(0, Value(x->reshaped(out)));
    return Status::ok();
  }

 private:
  bool allowzero_;
};

template <typename Class>
KernelDef device_kernel(const char* op, int since, std::vector<size_t> host_inputs = {}) {
  KernelDef def;
  def.op_type = op;
  def.since_version = since;
  def.types = {DataType::kFloat};
  def.factory = make_factory<Class>();
  def.host_inputs = std::move(host_inputs);
  return def;
}

// A fused group of element-wise nodes, run as one program on the device.
// "Compiled" once per input-shape signature, as a compiler that specialises
// on shapes would.
class FusedKernel final : public Kernel {
 public:
  FusedKernel(const graph::Graph& fused, const KernelInfo& info) : graph_(fused), label_(info.label()) {
    // Constants go to the device once, with the program.
    for (const auto& [id, tensor] : fused.initializers) {
      constants_.emplace(id, read_floats_from_host(tensor));
    }
  }

  Status compute(KernelContext& ctx) const override {
    ++test_device_counters().fused_runs;
    std::map<int32_t, std::pair<std::vector<float>, Shape>> values;
    std::string signature;
    for (size_t i = 0; i < graph_.inputs.size(); ++i) {
      const Tensor* t = ctx.input_tensor(i);
      ONYX_RETURN_IF_ERROR(require_device_float(label_, t, i));
      values[graph_.inputs[i]] = {read_floats(*t), t->shape()};
      signature += shape_to_string(t->shape());
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (compiled_.insert(signature).second) ++test_device_counters().groups_compiled;
    }
    for (const auto& [id, data] : constants_) values[id] = data;
    for (size_t n = 0; n < graph_.nodes.size(); ++n) {
      const graph::Node& node = graph_.nodes[n];
      const auto& a = values.at(node.inputs[0]);
      const std::pair<std::vector<float>, Shape>* b = node.inputs.size() > 1 ? &values.at(node.inputs[1]) : nullptr;
      Shape shape;
      Result<std::vector<float>> out =
          elementwise(node.op_type, a.first, a.second, b ? &b->first : nullptr, b ? &b->second : nullptr, shape);
      // An error names the node of the model, inside the fused one.
      if (!out.is_ok()) return Status(out.status().code(), node.label(n) + ": " + out.status().message());
      values[node.outputs[0]] = {std::move(out).value(), shape};
    }
    for (size_t o = 0; o < graph_.outputs.size(); ++o) {
      const auto& [data, shape] = values.at(graph_.outputs[o]);
      write_floats(ctx.allocate_output(o, DataType::kFloat, shape), data);
    }
    return Status::ok();
  }

 private:
  static std::pair<std::vector<float>, Shape> read_floats_from_host(const Tensor& t) {
    std::vector<float> v(t.data<float>(), t.data<float>() + t.size());
    return {std::move(v), t.shape()};
  }

  const graph::Graph& graph_;
  std::string label_;
  std::map<int32_t, std::pair<std::vector<float>, Shape>> constants_;
  mutable std::mutex mutex_;
  mutable std::set<std::string> compiled_;
};

class TestDeviceProvider : public ExecutionProvider {
 public:
  TestDeviceProvider() {
    for (const char* op : {"Add", "Sub", "Mul", "Div"}) add(device_kernel<ElementwiseKernel>(op, 7));
    for (const char* op : {"Relu", "Neg"}) add(device_kernel<ElementwiseKernel>(op, 6));
    add(device_kernel<MatMulKernel>("MatMul", 1));
    add(device_kernel<SoftmaxKernel>("Softmax", 13));
    KernelDef reshape = device_kernel<ReshapeKernel>("Reshape", 5, {1});
    add(std::move(reshape));
  }
  std::string name() const override { return kTestDeviceProvider; }
  Device device() const override { return test_device(); }
  Allocator* allocator(MemoryType type) const override {
    return type == MemoryType::kDefault ? allocator_.get() : nullptr;
  }
  const KernelRegistry& kernels() const override { return registry_; }
  std::shared_ptr<const DataTransfer> data_transfer() const override { return std::make_shared<TestTransfer>(); }
  std::unique_ptr<Stream> create_stream() const override { return std::make_unique<TestStream>(); }

 protected:
  void add(KernelDef def) {
    Status added = registry_.add(std::move(def));
    if (!added.is_ok()) throw Error(added);
  }
  KernelRegistry registry_;
  std::shared_ptr<TestDeviceAllocator> allocator_ = device_allocator();
};

class TestCompilerProvider final : public TestDeviceProvider {
 public:
  TestCompilerProvider() { registry_ = KernelRegistry(); }
  std::string name() const override { return kTestCompilerProvider; }
  Kind kind() const override { return Kind::kCompiler; }
  std::vector<NodeGroup> claim(const graph::Graph& graph, const std::vector<size_t>& candidates) const override {
    return connected_groups(graph, candidates, [&](size_t n) {
      const graph::Node& node = graph.nodes[n];
      if (!node.domain.empty() || !is_elementwise(node.op_type)) return false;
      // Before opset 7 binary ops broadcast by the `broadcast`/`axis` attributes.
      if (is_binary(node.op_type) && node.since_version < 7) return false;
      for (int32_t v : node.inputs) {
        if (v == graph::kNoValue) return false;
        const graph::TypeAndShape& info = graph.values[static_cast<size_t>(v)].info;
        if (info.type.kind != ValueType::Kind::kTensor || info.type.elem_type != DataType::kFloat) return false;
      }
      return true;
    });
  }
  Result<std::unique_ptr<Kernel>> compile(const graph::Graph& fused, const KernelInfo& info) const override {
    return std::unique_ptr<Kernel>(new FusedKernel(fused, info));
  }
};

}  // namespace

void TestDeviceCounters::reset() {
  host_to_device = 0;
  device_to_host = 0;
  kernels_run = 0;
  events_recorded = 0;
  event_waits = 0;
  streams_created = 0;
  groups_compiled = 0;
  fused_runs = 0;
}

TestDeviceCounters& test_device_counters() {
  static TestDeviceCounters counters;
  return counters;
}

void register_test_device_providers() {
  register_provider(
      kTestDeviceProvider,
      [](const ProviderOptions&) -> Result<std::unique_ptr<ExecutionProvider>> {
        return std::unique_ptr<ExecutionProvider>(new TestDeviceProvider());
      },
      DeviceType::kTest);
  register_provider(
      kTestCompilerProvider,
      [](const ProviderOptions&) -> Result<std::unique_ptr<ExecutionProvider>> {
        return std::unique_ptr<ExecutionProvider>(new TestCompilerProvider());
      },
      DeviceType::kTest);
}

Tensor to_test_device(const Tensor& host) {
  Tensor t(host.dtype(), host.shape(), device_allocator().get());
  Status s = TestTransfer().copy(host, t, nullptr);
  if (!s.is_ok()) throw Error(s);
  return t;
}

Tensor from_test_device(const Tensor& device) {
  Tensor t(device.dtype(), device.shape());
  Status s = TestTransfer().copy(device, t, nullptr);
  if (!s.is_ok()) throw Error(s);
  return t;
}

}  // namespace onyx::testing
