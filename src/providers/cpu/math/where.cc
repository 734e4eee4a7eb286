// Where: a three-way broadcasting select, output = condition ? X : Y, for
// every element type including string.
#include "providers/cpu/math/elementwise.h"

namespace onyx::cpu {
namespace {

class WhereKernel final : public Kernel {
 public:
  explicit WhereKernel(const KernelInfo&) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* condition, math::required_input(ctx, 0, "condition"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, math::required_input(ctx, 1, "X"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* y, math::required_input(ctx, 2, "Y"));
    if (condition->dtype() != DataType::kBool) {
      return invalid_argument(ctx.label(), ": input condition has element type ", dtype_name(condition->dtype()),
                              ", expected bool");
    }
    ONYX_RETURN_IF_ERROR(math::check_same_dtype(ctx, *x, "X", *y, "Y"));
    ONYX_ASSIGN_OR_RETURN(BroadcastPlan plan,
                          BroadcastPlan::make(ctx.label(), {condition->shape(), x->shape(), y->shape()},
                                              {"condition", "X", "Y"}));
    return math::with_label(ctx.label(), dispatch_all(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      Tensor& out = ctx.allocate_output(0, x->dtype(), plan.output_shape());
      const bool* c = condition->data<bool>();
      const T* px = x->data<T>();
      const T* py = y->data<T>();
      T* po = out.data<T>();
      const int64_t sc = plan.inner_stride(0);
      const int64_t sx = plan.inner_stride(1);
      const int64_t sy = plan.inner_stride(2);
      parallel_for(ctx.thread_pool(), plan.output_size(), 1.0, [&](int64_t begin, int64_t end) {
        plan.for_each_span(begin, end, [&](const int64_t* offsets, int64_t out_offset, int64_t count) {
          const bool* cc = c + offsets[0];
          const T* xx = px + offsets[1];
          const T* yy = py + offsets[2];
          T* oo = po + out_offset;
          if (sc == 0) {
            // One condition value for the whole span: a plain copy of one side.
            const T* src = *cc ? xx : yy;
            const int64_t step = *cc ? sx : sy;
            for (int64_t k = 0; k < count; ++k) oo[k] = src[k * step];
          } else {
            for (int64_t k = 0; k < count; ++k) oo[k] = cc[k] ? xx[k * sx] : yy[k * sy];
          }
        });
      });
      return Status::ok();
    }));
  }
};

}  // namespace

// Version 16 only added bfloat16 to the types.
ONYX_REGISTER_CPU_KERNEL("", "Where", 9, kLatestVersion, types::all(), WhereKernel);

}  // namespace onyx::cpu
