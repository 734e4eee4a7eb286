// Unique: the distinct elements (or, with axis, distinct slices along axis),
// sorted or in order of first occurrence, with first-occurrence indices,
// inverse indices and counts, as numpy.unique returns them.
#include <algorithm>
#include <numeric>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class UniqueKernel final : public Kernel {
 public:
  explicit UniqueKernel(const KernelInfo& info)
      : has_axis_(info.has_attr("axis")), axis_(info.attr_int("axis", 0)), sorted_(info.attr_int("sorted", 1) != 0) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "X"));
    // Items are compared as rows: item i is made of the elements at
    // o * dim * inner + i * inner + e for o < outer, e < inner, in that order
    // (numpy moves the axis to the front and compares the rest row-major).
    int64_t outer = 1, dim = data->size(), inner = 1, axis = 0;
    if (has_axis_) {
      ONYX_ASSIGN_OR_RETURN(axis, normalize_axis(axis_, data->rank(), ctx.label()));
      dim = data->dim(axis);
      for (int64_t d = 0; d < data->rank(); ++d) {
        if (d < axis) outer *= data->dim(d);
        if (d > axis) inner *= data->dim(d);
      }
    }
    std::vector<int64_t> order(static_cast<size_t>(dim));
    std::iota(order.begin(), order.end(), 0);
    std::vector<int64_t> group_of(static_cast<size_t>(dim));  // sorted group of each item
    std::vector<int64_t> group_first;                          // first item of each sorted group
    std::vector<int64_t> group_count;
    auto run = [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* x = data->data<T>();
      auto at = [&](int64_t item, int64_t k) -> C {
        return static_cast<C>(x[(k / inner) * dim * inner + item * inner + k % inner]);
      };
      const int64_t row = outer * inner;
      auto less = [&](int64_t a, int64_t b) {
        for (int64_t k = 0; k < row; ++k) {
          const C va = at(a, k), vb = at(b, k);
          if (va < vb) return true;
          if (vb < va) return false;
        }
        return false;
      };
      std::stable_sort(order.begin(), order.end(), less);
      for (size_t i = 0; i < order.size(); ++i) {
        if (i == 0 || less(order[i - 1], order[i])) {
          group_first.push_back(order[i]);
          group_count.push_back(0);
        }
        group_of[static_cast<size_t>(order[i])] = static_cast<int64_t>(group_first.size()) - 1;
        ++group_count.back();
      }
      return Status::ok();
    };
    Status status = data->dtype() == DataType::kString ? run(TypeTag<std::string>{})
                                                       : dispatch_numeric_or_bool(data->dtype(), run);
    if (!status.is_ok()) return invalid_argument(ctx.label(), ": ", status.message());
    const int64_t groups = static_cast<int64_t>(group_first.size());
    // Output position of each sorted group: identity when sorted, else by first occurrence.
    std::vector<int64_t> position(static_cast<size_t>(groups));
    std::iota(position.begin(), position.end(), 0);
    std::vector<int64_t> by_position(position);
    if (!sorted_) {
      std::sort(by_position.begin(), by_position.end(), [&](int64_t a, int64_t b) {
        return group_first[static_cast<size_t>(a)] < group_first[static_cast<size_t>(b)];
      });
      for (int64_t p = 0; p < groups; ++p) position[static_cast<size_t>(by_position[static_cast<size_t>(p)])] = p;
    }
    Shape y_shape = {groups};
    if (has_axis_) {
      y_shape = data->shape();
      y_shape[static_cast<size_t>(axis)] = groups;
    }
    const DataType dtype = data->dtype();
    Tensor& y = ctx.allocate_output(0, dtype, y_shape);
    for (int64_t p = 0; p < groups; ++p) {
      const int64_t item = group_first[static_cast<size_t>(by_position[static_cast<size_t>(p)])];
      for (int64_t o = 0; o < outer; ++o) {
        copy_elements(dtype, element_at(y.raw_data(), dtype, (o * groups + p) * inner),
                      element_at(data->raw_data(), dtype, (o * dim + item) * inner), inner);
      }
    }
    if (ctx.output_count() > 1 && ctx.output_requested(1)) {
      Tensor& t = ctx.allocate_output(1, DataType::kInt64, {groups});
      for (int64_t p = 0; p < groups; ++p) {
        t.data<int64_t>()[p] = group_first[static_cast<size_t>(by_position[static_cast<size_t>(p)])];
      }
    }
    if (ctx.output_count() > 2 && ctx.output_requested(2)) {
      Tensor& t = ctx.allocate_output(2, DataType::kInt64, {dim});
      for (int64_t i = 0; i < dim; ++i) {
        t.data<int64_t>()[i] = position[static_cast<size_t>(group_of[static_cast<size_t>(i)])];
      }
    }
    if (ctx.output_count() > 3 && ctx.output_requested(3)) {
      Tensor& t = ctx.allocate_output(3, DataType::kInt64, {groups});
      for (int64_t p = 0; p < groups; ++p) {
        t.data<int64_t>()[p] = group_count[static_cast<size_t>(by_position[static_cast<size_t>(p)])];
      }
    }
    return Status::ok();
  }

 private:
  bool has_axis_;
  int64_t axis_;
  bool sorted_;
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "Unique", 11, kLatestVersion, types::all(), UniqueKernel);

}  // namespace onyx::cpu
