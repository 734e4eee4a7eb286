// Shape inference for neural-network ops: MatMul and Gemm, convolutions and
// pooling (with pads, strides, dilations and auto_pad), and the recurrent ops.
#include <algorithm>
#include <cmath>
#include <limits>

#include "graph/shape_inference_context.h"

namespace onyx::graph::inference {
namespace {

using Dims = std::vector<Dim>;

// Merges two dims that must be equal (contracted MatMul dims, channels).
Result<Dim> unify(const Dim& a, const Dim& b) {
  if (conflicting_dims(a, b)) return invalid_model("dims ", a.value, " and ", b.value, " differ");
  if (a.is_known()) return a;
  if (b.is_known()) return b;
  return a.symbol.empty() ? b : a;
}

Status matmul_shape(InferenceContext& ctx, size_t a_index, size_t b_index, DataType out_type) {
  ctx.set_output_type(0, out_type);
  const Dims* a = ctx.input_shape(a_index);
  const Dims* b = ctx.input_shape(b_index);
  if (a == nullptr || b == nullptr) return Status::ok();
  if (a->empty() || b->empty()) return ctx.error("MatMul inputs must have rank >= 1, got ", dims_to_string(*a), " and ", dims_to_string(*b));
  // 1-D operands are promoted (a: prepend 1, b: append 1) and the added dim removed after.
  Dims left = a->size() == 1 ? Dims{Dim::known(1), (*a)[0]} : *a;
  Dims right = b->size() == 1 ? Dims{(*b)[0], Dim::known(1)} : *b;
  auto k = unify(left.back(), right[right.size() - 2]);
  if (!k.is_ok()) {
    return ctx.error("inner dims do not match: A is ", dims_to_string(*a), ", B is ", dims_to_string(*b));
  }
  Dims left_batch(left.begin(), left.end() - 2), right_batch(right.begin(), right.end() - 2);
  auto batch = broadcast_shapes({&left_batch, &right_batch});
  if (!batch.is_ok()) return ctx.error("batch dims of ", dims_to_string(*a), " and ", dims_to_string(*b), " do not broadcast");
  Dims out = std::move(batch).value();
  if (a->size() != 1) out.push_back(left[left.size() - 2]);
  if (b->size() != 1) out.push_back(right.back());
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status matmul(InferenceContext& ctx) { return matmul_shape(ctx, 0, 1, ctx.input_type(0)); }
Status matmul_integer(InferenceContext& ctx) { return matmul_shape(ctx, 0, 1, DataType::kInt32); }
Status qlinear_matmul(InferenceContext& ctx) { return matmul_shape(ctx, 0, 3, ctx.input_type(7)); }

Status gemm(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* a = ctx.input_shape(0);
  const Dims* b = ctx.input_shape(1);
  if (a == nullptr || b == nullptr) return Status::ok();
  if (a->size() != 2 || b->size() != 2) {
    return ctx.error("A and B must be 2-D, got ", dims_to_string(*a), " and ", dims_to_string(*b));
  }
  const bool trans_a = ctx.attr_int("transA", 0) != 0;
  const bool trans_b = ctx.attr_int("transB", 0) != 0;
  const Dim& m = (*a)[trans_a ? 1 : 0];
  const Dim& ka = (*a)[trans_a ? 0 : 1];
  const Dim& kb = (*b)[trans_b ? 1 : 0];
  const Dim& n = (*b)[trans_b ? 0 : 1];
  if (conflicting_dims(ka, kb)) {
    return ctx.error("inner dims do not match: A is ", dims_to_string(*a), (trans_a ? " (transposed)" : ""), ", B is ",
                     dims_to_string(*b), (trans_b ? " (transposed)" : ""));
  }
  ctx.set_output_shape(0, {m, n});
  return Status::ok();
}

// Spatial output size of a convolution or pooling window.
struct WindowParams {
  std::vector<int64_t> kernel, strides, dilations, pads;  // pads: begins then ends
  std::string auto_pad;
  bool ceil_mode = false;
};

Result<Dims> window_output(InferenceContext& ctx, const Dims& spatial, const WindowParams& p) {
  const size_t n = spatial.size();
  if (p.kernel.size() != n) return ctx.error("kernel_shape has ", p.kernel.size(), " dims, expected ", n, " spatial dims");
  if (p.strides.size() != n || p.dilations.size() != n || p.pads.size() != 2 * n) {
    return ctx.error("strides/dilations/pads do not match the ", n, " spatial dims");
  }
  Dims out;
  for (size_t i = 0; i < n; ++i) {
    const int64_t stride = p.strides[i];
    if (stride <= 0 || p.dilations[i] <= 0 || p.kernel[i] <= 0) {
      return ctx.error("kernel_shape, strides and dilations must be positive");
    }
    if (!spatial[i].is_known()) {
      out.push_back(unknown_dim());
      continue;
    }
    const int64_t in = spatial[i].value;
    const int64_t window = (p.kernel[i] - 1) * p.dilations[i] + 1;
    if (p.auto_pad == "SAME_UPPER" || p.auto_pad == "SAME_LOWER") {
      out.push_back(Dim::known((in + stride - 1) / stride));
      continue;
    }
    const bool valid = p.auto_pad == "VALID";
    const int64_t pad_begin = valid ? 0 : p.pads[i];
    const int64_t padded = in + (valid ? 0 : p.pads[i] + p.pads[i + n]);
    if (padded < window) return ctx.error("spatial dim ", i, " (", in, " padded to ", padded, ") is smaller than the window ", window);
    int64_t count;
    if (p.ceil_mode) {
      count = (padded - window + stride - 1) / stride + 1;
      // A last window that would start inside the end padding is dropped.
      if ((count - 1) * stride >= in + pad_begin) --count;
    } else {
      count = (padded - window) / stride + 1;
    }
    out.push_back(Dim::known(count));
  }
  return out;
}

WindowParams read_window(InferenceContext& ctx, size_t spatial_rank, const std::vector<int64_t>& kernel) {
  WindowParams p;
  p.kernel = kernel;
  p.strides = ctx.attr_ints("strides").value_or(std::vector<int64_t>(spatial_rank, 1));
  p.dilations = ctx.attr_ints("dilations").value_or(std::vector<int64_t>(spatial_rank, 1));
  p.pads = ctx.attr_ints("pads").value_or(std::vector<int64_t>(2 * spatial_rank, 0));
  p.auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  p.ceil_mode = ctx.attr_int("ceil_mode", 0) != 0;
  return p;
}

// Conv, ConvInteger, QLinearConv: x at x_index, W at w_index.
Status conv_shape(InferenceContext& ctx, size_t x_index, size_t w_index, DataType out_type) {
  ctx.set_output_type(0, out_type);
  const Dims* x = ctx.input_shape(x_index);
  const Dims* w = ctx.input_shape(w_index);
  if (x == nullptr) return Status::ok();
  if (x->size() < 3) return ctx.error("input X has rank ", x->size(), ", expected >= 3 (N,C,spatial...)");
  const size_t spatial_rank = x->size() - 2;
  std::vector<int64_t> kernel;
  if (auto given = ctx.attr_ints("kernel_shape")) {
    kernel = *given;
  } else if (w != nullptr) {
    for (size_t i = 2; i < w->size(); ++i) {
      if (!(*w)[i].is_known()) {
        ctx.set_output_shape(0, Dims(x->size()));
        return Status::ok();
      }
      kernel.push_back((*w)[i].value);
    }
  } else {
    return Status::ok();
  }
  if (w != nullptr && w->size() != x->size()) {
    return ctx.error("input W has rank ", w->size(), ", expected ", x->size(), " like X");
  }
  const int64_t group = ctx.attr_int("group", 1);
  if (group <= 0) return ctx.error("group is ", group, ", expected > 0");
  if (w != nullptr && (*x)[1].is_known() && (*w)[1].is_known() && dim_product((*w)[1].value, group).value != (*x)[1].value) {
    return ctx.error("input X has ", (*x)[1].value, " channels but W expects ", (*w)[1].value, " x group ", group);
  }
  const Dims spatial(x->begin() + 2, x->end());
  ONYX_ASSIGN_OR_RETURN(Dims out_spatial, window_output(ctx, spatial, read_window(ctx, spatial_rank, kernel)));
  Dims out{(*x)[0], w != nullptr ? (*w)[0] : unknown_dim()};
  out.insert(out.end(), out_spatial.begin(), out_spatial.end());
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status conv(InferenceContext& ctx) { return conv_shape(ctx, 0, 1, ctx.input_type(0)); }
Status conv_integer(InferenceContext& ctx) { return conv_shape(ctx, 0, 1, DataType::kInt32); }
Status qlinear_conv(InferenceContext& ctx) { return conv_shape(ctx, 0, 3, ctx.input_type(7)); }

Status conv_transpose(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* x = ctx.input_shape(0);
  const Dims* w = ctx.input_shape(1);
  if (x == nullptr) return Status::ok();
  if (x->size() < 3) return ctx.error("input X has rank ", x->size(), ", expected >= 3 (N,C,spatial...)");
  const size_t n = x->size() - 2;
  const int64_t group = ctx.attr_int("group", 1);
  Dim channels = w != nullptr && w->size() >= 2 && (*w)[1].is_known() ? dim_product((*w)[1].value, group) : unknown_dim();
  Dims out{(*x)[0], channels};
  if (auto output_shape = ctx.attr_ints("output_shape")) {
    // Either the spatial dims only or the full shape.
    const size_t skip = output_shape->size() == n + 2 ? 2 : 0;
    if (output_shape->size() != n + skip) return ctx.error("output_shape has ", output_shape->size(), " dims, expected ", n);
    for (size_t i = skip; i < output_shape->size(); ++i) out.push_back(Dim::known((*output_shape)[i]));
    ctx.set_output_shape(0, std::move(out));
    return Status::ok();
  }
  std::vector<int64_t> kernel;
  if (auto given = ctx.attr_ints("kernel_shape")) {
    kernel = *given;
  } else if (w != nullptr && w->size() == x->size()) {
    for (size_t i = 2; i < w->size(); ++i) kernel.push_back((*w)[i].is_known() ? (*w)[i].value : -1);
  } else {
    return Status::ok();
  }
  if (kernel.size() != n) return ctx.error("kernel_shape has ", kernel.size(), " dims, expected ", n);
  const auto strides = ctx.attr_ints("strides").value_or(std::vector<int64_t>(n, 1));
  const auto dilations = ctx.attr_ints("dilations").value_or(std::vector<int64_t>(n, 1));
  const auto pads = ctx.attr_ints("pads").value_or(std::vector<int64_t>(2 * n, 0));
  const auto output_padding = ctx.attr_ints("output_padding").value_or(std::vector<int64_t>(n, 0));
  if (strides.size() != n || dilations.size() != n || pads.size() != 2 * n || output_padding.size() != n) {
    return ctx.error("strides/dilations/pads/output_padding do not match the ", n, " spatial dims");
  }
  const std::string auto_pad = ctx.attr_string("auto_pad", "NOTSET");
  for (size_t i = 0; i < n; ++i) {
    const Dim& in = (*x)[2 + i];
    if (!in.is_known() || kernel[i] < 0) {
      out.push_back(unknown_dim());
      continue;
    }
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      out.push_back(dim_product(in.value, strides[i]));
      continue;
    }
    // In 128 bits: absurd attributes must give an error, not an overflow.
    const __int128 pad_total = auto_pad == "VALID" ? 0 : static_cast<__int128>(pads[i]) + pads[i + n];
    const __int128 wide = static_cast<__int128>(strides[i]) * (in.value - 1) + output_padding[i] +
                          static_cast<__int128>(kernel[i] - 1) * dilations[i] + 1 - pad_total;
    if (wide > std::numeric_limits<int64_t>::max() || wide < std::numeric_limits<int64_t>::min()) {
      return ctx.error("spatial output dim ", i, " is out of range (strides, pads or dilations too large)");
    }
    const int64_t size = static_cast<int64_t>(wide);
    if (size < 0) return ctx.error("spatial output dim ", i, " would be negative (", size, ")");
    out.push_back(Dim::known(size));
  }
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status pool(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  ctx.set_output_type(1, DataType::kInt64);  // MaxPool's Indices
  const Dims* x = ctx.input_shape(0);
  if (x == nullptr) return Status::ok();
  if (x->size() < 3) return ctx.error("input X has rank ", x->size(), ", expected >= 3 (N,C,spatial...)");
  auto kernel = ctx.attr_ints("kernel_shape");
  if (!kernel) return ctx.error("attribute kernel_shape is missing");
  const Dims spatial(x->begin() + 2, x->end());
  ONYX_ASSIGN_OR_RETURN(Dims out_spatial, window_output(ctx, spatial, read_window(ctx, spatial.size(), *kernel)));
  Dims out{(*x)[0], (*x)[1]};
  out.insert(out.end(), out_spatial.begin(), out_spatial.end());
  ctx.set_output_shape(0, out);
  if (ctx.output_count() > 1) ctx.set_output_shape(1, std::move(out));
  return Status::ok();
}

Status global_pool(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* x = ctx.input_shape(0);
  if (x == nullptr) return Status::ok();
  if (x->size() < 2) return ctx.error("input X has rank ", x->size(), ", expected >= 2 (N,C,...)");
  Dims out{(*x)[0], (*x)[1]};
  out.resize(x->size(), Dim::known(1));
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status max_unpool(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* x = ctx.input_shape(0);
  if (x == nullptr) return Status::ok();
  if (ctx.has_input(2)) {
    if (auto shape = ctx.input_ints(2)) {
      ctx.set_output_shape(0, dims_from_ints(*shape));
    } else {
      ctx.set_output_shape(0, Dims(x->size()));
    }
    return Status::ok();
  }
  if (x->size() < 3) return ctx.error("input X has rank ", x->size(), ", expected >= 3 (N,C,spatial...)");
  const size_t n = x->size() - 2;
  auto kernel = ctx.attr_ints("kernel_shape");
  if (!kernel || kernel->size() != n) return ctx.error("kernel_shape must have ", n, " dims");
  const auto strides = ctx.attr_ints("strides").value_or(std::vector<int64_t>(n, 1));
  const auto pads = ctx.attr_ints("pads").value_or(std::vector<int64_t>(2 * n, 0));
  if (strides.size() != n || pads.size() != 2 * n) return ctx.error("strides/pads do not match the ", n, " spatial dims");
  Dims out{(*x)[0], (*x)[1]};
  for (size_t i = 0; i < n; ++i) {
    const Dim& in = (*x)[2 + i];
    out.push_back(in.is_known() ? Dim::known(strides[i] * (in.value - 1) + (*kernel)[i] - pads[i] - pads[i + n]) : unknown_dim());
  }
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

// RNN, GRU, LSTM: Y [seq, dirs, batch, hidden] (layout 0) or [batch, seq, dirs, hidden] (layout 1);
// Y_h and Y_c [dirs, batch, hidden] or [batch, dirs, hidden].
Status recurrent(InferenceContext& ctx) {
  const DataType type = ctx.input_type(0);
  for (size_t i = 0; i < ctx.output_count(); ++i) ctx.set_output_type(i, type);
  const Dims* x = ctx.input_shape(0);
  if (x == nullptr) return Status::ok();
  if (x->size() != 3) return ctx.error("input X has rank ", x->size(), ", expected 3");
  const bool batch_first = ctx.attr_int("layout", 0) != 0;
  const Dim seq = (*x)[batch_first ? 1 : 0];
  const Dim batch = (*x)[batch_first ? 0 : 1];
  const std::string direction = ctx.attr_string("direction", "forward");
  const Dim dirs = Dim::known(direction == "bidirectional" ? 2 : 1);
  Dim hidden;
  if (ctx.has_attribute("hidden_size")) {
    hidden = Dim::known(ctx.attr_int("hidden_size", 0));
  } else if (const Dims* r = ctx.input_shape(2); r != nullptr && r->size() == 3) {
    hidden = (*r)[2];
  }
  ctx.set_output_shape(0, batch_first ? Dims{batch, seq, dirs, hidden} : Dims{seq, dirs, batch, hidden});
  for (size_t i = 1; i < ctx.output_count(); ++i) {
    ctx.set_output_shape(i, batch_first ? Dims{batch, dirs, hidden} : Dims{dirs, batch, hidden});
  }
  return Status::ok();
}

}  // namespace

void register_nn_inference(InferenceTable& table) {
  table["MatMul"] = matmul;
  table["MatMulInteger"] = matmul_integer;
  table["QLinearMatMul"] = qlinear_matmul;
  table["Gemm"] = gemm;
  table["Conv"] = conv;
  table["ConvInteger"] = conv_integer;
  table["QLinearConv"] = qlinear_conv;
  table["ConvTranspose"] = conv_transpose;
  for (const char* op : {"AveragePool", "MaxPool", "LpPool"}) table[op] = pool;
  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}) table[op] = global_pool;
  table["MaxUnpool"] = max_unpool;
  for (const char* op : {"RNN", "GRU", "LSTM"}) table[op] = recurrent;
}

}  // namespace onyx::graph::inference
