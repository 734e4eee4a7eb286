// Element-wise ops on CUDA, float and float16: the arithmetic binary ops
// with multidirectional broadcasting (PRelu's slope broadcasts the same
// way), the common activations, and Cast between float and float16
// (elementwise.cu).
#include <cmath>
#include <limits>

#include "providers/cpu/broadcast.h"
#include "providers/cuda/cuda_kernel.h"

namespace onyx::cuda {
namespace {

class BinaryKernel final : public CudaKernel {
 public:
  BinaryKernel(const KernelInfo& info, ContextPtr context) : CudaKernel(std::move(context)), op_(op_of(info)) {}

  Status compute(KernelContext& ctx) const override {
    if (ctx.input_count() != 2) {
      return not_implemented(ctx.label(), ": the CUDA kernel takes 2 inputs, this node has ", ctx.input_count());
    }
    ONYX_ASSIGN_OR_RETURN(const Tensor* a, device_input(ctx, 0, "A"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* b, device_input(ctx, 1, "B"));
    ONYX_ASSIGN_OR_RETURN(Element type, element_of(ctx, *a, "A"));
    if (b->dtype() != a->dtype()) {
      return invalid_argument(ctx.label(), ": input B ", b->describe(), " has another element type than A ",
                              a->describe());
    }
    ONYX_ASSIGN_OR_RETURN(Shape out, cpu::broadcast_shapes(ctx.label(), {a->shape(), b->shape()}, {"A", "B"}));
    ONYX_ASSIGN_OR_RETURN(Strided shape, collapse(ctx.label(), out, {a->shape(), b->shape()}));
    // Both contiguous over the whole output: the kernel's flat path.
    if (shape.rank == 1 && shape.strides[0][0] == 1 && shape.strides[1][0] == 1) shape.rank = 0;
    Tensor& y = ctx.allocate_output(0, a->dtype(), out);
    ONYX_ASSIGN_OR_RETURN(cudaStream_t stream, begin(ctx));
    return launched(ctx, launch_binary(op_, type, a->raw_data(), b->raw_data(), y.raw_data(), y.size(), shape, stream),
                    "element-wise launch");
  }

 private:
  static BinaryOp op_of(const KernelInfo& info) {
    const std::string& op = info.op_type();
    if (op == "Add") return BinaryOp::kAdd;
    if (op == "Sub") return BinaryOp::kSub;
    if (op == "Mul") return BinaryOp::kMul;
    if (op == "Div") return BinaryOp::kDiv;
    if (op == "Pow") return BinaryOp::kPow;
    if (op == "Max") return BinaryOp::kMax;
    if (op == "Min") return BinaryOp::kMin;
    return BinaryOp::kPRelu;
  }
  BinaryOp op_;
};

struct UnaryOpInfo {
  const char* op;
  int since;
  UnaryOp code;
};
constexpr UnaryOpInfo kUnaryOps[] = {
    {"Relu", 6, UnaryOp::kRelu},
    {"Sigmoid", 6, UnaryOp::kSigmoid},
    {"Tanh", 6, UnaryOp::kTanh},
    {"Exp", 6, UnaryOp::kExp},
    {"Log", 6, UnaryOp::kLog},
    {"Sqrt", 6, UnaryOp::kSqrt},
    {"Neg", 6, UnaryOp::kNeg},
    {"Abs", 6, UnaryOp::kAbs},
    {"Reciprocal", 6, UnaryOp::kReciprocal},
    {"Erf", 9, UnaryOp::kErf},
    {"Floor", 6, UnaryOp::kFloor},
    {"Ceil", 6, UnaryOp::kCeil},
    {"LeakyRelu", 6, UnaryOp::kLeakyRelu},
    {"Elu", 6, UnaryOp::kElu},
    {"HardSigmoid", 6, UnaryOp::kHardSigmoid},
    {"HardSwish", 14, UnaryOp::kHardSwish},
    {"Softplus", 1, UnaryOp::kSoftplus},
    {"Gelu", 20, UnaryOp::kGelu},
    {"Clip", 6, UnaryOp::kClip},
};

// Clip's min or max (inputs 1 and 2 from version 11, on the host).
Result<float> clip_bound(const KernelContext& ctx, size_t i, float absent) {
  const Tensor* t = ctx.input_tensor(i);
  if (t == nullptr) return absent;
  if (!t->device().host_readable() || t->size() != 1) {
    return invalid_argument(ctx.label(), ": input ", i == 1 ? "min" : "max", " must be one value on the host, got ",
                            t->describe());
  }
  if (t->dtype() == DataType::kFloat) return t->data<float>()[0];
  if (t->dtype() == DataType::kFloat16) return Float16::to_float(t->data<Float16>()[0].bits);
  return invalid_argument(ctx.label(), ": input ", i == 1 ? "min" : "max", " has element type ", dtype_name(t->dtype()),
                          ", expected float or float16");
}

class UnaryKernel final : public CudaKernel {
 public:
  UnaryKernel(const KernelInfo& info, ContextPtr context) : CudaKernel(std::move(context)) {
    for (const UnaryOpInfo& u : kUnaryOps) {
      if (info.op_type() == u.op) op_ = u.code;
    }
    const float inf = std::numeric_limits<float>::infinity();
    switch (op_) {
      case UnaryOp::kLeakyRelu:
        alpha_ = info.attr_float("alpha", 0.01f);
        break;
      case UnaryOp::kElu:
        alpha_ = info.attr_float("alpha", 1.0f);
        break;
      case UnaryOp::kHardSigmoid:
        alpha_ = info.attr_float("alpha", 0.2f);
        beta_ = info.attr_float("beta", 0.5f);
        break;
      case UnaryOp::kGelu: {
        const std::string approximate = info.attr_string("approximate", "none");
        if (approximate != "none" && approximate != "tanh") {
          throw Error(
              invalid_model(info.label(), ": attribute approximate is '", approximate, "', expected none or tanh"));
        }
        alpha_ = approximate == "tanh" ? 1.0f : 0.0f;
        break;
      }
      case UnaryOp::kClip:
        bounds_from_inputs_ = info.version() >= 11;
        alpha_ = info.attr_float("min", -inf);
        beta_ = info.attr_float("max", inf);
        break;
      default:
        break;
    }
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, device_input(ctx, 0, "X"));
    ONYX_ASSIGN_OR_RETURN(Element type, element_of(ctx, *x, "X"));
    float alpha = alpha_, beta = beta_;
    if (bounds_from_inputs_) {
      const float inf = std::numeric_limits<float>::infinity();
      ONYX_ASSIGN_OR_RETURN(alpha, clip_bound(ctx, 1, -inf));
      ONYX_ASSIGN_OR_RETURN(beta, clip_bound(ctx, 2, inf));
    }
    Tensor& y = ctx.allocate_output(0, x->dtype(), x->shape());
    ONYX_ASSIGN_OR_RETURN(cudaStream_t stream, begin(ctx));
    return launched(ctx, launch_unary(op_, type, x->raw_data(), y.raw_data(), y.size(), alpha, beta, stream),
                    "element-wise launch");
  }

 private:
  UnaryOp op_ = UnaryOp::kRelu;
  float alpha_ = 0.0f, beta_ = 0.0f;
  bool bounds_from_inputs_ = false;
};

// Cast between float and float16 (the provider claims no other).
class CastKernel final : public CudaKernel {
 public:
  CastKernel(const KernelInfo& info, ContextPtr context)
      : CudaKernel(std::move(context)), to_(static_cast<DataType>(info.attr_int("to", 0))) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, device_input(ctx, 0, "input"));
    ONYX_ASSIGN_OR_RETURN(Element from, element_of(ctx, *x, "input"));
    if (to_ != DataType::kFloat && to_ != DataType::kFloat16) {
      return not_implemented(ctx.label(), ": the CUDA Cast converts between float and float16, not to ",
                             dtype_name(to_));
    }
    Tensor& y = ctx.allocate_output(0, to_, x->shape());
    ONYX_ASSIGN_OR_RETURN(cudaStream_t stream, begin(ctx));
    const Element to = to_ == DataType::kFloat ? Element::kFloat : Element::kHalf;
    return launched(ctx, launch_convert(from, to, x->raw_data(), y.raw_data(), y.size(), stream), "Cast launch");
  }

 private:
  DataType to_;
};

}  // namespace

void add_elementwise_kernels(std::vector<KernelDef>& defs, const ContextPtr& context) {
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow"}) {
    defs.push_back(cuda_kernel<BinaryKernel>(context, op, 7, kLatestVersion));
  }
  for (const char* op : {"Max", "Min"}) defs.push_back(cuda_kernel<BinaryKernel>(context, op, 8, kLatestVersion));
  defs.push_back(cuda_kernel<BinaryKernel>(context, "PRelu", 7, kLatestVersion));
  for (const UnaryOpInfo& u : kUnaryOps) {
    defs.push_back(
        cuda_kernel<UnaryKernel>(context, u.op, u.since, kLatestVersion, {DataType::kFloat, DataType::kFloat16},
                                 u.code == UnaryOp::kClip ? std::vector<size_t>{1, 2} : std::vector<size_t>{}));
  }
  defs.push_back(cuda_kernel<CastKernel>(context, "Cast", 6, kLatestVersion));
}

}  // namespace onyx::cuda
