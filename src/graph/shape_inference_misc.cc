// Shape inference for Einsum, GridSample, Det and the pre-1.5 experimental
// ops (Crop, Affine, ScaledTanh, ParametricSoftplus) that old models still use.
#include <algorithm>
#include <map>

#include "graph/shape_inference_context.h"

namespace onyx::graph::inference {
namespace {

using Dims = std::vector<Dim>;

// The dim two operands give one einsum letter: the known one wins; a 1 may
// broadcast; otherwise unknown (the kernel reports real mismatches).
Dim join_letter(const Dim& a, const Dim& b) {
  if (a.is_known() && b.is_known()) {
    if (a.value == b.value || b.value == 1) return a;
    if (a.value == 1) return b;
    return unknown_dim();
  }
  if (a.is_known() && a.value != 1) return a;
  if (b.is_known() && b.value != 1) return b;
  return same_dim(a, b) ? a : unknown_dim();
}

Status einsum(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  std::string equation;
  for (char c : ctx.attr_string("equation", "")) {
    if (c != ' ') equation += c;
  }
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t begin = 0;;) {
    const size_t comma = lhs.find(',', begin);
    terms.push_back(lhs.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (terms.size() != ctx.input_count()) {
    return ctx.error("equation '", equation, "' has ", terms.size(), " operands but the node has ", ctx.input_count(), " inputs");
  }
  std::map<char, Dim> letters;
  std::map<char, int> letter_count;
  Dims ellipsis;
  bool ellipsis_set = false;
  for (size_t t = 0; t < terms.size(); ++t) {
    const Dims* shape = ctx.input_shape(t);
    if (shape == nullptr) return Status::ok();
    const std::string& term = terms[t];
    const size_t dots = term.find("...");
    const size_t letter_total = term.size() - (dots == std::string::npos ? 0 : 3);
    if (letter_total > shape->size() || (dots == std::string::npos && letter_total != shape->size())) {
      return ctx.error("operand ", t, " '", term, "' does not match input shape ", dims_to_string(*shape));
    }
    const size_t ellipsis_rank = shape->size() - letter_total;
    size_t axis = 0;
    for (size_t k = 0; k < term.size(); ++k) {
      if (term[k] == '.') {
        if (k == dots) {
          Dims part(shape->begin() + static_cast<std::ptrdiff_t>(axis),
                    shape->begin() + static_cast<std::ptrdiff_t>(axis + ellipsis_rank));
          if (!ellipsis_set) {
            ellipsis = part;
            ellipsis_set = true;
          } else {
            auto joined = broadcast_shapes({&ellipsis, &part});
            if (!joined.is_ok()) return ctx.error(joined.status().message());
            ellipsis = std::move(joined).value();
          }
          axis += ellipsis_rank;
        }
        continue;
      }
      const char letter = term[k];
      const Dim& dim = (*shape)[axis++];
      auto it = letters.find(letter);
      letters[letter] = it == letters.end() ? dim : join_letter(it->second, dim);
      ++letter_count[letter];
    }
  }
  Dims out;
  if (arrow != std::string::npos) {
    const std::string rhs = equation.substr(arrow + 2);
    for (size_t k = 0; k < rhs.size(); ++k) {
      if (rhs[k] == '.') {
        if (rhs.compare(k, 3, "...") == 0) {
          out.insert(out.end(), ellipsis.begin(), ellipsis.end());
          k += 2;
        }
        continue;
      }
      auto it = letters.find(rhs[k]);
      if (it == letters.end()) return ctx.error("output letter '", rhs[k], "' appears in no operand of '", equation, "'");
      out.push_back(it->second);
    }
  } else {
    // Implicit output: the broadcast dims, then letters used once, alphabetically.
    out = ellipsis;
    for (const auto& [letter, count] : letter_count) {
      if (count == 1) out.push_back(letters[letter]);
    }
  }
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

// GridSample: Y is [N, C, grid's spatial dims...].
Status grid_sample(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* x = ctx.input_shape(0);
  const Dims* grid = ctx.input_shape(1);
  if (x == nullptr || grid == nullptr || x->size() < 3 || grid->size() != x->size()) return Status::ok();
  Dims out{(*x)[0], (*x)[1]};
  out.insert(out.end(), grid->begin() + 1, grid->end() - 1);
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

// Det: the batch dims of [..., M, M].
Status det(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* x = ctx.input_shape(0);
  if (x == nullptr) return Status::ok();
  if (x->size() < 2) return ctx.error("input X has rank ", x->size(), ", expected >= 2 (..., M, M)");
  ctx.set_output_shape(0, Dims(x->begin(), x->end() - 2));
  return Status::ok();
}

Status same_as_input(InferenceContext& ctx) {
  ctx.set_output(0, ctx.input_type(0), ctx.input_shape(0));
  return Status::ok();
}

// Crop (experimental, removed in ONNX 1.5): border = [left, top, right, bottom]; scale = [height, width].
Status crop(InferenceContext& ctx) {
  ctx.set_output_type(0, ctx.input_type(0));
  const Dims* x = ctx.input_shape(0);
  if (x == nullptr || x->size() != 4) return Status::ok();
  const auto border = ctx.attr_ints("border").value_or(std::vector<int64_t>{});
  const auto scale = ctx.attr_ints("scale");
  if (border.size() != 4) return Status::ok();
  Dims out{(*x)[0], (*x)[1], unknown_dim(), unknown_dim()};
  if (scale && scale->size() == 2) {
    out[2] = Dim::known((*scale)[0]);
    out[3] = Dim::known((*scale)[1]);
  } else {
    if ((*x)[2].is_known()) out[2] = Dim::known(std::max<int64_t>(0, (*x)[2].value - border[1] - border[3]));
    if ((*x)[3].is_known()) out[3] = Dim::known(std::max<int64_t>(0, (*x)[3].value - border[0] - border[2]));
  }
  ctx.set_output_shape(0, std::move(out));
  return Status::ok();
}

// Attention (opset 23+): Q/K/V are [B, heads, seq, head_size] or [B, seq, heads*head_size].
Status attention(InferenceContext& ctx) {
  const DataType q_type = ctx.input_type(0);
  ctx.set_output_type(0, q_type);
  ctx.set_output_type(1, q_type);
  ctx.set_output_type(2, ctx.input_type(2));
  ctx.set_output_type(3, q_type);
  const Dims* q = ctx.input_shape(0);
  const Dims* k = ctx.input_shape(1);
  const Dims* v = ctx.input_shape(2);
  if (q == nullptr || k == nullptr || v == nullptr) return Status::ok();
  if ((q->size() != 3 && q->size() != 4) || k->size() != q->size() || v->size() != q->size()) return Status::ok();
  const int64_t q_heads = ctx.attr_int("q_num_heads", 0);
  const int64_t kv_heads = ctx.attr_int("kv_num_heads", 0);
  auto divide = [](const Dim& d, int64_t by) {
    return d.is_known() && by > 0 && d.value % by == 0 ? Dim::known(d.value / by) : unknown_dim();
  };
  // Per-head views: [B, H, S, D].
  Dims q4, k4, v4;
  if (q->size() == 4) {
    q4 = *q;
    k4 = *k;
    v4 = *v;
  } else {
    if (q_heads <= 0 || kv_heads <= 0) return Status::ok();
    q4 = {(*q)[0], Dim::known(q_heads), (*q)[1], divide((*q)[2], q_heads)};
    k4 = {(*k)[0], Dim::known(kv_heads), (*k)[1], divide((*k)[2], kv_heads)};
    v4 = {(*v)[0], Dim::known(kv_heads), (*v)[1], divide((*v)[2], kv_heads)};
  }
  if (q->size() == 4) {
    ctx.set_output_shape(0, {q4[0], q4[1], q4[2], v4[3]});
  } else {
    const Dim& v_head = v4[3];
    ctx.set_output_shape(0, {(*q)[0], (*q)[1], v_head.is_known() ? Dim::known(v_head.value * q_heads) : unknown_dim()});
  }
  // The present key/value append this step's keys to the past ones along the sequence.
  Dim total = k4[2];
  const Dims* past_key = ctx.input_shape(4);
  if (ctx.has_input(4)) {
    if (past_key == nullptr || past_key->size() != 4) return Status::ok();
    total = (*past_key)[2].is_known() && k4[2].is_known() ? Dim::known((*past_key)[2].value + k4[2].value) : unknown_dim();
  }
  if (ctx.has_output(1)) ctx.set_output_shape(1, {k4[0], k4[1], total, k4[3]});
  if (ctx.has_output(2)) ctx.set_output_shape(2, {v4[0], v4[1], total, v4[3]});
  if (ctx.has_output(3)) ctx.set_output_shape(3, {q4[0], q4[1], q4[2], total});
  return Status::ok();
}

// ---- ai.onnx.ml: mostly types, which is what the session needs to plan ----

ValueType map_of(DataType key, DataType value) {
  ValueType t;
  t.kind = ValueType::Kind::kMap;
  t.key_type = key;
  t.inner = std::make_shared<ValueType>(ValueType::tensor(value));
  return t;
}

Status zip_map(InferenceContext& ctx) {
  ValueType seq;
  seq.kind = ValueType::Kind::kSequence;
  const DataType key = ctx.has_attribute("classlabels_strings") ? DataType::kString : DataType::kInt64;
  seq.inner = std::make_shared<ValueType>(map_of(key, DataType::kFloat));
  ctx.set_output_type(0, seq);
  return Status::ok();
}

Status label_encoder(InferenceContext& ctx) {
  DataType type = DataType::kUndefined;
  if (ctx.has_attribute("values_strings") || ctx.has_attribute("default_string")) type = DataType::kString;
  if (ctx.has_attribute("values_int64s")) type = DataType::kInt64;
  if (ctx.has_attribute("values_floats")) type = DataType::kFloat;
  if (const Attribute* values = ctx.node().attribute("values_tensor"); values != nullptr && values->t.defined()) {
    type = values->t.dtype();
  }
  if (type == DataType::kUndefined && ctx.since_version() < 2) {
    // LabelEncoder-1 maps strings to int64 and back.
    type = ctx.input_type(0) == DataType::kString ? DataType::kInt64 : DataType::kString;
  }
  ctx.set_output(0, type, ctx.input_shape(0));
  return Status::ok();
}

Status category_mapper(InferenceContext& ctx) {
  const DataType in = ctx.input_type(0);
  if (in == DataType::kUndefined) return Status::ok();
  ctx.set_output(0, in == DataType::kString ? DataType::kInt64 : DataType::kString, ctx.input_shape(0));
  return Status::ok();
}

Status float_same_shape(InferenceContext& ctx) {
  ctx.set_output(0, DataType::kFloat, ctx.input_shape(0));
  return Status::ok();
}

Dim batch_of(InferenceContext& ctx) {
  const Dims* x = ctx.input_shape(0);
  if (x == nullptr || x->empty()) return unknown_dim();
  return x->size() == 1 ? Dim::known(1) : (*x)[0];
}

// Classifiers: label [N] (int64 or string by the class labels given), scores [N, classes].
Status classifier(InferenceContext& ctx) {
  const bool string_labels = ctx.has_attribute("classlabels_strings");
  const Dim n = batch_of(ctx);
  ctx.set_output_type(0, string_labels ? DataType::kString : DataType::kInt64);
  ctx.set_output_shape(0, {n});
  ctx.set_output_type(1, DataType::kFloat);
  ctx.set_output_shape(1, {n, unknown_dim()});
  return Status::ok();
}

// Regressors: [N, targets].
Status regressor(InferenceContext& ctx) {
  const Dim n = batch_of(ctx);
  const int64_t targets = ctx.attr_int("n_targets", ctx.attr_int("targets", -1));
  ctx.set_output_type(0, DataType::kFloat);
  ctx.set_output_shape(0, {n, targets > 0 ? Dim::known(targets) : unknown_dim()});
  return Status::ok();
}

}  // namespace

void register_misc_inference(InferenceTable& table) {
  table["Einsum"] = einsum;
  table["GridSample"] = grid_sample;
  table["Det"] = det;
  table["Crop"] = crop;
  table["Attention"] = attention;
  for (const char* op : {"Affine", "ScaledTanh", "ParametricSoftplus"}) table[op] = same_as_input;
  table["ai.onnx.ml:ZipMap"] = zip_map;
  table["ai.onnx.ml:LabelEncoder"] = label_encoder;
  table["ai.onnx.ml:CategoryMapper"] = category_mapper;
  table["ai.onnx.ml:Scaler"] = float_same_shape;
  table["ai.onnx.ml:Normalizer"] = float_same_shape;
  for (const char* op : {"ai.onnx.ml:LinearClassifier", "ai.onnx.ml:SVMClassifier", "ai.onnx.ml:TreeEnsembleClassifier"}) {
    table[op] = classifier;
  }
  for (const char* op : {"ai.onnx.ml:LinearRegressor", "ai.onnx.ml:SVMRegressor", "ai.onnx.ml:TreeEnsembleRegressor"}) {
    table[op] = regressor;
  }
}

}  // namespace onyx::graph::inference
