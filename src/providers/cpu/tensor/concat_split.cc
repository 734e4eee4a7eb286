// Concat and Split: both view the tensors as [outer, axis * inner] rows and
// move each row block with one memcpy (strided_copy collapses the rest).
// Concat skips inputs its producers already wrote into its output.
#include <algorithm>
#include <cstring>
#include <vector>

#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class ConcatKernel final : public Kernel {
 public:
  // v1 defaults axis to 1; from v4 it is required.
  explicit ConcatKernel(const KernelInfo& info) : axis_(info.attr_int("axis", 1)) {
    if (info.version() >= 4 && !info.has_attr("axis")) {
      throw Error(invalid_model(info.label(), ": attribute axis is required"));
    }
  }

  Status compute(KernelContext& ctx) const override {
    std::vector<const Tensor*> inputs;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
      const Tensor* t = ctx.input_tensor(i);
      if (t == nullptr) return invalid_argument(ctx.label(), ": input ", i, " is missing or not a tensor");
      inputs.push_back(t);
    }
    if (inputs.empty()) return invalid_argument(ctx.label(), ": needs at least one input");
    const Tensor& first = *inputs[0];
    const int64_t rank = first.rank();
    ONYX_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, rank, ctx.label()));
    Shape out_shape = first.shape();
    out_shape[static_cast<size_t>(axis)] = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = *inputs[i];
      if (t.dtype() != first.dtype()) {
        return invalid_argument(ctx.label(), ": input ", i, " has element type ", dtype_name(t.dtype()),
                                ", expected ", dtype_name(first.dtype()), " like input 0");
      }
      bool match = t.rank() == rank;
      for (int64_t d = 0; match && d < rank; ++d) match = d == axis || t.dim(d) == first.dim(d);
      if (!match) {
        return invalid_argument(ctx.label(), ": input ", i, " has shape ", shape_to_string(t.shape()),
                                ", expected ", shape_to_string(first.shape()), " except on axis ", axis);
      }
      out_shape[static_cast<size_t>(axis)] += t.dim(axis);
    }
    Tensor& out = ctx.allocate_output(0, first.dtype(), out_shape);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) {
      if (d < axis) outer *= out_shape[static_cast<size_t>(d)];
      if (d > axis) inner *= out_shape[static_cast<size_t>(d)];
    }
    const int64_t out_row = out_shape[static_cast<size_t>(axis)] * inner;
    if (first.dtype() != DataType::kString && outer * static_cast<int64_t>(inputs.size()) < 64) {
      // Few rows (a channel concat at batch 1): every input's rows in pieces
      // of at most 64 KiB, all in one parallel section, so the threads share
      // the copy instead of one thread copying each input in turn.
      constexpr size_t kPieceBytes = size_t{64} << 10;
      const size_t elem = dtype_size(first.dtype());
      struct Piece {
        char* dst;
        const char* src;
        size_t bytes;
      };
      std::vector<Piece> pieces;
      int64_t at = 0;
      for (const Tensor* t : inputs) {
        const int64_t row = t->dim(axis) * inner;
        for (int64_t o = 0; o < outer; ++o) {
          char* dst = static_cast<char*>(out.raw_data()) + static_cast<size_t>(o * out_row + at) * elem;
          const char* src = static_cast<const char*>(t->raw_data()) + static_cast<size_t>(o * row) * elem;
          const size_t bytes = static_cast<size_t>(row) * elem;
          if (dst == src) continue;  // written in place by its producer (see session/planner.cc)
          for (size_t done = 0; done < bytes; done += kPieceBytes) {
            pieces.push_back({dst + done, src + done, std::min(kPieceBytes, bytes - done)});
          }
        }
        at += row;
      }
      parallel_for(ctx.thread_pool(), static_cast<int64_t>(pieces.size()), static_cast<double>(kPieceBytes / 4),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t i = begin; i < end; ++i) {
                       const Piece& piece = pieces[static_cast<size_t>(i)];
                       std::memcpy(piece.dst, piece.src, piece.bytes);
                     }
                   });
      return Status::ok();
    }
    int64_t offset = 0;
    for (const Tensor* t : inputs) {
      const int64_t row = t->dim(axis) * inner;
      if (outer == 1 && t->raw_data() == element_at(out.raw_data(), first.dtype(), offset)) {
        offset += row;  // written in place by its producer
        continue;
      }
      strided_copy(first.dtype(), element_at(out.raw_data(), first.dtype(), offset), {out_row, 1}, t->raw_data(),
                   {row, 1}, {outer, row}, ctx.thread_pool());
      offset += row;
    }
    return Status::ok();
  }

 private:
  int64_t axis_;
};

// Split: sizes come from attribute `split` (v1, v2, v11), input 1 (v1 optional,
// v13+), num_outputs (v18, last chunk smaller) or an equal split.
class SplitKernel final : public Kernel {
 public:
  explicit SplitKernel(const KernelInfo& info)
      : version_(info.version()),
        axis_(info.attr_int("axis", 0)),
        attr_split_(info.attr_ints("split")),
        num_outputs_(info.attr_int("num_outputs", 0)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "input"));
    ONYX_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(axis_, data->rank(), ctx.label()));
    const int64_t dim = data->dim(axis);
    const int64_t n = static_cast<int64_t>(ctx.output_count());
    std::vector<int64_t> split = attr_split_;
    const Tensor* split_input = (version_ == 1 || version_ >= 13) ? ctx.input_tensor(1) : nullptr;
    if (split_input != nullptr) {
      ONYX_ASSIGN_OR_RETURN(split, read_ints(*split_input, ctx.label(), "split"));
    }
    if (split.empty()) {
      if (n <= 0) return invalid_argument(ctx.label(), ": has no outputs");
      if (num_outputs_ > 0 && num_outputs_ != n) {
        return invalid_argument(ctx.label(), ": num_outputs is ", num_outputs_, " but the node has ", n, " outputs");
      }
      if (num_outputs_ > 0) {
        const int64_t chunk = (dim + n - 1) / n;
        for (int64_t i = 0; i < n; ++i) split.push_back(std::max<int64_t>(0, std::min(chunk, dim - i * chunk)));
      } else {
        if (dim % n != 0) {
          return invalid_argument(ctx.label(), ": axis ", axis, " of size ", dim, " cannot be split evenly into ",
                                  n, " outputs");
        }
        split.assign(static_cast<size_t>(n), dim / n);
      }
    }
    if (static_cast<int64_t>(split.size()) != n) {
      return invalid_argument(ctx.label(), ": split ", shape_to_string(split), " has ", split.size(),
                              " entries, expected ", n, " (one per output)");
    }
    int64_t total = 0;
    for (int64_t s : split) {
      if (s < 0) return invalid_argument(ctx.label(), ": split ", shape_to_string(split), " has a negative size");
      total += s;
    }
    if (total != dim) {
      return invalid_argument(ctx.label(), ": split ", shape_to_string(split), " sums to ", total, ", expected ",
                              dim, " (the size of axis ", axis, ")");
    }
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < data->rank(); ++d) {
      if (d < axis) outer *= data->dim(d);
      if (d > axis) inner *= data->dim(d);
    }
    const int64_t in_row = dim * inner;
    int64_t offset = 0;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t row = split[static_cast<size_t>(i)] * inner;
      if (ctx.output_requested(static_cast<size_t>(i))) {
        Shape shape = data->shape();
        shape[static_cast<size_t>(axis)] = split[static_cast<size_t>(i)];
        Tensor& out = ctx.allocate_output(static_cast<size_t>(i), data->dtype(), shape);
        strided_copy(data->dtype(), out.raw_data(), {row, 1}, element_at(data->raw_data(), data->dtype(), offset),
                     {in_row, 1}, {outer, row}, ctx.thread_pool());
      }
      offset += row;
    }
    return Status::ok();
  }

 private:
  int version_;
  int64_t axis_;
  std::vector<int64_t> attr_split_;
  int64_t num_outputs_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "Concat", 1, 3, types::all(), ConcatKernel);
ONYX_REGISTER_CPU_KERNEL("", "Concat", 4, kLatestVersion, types::all(), ConcatKernel);
ONYX_REGISTER_CPU_KERNEL("", "Split", 1, 1, types::all(), SplitKernel);
ONYX_REGISTER_CPU_KERNEL("", "Split", 2, 12, types::all(), SplitKernel);
ONYX_REGISTER_CPU_KERNEL("", "Split", 13, 17, types::all(), SplitKernel);
ONYX_REGISTER_CPU_KERNEL("", "Split", 18, kLatestVersion, types::all(), SplitKernel);

}  // namespace onyx::cpu
