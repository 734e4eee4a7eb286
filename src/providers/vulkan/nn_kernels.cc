// Conv (1-D and 2-D, groups, dilations, auto_pad), MaxPool and AveragePool
// (1-D and 2-D), GlobalAveragePool and GlobalMaxPool, float32, NCHW. The
// window geometry is the CPU kernels' (providers/cpu/nn/nn_util.h).
#include "providers/cpu/nn/nn_util.h"
#include "providers/vulkan/vulkan_kernel.h"

namespace onyx::vulkan {
namespace {

namespace nn = ::onyx::cpu::nn;

// The spatial geometry as the 2-D shaders take it (a 1-D window has H = 1).
struct Plane {
  uint32_t height = 1, width = 1, out_height = 1, out_width = 1, kernel_h = 1, kernel_w = 1;
  uint32_t stride_h = 1, stride_w = 1;
  int32_t pad_h = 0, pad_w = 0;
  uint32_t dilation_h = 1, dilation_w = 1;
  int32_t pad_end_h = 0, pad_end_w = 0;
};

Plane plane_of(const nn::Window& w) {
  Plane p;
  const size_t r = w.rank();
  const size_t h = r == 2 ? 0 : 1;  // index of H in the window (absent for 1-D)
  const size_t x = r - 1;
  if (r == 2) {
    p.height = static_cast<uint32_t>(w.input[h]);
    p.out_height = static_cast<uint32_t>(w.output[h]);
    p.kernel_h = static_cast<uint32_t>(w.kernel[h]);
    p.stride_h = static_cast<uint32_t>(w.strides[h]);
    p.dilation_h = static_cast<uint32_t>(w.dilations[h]);
    p.pad_h = static_cast<int32_t>(w.pads[h]);
    p.pad_end_h = static_cast<int32_t>(w.pads[h + r]);
  }
  p.width = static_cast<uint32_t>(w.input[x]);
  p.out_width = static_cast<uint32_t>(w.output[x]);
  p.kernel_w = static_cast<uint32_t>(w.kernel[x]);
  p.stride_w = static_cast<uint32_t>(w.strides[x]);
  p.dilation_w = static_cast<uint32_t>(w.dilations[x]);
  p.pad_w = static_cast<int32_t>(w.pads[x]);
  p.pad_end_w = static_cast<int32_t>(w.pads[x + r]);
  return p;
}

Shape spatial(const Tensor& t) { return Shape(t.shape().begin() + 2, t.shape().end()); }

class ConvKernel final : public VulkanKernel {
 public:
  ConvKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)), attrs_(nn::WindowAttributes::from(info)), group_(info.attr_int("group", 1)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    ONYX_ASSIGN_OR_RETURN(const Tensor* w, float_input(ctx, 1));
    const Tensor* b = ctx.input_tensor(2);
    if (x->rank() != 3 && x->rank() != 4) {
      return not_implemented(ctx.label(), ": Vulkan runs 1-D and 2-D convolutions; X is ", x->describe());
    }
    if (w->rank() != x->rank()) return invalid_argument(ctx.label(), ": W ", w->describe(), " and X ", x->describe(), " differ in rank");
    const int64_t channels = x->dim(1), m = w->dim(0);
    if (group_ < 1 || m % group_ != 0 || channels != w->dim(1) * group_) {
      return invalid_argument(ctx.label(), ": X has ", channels, " channels and W has shape ", shape_to_string(w->shape()),
                              " with group ", group_, ", expected C == W.dim(1) * group and M divisible by group");
    }
    if (b != nullptr && (b->dtype() != DataType::kFloat || b->size() != m)) {
      return invalid_argument(ctx.label(), ": B ", b->describe(), " does not have ", m, " float values");
    }
    ONYX_ASSIGN_OR_RETURN(nn::Window window, nn::resolve_window(ctx.label(), attrs_, spatial(*x), spatial(*w)));
    if (window.kernel != spatial(*w)) {
      return invalid_argument(ctx.label(), ": attribute kernel_shape ", shape_to_string(window.kernel),
                              " does not match the kernel of W ", shape_to_string(w->shape()));
    }
    Shape out = {x->dim(0), m};
    out.insert(out.end(), window.output.begin(), window.output.end());
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, out);
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input X"));
    ONYX_ASSIGN_OR_RETURN(BufferRange rw, range(ctx.label(), *w, "input W"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output Y"));
    BufferRange rb = rw;
    if (b != nullptr) {
      ONYX_ASSIGN_OR_RETURN(rb, range(ctx.label(), *b, "input B"));
    }
    const Plane pl = plane_of(window);
    struct {
      uint32_t n, channels, height, width, out_channels, out_height, out_width, kernel_h, kernel_w;
      uint32_t stride_h, stride_w;
      int32_t pad_h, pad_w;
      uint32_t dilation_h, dilation_w, group;
    } push{static_cast<uint32_t>(y.size()), static_cast<uint32_t>(channels), pl.height, pl.width,
           static_cast<uint32_t>(m), pl.out_height, pl.out_width, pl.kernel_h, pl.kernel_w, pl.stride_h, pl.stride_w,
           pl.pad_h, pl.pad_w, pl.dilation_h, pl.dilation_w, static_cast<uint32_t>(group_)};
    return dispatch_gemm(*device_, ctx.label(), "conv2d", {b != nullptr ? 1 : 0, 0}, {rx, rw, rb, ry}, &push,
                         sizeof(push), static_cast<uint64_t>(m / group_),
                         static_cast<uint64_t>(pl.out_height) * pl.out_width, static_cast<uint64_t>(x->dim(0) * group_));
  }

 private:
  nn::WindowAttributes attrs_;
  int64_t group_;
};

// MaxPool / AveragePool, and the global pools (the window is the plane).
class PoolKernel final : public VulkanKernel {
 public:
  PoolKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)),
        global_(info.op_type().rfind("Global", 0) == 0),
        max_(info.op_type().find("Max") != std::string::npos),
        attrs_(global_ ? nn::WindowAttributes{} : nn::WindowAttributes::from(info)),
        count_include_pad_(info.attr_int("count_include_pad", 0) != 0) {
    if (max_ && !global_) {
      if (info.output_count() > 1 && info.node().outputs[1] != graph::kNoValue) {
        throw Error(not_implemented(info.label(), ": Vulkan makes no MaxPool Indices"));
      }
    }
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    if (x->rank() != 3 && x->rank() != 4) {
      return not_implemented(ctx.label(), ": Vulkan pools 1-D and 2-D inputs; X is ", x->describe());
    }
    nn::WindowAttributes attrs = attrs_;
    if (global_) attrs.kernel_shape = spatial(*x);
    ONYX_ASSIGN_OR_RETURN(nn::Window window, nn::resolve_window(ctx.label(), attrs, spatial(*x), {}));
    Shape out = {x->dim(0), x->dim(1)};
    out.insert(out.end(), window.output.begin(), window.output.end());
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, out);
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input X"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output Y"));
    const Plane pl = plane_of(window);
    struct {
      uint32_t n;
      Plane plane;
    } push{static_cast<uint32_t>(y.size()), pl};
    ONYX_ASSIGN_OR_RETURN(const Pipeline* p, pipeline("pool2d", 2, {max_ ? 0 : 1, count_include_pad_ ? 1 : 0}));
    return dispatch_flat(*p, {rx, ry}, &push, sizeof(push), static_cast<uint64_t>(y.size()));
  }

 private:
  bool global_, max_;
  nn::WindowAttributes attrs_;
  bool count_include_pad_;
};

}  // namespace

void add_nn_kernels(std::vector<KernelDef>& defs, const DevicePtr& device) {
  defs.push_back(vulkan_kernel<ConvKernel>(device, "Conv", 1, kLatestVersion));
  // MaxPool 8 adds Indices and storage_order, 10 ceil_mode and dilations.
  defs.push_back(vulkan_kernel<PoolKernel>(device, "MaxPool", 1, kLatestVersion));
  // AveragePool 7 adds count_include_pad; 19 dilations.
  defs.push_back(vulkan_kernel<PoolKernel>(device, "AveragePool", 7, kLatestVersion));
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    defs.push_back(vulkan_kernel<PoolKernel>(device, op, 1, kLatestVersion));
  }
}

}  // namespace onyx::vulkan
