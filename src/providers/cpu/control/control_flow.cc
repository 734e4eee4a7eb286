// Control flow: If, Loop and Scan run their subgraphs through the session's
// executor (KernelContext::run_subgraph), so outer-scope values resolve in the
// current run and nested control flow works to any depth the model allows.
#include <cstring>

#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

// Copies `count` elements (strings by assignment).
void copy_elements(const Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset, int64_t count) {
  if (count <= 0) return;
  if (src.dtype() == DataType::kString) {
    const std::string* s = src.data<std::string>() + src_offset;
    std::string* d = dst.data<std::string>() + dst_offset;
    for (int64_t i = 0; i < count; ++i) d[i] = s[i];
    return;
  }
  const size_t elem = dtype_size(src.dtype());
  std::memcpy(static_cast<uint8_t*>(dst.raw_data()) + dst_offset * static_cast<int64_t>(elem),
              static_cast<const uint8_t*>(src.raw_data()) + src_offset * static_cast<int64_t>(elem),
              static_cast<size_t>(count) * elem);
}

// Slice `index` of `t` along `axis` (the axis removed).
Tensor take_slice(const Tensor& t, int64_t axis, int64_t index) {
  Shape shape = t.shape();
  const int64_t outer = shape_size(Shape(shape.begin(), shape.begin() + axis));
  const int64_t inner = shape_size(Shape(shape.begin() + axis + 1, shape.end()));
  const int64_t len = shape[static_cast<size_t>(axis)];
  shape.erase(shape.begin() + axis);
  Tensor out(t.dtype(), shape);
  for (int64_t o = 0; o < outer; ++o) copy_elements(t, (o * len + index) * inner, out, o * inner, inner);
  return out;
}

// Stacks equally shaped tensors along a new `axis`.
Result<Tensor> stack(const std::vector<Tensor>& parts, int64_t axis, const std::string& label, size_t output) {
  const Shape& part_shape = parts[0].shape();
  for (const Tensor& p : parts) {
    if (p.shape() != part_shape || p.dtype() != parts[0].dtype()) {
      return runtime_error(label, ": scan output ", output, " changes shape or type between iterations (",
                           parts[0].describe(), " then ", p.describe(), ")");
    }
  }
  if (axis < 0 || axis > static_cast<int64_t>(part_shape.size())) {
    return invalid_model(label, ": scan output axis ", axis, " is out of range for rank ", part_shape.size() + 1);
  }
  Shape shape = part_shape;
  shape.insert(shape.begin() + axis, static_cast<int64_t>(parts.size()));
  ONYX_ASSIGN_OR_RETURN(Tensor out, Tensor::create(parts[0].dtype(), shape));
  const int64_t outer = shape_size(Shape(part_shape.begin(), part_shape.begin() + axis));
  const int64_t inner = shape_size(Shape(part_shape.begin() + axis, part_shape.end()));
  const auto n = static_cast<int64_t>(parts.size());
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t o = 0; o < outer; ++o) copy_elements(parts[static_cast<size_t>(i)], o * inner, out, (o * n + i) * inner, inner);
  }
  return out;
}

Result<bool> read_bool(const Tensor* t, const std::string& label, const char* what) {
  if (t == nullptr || t->size() != 1) {
    return invalid_argument(label, ": ", what, " must be a tensor with one element",
                            t ? ", got " + t->describe() : std::string());
  }
  if (t->dtype() == DataType::kBool) return t->data<bool>()[0];
  return invalid_argument(label, ": ", what, " must be bool, got ", dtype_name(t->dtype()));
}

class IfKernel final : public Kernel {
 public:
  explicit IfKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(bool cond, read_bool(ctx.input_tensor(0), ctx.label(), "input cond"));
    std::vector<Value> outputs;
    ONYX_RETURN_IF_ERROR(ctx.run_subgraph(cond ? "then_branch" : "else_branch", {}, outputs));
    if (outputs.size() != ctx.output_count()) {
      return invalid_model(ctx.label(), ": the ", cond ? "then" : "else", " branch gives ", outputs.size(),
                           " outputs, the node has ", ctx.output_count());
    }
    for (size_t i = 0; i < outputs.size(); ++i) ctx.set_output(i, std::move(outputs[i]));
    return Status::ok();
  }
};

class LoopKernel final : public Kernel {
 public:
  explicit LoopKernel(const KernelInfo& info) {
    const graph::Attribute* body = info.attr("body");
    if (body == nullptr || !body->g) throw Error(invalid_model(info.label(), ": attribute 'body' is missing"));
    body_outputs_ = body->g->outputs.size();
    body_inputs_ = body->g->inputs.size();
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* max_trip = ctx.input_tensor(0);
    const Tensor* cond_in = ctx.input_tensor(1);
    int64_t trips = -1;  // unbounded
    if (max_trip != nullptr) {
      if (max_trip->size() != 1 || max_trip->dtype() != DataType::kInt64) {
        return invalid_argument(ctx.label(), ": input M must be one int64, got ", max_trip->describe());
      }
      trips = max_trip->data<int64_t>()[0];
    }
    bool cond = true;
    if (cond_in != nullptr) {
      ONYX_ASSIGN_OR_RETURN(cond, read_bool(cond_in, ctx.label(), "input cond"));
    }
    const size_t carried = ctx.input_count() >= 2 ? ctx.input_count() - 2 : 0;
    if (body_inputs_ != carried + 2) {
      return invalid_model(ctx.label(), ": the body takes ", body_inputs_, " inputs, expected ", carried + 2,
                           " (iteration, condition and ", carried, " loop-carried values)");
    }
    if (body_outputs_ < carried + 1) {
      return invalid_model(ctx.label(), ": the body gives ", body_outputs_, " outputs, expected at least ", carried + 1);
    }
    const size_t scans = body_outputs_ - 1 - carried;
    std::vector<Value> state(carried);
    for (size_t i = 0; i < carried; ++i) {
      const Value* v = ctx.input(i + 2);
      if (v) state[i] = *v;
    }
    std::vector<std::vector<Tensor>> scan_parts(scans);
    std::vector<Value> body_in(carried + 2);
    std::vector<Value> body_out;
    for (int64_t iter = 0; (trips < 0 || iter < trips) && cond; ++iter) {
      body_in[0] = Value(Tensor::scalar<int64_t>(iter));
      body_in[1] = Value(Tensor::scalar<bool>(cond));
      for (size_t i = 0; i < carried; ++i) body_in[i + 2] = state[i];
      ONYX_RETURN_IF_ERROR(ctx.run_subgraph("body", body_in, body_out));
      ONYX_ASSIGN_OR_RETURN(cond, read_bool(body_out[0].is_tensor() ? &body_out[0].tensor() : nullptr, ctx.label(),
                                            "the body's condition output"));
      for (size_t i = 0; i < carried; ++i) state[i] = std::move(body_out[i + 1]);
      for (size_t k = 0; k < scans; ++k) {
        const Value& v = body_out[1 + carried + k];
        if (!v.is_tensor()) return not_implemented(ctx.label(), ": scan output ", k, " is not a tensor");
        scan_parts[k].push_back(v.tensor());
      }
    }
    for (size_t i = 0; i < carried && i < ctx.output_count(); ++i) ctx.set_output(i, std::move(state[i]));
    for (size_t k = 0; k < scans && carried + k < ctx.output_count(); ++k) {
      if (scan_parts[k].empty()) {
        ctx.allocate_output(carried + k, DataType::kFloat, {0});
        continue;
      }
      ONYX_ASSIGN_OR_RETURN(Tensor stacked, stack(scan_parts[k], 0, ctx.label(), k));
      ctx.set_output(carried + k, Value(std::move(stacked)));
    }
    return Status::ok();
  }

 private:
  size_t body_outputs_ = 0;
  size_t body_inputs_ = 0;
};

// Scan-9 and later: no batch axis; Scan-8: a leading batch axis and sequence_lens.
class ScanKernel final : public Kernel {
 public:
  explicit ScanKernel(const KernelInfo& info) : batched_(info.version() < 9) {
    const graph::Attribute* body = info.attr("body");
    if (body == nullptr || !body->g) throw Error(invalid_model(info.label(), ": attribute 'body' is missing"));
    num_scan_inputs_ = info.attr_int("num_scan_inputs", -1);
    if (num_scan_inputs_ < 0) throw Error(invalid_model(info.label(), ": attribute 'num_scan_inputs' is missing"));
    input_axes_ = info.attr_ints("scan_input_axes");
    input_directions_ = info.attr_ints(batched_ ? "directions" : "scan_input_directions");
    output_axes_ = info.attr_ints("scan_output_axes");
    output_directions_ = info.attr_ints("scan_output_directions");
    body_outputs_ = body->g->outputs.size();
  }

  Status compute(KernelContext& ctx) const override {
    const size_t first = batched_ ? 1 : 0;  // Scan-8's sequence_lens input
    const size_t total_inputs = ctx.input_count() - first;
    if (static_cast<int64_t>(total_inputs) < num_scan_inputs_) {
      return invalid_model(ctx.label(), ": num_scan_inputs ", num_scan_inputs_, " exceeds the ", total_inputs, " inputs");
    }
    const size_t scan_in = static_cast<size_t>(num_scan_inputs_);
    const size_t state_count = total_inputs - scan_in;
    if (body_outputs_ < state_count) return invalid_model(ctx.label(), ": the body gives too few outputs");
    const size_t scan_out = body_outputs_ - state_count;

    if (!batched_) {
      std::vector<Value> state(state_count);
      for (size_t i = 0; i < state_count; ++i) state[i] = *ctx.input(first + i);
      std::vector<Tensor> inputs(scan_in);
      std::vector<int64_t> axes(scan_in, 0);
      int64_t length = -1;
      for (size_t j = 0; j < scan_in; ++j) {
        const Tensor* t = ctx.input_tensor(first + state_count + j);
        if (t == nullptr) return invalid_argument(ctx.label(), ": scan input ", j, " is missing");
        int64_t axis = j < input_axes_.size() ? input_axes_[j] : 0;
        if (axis < 0) axis += t->rank();
        if (axis < 0 || axis >= t->rank()) return invalid_argument(ctx.label(), ": scan input axis out of range");
        axes[j] = axis;
        if (length >= 0 && t->dim(axis) != length) {
          return invalid_argument(ctx.label(), ": scan inputs have different lengths (", length, " and ", t->dim(axis), ")");
        }
        length = t->dim(axis);
        inputs[j] = *t;
      }
      if (length < 0) length = 0;
      std::vector<std::vector<Tensor>> parts(scan_out);
      std::vector<Value> body_in(state_count + scan_in), body_out;
      for (int64_t it = 0; it < length; ++it) {
        for (size_t i = 0; i < state_count; ++i) body_in[i] = state[i];
        for (size_t j = 0; j < scan_in; ++j) {
          const bool reverse = j < input_directions_.size() && input_directions_[j] == 1;
          body_in[state_count + j] = Value(take_slice(inputs[j], axes[j], reverse ? length - 1 - it : it));
        }
        ONYX_RETURN_IF_ERROR(ctx.run_subgraph("body", body_in, body_out));
        for (size_t i = 0; i < state_count; ++i) state[i] = body_out[i];
        for (size_t k = 0; k < scan_out; ++k) parts[k].push_back(body_out[state_count + k].tensor());
      }
      for (size_t i = 0; i < state_count; ++i) ctx.set_output(i, state[i]);
      for (size_t k = 0; k < scan_out; ++k) {
        if (parts[k].empty()) {
          ctx.allocate_output(state_count + k, DataType::kFloat, {0});
          continue;
        }
        if (k < output_directions_.size() && output_directions_[k] == 1) {
          std::reverse(parts[k].begin(), parts[k].end());
        }
        int64_t axis = k < output_axes_.size() ? output_axes_[k] : 0;
        if (axis < 0) axis += parts[k][0].rank() + 1;
        ONYX_ASSIGN_OR_RETURN(Tensor stacked, stack(parts[k], axis, ctx.label(), k));
        ctx.set_output(state_count + k, Value(std::move(stacked)));
      }
      return Status::ok();
    }

    // Scan-8: run each batch entry separately, then stack along axis 0.
    int64_t batch = -1;
    for (size_t i = first; i < ctx.input_count(); ++i) {
      const Tensor* t = ctx.input_tensor(i);
      if (t == nullptr || t->rank() < 1) return invalid_argument(ctx.label(), ": input ", i, " must have a batch axis");
      if (batch >= 0 && t->dim(0) != batch) return invalid_argument(ctx.label(), ": inputs disagree on the batch size");
      batch = t->dim(0);
    }
    const Tensor* lens = ctx.input_tensor(0);
    std::vector<std::vector<Tensor>> outs(body_outputs_);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<Value> state(state_count);
      for (size_t i = 0; i < state_count; ++i) state[i] = Value(take_slice(*ctx.input_tensor(first + i), 0, b));
      std::vector<Tensor> inputs(scan_in);
      for (size_t j = 0; j < scan_in; ++j) inputs[j] = take_slice(*ctx.input_tensor(first + state_count + j), 0, b);
      int64_t length = scan_in ? inputs[0].dim(0) : 0;
      if (lens != nullptr && lens->dtype() == DataType::kInt64 && lens->size() == batch) {
        length = std::min(length, lens->data<int64_t>()[b]);
      }
      std::vector<std::vector<Tensor>> parts(scan_out);
      std::vector<Value> body_in(state_count + scan_in), body_out;
      for (int64_t it = 0; it < length; ++it) {
        for (size_t i = 0; i < state_count; ++i) body_in[i] = state[i];
        for (size_t j = 0; j < scan_in; ++j) {
          const bool reverse = j < input_directions_.size() && input_directions_[j] == 1;
          body_in[state_count + j] = Value(take_slice(inputs[j], 0, reverse ? length - 1 - it : it));
        }
        ONYX_RETURN_IF_ERROR(ctx.run_subgraph("body", body_in, body_out));
        for (size_t i = 0; i < state_count; ++i) state[i] = body_out[i];
        for (size_t k = 0; k < scan_out; ++k) parts[k].push_back(body_out[state_count + k].tensor());
      }
      for (size_t i = 0; i < state_count; ++i) outs[i].push_back(state[i].tensor());
      for (size_t k = 0; k < scan_out; ++k) {
        if (parts[k].empty()) return not_implemented(ctx.label(), ": empty scans are not supported in Scan-8");
        ONYX_ASSIGN_OR_RETURN(Tensor stacked, stack(parts[k], 0, ctx.label(), k));
        outs[state_count + k].push_back(std::move(stacked));
      }
    }
    for (size_t o = 0; o < body_outputs_ && o < ctx.output_count(); ++o) {
      if (outs[o].empty()) return not_implemented(ctx.label(), ": an empty batch is not supported in Scan-8");
      ONYX_ASSIGN_OR_RETURN(Tensor stacked, stack(outs[o], 0, ctx.label(), o));
      ctx.set_output(o, Value(std::move(stacked)));
    }
    return Status::ok();
  }

 private:
  bool batched_;
  int64_t num_scan_inputs_ = 0;
  std::vector<int64_t> input_axes_, input_directions_, output_axes_, output_directions_;
  size_t body_outputs_ = 0;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "If", 1, kLatestVersion, types::all(), IfKernel);
ONYX_REGISTER_CPU_KERNEL("", "Loop", 1, kLatestVersion, types::all(), LoopKernel);
ONYX_REGISTER_CPU_KERNEL("", "Scan", 8, kLatestVersion, types::all(), ScanKernel);

}  // namespace onyx::cpu
