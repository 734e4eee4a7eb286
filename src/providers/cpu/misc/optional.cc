// Optional, OptionalHasElement and OptionalGetElement: an optional is a Value
// with set_optional(true), or Value::none(type) when it holds nothing.
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class OptionalKernel final : public Kernel {
 public:
  explicit OptionalKernel(const KernelInfo& info) {
    if (const graph::Attribute* a = info.attr("type")) type_ = a->tp;
  }
  Status compute(KernelContext& ctx) const override {
    const Value* in = ctx.input_count() > 0 ? ctx.input(0) : nullptr;
    if (in == nullptr || in->is_none()) {
      if (in == nullptr && type_.kind == ValueType::Kind::kUnknown) {
        return invalid_argument(ctx.label(), ": with no input, attribute type is required");
      }
      ctx.set_output(0, Value::none(in ? in->declared_type() : type_));
      return Status::ok();
    }
    Value out = *in;
    out.set_optional(true);
    ctx.set_output(0, std::move(out));
    return Status::ok();
  }

 private:
  ValueType type_;
};

class OptionalHasElementKernel final : public Kernel {
 public:
  explicit OptionalHasElementKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    const Value* in = ctx.input_count() > 0 ? ctx.input(0) : nullptr;
    Tensor& y = ctx.allocate_output(0, DataType::kBool, {});
    y.data<bool>()[0] = in != nullptr && !in->is_none();
    return Status::ok();
  }
};

class OptionalGetElementKernel final : public Kernel {
 public:
  explicit OptionalGetElementKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    const Value* in = ctx.input_count() > 0 ? ctx.input(0) : nullptr;
    if (in == nullptr || in->is_none()) {
      return invalid_argument(ctx.label(), ": input is an empty optional, expected one holding a value");
    }
    Value out = *in;
    out.set_optional(false);
    ctx.set_output(0, std::move(out));
    return Status::ok();
  }
};

ONYX_REGISTER_CPU_KERNEL("", "Optional", 15, kLatestVersion, types::all(), OptionalKernel);
ONYX_REGISTER_CPU_KERNEL("", "OptionalHasElement", 15, 17, types::all(), OptionalHasElementKernel);
ONYX_REGISTER_CPU_KERNEL("", "OptionalHasElement", 18, kLatestVersion, types::all(), OptionalHasElementKernel);
ONYX_REGISTER_CPU_KERNEL("", "OptionalGetElement", 15, 17, types::all(), OptionalGetElementKernel);
ONYX_REGISTER_CPU_KERNEL("", "OptionalGetElement", 18, kLatestVersion, types::all(), OptionalGetElementKernel);

}  // namespace
}  // namespace onyx::cpu
