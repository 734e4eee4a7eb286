// TensorScatter (opset 24): writes `update` into a copy of `past_cache` along
// the sequence axis at a per-batch write index, linearly or wrapping around
// (circular), the functional form of an in-place KV-cache update.
#include <cstring>
#include <string>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class TensorScatterKernel final : public Kernel {
 public:
  explicit TensorScatterKernel(const KernelInfo& info) : axis_(info.attr_int("axis", -2)) {
    const std::string mode = info.attr_string("mode", "linear");
    if (mode != "linear" && mode != "circular") {
      throw Error(invalid_model(info.label(), ": attribute mode is '", mode, "', expected 'linear' or 'circular'"));
    }
    circular_ = mode == "circular";
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* past = ctx.input_tensor(0);
    const Tensor* update = ctx.input_count() > 1 ? ctx.input_tensor(1) : nullptr;
    const Tensor* indices = ctx.input_count() > 2 ? ctx.input_tensor(2) : nullptr;
    if (past == nullptr || update == nullptr) return invalid_argument(ctx.label(), ": inputs past_cache and update are required");
    const int64_t rank = past->rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (rank < 2 || axis < 1 || axis >= rank) {
      return invalid_argument(ctx.label(), ": axis ", axis_, " is out of range for past_cache ", past->describe(),
                              " (it must name a non-batch axis)");
    }
    if (update->dtype() != past->dtype() || update->rank() != rank) {
      return invalid_argument(ctx.label(), ": input update is ", update->describe(), ", expected ", dtype_name(past->dtype()),
                              " of rank ", rank, " like past_cache ", past->describe());
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (d == axis ? update->dim(d) > past->dim(d) : update->dim(d) != past->dim(d)) {
        return invalid_argument(ctx.label(), ": input update ", update->describe(), " does not fit past_cache ", past->describe(),
                                " (axis ", axis, " may be shorter, the others must match)");
      }
    }
    const int64_t batch = past->dim(0), max_len = past->dim(axis), len = update->dim(axis);
    if (indices != nullptr &&
        ((indices->dtype() != DataType::kInt64 && indices->dtype() != DataType::kInt32) || indices->rank() != 1 ||
         indices->dim(0) != batch)) {
      return invalid_argument(ctx.label(), ": input write_indices is ", indices->describe(), ", expected int64[", batch, "]");
    }
    auto write_index = [&](int64_t b) -> int64_t {
      if (indices == nullptr) return 0;
      return indices->dtype() == DataType::kInt64 ? indices->data<int64_t>()[b] : indices->data<int32_t>()[b];
    };
    for (int64_t b = 0; b < batch; ++b) {
      const int64_t w = write_index(b);
      if (!circular_ && (w < 0 || w + len > max_len)) {
        return invalid_argument(ctx.label(), ": write_indices[", b, "] is ", w, ", expected 0 <= index and index + ", len,
                                " <= ", max_len, " in linear mode");
      }
    }
    const DataType dtype = past->dtype();
    if (dtype == DataType::kUInt4 || dtype == DataType::kInt4 || dtype == DataType::kFloat4E2M1 ||
        dtype == DataType::kUInt2 || dtype == DataType::kInt2) {
      return not_implemented(ctx.label(), ": element type ", dtype_name(dtype), " is not supported");
    }
    Tensor& out = ctx.allocate_output(0, dtype, past->shape());
    // (outer, axis, inner) view: outer covers batch and the axes before `axis`.
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= past->dim(d);
    for (int64_t d = axis + 1; d < rank; ++d) inner *= past->dim(d);
    const int64_t per_batch = outer / (batch == 0 ? 1 : batch);
    auto target_row = [&](int64_t o, int64_t s) -> int64_t {
      int64_t pos = write_index(o / per_batch) + s;
      if (circular_) pos = ((pos % max_len) + max_len) % max_len;
      return pos;
    };
    if (dtype == DataType::kString) {
      const std::string* src = past->data<std::string>();
      const std::string* up = update->data<std::string>();
      std::string* dst = out.data<std::string>();
      for (int64_t i = 0; i < past->size(); ++i) dst[i] = src[i];
      if (max_len == 0) return Status::ok();
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t s = 0; s < len; ++s) {
          const int64_t pos = target_row(o, s);
          for (int64_t i = 0; i < inner; ++i) dst[(o * max_len + pos) * inner + i] = up[(o * len + s) * inner + i];
        }
      return Status::ok();
    }
    const size_t elem = dtype_size(dtype);
    if (past->bytes() > 0) std::memcpy(out.raw_data(), past->raw_data(), past->bytes());
    if (max_len == 0) return Status::ok();
    const char* up = static_cast<const char*>(update->raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    const size_t row_bytes = static_cast<size_t>(inner) * elem;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t s = 0; s < len; ++s) {
        const int64_t pos = target_row(o, s);
        std::memcpy(dst + static_cast<size_t>(o * max_len + pos) * row_bytes, up + static_cast<size_t>(o * len + s) * row_bytes,
                    row_bytes);
      }
    return Status::ok();
  }

 private:
  int64_t axis_;
  bool circular_ = false;
};

ONYX_REGISTER_CPU_KERNEL("", "TensorScatter", 24, kLatestVersion, types::all(), TensorScatterKernel);

}  // namespace
}  // namespace onyx::cpu
