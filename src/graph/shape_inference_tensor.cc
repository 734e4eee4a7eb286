// Shape inference for ops that move data around: Reshape, Transpose, Concat,
// Slice, Gather, Shape, Expand, Pad, Resize, the reductions, and the small
// integer arithmetic on shape values that exported models use to build them.
#include <algorithm>
#include <cmath>

#include "graph/shape_inference_context.h"

namespace onyx::graph::inference {
namespace {

using Dims = std::vector<Dim>;

// The axes of an op that took them as an attribute before `input_since` and as
// input `input_index` from then on. nullopt: not given; set with `unknown` when
// given by a value inference cannot see.
struct Axes {
  bool given = false;
  bool unknown = false;
  std::vector<int64_t> values;
};

Axes read_axes(InferenceContext& ctx, const char* attribute, int input_since, size_t input_index) {
  Axes axes;
  if (ctx.since_version() >= input_since) {
    if (!ctx.has_input(input_index)) return axes;
    axes.given = true;
    if (auto values = ctx.input_ints(input_index)) {
      axes.values = *values;
    } else {
      axes.unknown = true;
    }
    return axes;
  }
  if (auto values = ctx.attr_ints(attribute)) {
    axes.given = true;
    axes.values = *values;
  }
  return axes;
}

Status normalize_all(InferenceContext& ctx, std::vector<int64_t>& axes, int64_t rank, const char* what) {
  for (int64_t& axis : axes) {
    auto normalized = normalize_axis(axis, rank);
    if (!normalized) return ctx.error(what, " ", axis, " is out of range for rank ", rank);
    axis = *normalized;
  }
  return Status::ok();
}

TrackedValue tracked_of_dims(const Dims& dims) {
  TrackedValue value;
  for (const Dim& d : dims) value.elements.push_back(TrackedElement::from_dim(d));
  return value;
}

// ---- Reshape and friends ----

Status reshape(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  std::vector<TrackedElement> target;
  if (ctx.since_version() < 5) {
    auto shape = ctx.attr_ints("shape");
    if (!shape) return Status::ok();
    for (int64_t v : *shape) target.push_back(TrackedElement::number(v));
  } else if (const TrackedValue* value = ctx.input_value(1)) {
    target = value->elements;
  } else {
    // Unknown contents but a known length still fixes the rank.
    const Dims* shape_shape = ctx.input_shape(1);
    if (shape_shape != nullptr && shape_shape->size() == 1 && (*shape_shape)[0].is_known()) {
      ctx.set_output_shape(0, Dims(static_cast<size_t>((*shape_shape)[0].value)));
    }
    return Status::ok();
  }
  const bool allow_zero = ctx.attr_int("allowzero", 0) != 0;
  const Dims* in = ctx.input_shape(0);
  Dims out(target.size());
  int64_t infer_at = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    const TrackedElement& e = target[i];
    if (e.known && e.value == -1) {
      if (infer_at >= 0) return ctx.error("shape has more than one -1");
      infer_at = static_cast<int64_t>(i);
    } else if (e.known && e.value == 0 && !allow_zero) {
      if (in != nullptr) {
        if (i >= in->size()) return ctx.error("shape[", i, "] is 0 (copy) but input data has rank ", in->size());
        out[i] = (*in)[i];
      }
    } else if (e.known && e.value < -1) {
      return ctx.error("shape[", i, "] is ", e.value, ", expected >= -1");
    } else {
      out[i] = e.to_dim();
    }
  }
  if (infer_at >= 0 && in != nullptr) {
    // Cancel the dims both sides share; what is left of the input fills the -1.
    std::vector<Dim> remaining(*in);
    int64_t input_known = 1, output_known = 1;
    bool solvable = true;
    for (size_t i = 0; i < out.size() && solvable; ++i) {
      if (static_cast<int64_t>(i) == infer_at) continue;
      const Dim& d = out[i];
      if (d.is_known()) {
        // Absurd declared dims overflow: then the -1 stays unknown.
        if (__builtin_mul_overflow(output_known, d.value, &output_known)) solvable = false;
        continue;
      }
      auto match = std::find_if(remaining.begin(), remaining.end(),
                                [&](const Dim& r) { return !r.is_known() && !d.symbol.empty() && r.symbol == d.symbol; });
      if (match == remaining.end()) {
        solvable = false;
      } else {
        remaining.erase(match);
      }
    }
    std::vector<Dim> leftover_symbols;
    for (const Dim& r : remaining) {
      if (r.is_known()) {
        if (__builtin_mul_overflow(input_known, r.value, &input_known)) solvable = false;
      } else {
        leftover_symbols.push_back(r);
      }
    }
    if (solvable && output_known != 0) {
      if (leftover_symbols.empty() && input_known % output_known == 0) {
        out[static_cast<size_t>(infer_at)] = Dim::known(input_known / output_known);
      } else if (leftover_symbols.size() == 1 && input_known == output_known && !leftover_symbols[0].symbol.empty()) {
        out[static_cast<size_t>(infer_at)] = leftover_symbols[0];
      } else if (leftover_symbols.empty()) {
        return ctx.error("cannot reshape input of shape ", dims_to_string(*in), " into ", target.size(),
                         " dims with fixed product ", output_known);
      }
    }
  }
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status flatten(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* in = ctx.input_shape(0);
  if (in == nullptr) return Status::ok();
  const int64_t rank = static_cast<int64_t>(in->size());
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return ctx.error("axis ", ctx.attr_int("axis", 1), " is out of range for input of rank ", rank);
  ctx.set_output_shape(0, {product_of(*in, 0, static_cast<size_t>(axis)), product_of(*in, static_cast<size_t>(axis), in->size())});
  return Status::ok();
}

Status transpose(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* in = ctx.input_shape(0);
  if (in == nullptr) return Status::ok();
  const int64_t rank = static_cast<int64_t>(in->size());
  std::vector<int64_t> perm;
  if (auto given = ctx.attr_ints("perm")) {
    perm = *given;
  } else {
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int64_t>(perm.size()) != rank) {
    return ctx.error("perm has ", perm.size(), " entries but input data has rank ", rank);
  }
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  Dims out;
  for (int64_t p : perm) {
    auto axis = normalize_axis(p, rank);
    if (!axis || seen[static_cast<size_t>(*axis)]) return ctx.error("perm is not a permutation of 0..", rank - 1);
    seen[static_cast<size_t>(*axis)] = true;
    out.push_back((*in)[static_cast<size_t>(*axis)]);
  }
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status squeeze(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  Axes axes = read_axes(ctx, "axes", 13, 1);
  const Dims* in = ctx.input_shape(0);
  if (const TrackedValue* value = ctx.input_value(0)) {
    if (value->elements.size() == 1) ctx.set_output_value(0, TrackedValue{value->elements, true});
  }
  if (in == nullptr) return Status::ok();
  if (axes.unknown) {
    // Which axes go is unknown, but how many is known from the axes' length.
    const Dims* axes_shape = ctx.input_shape(1);
    if (axes_shape != nullptr && axes_shape->size() == 1 && (*axes_shape)[0].is_known() &&
        (*axes_shape)[0].value <= static_cast<int64_t>(in->size())) {
      ctx.set_output_shape(0, Dims(in->size() - static_cast<size_t>((*axes_shape)[0].value)));
    }
    return Status::ok();
  }
  const int64_t rank = static_cast<int64_t>(in->size());
  std::vector<bool> drop(in->size(), false);
  if (axes.given) {
    ONYX_RETURN_IF_ERROR(normalize_all(ctx, axes.values, rank, "axis"));
    for (int64_t axis : axes.values) {
      const Dim& d = (*in)[static_cast<size_t>(axis)];
      if (d.is_known() && d.value != 1) return ctx.error("cannot squeeze axis ", axis, " of size ", d.value);
      drop[static_cast<size_t>(axis)] = true;
    }
  } else {
    for (size_t d = 0; d < in->size(); ++d) {
      if (!(*in)[d].is_known()) return Status::ok();  // whether it is 1 decides the rank
      drop[d] = (*in)[d].value == 1;
    }
  }
  Dims out;
  for (size_t d = 0; d < in->size(); ++d) {
    if (!drop[d]) out.push_back((*in)[d]);
  }
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status unsqueeze(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  Axes axes = read_axes(ctx, "axes", 13, 1);
  const Dims* in = ctx.input_shape(0);
  if (const TrackedValue* value = ctx.input_value(0)) {
    if (value->is_scalar && axes.given && axes.values.size() == 1) ctx.set_output_value(0, TrackedValue{value->elements, false});
  }
  if (in == nullptr || !axes.given) return Status::ok();
  if (axes.unknown) {
    const Dims* axes_shape = ctx.input_shape(1);
    if (axes_shape != nullptr && axes_shape->size() == 1 && (*axes_shape)[0].is_known()) {
      ctx.set_output_shape(0, Dims(in->size() + static_cast<size_t>((*axes_shape)[0].value)));
    }
    return Status::ok();
  }
  const int64_t out_rank = static_cast<int64_t>(in->size() + axes.values.size());
  ONYX_RETURN_IF_ERROR(normalize_all(ctx, axes.values, out_rank, "axis"));
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t axis : axes.values) {
    if (inserted[static_cast<size_t>(axis)]) return ctx.error("axis ", axis, " appears twice in axes");
    inserted[static_cast<size_t>(axis)] = true;
  }
  Dims out;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    out.push_back(inserted[static_cast<size_t>(d)] ? Dim::known(1) : (*in)[next++]);
  }
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status concat(InferenceContext& ctx) {
  DataType type = DataType::kUndefined;
  for (size_t i = 0; i < ctx.input_count() && type == DataType::kUndefined; ++i) type = ctx.input_type(i);
  ctx.set_output_type(0, type);

  // Concatenated shape values (Shape(x)[0:1] ++ [-1]) stay tracked.
  TrackedValue joined;
  bool all_tracked = ctx.input_count() > 0;
  for (size_t i = 0; i < ctx.input_count() && all_tracked; ++i) {
    const TrackedValue* v = ctx.input_value(i);
    if (v == nullptr || v->is_scalar) {
      all_tracked = false;
    } else {
      joined.elements.insert(joined.elements.end(), v->elements.begin(), v->elements.end());
    }
  }
  if (all_tracked) ctx.set_output_value(0, std::move(joined));

  const Dims* first = nullptr;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Dims* shape = ctx.input_shape(i);
    if (shape == nullptr) return Status::ok();
    if (first == nullptr) first = shape;
    if (shape->size() != first->size()) {
      return ctx.error("input ", i, " has rank ", shape->size(), ", expected ", first->size(), " like input 0");
    }
  }
  if (first == nullptr) return Status::ok();
  const int64_t rank = static_cast<int64_t>(first->size());
  auto axis = normalize_axis(ctx.attr_int("axis", 0), rank);
  if (!axis) return ctx.error("axis ", ctx.attr_int("axis", 0), " is out of range for inputs of rank ", rank);
  Dims out(*first);
  int64_t total = 0;
  bool total_known = true;
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Dims& shape = *ctx.input_shape(i);
    for (size_t d = 0; d < shape.size(); ++d) {
      if (static_cast<int64_t>(d) == *axis) {
        if (shape[d].is_known()) {
          total += shape[d].value;
        } else {
          total_known = false;
        }
        continue;
      }
      if (conflicting_dims(out[d], shape[d])) {
        return ctx.error("input ", i, " has shape ", dims_to_string(shape), ", which differs from ",
                         dims_to_string(*first), " outside axis ", *axis);
      }
      if (!out[d].is_known() && (shape[d].is_known() || (out[d].symbol.empty() && !shape[d].symbol.empty()))) out[d] = shape[d];
    }
  }
  out[static_cast<size_t>(*axis)] = total_known ? Dim::known(total) : unknown_dim();
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status split(InferenceContext& ctx) {
  const size_t outputs = ctx.output_count();
  for (size_t i = 0; i < outputs; ++i) ctx.set_output_type(i, ctx.input_type(0));
  const Dims* in = ctx.input_shape(0);
  if (in == nullptr || outputs == 0) return Status::ok();
  const int64_t rank = static_cast<int64_t>(in->size());
  auto axis = normalize_axis(ctx.attr_int("axis", 0), rank);
  if (!axis) return ctx.error("axis ", ctx.attr_int("axis", 0), " is out of range for input of rank ", rank);
  const Dim total = (*in)[static_cast<size_t>(*axis)];
  std::vector<Dim> sizes(outputs);
  std::optional<std::vector<int64_t>> given;
  if (ctx.since_version() >= 13) {
    if (ctx.has_input(1)) {
      given = ctx.input_ints(1);
      if (!given) {
        for (size_t i = 0; i < outputs; ++i) {
          Dims out(*in);
          out[static_cast<size_t>(*axis)] = unknown_dim();
          ctx.set_output_shape(i, std::move(out));
        }
        return Status::ok();
      }
    }
  } else {
    given = ctx.attr_ints("split");
  }
  if (given && !given->empty()) {
    if (given->size() != outputs) return ctx.error("split has ", given->size(), " sizes for ", outputs, " outputs");
    int64_t sum = 0;
    for (size_t i = 0; i < outputs; ++i) {
      if ((*given)[i] < 0) return ctx.error("split size ", (*given)[i], " is negative");
      sum += (*given)[i];
      sizes[i] = Dim::known((*given)[i]);
    }
    if (total.is_known() && sum != total.value) {
      return ctx.error("split sizes sum to ", sum, " but axis ", *axis, " of the input has ", total.value);
    }
  } else if (total.is_known()) {
    // Equal parts; from opset 18 (num_outputs) the last part may be smaller.
    const int64_t n = static_cast<int64_t>(outputs);
    if (ctx.since_version() >= 18) {
      const int64_t part = (total.value + n - 1) / n;
      for (int64_t i = 0; i < n; ++i) sizes[static_cast<size_t>(i)] = Dim::known(std::max<int64_t>(0, std::min(part, total.value - part * i)));
    } else {
      if (total.value % n != 0) return ctx.error("axis ", *axis, " of size ", total.value, " does not split into ", n, " equal parts");
      for (auto& s : sizes) s = Dim::known(total.value / n);
    }
  }
  for (size_t i = 0; i < outputs; ++i) {
    Dims out(*in);
    out[static_cast<size_t>(*axis)] = sizes[i];
    ctx.set_output_shape(i, std::move(out));
  }
  return Status::ok();
}

// Clamps (start, end) for `step` against a dim of size n, per the ONNX Slice rules; returns the count.
int64_t slice_count(int64_t start, int64_t end, int64_t step, int64_t n) {
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, n);
    end = std::clamp<int64_t>(end, 0, n);
    return end > start ? (end - start + step - 1) / step : 0;
  }
  start = std::clamp<int64_t>(start, 0, n - 1);
  end = std::clamp<int64_t>(end, -1, n - 1);
  return start > end ? (start - end + (-step) - 1) / (-step) : 0;
}

Status slice(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  std::optional<std::vector<int64_t>> starts, ends, axes, steps;
  bool axes_given = false, steps_given = false;
  if (ctx.since_version() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
    axes_given = axes.has_value();
  } else {
    starts = ctx.input_ints(1);
    ends = ctx.input_ints(2);
    axes_given = ctx.has_input(3);
    if (axes_given) axes = ctx.input_ints(3);
    steps_given = ctx.has_input(4);
    if (steps_given) steps = ctx.input_ints(4);
  }
  const Dims* in = ctx.input_shape(0);
  const TrackedValue* tracked = ctx.input_value(0);
  Dims tracked_shape;
  if (in == nullptr && tracked != nullptr && !tracked->is_scalar) {
    tracked_shape = {Dim::known(static_cast<int64_t>(tracked->elements.size()))};
    in = &tracked_shape;
  }
  if (in == nullptr) return Status::ok();
  const int64_t rank = static_cast<int64_t>(in->size());
  if (!starts || !ends || (axes_given && !axes) || (steps_given && !steps)) {
    // Unknown bounds: the rank is kept; the sliced dims are unknown (all, when axes are unknown too).
    Dims out(*in);
    if (axes && starts) {
      std::vector<int64_t> a = *axes;
      if (normalize_all(ctx, a, rank, "axis").is_ok()) {
        for (int64_t axis : a) out[static_cast<size_t>(axis)] = unknown_dim();
        ctx.set_output_shape(0, std::move(out));
        return Status::ok();
      }
    }
    ctx.set_output_shape(0, Dims(in->size()));
    return Status::ok();
  }
  if (starts->size() != ends->size()) return ctx.error("starts has ", starts->size(), " entries but ends has ", ends->size());
  std::vector<int64_t> axis_list;
  if (axes) {
    axis_list = *axes;
  } else {
    for (size_t i = 0; i < starts->size(); ++i) axis_list.push_back(static_cast<int64_t>(i));
  }
  if (axis_list.size() != starts->size()) return ctx.error("axes has ", axis_list.size(), " entries but starts has ", starts->size());
  if (steps && steps->size() != starts->size()) return ctx.error("steps has ", steps->size(), " entries but starts has ", starts->size());
  ONYX_RETURN_IF_ERROR(normalize_all(ctx, axis_list, rank, "axis"));
  Dims out(*in);
  std::vector<int64_t> begin_of(in->size(), 0), step_of(in->size(), 1), count_of(in->size(), -1);
  for (size_t i = 0; i < axis_list.size(); ++i) {
    const size_t axis = static_cast<size_t>(axis_list[i]);
    const int64_t step = steps ? (*steps)[i] : 1;
    if (step == 0) return ctx.error("steps[", i, "] is 0");
    const Dim& d = (*in)[axis];
    if (!d.is_known()) {
      // A slice of everything keeps a symbolic dim.
      const bool whole = step == 1 && (*starts)[i] == 0 && (*ends)[i] >= (int64_t{1} << 62);
      out[axis] = whole ? d : unknown_dim();
      continue;
    }
    int64_t start = (*starts)[i];
    if (start < 0) start += d.value;
    start = step > 0 ? std::clamp<int64_t>(start, 0, d.value) : std::clamp<int64_t>(start, 0, d.value - 1);
    const int64_t count = slice_count((*starts)[i], (*ends)[i], step, d.value);
    out[axis] = Dim::known(count);
    begin_of[axis] = start;
    step_of[axis] = step;
    count_of[axis] = count;
  }
  if (tracked != nullptr && !tracked->is_scalar && count_of[0] >= 0) {
    TrackedValue sliced;
    for (int64_t k = 0; k < count_of[0]; ++k) {
      const int64_t index = begin_of[0] + k * step_of[0];
      if (index < 0 || index >= static_cast<int64_t>(tracked->elements.size())) break;
      sliced.elements.push_back(tracked->elements[static_cast<size_t>(index)]);
    }
    if (static_cast<int64_t>(sliced.elements.size()) == count_of[0]) ctx.set_output_value(0, std::move(sliced));
  } else if (tracked != nullptr && !tracked->is_scalar && axis_list.empty()) {
    ctx.set_output_value(0, *tracked);
  }
  if (ctx.input_shape(0) != nullptr) ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status gather(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* data = ctx.input_shape(0);
  const Dims* indices = ctx.input_shape(1);
  const TrackedValue* tracked = ctx.input_value(0);
  if (tracked != nullptr && !tracked->is_scalar && ctx.attr_int("axis", 0) == 0) {
    if (auto idx = ctx.input_ints(1)) {
      const TrackedValue* index_value = ctx.input_value(1);
      TrackedValue picked;
      picked.is_scalar = index_value != nullptr && index_value->is_scalar;
      const int64_t n = static_cast<int64_t>(tracked->elements.size());
      bool ok = true;
      for (int64_t i : *idx) {
        if (i < -n || i >= n) {
          ok = false;
          break;
        }
        picked.elements.push_back(tracked->elements[static_cast<size_t>(i < 0 ? i + n : i)]);
      }
      if (ok) ctx.set_output_value(0, std::move(picked));
    }
  }
  if (data == nullptr || indices == nullptr) return Status::ok();
  const int64_t rank = static_cast<int64_t>(data->size());
  auto axis = normalize_axis(ctx.attr_int("axis", 0), rank);
  if (!axis) return ctx.error("axis ", ctx.attr_int("axis", 0), " is out of range for input data of rank ", rank);
  Dims out(data->begin(), data->begin() + *axis);
  out.insert(out.end(), indices->begin(), indices->end());
  out.insert(out.end(), data->begin() + *axis + 1, data->end());
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status gather_elements(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_type(0), ctx.input_shape(1));
  return Status::ok();
}

Status gather_nd(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* data = ctx.input_shape(0);
  const Dims* indices = ctx.input_shape(1);
  if (data == nullptr || indices == nullptr || indices->empty() || !indices->back().is_known()) return Status::ok();
  const int64_t batch_dims = ctx.attr_int("batch_dims", 0);
  const int64_t last = indices->back().value;
  if (batch_dims < 0 || batch_dims + last > static_cast<int64_t>(data->size())) {
    return ctx.error("indices' last dim ", last, " plus batch_dims ", batch_dims, " exceeds the rank ", data->size(), " of data");
  }
  Dims out(indices->begin(), indices->end() - 1);
  out.insert(out.end(), data->begin() + batch_dims + last, data->end());
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status expand(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const TrackedValue* shape_value = ctx.input_value(1);
  const Dims* in = ctx.input_shape(0);
  if (shape_value == nullptr) {
    const Dims* shape_shape = ctx.input_shape(1);
    if (in != nullptr && shape_shape != nullptr && shape_shape->size() == 1 && (*shape_shape)[0].is_known()) {
      ctx.set_output_shape(0, Dims(std::max<size_t>(in->size(), static_cast<size_t>((*shape_shape)[0].value))));
    }
    return Status::ok();
  }
  if (in == nullptr) return Status::ok();
  Dims target;
  for (const TrackedElement& e : shape_value->elements) target.push_back(e.to_dim());
  auto result = broadcast_shapes({in, &target});
  if (!result.is_ok()) return ctx.error(result.status().message());
  ctx.set_output_shape(0, std::move(result).value());
  return Status::ok();
}

Status shape(InferenceContext& ctx) {
  ctx.set_output_type(0, DataType::kInt64);
  const Dims* in = ctx.input_shape(0);
  if (in == nullptr) return Status::ok();
  const int64_t rank = static_cast<int64_t>(in->size());
  int64_t start = ctx.attr_int("start", 0);
  int64_t end = ctx.has_attribute("end") ? ctx.attr_int("end", rank) : rank;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  const Dims part(in->begin() + start, in->begin() + std::max(start, end));
  ctx.set_output_shape(0, {Dim::known(static_cast<int64_t>(part.size()))});
  ctx.set_output_value(0, tracked_of_dims(part));
  return Status::ok();
}

Status size(InferenceContext& ctx) {
  ctx.set_output(0, DataType::kInt64, nullptr);
  ctx.set_output_shape(0, {});
  if (const Dims* in = ctx.input_shape(0)) {
    TrackedValue value;
    value.is_scalar = true;
    value.elements.push_back(TrackedElement::from_dim(product_of(*in, 0, in->size())));
    ctx.set_output_value(0, std::move(value));
  }
  return Status::ok();
}

Status constant_of_shape(InferenceContext& ctx) {
  const Attribute* value = ctx.node().attribute("value");
  ctx.set_output_type(0, value != nullptr && value->t.defined() ? value->t.dtype() : DataType::kFloat);
  if (const TrackedValue* shape_value = ctx.input_value(0)) {
    Dims out;
    for (const TrackedElement& e : shape_value->elements) {
      if (e.known && e.value < 0) return ctx.error("input shape has a negative dim ", e.value);
      out.push_back(e.to_dim());
    }
    ctx.set_output_shape(0, std::move(out));
  } else if (const Dims* shape_shape = ctx.input_shape(0)) {
    if (shape_shape->size() == 1 && (*shape_shape)[0].is_known()) {
      ctx.set_output_shape(0, Dims(static_cast<size_t>((*shape_shape)[0].value)));
    }
  }
  return Status::ok();
}

Status range(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  auto start = ctx.input_doubles(0), limit = ctx.input_doubles(1), delta = ctx.input_doubles(2);
  if (start && limit && delta && start->size() == 1 && limit->size() == 1 && delta->size() == 1) {
    if ((*delta)[0] == 0) return ctx.error("delta is 0");
    const double count = std::ceil(((*limit)[0] - (*start)[0]) / (*delta)[0]);
    ctx.set_output_shape(0, {Dim::known(count > 0 ? static_cast<int64_t>(count) : 0)});
  } else {
    ctx.set_output_shape(0, {unknown_dim()});
  }
  return Status::ok();
}

Status tile(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* in = ctx.input_shape(0);
  if (in == nullptr) return Status::ok();
  auto repeats = ctx.input_ints(1);
  if (!repeats) {
    ctx.set_output_shape(0, Dims(in->size()));
    return Status::ok();
  }
  if (repeats->size() != in->size()) return ctx.error("repeats has ", repeats->size(), " entries but input has rank ", in->size());
  Dims out;
  for (size_t d = 0; d < in->size(); ++d) {
    const int64_t r = (*repeats)[d];
    if (r < 0) return ctx.error("repeats[", d, "] is negative (", r, ")");
    if (r == 1) {
      out.push_back((*in)[d]);
    } else if ((*in)[d].is_known() || r == 0) {
      out.push_back((*in)[d].is_known() ? dim_product((*in)[d].value, r) : Dim::known(0));
    } else {
      out.push_back(unknown_dim());
    }
  }
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status pad(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* in = ctx.input_shape(0);
  if (in == nullptr) return Status::ok();
  const int64_t rank = static_cast<int64_t>(in->size());
  std::optional<std::vector<int64_t>> pads = ctx.since_version() >= 11 ? ctx.input_ints(1) : ctx.attr_ints(ctx.since_version() >= 2 ? "pads" : "paddings");
  std::vector<int64_t> axes;
  if (ctx.since_version() >= 18 && ctx.has_input(3)) {
    auto given = ctx.input_ints(3);
    if (!given) {
      ctx.set_output_shape(0, Dims(in->size()));
      return Status::ok();
    }
    axes = *given;
    ONYX_RETURN_IF_ERROR(normalize_all(ctx, axes, rank, "axis"));
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  if (!pads) {
    ctx.set_output_shape(0, Dims(in->size()));
    return Status::ok();
  }
  if (pads->size() != 2 * axes.size()) return ctx.error("pads has ", pads->size(), " entries, expected ", 2 * axes.size());
  Dims out(*in);
  for (size_t i = 0; i < axes.size(); ++i) {
    Dim& d = out[static_cast<size_t>(axes[i])];
    const int64_t extra = (*pads)[i] + (*pads)[i + axes.size()];
    if (d.is_known()) {
      if (d.value + extra < 0) return ctx.error("pads make axis ", axes[i], " negative");
      d = Dim::known(d.value + extra);
    } else if (extra != 0) {
      d = unknown_dim();
    }
  }
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status resize(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* in = ctx.input_shape(0);
  if (in == nullptr) return Status::ok();
  const int64_t rank = static_cast<int64_t>(in->size());
  const std::string& op = ctx.node().op_type;
  std::optional<std::vector<double>> scales;
  std::optional<std::vector<int64_t>> sizes;
  if (op == "Upsample" && ctx.since_version() < 9) {
    if (auto s = ctx.attr_floats("scales")) scales = std::vector<double>(s->begin(), s->end());
  } else if (op == "Upsample" || ctx.since_version() < 11) {
    scales = ctx.input_doubles(1);
  } else {
    if (ctx.has_input(3)) sizes = ctx.input_ints(3);
    if (ctx.has_input(2)) {
      scales = ctx.input_doubles(2);
      if (scales && scales->empty()) scales.reset();
    }
    if (sizes && sizes->empty()) sizes.reset();
  }
  std::vector<int64_t> axes;
  if (auto given = ctx.attr_ints("axes"); given && ctx.since_version() >= 18) {
    axes = *given;
    ONYX_RETURN_IF_ERROR(normalize_all(ctx, axes, rank, "axis"));
  } else {
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  }
  Dims out(*in);
  const std::string policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch");
  if (sizes) {
    if (sizes->size() != axes.size()) return ctx.error("sizes has ", sizes->size(), " entries, expected ", axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      out[static_cast<size_t>(axes[i])] = policy == "stretch" ? Dim::known((*sizes)[i]) : unknown_dim();
    }
  } else if (scales) {
    if (scales->size() != axes.size()) return ctx.error("scales has ", scales->size(), " entries, expected ", axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      Dim& d = out[static_cast<size_t>(axes[i])];
      if ((*scales)[i] == 1.0) continue;
      d = d.is_known() ? Dim::known(static_cast<int64_t>(std::floor(static_cast<double>(d.value) * (*scales)[i]))) : unknown_dim();
    }
  } else {
    out = Dims(in->size());
  }
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status depth_to_space(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* in = ctx.input_shape(0);
  if (in == nullptr) return Status::ok();
  if (in->size() != 4) return ctx.error("input has rank ", in->size(), ", expected 4 (N,C,H,W)");
  const int64_t b = ctx.attr_int("blocksize", 0);
  if (b <= 0 || b > (int64_t{1} << 31)) return ctx.error("blocksize is ", b, ", expected in [1, 2^31]");
  const bool to_space = ctx.node().op_type == "DepthToSpace";
  auto scale = [](const Dim& d, int64_t mul, int64_t div) {
    const Dim product = d.is_known() ? dim_product(d.value, mul) : unknown_dim();
    return product.is_known() && product.value % div == 0 ? Dim::known(product.value / div) : unknown_dim();
  };
  Dims out{(*in)[0], to_space ? scale((*in)[1], 1, b * b) : scale((*in)[1], b * b, 1),
           to_space ? scale((*in)[2], b, 1) : scale((*in)[2], 1, b), to_space ? scale((*in)[3], b, 1) : scale((*in)[3], 1, b)};
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status one_hot(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(2));
  const Dims* in = ctx.input_shape(0);
  if (in == nullptr) return Status::ok();
  const int64_t out_rank = static_cast<int64_t>(in->size()) + 1;
  auto axis = normalize_axis(ctx.attr_int("axis", -1), out_rank);
  if (!axis) return ctx.error("axis ", ctx.attr_int("axis", -1), " is out of range for output rank ", out_rank);
  Dim depth;
  if (auto d = ctx.input_doubles(1); d && d->size() == 1) depth = Dim::known(static_cast<int64_t>((*d)[0]));
  Dims out(*in);
  out.insert(out.begin() + *axis, depth);
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status non_zero(InferenceContext& ctx) {
  ctx.set_output_type(0, DataType::kInt64);
  const int64_t rank = ctx.input_rank(0);
  ctx.set_output_shape(0, {rank >= 0 ? Dim::known(rank) : unknown_dim(), unknown_dim()});
  return Status::ok();
}

Status compress(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* in = ctx.input_shape(0);
  if (!ctx.has_attribute("axis")) {
    ctx.set_output_shape(0, {unknown_dim()});
    return Status::ok();
  }
  if (in == nullptr) return Status::ok();
  auto axis = normalize_axis(ctx.attr_int("axis", 0), static_cast<int64_t>(in->size()));
  if (!axis) return ctx.error("axis ", ctx.attr_int("axis", 0), " is out of range for input of rank ", in->size());
  Dims out(*in);
  out[static_cast<size_t>(*axis)] = unknown_dim();
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

Status eye_like(InferenceContext& ctx) {
  const int64_t dtype = ctx.attr_int("dtype", 0);
  ctx.set_output(0, dtype != 0 ? static_cast<DataType>(dtype) : ctx.input_type(0), ctx.input_shape(0));
  return Status::ok();
}

Status top_k(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  ctx.set_output_type(1, DataType::kInt64);
  const Dims* in = ctx.input_shape(0);
  if (in == nullptr) return Status::ok();
  auto axis = normalize_axis(ctx.attr_int("axis", -1), static_cast<int64_t>(in->size()));
  if (!axis) return ctx.error("axis ", ctx.attr_int("axis", -1), " is out of range for input of rank ", in->size());
  Dim k;
  if (ctx.since_version() < 10) {
    k = Dim::known(ctx.attr_int("k", 0));
  } else if (auto values = ctx.input_ints(1); values && values->size() == 1) {
    if ((*values)[0] < 0) return ctx.error("K is negative (", (*values)[0], ")");
    k = Dim::known((*values)[0]);
  }
  const Dim& d = (*in)[static_cast<size_t>(*axis)];
  if (k.is_known() && d.is_known() && k.value > d.value) {
    return ctx.error("K ", k.value, " exceeds axis ", *axis, " of size ", d.value);
  }
  Dims out(*in);
  out[static_cast<size_t>(*axis)] = k;
  ctx.set_output_shape(0, out);
  ctx.set_output_shape(1, std::move(out));
  return Status::ok();
}

Dims reduce_dims(const Dims& in, const std::vector<int64_t>& axes, bool keep_dims) {
  std::vector<bool> reduced(in.size(), false);
  for (int64_t a : axes) reduced[static_cast<size_t>(a)] = true;
  Dims out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!reduced[d]) {
      out.push_back(in[d]);
    } else if (keep_dims) {
      out.push_back(Dim::known(1));
    }
  }
  return out;
}

Status arg_reduce(InferenceContext& ctx) {
  ctx.set_output_type(0, DataType::kInt64);
  const Dims* in = ctx.input_shape(0);
  if (in == nullptr) return Status::ok();
  auto axis = normalize_axis(ctx.attr_int("axis", 0), static_cast<int64_t>(in->size()));
  if (!axis) return ctx.error("axis ", ctx.attr_int("axis", 0), " is out of range for input of rank ", in->size());
  ctx.set_output_shape(0, reduce_dims(*in, {*axis}, ctx.attr_int("keepdims", 1) != 0));
  return Status::ok();
}

Status reduce(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* in = ctx.input_shape(0);
  const int axes_input_since = ctx.node().op_type == "ReduceSum" ? 13 : 18;
  Axes axes = read_axes(ctx, "axes", axes_input_since, 1);
  const bool keep_dims = ctx.attr_int("keepdims", 1) != 0;
  if (in == nullptr) return Status::ok();
  const int64_t rank = static_cast<int64_t>(in->size());
  if (axes.unknown) {
    if (keep_dims) ctx.set_output_shape(0, Dims(in->size()));
    return Status::ok();
  }
  if (!axes.given || axes.values.empty()) {
    if (ctx.attr_int("noop_with_empty_axes", 0) != 0 && ctx.since_version() >= axes_input_since) {
      ctx.set_output_shape(0, *in);
      return Status::ok();
    }
    axes.values.clear();
    for (int64_t d = 0; d < rank; ++d) axes.values.push_back(d);
  }
  ONYX_RETURN_IF_ERROR(normalize_all(ctx, axes.values, rank, "axis"));
  ctx.set_output_shape(0, reduce_dims(*in, axes.values, keep_dims));
  return Status::ok();
}

Status non_max_suppression(InferenceContext& ctx) {
  ctx.set_output_type(0, DataType::kInt64);
  ctx.set_output_shape(0, {unknown_dim(), Dim::known(3)});
  return Status::ok();
}

// ---- Sequences and optionals: types only ----

ValueType sequence_of(const ValueType& element) {
  ValueType t;
  t.kind = ValueType::Kind::kSequence;
  t.inner = std::make_shared<ValueType>(element);
  return t;
}

Status sequence_of_input(InferenceContext& ctx) {
  const TypeAndShape* in = ctx.input(0);
  if (in != nullptr && in->type.kind == ValueType::Kind::kTensor) {
    ctx.set_output_type(0, sequence_of(ValueType::tensor(in->type.elem_type)));
  }
  return Status::ok();
}

Status sequence_empty(InferenceContext& ctx) {
  ctx.set_output_type(0, sequence_of(ValueType::tensor(static_cast<DataType>(ctx.attr_int("dtype", 1)))));
  return Status::ok();
}

Status element_of_input(InferenceContext& ctx) {
  const TypeAndShape* in = ctx.input(0);
  if (in != nullptr && (in->type.kind == ValueType::Kind::kSequence || in->type.kind == ValueType::Kind::kOptional) &&
      in->type.inner) {
    ctx.set_output_type(0, *in->type.inner);
  }
  return Status::ok();
}

// OptionalGetElement: an optional's content; from opset 18 a plain tensor or sequence passes through.
Status optional_get_element(InferenceContext& ctx) {
  const TypeAndShape* in = ctx.input(0);
  if (in == nullptr) return Status::ok();
  if (in->type.kind == ValueType::Kind::kOptional) {
    if (in->type.inner) ctx.set_output_type(0, *in->type.inner);
  } else if (in->type.kind != ValueType::Kind::kUnknown) {
    ctx.set_output_type(0, in->type);
    if (in->has_shape) ctx.set_output_shape(0, in->shape);
  }
  return Status::ok();
}

Status same_value_type(InferenceContext& ctx) {
  if (const TypeAndShape* in = ctx.input(0)) ctx.set_output_type(0, in->type);
  return Status::ok();
}

Status optional(InferenceContext& ctx) {
  ValueType t;
  t.kind = ValueType::Kind::kOptional;
  if (const TypeAndShape* in = ctx.input(0); in != nullptr && in->type.kind != ValueType::Kind::kUnknown) {
    t.inner = std::make_shared<ValueType>(in->type);
  } else if (const Attribute* type = ctx.node().attribute("type")) {
    t.inner = std::make_shared<ValueType>(type->tp);
  } else {
    return Status::ok();
  }
  ctx.set_output_type(0, t);
  return Status::ok();
}

}  // namespace

void register_tensor_inference(InferenceTable& table) {
  table["Reshape"] = reshape;
  table["Flatten"] = flatten;
  table["Transpose"] = transpose;
  table["Squeeze"] = squeeze;
  table["Unsqueeze"] = unsqueeze;
  table["Concat"] = concat;
  table["Split"] = split;
  table["Slice"] = slice;
  table["Gather"] = gather;
  table["GatherElements"] = gather_elements;
  table["GatherND"] = gather_nd;
  table["Expand"] = expand;
  table["Shape"] = shape;
  table["Size"] = size;
  table["ConstantOfShape"] = constant_of_shape;
  table["Range"] = range;
  table["Tile"] = tile;
  table["Pad"] = pad;
  table["Resize"] = resize;
  table["Upsample"] = resize;
  table["DepthToSpace"] = depth_to_space;
  table["SpaceToDepth"] = depth_to_space;
  table["OneHot"] = one_hot;
  table["NonZero"] = non_zero;
  table["Compress"] = compress;
  table["EyeLike"] = eye_like;
  table["TopK"] = top_k;
  table["ArgMax"] = arg_reduce;
  table["ArgMin"] = arg_reduce;
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                         "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"}) {
    table[op] = reduce;
  }
  table["NonMaxSuppression"] = non_max_suppression;
  table["SequenceConstruct"] = sequence_of_input;
  table["SplitToSequence"] = sequence_of_input;
  table["SequenceEmpty"] = sequence_empty;
  table["SequenceAt"] = element_of_input;
  table["ConcatFromSequence"] = element_of_input;
  table["OptionalGetElement"] = optional_get_element;
  table["SequenceInsert"] = same_value_type;
  table["SequenceErase"] = same_value_type;
  table["Optional"] = optional;
}

}  // namespace onyx::graph::inference
