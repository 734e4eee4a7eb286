// Trilu: keeps the upper or lower triangle (shifted by k) of the last two dims
// and zeroes the rest.
#include <algorithm>

#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class TriluKernel final : public Kernel {
 public:
  explicit TriluKernel(const KernelInfo& info) : upper_(info.attr_int("upper", 1) != 0) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "input"));
    if (data->rank() < 2) return invalid_argument(ctx.label(), ": input has rank ", data->rank(), ", expected >= 2");
    int64_t k = 0;
    if (const Tensor* k_t = ctx.input_tensor(1)) {
      ONYX_ASSIGN_OR_RETURN(auto ks, read_ints(*k_t, ctx.label(), "k"));
      if (ks.size() != 1) return invalid_argument(ctx.label(), ": input k has ", ks.size(), " elements, expected 1");
      k = ks[0];
    }
    const DataType dtype = data->dtype();
    Tensor& out = ctx.allocate_output(0, dtype, data->shape());
    const int64_t rows = data->dim(data->rank() - 2), cols = data->dim(data->rank() - 1);
    const int64_t matrices = rows * cols == 0 ? 0 : data->size() / (rows * cols);
    Tensor zero(dtype, {});
    zero_fill(zero);
    const bool upper = upper_;
    parallel_for(ctx.thread_pool(), matrices * rows, static_cast<double>(cols), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t i = r % rows;
        // Row i keeps columns j with j - i >= k (upper) or j - i <= k (lower).
        int64_t keep_begin = upper ? i + k : 0;
        int64_t keep_end = upper ? cols : i + k + 1;
        keep_begin = std::clamp<int64_t>(keep_begin, 0, cols);
        keep_end = std::clamp<int64_t>(keep_end, keep_begin, cols);
        void* dst = element_at(out.raw_data(), dtype, r * cols);
        const void* src = element_at(data->raw_data(), dtype, r * cols);
        fill_elements(dtype, dst, zero.raw_data(), keep_begin);
        copy_elements(dtype, element_at(dst, dtype, keep_begin), element_at(src, dtype, keep_begin),
                      keep_end - keep_begin);
        fill_elements(dtype, element_at(dst, dtype, keep_end), zero.raw_data(), cols - keep_end);
      }
    });
    return Status::ok();
  }

 private:
  bool upper_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "Trilu", 14, kLatestVersion, types::all(), TriluKernel);

}  // namespace onyx::cpu
