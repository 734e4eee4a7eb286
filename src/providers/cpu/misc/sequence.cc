// Tensor-sequence ops: SequenceConstruct/Empty/At/Insert/Erase/Length,
// SplitToSequence and ConcatFromSequence. Sequence items share their tensors'
// buffers (values are immutable once produced), so building a new sequence
// copies no tensor data.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

Result<const Sequence*> sequence_input(const KernelContext& ctx, size_t i, const char* name) {
  const Value* v = ctx.input(i);
  if (v == nullptr || !v->is_sequence()) {
    return invalid_argument(ctx.label(), ": input ", name, " is ", v ? v->describe() : std::string("missing"),
                            ", expected a sequence of tensors");
  }
  return &v->items();
}

ValueType sequence_elem_type(const Value& seq) {
  if (!seq.items().empty()) return seq.items()[0].type();
  return seq.declared_type();
}

// Reads a scalar int32/int64 position input.
Result<int64_t> position_input(const KernelContext& ctx, size_t i) {
  const Tensor* t = ctx.input_tensor(i);
  if (t == nullptr || t->size() != 1 || (t->dtype() != DataType::kInt64 && t->dtype() != DataType::kInt32)) {
    return invalid_argument(ctx.label(), ": input position is ", t ? t->describe() : std::string("not a tensor"),
                            ", expected a scalar int32 or int64");
  }
  return t->dtype() == DataType::kInt64 ? t->data<int64_t>()[0] : static_cast<int64_t>(t->data<int32_t>()[0]);
}

// Copies elements [begin, begin+len) along `axis` of x into a new tensor.
Tensor slice_axis(const Tensor& x, int64_t axis, int64_t begin, int64_t len) {
  Shape shape = x.shape();
  shape[static_cast<size_t>(axis)] = len;
  Tensor out(x.dtype(), shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  for (int64_t d = axis + 1; d < x.rank(); ++d) inner *= x.dim(d);
  const int64_t n = x.dim(axis);
  if (x.dtype() == DataType::kString) {
    const std::string* src = x.data<std::string>();
    std::string* dst = out.data<std::string>();
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < len * inner; ++i) dst[o * len * inner + i] = src[(o * n + begin) * inner + i];
    return out;
  }
  const size_t es = dtype_size(x.dtype());
  const auto* src = static_cast<const uint8_t*>(x.raw_data());
  auto* dst = static_cast<uint8_t*>(out.raw_data());
  const size_t chunk = static_cast<size_t>(len * inner) * es;
  for (int64_t o = 0; o < outer; ++o) {
    if (chunk) std::memcpy(dst + static_cast<size_t>(o) * chunk, src + static_cast<size_t>((o * n + begin) * inner) * es, chunk);
  }
  return out;
}

class SequenceConstructKernel final : public Kernel {
 public:
  explicit SequenceConstructKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    Sequence items;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
      const Tensor* t = ctx.input_tensor(i);
      if (t == nullptr) return invalid_argument(ctx.label(), ": input ", i, " is not a tensor");
      if (!items.empty() && t->dtype() != items[0].tensor().dtype()) {
        return invalid_argument(ctx.label(), ": input ", i, " has type ", dtype_name(t->dtype()), ", expected ",
                                dtype_name(items[0].tensor().dtype()), " like input 0");
      }
      items.emplace_back(*t);
    }
    ValueType elem = items.empty() ? ValueType{} : ValueType::tensor(items[0].tensor().dtype());
    ctx.set_output(0, Value::sequence(std::move(items), elem));
    return Status::ok();
  }
};

class SequenceEmptyKernel final : public Kernel {
 public:
  explicit SequenceEmptyKernel(const KernelInfo& info)
      : dtype_(static_cast<DataType>(info.attr_int("dtype", static_cast<int64_t>(DataType::kFloat)))) {}
  Status compute(KernelContext& ctx) const override {
    ctx.set_output(0, Value::sequence({}, ValueType::tensor(dtype_)));
    return Status::ok();
  }

 private:
  DataType dtype_;
};

class SequenceAtKernel final : public Kernel {
 public:
  explicit SequenceAtKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Sequence* seq, sequence_input(ctx, 0, "input_sequence"));
    ONYX_ASSIGN_OR_RETURN(int64_t pos, position_input(ctx, 1));
    const int64_t n = static_cast<int64_t>(seq->size());
    if (pos < -n || pos >= n) {
      return invalid_argument(ctx.label(), ": position ", pos, " is out of range for a sequence of length ", n);
    }
    if (pos < 0) pos += n;
    ctx.set_output(0, (*seq)[static_cast<size_t>(pos)]);
    return Status::ok();
  }
};

class SequenceInsertKernel final : public Kernel {
 public:
  explicit SequenceInsertKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Sequence* seq, sequence_input(ctx, 0, "input_sequence"));
    const Tensor* t = ctx.input_tensor(1);
    if (t == nullptr) return invalid_argument(ctx.label(), ": input tensor is missing or not a tensor");
    const ValueType elem = sequence_elem_type(*ctx.input(0));
    if (elem.kind == ValueType::Kind::kTensor && elem.elem_type != DataType::kUndefined && elem.elem_type != t->dtype()) {
      return invalid_argument(ctx.label(), ": input tensor has type ", dtype_name(t->dtype()), ", expected ",
                              dtype_name(elem.elem_type), " like the sequence");
    }
    const int64_t n = static_cast<int64_t>(seq->size());
    int64_t pos = n;
    if (ctx.input_tensor(2) != nullptr) {
      ONYX_ASSIGN_OR_RETURN(pos, position_input(ctx, 2));
      if (pos < -n || pos > n) {
        return invalid_argument(ctx.label(), ": position ", pos, " is out of range for a sequence of length ", n);
      }
      if (pos < 0) pos += n;
    }
    Sequence items = *seq;
    items.insert(items.begin() + pos, Value(*t));
    ctx.set_output(0, Value::sequence(std::move(items), ValueType::tensor(t->dtype())));
    return Status::ok();
  }
};

class SequenceEraseKernel final : public Kernel {
 public:
  explicit SequenceEraseKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Sequence* seq, sequence_input(ctx, 0, "input_sequence"));
    const int64_t n = static_cast<int64_t>(seq->size());
    int64_t pos = n - 1;
    if (ctx.input_tensor(1) != nullptr) {
      ONYX_ASSIGN_OR_RETURN(pos, position_input(ctx, 1));
    }
    if (pos < -n || pos >= n) {
      return invalid_argument(ctx.label(), ": position ", pos, " is out of range for a sequence of length ", n);
    }
    if (pos < 0) pos += n;
    Sequence items = *seq;
    items.erase(items.begin() + pos);
    ctx.set_output(0, Value::sequence(std::move(items), sequence_elem_type(*ctx.input(0))));
    return Status::ok();
  }
};

class SequenceLengthKernel final : public Kernel {
 public:
  explicit SequenceLengthKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Sequence* seq, sequence_input(ctx, 0, "input_sequence"));
    Tensor& y = ctx.allocate_output(0, DataType::kInt64, {});
    y.data<int64_t>()[0] = static_cast<int64_t>(seq->size());
    return Status::ok();
  }
};

class SplitToSequenceKernel final : public Kernel {
 public:
  explicit SplitToSequenceKernel(const KernelInfo& info)
      : axis_(info.attr_int("axis", 0)), keepdims_(info.attr_int("keepdims", 1) != 0) {}
  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input is missing");
    const int64_t rank = x->rank();
    if (axis_ < -rank || axis_ >= rank) {
      return invalid_argument(ctx.label(), ": attribute axis ", axis_, " is out of range for input of rank ", rank);
    }
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    const int64_t n = x->dim(axis);
    std::vector<int64_t> lengths;
    const Tensor* split = ctx.input_tensor(1);
    bool squeeze = false;
    if (split == nullptr) {
      lengths.assign(static_cast<size_t>(n), 1);
      squeeze = !keepdims_;
    } else {
      if (split->dtype() != DataType::kInt64 && split->dtype() != DataType::kInt32) {
        return invalid_argument(ctx.label(), ": input split has type ", dtype_name(split->dtype()), ", expected int32 or int64");
      }
      std::vector<int64_t> values;
      for (int64_t i = 0; i < split->size(); ++i) {
        values.push_back(split->dtype() == DataType::kInt64 ? split->data<int64_t>()[i] : split->data<int32_t>()[i]);
      }
      if (split->rank() == 0) {
        const int64_t chunk = values[0];
        if (chunk <= 0) return invalid_argument(ctx.label(), ": split ", chunk, " must be positive");
        for (int64_t at = 0; at < n; at += chunk) lengths.push_back(std::min(chunk, n - at));
      } else {
        int64_t total = 0;
        for (int64_t v : values) {
          if (v < 0) return invalid_argument(ctx.label(), ": split has a negative length ", v);
          total += v;
        }
        if (total != n) {
          return invalid_argument(ctx.label(), ": split lengths sum to ", total, ", expected ", n, " (the size of axis ", axis, ")");
        }
        lengths = values;
      }
    }
    Sequence items;
    int64_t at = 0;
    for (int64_t len : lengths) {
      Tensor part = slice_axis(*x, axis, at, len);
      if (squeeze) {
        Shape s = part.shape();
        s.erase(s.begin() + axis);
        part = part.reshaped(s);
      }
      items.emplace_back(std::move(part));
      at += len;
    }
    ctx.set_output(0, Value::sequence(std::move(items), ValueType::tensor(x->dtype())));
    return Status::ok();
  }

 private:
  int64_t axis_;
  bool keepdims_;
};

class ConcatFromSequenceKernel final : public Kernel {
 public:
  explicit ConcatFromSequenceKernel(const KernelInfo& info) : new_axis_(info.attr_int("new_axis", 0) != 0) {
    if (!info.has_attr("axis")) throw Error(invalid_model(info.label(), ": attribute axis is required"));
    axis_ = info.attr_int("axis", 0);
  }
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Sequence* seq, sequence_input(ctx, 0, "input_sequence"));
    if (seq->empty()) return invalid_argument(ctx.label(), ": input_sequence is empty, expected at least one tensor");
    const Tensor& first = (*seq)[0].tensor();
    const int64_t rank = first.rank();
    const int64_t out_rank = new_axis_ ? rank + 1 : rank;
    if (axis_ < -out_rank || axis_ >= out_rank) {
      return invalid_argument(ctx.label(), ": attribute axis ", axis_, " is out of range for tensors of rank ", rank);
    }
    const int64_t axis = axis_ < 0 ? axis_ + out_rank : axis_;
    // View each item with the concat axis present (size 1 for stacking).
    std::vector<Tensor> parts;
    int64_t total = 0;
    for (size_t i = 0; i < seq->size(); ++i) {
      const Value& v = (*seq)[i];
      if (!v.is_tensor()) return invalid_argument(ctx.label(), ": sequence item ", i, " is not a tensor");
      Tensor t = v.tensor();
      if (t.dtype() != first.dtype() || t.rank() != rank) {
        return invalid_argument(ctx.label(), ": sequence item ", i, " is ", t.describe(), ", expected the type and rank of ",
                                first.describe());
      }
      if (new_axis_) {
        Shape s = t.shape();
        s.insert(s.begin() + axis, 1);
        t = t.reshaped(s);
      }
      for (int64_t d = 0; d < out_rank; ++d) {
        if (d != axis && !parts.empty() && t.dim(d) != parts[0].dim(d)) {
          return invalid_argument(ctx.label(), ": sequence item ", i, " is ", v.tensor().describe(),
                                  ", which differs from item 0 outside axis ", axis);
        }
      }
      total += t.dim(axis);
      parts.push_back(std::move(t));
    }
    Shape out_shape = parts[0].shape();
    out_shape[static_cast<size_t>(axis)] = total;
    Tensor& y = ctx.allocate_output(0, first.dtype(), out_shape);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out_shape[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < out_rank; ++d) inner *= out_shape[static_cast<size_t>(d)];
    int64_t at = 0;
    for (const Tensor& p : parts) {
      const int64_t len = p.dim(axis);
      if (first.dtype() == DataType::kString) {
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t i = 0; i < len * inner; ++i)
            y.data<std::string>()[(o * total + at) * inner + i] = p.data<std::string>()[o * len * inner + i];
      } else {
        const size_t es = dtype_size(first.dtype());
        const size_t chunk = static_cast<size_t>(len * inner) * es;
        for (int64_t o = 0; o < outer; ++o) {
          if (chunk == 0) continue;
          std::memcpy(static_cast<uint8_t*>(y.raw_data()) + static_cast<size_t>((o * total + at) * inner) * es,
                      static_cast<const uint8_t*>(p.raw_data()) + static_cast<size_t>(o) * chunk, chunk);
        }
      }
      at += len;
    }
    return Status::ok();
  }

 private:
  int64_t axis_ = 0;
  bool new_axis_;
};

// SequenceMap: runs the `body` subgraph once per item of the first sequence;
// other sequence inputs give their i-th item, tensors are passed whole.
class SequenceMapKernel final : public Kernel {
 public:
  explicit SequenceMapKernel(const KernelInfo&) {}
  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Sequence* first, sequence_input(ctx, 0, "input_sequence"));
    const size_t n = first->size();
    for (size_t k = 1; k < ctx.input_count(); ++k) {
      const Value* v = ctx.input(k);
      if (v == nullptr) return invalid_argument(ctx.label(), ": additional input ", k, " is missing");
      if (v->is_sequence() && v->items().size() != n) {
        return invalid_argument(ctx.label(), ": input ", k, " is a sequence of ", v->items().size(), " items, expected ", n);
      }
    }
    std::vector<Sequence> results(ctx.output_count());
    for (size_t i = 0; i < n; ++i) {
      std::vector<Value> body_in{(*first)[i]};
      for (size_t k = 1; k < ctx.input_count(); ++k) {
        const Value* v = ctx.input(k);
        body_in.push_back(v->is_sequence() ? v->items()[i] : *v);
      }
      std::vector<Value> body_out;
      ONYX_RETURN_IF_ERROR(ctx.run_subgraph("body", body_in, body_out));
      if (body_out.size() != results.size()) {
        return invalid_argument(ctx.label(), ": body gave ", body_out.size(), " outputs, expected ", results.size());
      }
      for (size_t o = 0; o < results.size(); ++o) results[o].push_back(std::move(body_out[o]));
    }
    for (size_t o = 0; o < results.size(); ++o) {
      ValueType elem = results[o].empty() ? ValueType{} : results[o][0].type();
      ctx.set_output(o, Value::sequence(std::move(results[o]), elem));
    }
    return Status::ok();
  }
};

ONYX_REGISTER_CPU_KERNEL("", "SequenceConstruct", 11, kLatestVersion, types::all(), SequenceConstructKernel);
ONYX_REGISTER_CPU_KERNEL("", "SequenceEmpty", 11, kLatestVersion, types::all(), SequenceEmptyKernel);
ONYX_REGISTER_CPU_KERNEL("", "SequenceAt", 11, kLatestVersion, types::all(), SequenceAtKernel);
ONYX_REGISTER_CPU_KERNEL("", "SequenceInsert", 11, kLatestVersion, types::all(), SequenceInsertKernel);
ONYX_REGISTER_CPU_KERNEL("", "SequenceErase", 11, kLatestVersion, types::all(), SequenceEraseKernel);
ONYX_REGISTER_CPU_KERNEL("", "SequenceLength", 11, kLatestVersion, types::all(), SequenceLengthKernel);
ONYX_REGISTER_CPU_KERNEL("", "SplitToSequence", 11, 23, types::all(), SplitToSequenceKernel);
ONYX_REGISTER_CPU_KERNEL("", "SplitToSequence", 24, kLatestVersion, types::all(), SplitToSequenceKernel);
ONYX_REGISTER_CPU_KERNEL("", "ConcatFromSequence", 11, kLatestVersion, types::all(), ConcatFromSequenceKernel);
ONYX_REGISTER_CPU_KERNEL("", "SequenceMap", 17, kLatestVersion, types::all(), SequenceMapKernel);

}  // namespace
}  // namespace onyx::cpu
