// Element-wise ops: binary with numpy broadcasting (shaders/binary.comp) and
// unary activations and math (shaders/unary.comp), float32.
#include <cmath>
#include <limits>

#include "providers/vulkan/vulkan_kernel.h"

namespace onyx::vulkan {
namespace {

int binary_op(const std::string& op) {
  static const char* const kOps[] = {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "PRelu"};
  for (int i = 0; i < 8; ++i) {
    if (op == kOps[i]) return i;
  }
  return -1;
}

// The output shape of a and b broadcast, and each one's element strides over
// it (0 along broadcast dims), with neighbouring dims merged where both
// operands step through them alike. Fails when they do not broadcast.
struct Broadcast {
  Shape out;
  std::vector<int64_t> dims, a_strides, b_strides;
};

Result<Broadcast> broadcast(const std::string& label, const Shape& a, const Shape& b) {
  Broadcast r;
  const size_t rank = std::max(a.size(), b.size());
  r.out.resize(rank);
  std::vector<int64_t> ad(rank, 1), bd(rank, 1);
  for (size_t i = 0; i < a.size(); ++i) ad[rank - a.size() + i] = a[i];
  for (size_t i = 0; i < b.size(); ++i) bd[rank - b.size() + i] = b[i];
  for (size_t i = 0; i < rank; ++i) {
    if (ad[i] != bd[i] && ad[i] != 1 && bd[i] != 1) {
      return invalid_argument(label, ": inputs of shapes ", shape_to_string(a), " and ", shape_to_string(b),
                              " do not broadcast");
    }
    r.out[i] = ad[i] == 1 ? bd[i] : ad[i];
  }
  std::vector<int64_t> as(rank), bs(rank);
  int64_t sa = 1, sb = 1;
  for (size_t i = rank; i-- > 0;) {
    as[i] = ad[i] == 1 ? 0 : sa;
    bs[i] = bd[i] == 1 ? 0 : sb;
    sa *= ad[i];
    sb *= bd[i];
  }
  for (size_t i = 0; i < rank; ++i) {
    if (r.out[i] == 1) continue;
    if (!r.dims.empty() && r.a_strides.back() == as[i] * r.out[i] && r.b_strides.back() == bs[i] * r.out[i]) {
      r.dims.back() *= r.out[i];
      r.a_strides.back() = as[i];
      r.b_strides.back() = bs[i];
      continue;
    }
    r.dims.push_back(r.out[i]);
    r.a_strides.push_back(as[i]);
    r.b_strides.push_back(bs[i]);
  }
  return r;
}

class BinaryKernel final : public VulkanKernel {
 public:
  BinaryKernel(const KernelInfo& info, DevicePtr device) : VulkanKernel(std::move(device)), op_(binary_op(info.op_type())) {
    // Max and Min take any number of inputs; this kernel runs two.
    if ((info.op_type() == "Max" || info.op_type() == "Min") && info.input_count() != 2) {
      throw Error(not_implemented(info.label(), ": Vulkan runs ", info.op_type(), " of two inputs"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* a, float_input(ctx, 0));
    ONYX_ASSIGN_OR_RETURN(const Tensor* b, float_input(ctx, 1));
    ONYX_ASSIGN_OR_RETURN(Broadcast bc, broadcast(ctx.label(), a->shape(), b->shape()));
    if (bc.dims.size() > 8) return not_implemented(ctx.label(), ": broadcasting over ", bc.dims.size(), " dims");
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, bc.out);
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(BufferRange ra, range(ctx.label(), *a, "input 0"));
    ONYX_ASSIGN_OR_RETURN(BufferRange rb, range(ctx.label(), *b, "input 1"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    struct {
      uint32_t n, rank, dims[8], a[8], b[8];
    } push{};
    push.n = static_cast<uint32_t>(y.size());
    push.rank = static_cast<uint32_t>(bc.dims.size());
    for (size_t d = 0; d < bc.dims.size(); ++d) {
      push.dims[d] = static_cast<uint32_t>(bc.dims[d]);
      push.a[d] = static_cast<uint32_t>(bc.a_strides[d]);
      push.b[d] = static_cast<uint32_t>(bc.b_strides[d]);
    }
    ONYX_ASSIGN_OR_RETURN(const Pipeline* p, pipeline("binary", 3, {op_}));
    return dispatch_flat(*p, {ra, rb, ry}, &push, sizeof(push), static_cast<uint64_t>(y.size()));
  }

 private:
  int op_;
};

// Unary ops and their codes in shaders/unary.comp.
struct UnaryOp {
  const char* name;
  int code;
  int since;
};
constexpr UnaryOp kUnary[] = {
    {"Abs", 0, 6},       {"Neg", 1, 6},       {"Relu", 2, 6},      {"Sigmoid", 3, 6},   {"Tanh", 4, 6},
    {"Exp", 5, 6},       {"Log", 6, 6},       {"Sqrt", 7, 6},      {"Reciprocal", 8, 6}, {"Floor", 9, 6},
    {"Ceil", 10, 6},     {"Round", 11, 11},   {"Sign", 12, 9},     {"Erf", 13, 9},      {"Sin", 14, 7},
    {"Cos", 15, 7},      {"Tan", 16, 7},      {"Asin", 17, 7},     {"Acos", 18, 7},     {"Atan", 19, 7},
    {"Sinh", 20, 9},     {"Cosh", 21, 9},     {"Asinh", 22, 9},    {"Acosh", 23, 9},    {"Atanh", 24, 9},
    {"Softplus", 25, 1}, {"Softsign", 26, 1}, {"Elu", 27, 6},      {"Selu", 28, 6},     {"LeakyRelu", 29, 6},
    {"HardSigmoid", 30, 6}, {"HardSwish", 31, 14}, {"ThresholdedRelu", 32, 10}, {"Celu", 33, 12},
    {"Gelu", 34, 20},    {"Mish", 36, 18},
};

class UnaryKernel final : public VulkanKernel {
 public:
  UnaryKernel(const KernelInfo& info, DevicePtr device) : VulkanKernel(std::move(device)) {
    const std::string& op = info.op_type();
    for (const UnaryOp& u : kUnary) {
      if (op == u.name) code_ = u.code;
    }
    if (op == "Elu" || op == "Celu") alpha_ = info.attr_float("alpha", 1.0f);
    if (op == "Selu") {
      alpha_ = info.attr_float("alpha", 1.67326319217681884765625f);
      beta_ = info.attr_float("gamma", 1.05070102214813232421875f);
    }
    if (op == "LeakyRelu") alpha_ = info.attr_float("alpha", 0.01f);
    if (op == "HardSigmoid") {
      alpha_ = info.attr_float("alpha", 0.2f);
      beta_ = info.attr_float("beta", 0.5f);
    }
    if (op == "ThresholdedRelu") alpha_ = info.attr_float("alpha", 1.0f);
    if (op == "Gelu") {
      const std::string approximate = info.attr_string("approximate", "none");
      if (approximate == "tanh") {
        code_ = 35;
      } else if (approximate != "none") {
        throw Error(invalid_argument(info.label(), ": attribute approximate is '", approximate,
                                     "', expected 'none' or 'tanh'"));
      }
    }
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    return run(ctx, *x, code_, alpha_, beta_);
  }

  // Also Clip's: bounds as alpha and beta.
  Status run(KernelContext& ctx, const Tensor& x, int code, float alpha, float beta) const {
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, x.shape());
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), x, "input 0"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    struct {
      uint32_t n;
      float alpha, beta;
    } push{static_cast<uint32_t>(y.size()), alpha, beta};
    ONYX_ASSIGN_OR_RETURN(const Pipeline* p, pipeline("unary", 2, {code}));
    return dispatch_flat(*p, {rx, ry}, &push, sizeof(push), static_cast<uint64_t>(y.size()));
  }

 private:
  int code_ = 99;
  float alpha_ = 0.0f, beta_ = 0.0f;
};

// Clip: bounds from attributes (before opset 11) or from optional scalar
// inputs, which stay on the host.
class ClipKernel final : public VulkanKernel {
 public:
  ClipKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(device), unary_(info, device), version_(info.version()) {
    if (version_ < 11) {
      min_ = info.attr_float("min", -std::numeric_limits<float>::infinity());
      max_ = info.attr_float("max", std::numeric_limits<float>::infinity());
    }
  }
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    float lo = min_, hi = max_;
    if (version_ >= 11) {
      lo = -std::numeric_limits<float>::infinity();
      hi = std::numeric_limits<float>::infinity();
      for (size_t i = 1; i <= 2; ++i) {
        const Tensor* bound = ctx.input_tensor(i);
        if (bound == nullptr) continue;
        if (bound->dtype() != DataType::kFloat || bound->size() != 1 || !bound->device().host_readable()) {
          return invalid_argument(ctx.label(), ": input ", i, " must be a float scalar, got ", bound->describe());
        }
        (i == 1 ? lo : hi) = *bound->data<float>();
      }
    }
    return unary_.run(ctx, *x, 37, lo, hi);
  }

 private:
  UnaryKernel unary_;
  int version_;
  float min_ = 0.0f, max_ = 0.0f;
};

}  // namespace

void add_elementwise_kernels(std::vector<KernelDef>& defs, const DevicePtr& device) {
  for (const char* op : {"Add", "Sub", "Mul", "Div"}) defs.push_back(vulkan_kernel<BinaryKernel>(device, op, 7, kLatestVersion));
  defs.push_back(vulkan_kernel<BinaryKernel>(device, "Pow", 7, 11));
  KernelDef pow = vulkan_kernel<BinaryKernel>(device, "Pow", 12, kLatestVersion);
  pow.more_type_constraints = {{"T1", {DataType::kFloat}}};  // the exponent
  defs.push_back(std::move(pow));
  defs.push_back(vulkan_kernel<BinaryKernel>(device, "PRelu", 9, kLatestVersion));
  // Max and Min broadcast from opset 8.
  for (const char* op : {"Max", "Min"}) defs.push_back(vulkan_kernel<BinaryKernel>(device, op, 8, kLatestVersion));
  for (const UnaryOp& u : kUnary) defs.push_back(vulkan_kernel<UnaryKernel>(device, u.name, u.since, kLatestVersion));
  defs.push_back(vulkan_kernel<ClipKernel>(device, "Clip", 6, kLatestVersion, {DataType::kFloat}, {1, 2}));
}

}  // namespace onyx::vulkan
