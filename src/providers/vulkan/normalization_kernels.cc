// Softmax and LogSoftmax, Attention (without a cache), LayerNormalization,
// BatchNormalization (inference) and the Reduce ops, float32.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "providers/vulkan/vulkan_kernel.h"

namespace onyx::vulkan {
namespace {

int64_t normalize_axis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

// Softmax / LogSoftmax. From opset 13 over one axis; before, over the
// input coerced to 2-D at `axis` (the rows are everything from it on).
class SoftmaxKernel final : public VulkanKernel {
 public:
  SoftmaxKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)),
        log_(info.op_type() == "LogSoftmax"),
        single_axis_(info.version() >= 13),
        axis_(info.attr_int("axis", info.version() >= 13 ? -1 : 1)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    const int64_t rank = x->rank();
    const int64_t axis = normalize_axis(axis_, rank);
    if (rank == 0 || axis < 0 || axis >= rank) {
      return invalid_argument(ctx.label(), ": axis ", axis_, " is out of range for ", x->describe());
    }
    int64_t outer = 1, len = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= x->dim(d);
    if (single_axis_) {
      len = x->dim(axis);
      for (int64_t d = axis + 1; d < rank; ++d) inner *= x->dim(d);
    } else {
      for (int64_t d = axis; d < rank; ++d) len *= x->dim(d);
    }
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, x->shape());
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input 0"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    struct {
      uint32_t rows, len, inner;
    } push{static_cast<uint32_t>(outer * inner), static_cast<uint32_t>(len), static_cast<uint32_t>(inner)};
    ONYX_ASSIGN_OR_RETURN(const Pipeline* p, pipeline("softmax", 2, {log_ ? 1 : 0}, 64));
    return dispatch_rows(*p, {rx, ry}, &push, sizeof(push), static_cast<uint64_t>(outer * inner));
  }

 private:
  bool log_, single_axis_;
  int64_t axis_;
};

// Attention (opset 23+): Q, K, V as [B, S, heads * D] (with q_num_heads and
// kv_num_heads) or [B, heads, S, D], a float mask, causal, GQA; no cache.
// What it lacks (past key and value, nonpad_kv_seqlen, softcap, the extra
// outputs, windows, a bool mask) is left to the CPU by the provider's claim.
class AttentionKernel final : public VulkanKernel {
 public:
  AttentionKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)),
        causal_(info.attr_int("is_causal", 0) != 0),
        scale_(info.attr_float("scale", 0.0f)),
        has_scale_(info.has_attr("scale")),
        q_heads_(info.attr_int("q_num_heads", 0)),
        kv_heads_(info.attr_int("kv_num_heads", 0)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* q, float_input(ctx, 0));
    ONYX_ASSIGN_OR_RETURN(const Tensor* k, float_input(ctx, 1));
    ONYX_ASSIGN_OR_RETURN(const Tensor* v, float_input(ctx, 2));
    const Tensor* mask = ctx.input_tensor(3);
    const int64_t rank = q->rank();
    if ((rank != 3 && rank != 4) || k->rank() != rank || v->rank() != rank) {
      return invalid_argument(ctx.label(), ": Q, K and V are ", q->describe(), ", ", k->describe(), ", ",
                              v->describe(), ", expected all 3-D or all 4-D");
    }
    int64_t batch = q->dim(0), hq, hkv, s, l, d, dv;
    std::vector<int64_t> qs, ks, vs, ys;  // (batch, head, position) strides
    Shape out;
    if (rank == 4) {
      hq = q->dim(1), s = q->dim(2), d = q->dim(3), hkv = k->dim(1), l = k->dim(2), dv = v->dim(3);
      if (k->dim(3) != d || v->dim(1) != hkv || v->dim(2) != l) {
        return invalid_argument(ctx.label(), ": K ", k->describe(), " and V ", v->describe(), " do not match Q ",
                                q->describe());
      }
      qs = {hq * s * d, s * d, d};
      ks = {hkv * l * d, l * d, d};
      vs = {hkv * l * dv, l * dv, dv};
      ys = {hq * s * dv, s * dv, dv};
      out = {batch, hq, s, dv};
    } else {
      hq = q_heads_, hkv = kv_heads_, s = q->dim(1), l = k->dim(1);
      if (hq < 1 || hkv < 1 || q->dim(2) % hq != 0 || k->dim(2) % hkv != 0 || v->dim(2) % hkv != 0) {
        return invalid_argument(ctx.label(), ": 3-D inputs need q_num_heads and kv_num_heads dividing their hidden sizes");
      }
      d = q->dim(2) / hq, dv = v->dim(2) / hkv;
      if (k->dim(2) / hkv != d || v->dim(1) != l) {
        return invalid_argument(ctx.label(), ": K ", k->describe(), " and V ", v->describe(), " do not match Q ",
                                q->describe());
      }
      qs = {s * hq * d, d, hq * d};
      ks = {l * hkv * d, d, hkv * d};
      vs = {l * hkv * dv, dv, hkv * dv};
      ys = {s * hq * dv, dv, hq * dv};
      out = {batch, s, hq * dv};
    }
    if (k->dim(0) != batch || v->dim(0) != batch || hkv < 1 || hq % hkv != 0) {
      return invalid_argument(ctx.label(), ": ", hq, " query heads over ", hkv, " key/value heads, or batches differ");
    }
    if (dv > 256) return not_implemented(ctx.label(), ": value heads of ", dv, " (Vulkan's Attention takes up to 256)");
    // The mask, right-aligned to [batch, heads, query positions, keys].
    std::vector<int64_t> ms = {0, 0, 0};
    int64_t mask_len = l;
    if (mask != nullptr) {
      if (mask->dtype() != DataType::kFloat || mask->rank() < 1 || mask->rank() > 4) {
        return invalid_argument(ctx.label(), ": attn_mask is ", mask->describe(), ", expected a float mask of rank 1 to 4");
      }
      Shape dims(4, 1);
      for (int64_t i = 0; i < mask->rank(); ++i) dims[static_cast<size_t>(4 - mask->rank() + i)] = mask->dim(i);
      const int64_t want[3] = {batch, hq, s};
      int64_t stride = dims[3];
      for (int i = 2; i >= 0; --i) {
        if (dims[static_cast<size_t>(i)] != 1 && dims[static_cast<size_t>(i)] != want[i]) {
          return invalid_argument(ctx.label(), ": attn_mask ", mask->describe(), " does not broadcast to [", batch, ",",
                                  hq, ",", s, ",", l, "]");
        }
        ms[static_cast<size_t>(i)] = dims[static_cast<size_t>(i)] == 1 ? 0 : stride;
        stride *= dims[static_cast<size_t>(i)];
      }
      mask_len = std::min(dims[3], l);
    }
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, out);
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(BufferRange rq, range(ctx.label(), *q, "input Q"));
    ONYX_ASSIGN_OR_RETURN(BufferRange rk, range(ctx.label(), *k, "input K"));
    ONYX_ASSIGN_OR_RETURN(BufferRange rv, range(ctx.label(), *v, "input V"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output Y"));
    BufferRange rm = rq;
    if (mask != nullptr && mask->size() > 0) {
      ONYX_ASSIGN_OR_RETURN(rm, range(ctx.label(), *mask, "input attn_mask"));
    }
    struct {
      uint32_t batch, q_heads, kv_heads, q_len, kv_len, head_size, v_head_size;
      float scale;
      uint32_t q_stride[3], k_stride[3], v_stride[3], y_stride[3], mask_stride[3];
      uint32_t mask_len;
    } push{};
    push.batch = static_cast<uint32_t>(batch);
    push.q_heads = static_cast<uint32_t>(hq);
    push.kv_heads = static_cast<uint32_t>(hkv);
    push.q_len = static_cast<uint32_t>(s);
    push.kv_len = static_cast<uint32_t>(l);
    push.head_size = static_cast<uint32_t>(d);
    push.v_head_size = static_cast<uint32_t>(dv);
    // The spec scales Q and K by sqrt(scale) each; here their product once.
    push.scale = has_scale_ ? scale_ : 1.0f / std::sqrt(static_cast<float>(d));
    for (int i = 0; i < 3; ++i) {
      push.q_stride[i] = static_cast<uint32_t>(qs[static_cast<size_t>(i)]);
      push.k_stride[i] = static_cast<uint32_t>(ks[static_cast<size_t>(i)]);
      push.v_stride[i] = static_cast<uint32_t>(vs[static_cast<size_t>(i)]);
      push.y_stride[i] = static_cast<uint32_t>(ys[static_cast<size_t>(i)]);
      push.mask_stride[i] = static_cast<uint32_t>(ms[static_cast<size_t>(i)]);
    }
    push.mask_len = static_cast<uint32_t>(mask_len);
    const bool has_mask = mask != nullptr && mask->size() > 0;
    ONYX_ASSIGN_OR_RETURN(const Pipeline* p, pipeline("attention", 5, {causal_ ? 1 : 0, has_mask ? 1 : 0}, 64));
    return dispatch_rows(*p, {rq, rk, rv, rm, ry}, &push, sizeof(push), static_cast<uint64_t>(batch * hq * s));
  }

 private:
  bool causal_;
  float scale_;
  bool has_scale_;
  int64_t q_heads_, kv_heads_;
};

// LayerNormalization, SimplifiedLayerNormalization (RMS) and com.microsoft's
// SkipLayerNormalization and SkipSimplifiedLayerNormalization (the row is
// input + skip + bias): one shader, shaders/layer_norm.comp.
class LayerNormKernel final : public VulkanKernel {
 public:
  LayerNormKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)),
        skip_(info.op_type().rfind("Skip", 0) == 0),
        simplified_(info.op_type().find("Simplified") != std::string::npos),
        axis_(info.attr_int("axis", -1)),
        epsilon_(info.attr_float("epsilon", skip_ ? 1e-12f : 1e-5f)),
        stash_type_(info.attr_int("stash_type", 1)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    if (stash_type_ != 1) return not_implemented(ctx.label(), ": stash_type ", stash_type_, " (Vulkan computes in float)");
    const int64_t rank = x->rank();
    const int64_t axis = skip_ ? rank - 1 : normalize_axis(axis_, rank);
    if (rank == 0 || axis < 0 || axis >= rank) {
      return invalid_argument(ctx.label(), ": axis ", axis_, " is out of range for ", x->describe());
    }
    int64_t rows = 1, len = 1;
    for (int64_t d = 0; d < axis; ++d) rows *= x->dim(d);
    for (int64_t d = axis; d < rank; ++d) len *= x->dim(d);
    // Inputs by form: (X, Scale, [B]); Skip: (input, skip, gamma, [beta], [bias]);
    // SkipSimplified: (input, skip, gamma, [bias]).
    const Tensor* skip = skip_ ? ctx.input_tensor(1) : nullptr;
    const size_t scale_at = skip_ ? 2 : 1;
    ONYX_ASSIGN_OR_RETURN(const Tensor* scale, float_input(ctx, scale_at));
    const Tensor* bias = simplified_ ? nullptr : ctx.input_tensor(scale_at + 1);
    const Tensor* skip_bias = skip_ ? ctx.input_tensor(simplified_ ? 3 : 4) : nullptr;
    if (skip_ && (skip == nullptr || skip->dtype() != DataType::kFloat || skip->size() == 0 ||
                  x->size() % skip->size() != 0 || skip->size() % len != 0)) {
      return invalid_argument(ctx.label(), ": input skip is ", skip ? skip->describe() : std::string("missing"),
                              ", expected the shape of input ", x->describe(), " or its last dims");
    }
    for (const auto& [t, name] : {std::pair{scale, "scale"}, std::pair{bias, "bias"}, std::pair{skip_bias, "skip bias"}}) {
      if (t != nullptr && (t->dtype() != DataType::kFloat || (t->size() != len && (t->size() != 1 || t == skip_bias)))) {
        return invalid_argument(ctx.label(), ": input ", name, " is ", t->describe(), ", expected ", len, " float values");
      }
    }
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, x->shape());
    Shape stats_shape = x->shape();
    for (int64_t d = axis; d < rank; ++d) stats_shape[static_cast<size_t>(d)] = 1;
    // Outputs by form: (Y, Mean, InvStdDev); Simplified: (Y, InvStdDev);
    // Skip forms: (Y, mean, inv_std_var, input_skip_bias_sum).
    auto optional = [&](size_t i, DataType type, const Shape& shape) -> Tensor* {
      return ctx.output_count() > i && ctx.output_requested(i) ? &ctx.allocate_output(i, type, shape) : nullptr;
    };
    Tensor* mean = (!simplified_ || skip_) ? optional(1, DataType::kFloat, stats_shape) : nullptr;
    Tensor* inv_std = optional(simplified_ && !skip_ ? 1 : 2, DataType::kFloat, stats_shape);
    Tensor* sum = skip_ ? optional(3, DataType::kFloat, x->shape()) : nullptr;
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input 0"));
    ONYX_ASSIGN_OR_RETURN(BufferRange rs, range(ctx.label(), *scale, "the scale"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    // Bindings a form lacks get a range no write can reach: scratch.
    Tensor scratch(DataType::kFloat, {rows}, ctx.allocator());
    ONYX_ASSIGN_OR_RETURN(BufferRange none, range(ctx.label(), scratch, "scratch"));
    BufferRange rb = none, rm = none, ri = none, rk = none, rkb = none, rsum = none;
    if (bias != nullptr) {
      ONYX_ASSIGN_OR_RETURN(rb, range(ctx.label(), *bias, "the bias"));
    }
    if (mean != nullptr) {
      ONYX_ASSIGN_OR_RETURN(rm, range(ctx.label(), *mean, "the mean"));
    }
    if (inv_std != nullptr) {
      ONYX_ASSIGN_OR_RETURN(ri, range(ctx.label(), *inv_std, "the inverse deviation"));
    }
    if (skip != nullptr) {
      ONYX_ASSIGN_OR_RETURN(rk, range(ctx.label(), *skip, "input skip"));
    }
    if (skip_bias != nullptr) {
      ONYX_ASSIGN_OR_RETURN(rkb, range(ctx.label(), *skip_bias, "the skip bias"));
    }
    if (sum != nullptr) {
      ONYX_ASSIGN_OR_RETURN(rsum, range(ctx.label(), *sum, "the sum"));
    }
    struct {
      uint32_t rows, len;
      float epsilon;
      uint32_t scale_len, bias_len, write_stats, skip_len, write_sum;
    } push{static_cast<uint32_t>(rows), static_cast<uint32_t>(len), epsilon_,
           static_cast<uint32_t>(scale->size()), static_cast<uint32_t>(bias ? bias->size() : 0),
           (mean != nullptr || inv_std != nullptr) ? 1u : 0u, static_cast<uint32_t>(skip ? skip->size() : 1),
           sum != nullptr ? 1u : 0u};
    ONYX_ASSIGN_OR_RETURN(const Pipeline* p, pipeline("layer_norm", 9,
                                                      {bias != nullptr ? 1 : 0, simplified_ ? 1 : 0, skip_ ? 1 : 0,
                                                       skip_bias != nullptr ? 1 : 0},
                                                      64));
    return dispatch_rows(*p, {rx, rs, rb, ry, rm, ri, rk, rkb, rsum}, &push, sizeof(push), static_cast<uint64_t>(rows));
  }

 private:
  bool skip_, simplified_;
  int64_t axis_;
  float epsilon_;
  int64_t stash_type_;
};

class BatchNormKernel final : public VulkanKernel {
 public:
  BatchNormKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)), epsilon_(info.attr_float("epsilon", 1e-5f)) {
    if (info.attr_int("training_mode", 0) != 0) {
      throw Error(not_implemented(info.label(), ": Vulkan runs BatchNormalization in inference mode only"));
    }
    for (size_t o = 1; o < info.output_count(); ++o) {
      if (info.node().outputs[o] != graph::kNoValue) {
        throw Error(not_implemented(info.label(), ": Vulkan makes no running statistics (output ", o, ")"));
      }
    }
  }

  Status compute(KernelContext& ctx) const override {
    std::vector<BufferRange> buffers;
    const Tensor* x = nullptr;
    for (size_t i = 0; i < 5; ++i) {
      ONYX_ASSIGN_OR_RETURN(const Tensor* t, float_input(ctx, i));
      if (i == 0) {
        x = t;
        if (x->rank() < 2) return invalid_argument(ctx.label(), ": X ", x->describe(), " has no channel dim");
      } else if (t->size() != x->dim(1)) {
        return invalid_argument(ctx.label(), ": input ", i, " ", t->describe(), " does not have ", x->dim(1),
                                " values (one per channel)");
      }
      ONYX_ASSIGN_OR_RETURN(BufferRange r, range(ctx.label(), *t, "input " + std::to_string(i)));
      buffers.push_back(r);
    }
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, x->shape());
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    buffers.push_back(ry);
    int64_t spatial = 1;
    for (int64_t d = 2; d < x->rank(); ++d) spatial *= x->dim(d);
    struct {
      uint32_t n, channels, spatial;
      float epsilon;
    } push{static_cast<uint32_t>(y.size()), static_cast<uint32_t>(x->dim(1)), static_cast<uint32_t>(spatial), epsilon_};
    ONYX_ASSIGN_OR_RETURN(const Pipeline* p, pipeline("batch_norm", 6));
    return dispatch_flat(*p, buffers, &push, sizeof(push), static_cast<uint64_t>(y.size()));
  }

 private:
  float epsilon_;
};

int reduce_op(const std::string& op) {
  static const char* const kOps[] = {"ReduceSum",  "ReduceMean", "ReduceMax",       "ReduceMin",    "ReduceProd",
                                     "ReduceL1",   "ReduceL2",   "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"};
  for (int i = 0; i < 10; ++i) {
    if (op == kOps[i]) return i;
  }
  return -1;
}

// Axes from the attribute (before ReduceSum 13 / the others 18) or from an
// optional int64 input kept on the host.
class ReduceKernel final : public VulkanKernel {
 public:
  ReduceKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)),
        op_(reduce_op(info.op_type())),
        axes_input_(info.op_type() == "ReduceSum" ? info.version() >= 13 : info.version() >= 18),
        axes_(info.attr_ints("axes")),
        keepdims_(info.attr_int("keepdims", 1) != 0),
        noop_with_empty_axes_(info.attr_int("noop_with_empty_axes", 0) != 0) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, float_input(ctx, 0));
    std::vector<int64_t> axes = axes_;
    if (axes_input_) {
      axes.clear();
      const Tensor* a = ctx.input_tensor(1);
      if (a != nullptr) {
        if (a->dtype() != DataType::kInt64 || !a->device().host_readable()) {
          return invalid_argument(ctx.label(), ": axes must be int64 on the host, got ", a->describe());
        }
        axes.assign(a->data<int64_t>(), a->data<int64_t>() + a->size());
      }
    }
    const int64_t rank = x->rank();
    std::vector<bool> reduced(static_cast<size_t>(rank), false);
    if (axes.empty()) {
      if (noop_with_empty_axes_ && axes_input_) {
        // Identity: a device copy.
        Tensor& y = ctx.allocate_output(0, DataType::kFloat, x->shape());
        if (y.size() == 0) return Status::ok();
        ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input 0"));
        ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
        return device_->copy(rx, ry);
      }
      std::fill(reduced.begin(), reduced.end(), true);
    }
    for (int64_t a : axes) {
      const int64_t axis = normalize_axis(a, rank);
      if (axis < 0 || axis >= rank) return invalid_argument(ctx.label(), ": axis ", a, " is out of range for ", x->describe());
      reduced[static_cast<size_t>(axis)] = true;
    }
    Shape out;
    std::vector<int64_t> kd, ks, rd, rs;  // kept / reduced dims and strides, merged
    int64_t stride = 1;
    std::vector<int64_t> strides(static_cast<size_t>(rank));
    for (int64_t d = rank; d-- > 0;) {
      strides[static_cast<size_t>(d)] = stride;
      stride *= x->dim(d);
    }
    int64_t count = 1;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t dim = x->dim(d), st = strides[static_cast<size_t>(d)];
      const bool r = reduced[static_cast<size_t>(d)];
      if (r) {
        count *= dim;
        if (keepdims_) out.push_back(1);
      } else {
        out.push_back(dim);
      }
      if (dim == 1) continue;
      auto& dims = r ? rd : kd;
      auto& sts = r ? rs : ks;
      if (!dims.empty() && sts.back() == st * dim) {
        dims.back() *= dim;
        sts.back() = st;
      } else {
        dims.push_back(dim);
        sts.push_back(st);
      }
    }
    if (kd.size() > 4 || rd.size() > 4) return not_implemented(ctx.label(), ": a reduction over more than 4 separate dims");
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, out);
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    if (x->size() == 0) {
      // An empty reduction: its identity (0 for sums, -inf / inf for max / min, 1 for a product).
      const float identity = op_ == 2 ? -INFINITY : op_ == 3 ? INFINITY : op_ == 4 ? 1.0f : op_ == 8 || op_ == 9 ? -INFINITY : 0.0f;
      uint32_t bits;
      std::memcpy(&bits, &identity, 4);
      return device_->fill(ry, bits);
    }
    ONYX_ASSIGN_OR_RETURN(BufferRange rx, range(ctx.label(), *x, "input 0"));
    struct {
      uint32_t n, kept_rank, reduced_count, reduced_rank;
      uint32_t kd[4], ks[4], rd[4], rs[4];
    } push{};
    push.n = static_cast<uint32_t>(y.size());
    push.kept_rank = static_cast<uint32_t>(kd.size());
    push.reduced_count = static_cast<uint32_t>(count);
    push.reduced_rank = static_cast<uint32_t>(rd.size());
    for (size_t i = 0; i < kd.size(); ++i) {
      push.kd[i] = static_cast<uint32_t>(kd[i]);
      push.ks[i] = static_cast<uint32_t>(ks[i]);
    }
    for (size_t i = 0; i < rd.size(); ++i) {
      push.rd[i] = static_cast<uint32_t>(rd[i]);
      push.rs[i] = static_cast<uint32_t>(rs[i]);
    }
    ONYX_ASSIGN_OR_RETURN(const Pipeline* p, pipeline("reduce", 2, {op_}));
    return dispatch_flat(*p, {rx, ry}, &push, sizeof(push), static_cast<uint64_t>(y.size()));
  }

 private:
  int op_;
  bool axes_input_;
  std::vector<int64_t> axes_;
  bool keepdims_, noop_with_empty_axes_;
};

}  // namespace

void add_normalization_kernels(std::vector<KernelDef>& defs, const DevicePtr& device) {
  for (const char* op : {"Softmax", "LogSoftmax"}) defs.push_back(vulkan_kernel<SoftmaxKernel>(device, op, 1, kLatestVersion));
  defs.push_back(vulkan_kernel<AttentionKernel>(device, "Attention", 23, kLatestVersion));
  defs.push_back(vulkan_kernel<LayerNormKernel>(device, "LayerNormalization", 17, kLatestVersion));
  defs.push_back(vulkan_kernel<LayerNormKernel>(device, "SimplifiedLayerNormalization", 1, kLatestVersion));
  for (const char* op : {"SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "SimplifiedLayerNormalization"}) {
    KernelDef def = vulkan_kernel<LayerNormKernel>(device, op, 1, kLatestVersion);
    def.domain = "com.microsoft";
    defs.push_back(std::move(def));
  }
  // From opset 9 BatchNormalization has no spatial attribute; 14 adds training_mode.
  defs.push_back(vulkan_kernel<BatchNormKernel>(device, "BatchNormalization", 9, kLatestVersion));
  for (const char* op : {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp"}) {
    defs.push_back(vulkan_kernel<ReduceKernel>(device, op, 1, 17));
    defs.push_back(vulkan_kernel<ReduceKernel>(device, op, 18, kLatestVersion, {DataType::kFloat}, {1}));
  }
  defs.push_back(vulkan_kernel<ReduceKernel>(device, "ReduceSum", 1, 12));
  defs.push_back(vulkan_kernel<ReduceKernel>(device, "ReduceSum", 13, kLatestVersion, {DataType::kFloat}, {1}));
}

}  // namespace onyx::vulkan
