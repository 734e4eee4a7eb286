// Conv and ConvTranspose (1-D and 2-D, groups, dilations, auto_pad), MaxPool
// and AveragePool (1-D and 2-D), GlobalAveragePool and GlobalMaxPool, and
// Resize (nearest and linear), float32, NCHW. The window geometry is the CPU
// kernels' (providers/cpu/nn/nn_util.h, conv_transpose_geometry.h).
#include <cmath>

#include "providers/cpu/nn/conv_transpose_geometry.h"
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

// Conv's and ConvTranspose's bindings: X, W, B (W's range when there is no
// B: the shader reads it only with HAS_BIAS) and Y.
struct ConvBuffers {
  BufferRange x, w, b, y;
};

class ConvBase : public VulkanKernel {
 public:
  using VulkanKernel::VulkanKernel;

 protected:
  Result<ConvBuffers> conv_buffers(const std::string& label, const Tensor& x, const Tensor& w, const Tensor* b,
                                   const Tensor& y) const {
    ConvBuffers r;
    ONYX_ASSIGN_OR_RETURN(r.x, range(label, x, "input X"));
    ONYX_ASSIGN_OR_RETURN(r.w, range(label, w, "input W"));
    ONYX_ASSIGN_OR_RETURN(r.y, range(label, y, "output Y"));
    r.b = r.w;
    if (b != nullptr) {
      ONYX_ASSIGN_OR_RETURN(r.b, range(label, *b, "input B"));
    }
    return r;
  }
};

class ConvKernel final : public ConvBase {
 public:
  ConvKernel(const KernelInfo& info, DevicePtr device)
      : ConvBase(std::move(device)), attrs_(nn::WindowAttributes::from(info)), group_(info.attr_int("group", 1)) {}

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
    ONYX_ASSIGN_OR_RETURN(ConvBuffers buffers, conv_buffers(ctx.label(), *x, *w, b, y));
    const auto& [rx, rw, rb, ry] = buffers;
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

class ConvTransposeKernel final : public ConvBase {
 public:
  ConvTransposeKernel(const KernelInfo& info, DevicePtr device)
      : ConvBase(std::move(device)),
        attrs_(nn::ConvTransposeAttributes::from(info)),
        group_(info.attr_int("group", 1)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    ONYX_ASSIGN_OR_RETURN(const Tensor* w, float_input(ctx, 1));
    const Tensor* b = ctx.input_tensor(2);
    if (x->rank() != 3 && x->rank() != 4) {
      return not_implemented(ctx.label(), ": Vulkan runs 1-D and 2-D ConvTranspose; X is ", x->describe());
    }
    if (w->rank() != x->rank() || w->dim(0) != x->dim(1) || group_ < 1 || x->dim(1) % group_ != 0) {
      return invalid_argument(ctx.label(), ": X ", x->describe(), " and W ", w->describe(), " with group ", group_,
                              " do not match (W is [C, M/group, kernel...])");
    }
    const int64_t m = w->dim(1) * group_;
    if (b != nullptr && (b->dtype() != DataType::kFloat || b->size() != m)) {
      return invalid_argument(ctx.label(), ": B ", b->describe(), " does not have ", m, " float values");
    }
    ONYX_ASSIGN_OR_RETURN(nn::Geometry geo, nn::resolve_conv_transpose(ctx.label(), attrs_, x->shape(), w->shape()));
    Shape out = {x->dim(0), m};
    out.insert(out.end(), geo.output.begin(), geo.output.end());
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, out);
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(ConvBuffers buffers, conv_buffers(ctx.label(), *x, *w, b, y));
    const auto& [rx, rw, rb, ry] = buffers;
    const bool two_d = geo.input.size() == 2;
    auto at = [&](const std::vector<int64_t>& v, bool h) -> uint32_t {
      return static_cast<uint32_t>(two_d ? v[h ? 0 : 1] : (h ? 1 : v[0]));
    };
    struct {
      uint32_t n, channels, height, width, out_channels, out_height, out_width, kernel_h, kernel_w;
      uint32_t stride_h, stride_w;
      int32_t pad_h, pad_w;
      uint32_t dilation_h, dilation_w, group;
    } push{static_cast<uint32_t>(y.size()),
           static_cast<uint32_t>(x->dim(1)),
           at(geo.input, true),
           at(geo.input, false),
           static_cast<uint32_t>(m),
           at(geo.output, true),
           at(geo.output, false),
           at(geo.kernel, true),
           at(geo.kernel, false),
           at(geo.strides, true),
           at(geo.strides, false),
           two_d ? static_cast<int32_t>(geo.pads_begin[0]) : 0,
           static_cast<int32_t>(geo.pads_begin[two_d ? 1 : 0]),
           at(geo.dilations, true),
           at(geo.dilations, false),
           static_cast<uint32_t>(group_)};
    ONYX_ASSIGN_OR_RETURN(const Pipeline* p, pipeline("conv_transpose2d", 4, {b != nullptr ? 1 : 0}));
    return dispatch_flat(*p, {rx, rw, rb, ry}, &push, sizeof(push), static_cast<uint64_t>(y.size()));
  }

 private:
  nn::ConvTransposeAttributes attrs_;
  int64_t group_;
};

// Resize (opset 11+), nearest or linear over up to 4 dims; roi, scales and
// sizes stay on the host. What the shader lacks (cubic, antialias, axes,
// tf_crop_and_resize, an aspect-ratio policy) is left to the CPU by the
// provider's claim.
class ResizeKernel final : public VulkanKernel {
 public:
  ResizeKernel(const KernelInfo& info, DevicePtr device) : VulkanKernel(std::move(device)) {
    const std::string mode = info.attr_string("mode", "nearest");
    const std::string coord = info.attr_string("coordinate_transformation_mode", "half_pixel");
    const std::string nearest = info.attr_string("nearest_mode", "round_prefer_floor");
    static const char* const kCoords[] = {"half_pixel",   "asymmetric",           "pytorch_half_pixel",
                                          "align_corners", "tf_half_pixel_for_nn", "half_pixel_symmetric"};
    static const char* const kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
    linear_ = mode == "linear";
    coord_ = -1;
    for (int i = 0; i < 6; ++i) {
      if (coord == kCoords[i]) coord_ = i;
    }
    nearest_ = -1;
    for (int i = 0; i < 4; ++i) {
      if (nearest == kNearest[i]) nearest_ = i;
    }
    if ((mode != "nearest" && !linear_) || coord_ < 0 || nearest_ < 0) {
      throw Error(not_implemented(info.label(), ": Vulkan's Resize runs nearest and linear with the usual "
                                                "coordinate transformations; got mode ",
                                  mode, ", ", coord, ", ", nearest));
    }
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    const Tensor* scales = ctx.input_tensor(2);
    const Tensor* sizes = ctx.input_tensor(3);
    const int64_t rank = x->rank();
    if (rank < 1 || rank > 4) return not_implemented(ctx.label(), ": Vulkan resizes up to 4 dims; X is ", x->describe());
    std::vector<float> scale(static_cast<size_t>(rank));
    Shape out(static_cast<size_t>(rank));
    const bool from_sizes = sizes != nullptr && sizes->size() > 0;
    if (from_sizes) {
      if (sizes->dtype() != DataType::kInt64 || sizes->size() != rank || !sizes->device().host_readable()) {
        return invalid_argument(ctx.label(), ": sizes is ", sizes->describe(), ", expected ", rank, " int64 on the host");
      }
      for (int64_t d = 0; d < rank; ++d) {
        out[static_cast<size_t>(d)] = sizes->data<int64_t>()[d];
        scale[static_cast<size_t>(d)] = static_cast<float>(out[static_cast<size_t>(d)]) / static_cast<float>(x->dim(d));
      }
    } else if (scales != nullptr && scales->size() > 0) {
      if (scales->dtype() != DataType::kFloat || scales->size() != rank || !scales->device().host_readable()) {
        return invalid_argument(ctx.label(), ": scales is ", scales->describe(), ", expected ", rank, " floats on the host");
      }
      for (int64_t d = 0; d < rank; ++d) {
        scale[static_cast<size_t>(d)] = scales->data<float>()[d];
        if (!(scale[static_cast<size_t>(d)] > 0)) return invalid_argument(ctx.label(), ": scale ", d, " is not positive");
        out[static_cast<size_t>(d)] =
            static_cast<int64_t>(std::floor(static_cast<double>(x->dim(d)) * scale[static_cast<size_t>(d)]));
      }
    } else {
      return invalid_argument(ctx.label(), ": neither scales nor sizes is given");
    }
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, out);
    if (y.size() == 0) return Status::ok();
    if (x->size() == 0) return invalid_argument(ctx.label(), ": resizing the empty ", x->describe());
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input X"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output Y"));
    struct {
      uint32_t n, rank, in_dims[4], out_dims[4];
      float scales[4];
      float lengths[4];
    } push{};
    push.n = static_cast<uint32_t>(y.size());
    push.rank = static_cast<uint32_t>(rank);
    for (int64_t d = 0; d < rank; ++d) {
      push.in_dims[d] = static_cast<uint32_t>(x->dim(d));
      push.out_dims[d] = static_cast<uint32_t>(out[static_cast<size_t>(d)]);
      push.scales[d] = scale[static_cast<size_t>(d)];
      push.lengths[d] = from_sizes ? static_cast<float>(out[static_cast<size_t>(d)])
                                   : static_cast<float>(x->dim(d)) * scale[static_cast<size_t>(d)];
    }
    ONYX_ASSIGN_OR_RETURN(const Pipeline* p, pipeline("resize", 2, {linear_ ? 1 : 0, coord_, nearest_}));
    return dispatch_flat(*p, {rx, ry}, &push, sizeof(push), static_cast<uint64_t>(y.size()));
  }

 private:
  bool linear_;
  int coord_, nearest_;
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
  defs.push_back(vulkan_kernel<ConvTransposeKernel>(device, "ConvTranspose", 1, kLatestVersion));
  defs.push_back(vulkan_kernel<ResizeKernel>(device, "Resize", 11, kLatestVersion, {DataType::kFloat}, {1, 2, 3}));
}

}  // namespace onyx::vulkan
