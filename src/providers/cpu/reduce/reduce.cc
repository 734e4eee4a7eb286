// The Reduce* family (Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp,
// SumSquare): axes from the attribute (early versions) or the optional input.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

enum class ReduceKind { kSum, kMean, kMax, kMin, kProd, kL1, kL2, kLogSum, kLogSumExp, kSumSquare };

// The accumulator: double for float types (the reference sums in higher
// precision than float32), 64-bit for integers so intermediate sums do not
// overflow before the final cast back.
template <typename T>
struct AccOf {
  using type = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double,
                                  std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>>;
};
template <>
struct AccOf<bool> {
  using type = int64_t;
};

// Converts a double result back to T without undefined behaviour for NaN or
// out-of-range values when T is an integer.
template <typename T, typename A>
T to_element(A value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value != 0;
  } else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<A>) {
    if (!std::isfinite(value)) return T(0);
    if (value >= static_cast<A>(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    if (value <= static_cast<A>(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
    return static_cast<T>(value);
  } else {
    return static_cast<T>(value);
  }
}

// The iteration plan shared by every reduction: output element o reads
// x[base(o) + table[t] + j] for every t and every j < inner.
struct ReducePlan {
  Shape out_shape;                 // with keepdims applied
  std::vector<int64_t> kept_dims;  // collapsed kept dims, outer to inner
  std::vector<int64_t> kept_strides;
  std::vector<int64_t> table;  // offsets of the reduced positions (except the contiguous tail)
  int64_t inner = 1;           // contiguous reduced run at the end
  int64_t reduced_count = 1;   // elements per output
  int64_t out_size = 1;
};

ReducePlan make_plan(const Shape& shape, const std::vector<bool>& reduced, bool keepdims) {
  ReducePlan plan;
  const size_t rank = shape.size();
  for (size_t d = 0; d < rank; ++d) {
    if (reduced[d]) {
      if (keepdims) plan.out_shape.push_back(1);
    } else {
      plan.out_shape.push_back(shape[d]);
    }
  }
  plan.out_size = shape_size(plan.out_shape);
  // Collapse runs of dims of the same kind; dims of size 1 take no part.
  struct Group {
    bool reduced;
    int64_t size;
    int64_t stride;
  };
  std::vector<Group> groups;
  int64_t stride = 1;
  std::vector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  for (size_t d = 0; d < rank; ++d) {
    if (shape[d] == 1) continue;
    if (!groups.empty() && groups.back().reduced == reduced[d] &&
        groups.back().stride == shape[d] * strides[d]) {
      groups.back().size *= shape[d];
      groups.back().stride = strides[d];
    } else {
      groups.push_back({reduced[d], shape[d], strides[d]});
    }
  }
  plan.reduced_count = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (reduced[d]) plan.reduced_count *= shape[d];
  }
  std::vector<Group> reduced_groups;
  for (const Group& g : groups) {
    if (g.reduced) {
      reduced_groups.push_back(g);
    } else {
      plan.kept_dims.push_back(g.size);
      plan.kept_strides.push_back(g.stride);
    }
  }
  if (!reduced_groups.empty() && reduced_groups.back().stride == 1) {
    plan.inner = reduced_groups.back().size;
    reduced_groups.pop_back();
  }
  plan.table.assign(1, 0);
  if (plan.reduced_count == 0) {
    plan.table.clear();
    plan.inner = 0;
    return plan;
  }
  for (const Group& g : reduced_groups) {
    std::vector<int64_t> next;
    next.reserve(plan.table.size() * static_cast<size_t>(g.size));
    for (int64_t base : plan.table) {
      for (int64_t i = 0; i < g.size; ++i) next.push_back(base + i * g.stride);
    }
    plan.table.swap(next);
  }
  return plan;
}

// Folds one value into the accumulator.
template <ReduceKind K, typename A>
inline void step(A& acc, A v) {
  if constexpr (K == ReduceKind::kSum || K == ReduceKind::kMean || K == ReduceKind::kLogSum) {
    acc += v;
  } else if constexpr (K == ReduceKind::kMax) {
    if (v > acc || v != v) acc = v;
  } else if constexpr (K == ReduceKind::kMin) {
    if (v < acc || v != v) acc = v;
  } else if constexpr (K == ReduceKind::kProd) {
    acc *= v;
  } else if constexpr (K == ReduceKind::kL1) {
    acc += v < A(0) ? A(0) - v : v;
  } else if constexpr (K == ReduceKind::kL2 || K == ReduceKind::kSumSquare) {
    acc += v * v;
  }
}

// Four float lanes and two double ones in the GCC/Clang vector extension,
// the width every x86-64 (SSE2) and AArch64 (NEON) build has; wider types
// would be split element by element where the build targets no wider unit.
typedef float Float4 __attribute__((vector_size(16)));
typedef int32_t Int4 __attribute__((vector_size(16)));
typedef double Double2 __attribute__((vector_size(16)));

// The max (kMax) or min (kMin) of p[0..n), n >= 8: exact in float and in any
// order; NaN when any element is NaN.
template <ReduceKind K>
float extremum_run(const float* p, int64_t n) {
  Float4 m0, m1;
  std::memcpy(&m0, p, sizeof(m0));
  std::memcpy(&m1, p + 4, sizeof(m1));
  Int4 nan = (m0 != m0) | (m1 != m1);
  auto pick = [](Float4 m, Float4 v, Int4& nan) {
    const Int4 take = K == ReduceKind::kMax ? v > m : v < m;
    nan |= v != v;
    return (Float4)(((Int4)v & take) | ((Int4)m & ~take));
  };
  int64_t j = 8;
  for (; j + 8 <= n; j += 8) {
    Float4 a, b;
    std::memcpy(&a, p + j, sizeof(a));
    std::memcpy(&b, p + j + 4, sizeof(b));
    m0 = pick(m0, a, nan);
    m1 = pick(m1, b, nan);
  }
  m0 = pick(m0, m1, nan);
  float r = m0[0];
  bool any_nan = false;
  for (int l = 0; l < 4; ++l) {
    r = K == ReduceKind::kMax ? (m0[l] > r ? m0[l] : r) : (m0[l] < r ? m0[l] : r);
    any_nan = any_nan || nan[l] != 0;
  }
  for (; j < n; ++j) {
    r = K == ReduceKind::kMax ? (p[j] > r ? p[j] : r) : (p[j] < r ? p[j] : r);
    any_nan = any_nan || p[j] != p[j];
  }
  return any_nan ? std::numeric_limits<float>::quiet_NaN() : r;
}

// The sum of f(p[j]) for j < n, n >= 8, with f the identity (kSum, kMean,
// kLogSum), |x| (kL1) or x*x (kL2, kSumSquare), accumulated in double as the
// lone accumulator does: only the rounding order differs.
template <ReduceKind K>
double sum_run(const float* p, int64_t n) {
  Double2 s0 = {}, s1 = {};
  auto term = [](Double2 d) {
    if constexpr (K == ReduceKind::kL1) {
      return d < 0 ? -d : d;
    } else if constexpr (K == ReduceKind::kL2 || K == ReduceKind::kSumSquare) {
      return d * d;
    } else {
      return d;
    }
  };
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    Float4 a;
    std::memcpy(&a, p + j, sizeof(a));
    const Double2 lo = {a[0], a[1]}, hi = {a[2], a[3]};
    s0 += term(lo);
    s1 += term(hi);
  }
  const Double2 s = s0 + s1;
  double sum = s[0] + s[1];
  for (; j < n; ++j) step<K>(sum, static_cast<double>(p[j]));
  return sum;
}

// Folds one run of values into the accumulator; long float runs go through
// the vector forms above.
template <ReduceKind K, typename T, typename A>
inline void fold(const T* p, int64_t n, A& acc) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<A, double> && K != ReduceKind::kProd) {
    if (n >= 16) {
      if constexpr (K == ReduceKind::kMax || K == ReduceKind::kMin) {
        step<K>(acc, static_cast<A>(extremum_run<K>(p, n)));
      } else {
        acc += sum_run<K>(p, n);
      }
      return;
    }
  }
  for (int64_t j = 0; j < n; ++j) step<K>(acc, static_cast<A>(static_cast<compute_t<T>>(p[j])));
}

template <ReduceKind K, typename A>
A initial() {
  if constexpr (K == ReduceKind::kMax || K == ReduceKind::kLogSumExp) {
    return std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                : std::numeric_limits<A>::lowest();
  } else if constexpr (K == ReduceKind::kMin) {
    return std::numeric_limits<A>::has_infinity ? std::numeric_limits<A>::infinity() : std::numeric_limits<A>::max();
  } else if constexpr (K == ReduceKind::kProd) {
    return A(1);
  } else {
    return A(0);
  }
}

template <ReduceKind K, typename T>
void reduce_range(const T* x, T* out, const ReducePlan& plan, int64_t begin, int64_t end) {
  using A = typename AccOf<T>::type;
  const size_t kept = plan.kept_dims.size();
  std::vector<int64_t> index(kept, 0);
  int64_t base = 0;
  {  // position the counter at `begin`
    int64_t rest = begin;
    for (size_t d = kept; d-- > 0;) {
      index[d] = rest % plan.kept_dims[d];
      rest /= plan.kept_dims[d];
      base += index[d] * plan.kept_strides[d];
    }
  }
  // Bool max/min go through int64 where -inf is not representable; the
  // element type's own bounds are what the spec asks for.
  A init = initial<K, A>();
  if constexpr (std::is_integral_v<A> && (K == ReduceKind::kMax)) init = static_cast<A>(std::numeric_limits<T>::lowest());
  if constexpr (std::is_integral_v<A> && (K == ReduceKind::kMin)) init = static_cast<A>(std::numeric_limits<T>::max());
  for (int64_t o = begin; o < end; ++o) {
    const T* px = x + base;
    if constexpr (K == ReduceKind::kLogSumExp) {
      double peak = -std::numeric_limits<double>::infinity();
      for (int64_t off : plan.table) {
        for (int64_t j = 0; j < plan.inner; ++j) {
          const double v = static_cast<double>(static_cast<compute_t<T>>(px[off + j]));
          if (v > peak || v != v) peak = v;
        }
      }
      double result = peak;
      if (std::isfinite(peak)) {
        double sum = 0;
        for (int64_t off : plan.table) {
          for (int64_t j = 0; j < plan.inner; ++j) {
            sum += std::exp(static_cast<double>(static_cast<compute_t<T>>(px[off + j])) - peak);
          }
        }
        result = peak + std::log(sum);
      }
      out[o] = to_element<T>(result);
    } else {
      A acc = init;
      for (int64_t off : plan.table) fold<K>(px + off, plan.inner, acc);
      if constexpr (K == ReduceKind::kMean) {
        out[o] = to_element<T>(static_cast<double>(acc) / static_cast<double>(plan.reduced_count));
      } else if constexpr (K == ReduceKind::kL2) {
        out[o] = to_element<T>(std::sqrt(static_cast<double>(acc)));
      } else if constexpr (K == ReduceKind::kLogSum) {
        out[o] = to_element<T>(std::log(static_cast<double>(acc)));
      } else {
        out[o] = to_element<T>(acc);
      }
    }
    // advance the kept-dims counter
    for (size_t d = kept; d-- > 0;) {
      base += plan.kept_strides[d];
      if (++index[d] < plan.kept_dims[d]) break;
      base -= index[d] * plan.kept_strides[d];
      index[d] = 0;
    }
  }
}

template <ReduceKind K>
class ReduceKernel final : public Kernel {
 public:
  explicit ReduceKernel(const KernelInfo& info) {
    keepdims_ = info.attr_int("keepdims", 1) != 0;
    noop_with_empty_axes_ = info.attr_int("noop_with_empty_axes", 0) != 0;
    const int cut = (K == ReduceKind::kSum) ? 13 : 18;
    axes_from_input_ = info.version() >= cut;
    if (!axes_from_input_) attr_axes_ = info.attr_ints("axes");
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input data is missing");
    std::vector<int64_t> axes = attr_axes_;
    if (axes_from_input_) {
      const Tensor* a = ctx.input_tensor(1);
      if (a != nullptr) {
        if (a->dtype() != DataType::kInt64) {
          return invalid_argument(ctx.label(), ": input axes has type ", dtype_name(a->dtype()), ", expected int64");
        }
        axes.assign(a->data<int64_t>(), a->data<int64_t>() + a->size());
      }
      if (axes.empty() && noop_with_empty_axes_) {
        ctx.set_output(0, Value(*x));
        return Status::ok();
      }
    }
    const int64_t rank = x->rank();
    std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
    for (int64_t axis : axes) {
      if (axis < -rank || axis >= rank || (rank == 0 && axis != 0 && axis != -1)) {
        return invalid_argument(ctx.label(), ": axis ", axis, " is out of range for input data of rank ", rank);
      }
      if (rank == 0) continue;
      const int64_t a = axis < 0 ? axis + rank : axis;
      if (reduced[static_cast<size_t>(a)]) {
        return invalid_argument(ctx.label(), ": axis ", axis, " appears twice in axes");
      }
      reduced[static_cast<size_t>(a)] = true;
    }
    const ReducePlan plan = make_plan(x->shape(), reduced, keepdims_);
    auto run = [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.allocate_output(0, x->dtype(), plan.out_shape);
      const T* px = x->data<T>();
      T* py = y.data<T>();
      const double cost = static_cast<double>(plan.reduced_count > 0 ? plan.reduced_count : 1) *
                          (K == ReduceKind::kLogSumExp ? 20.0 : 1.0);
      parallel_for(ctx.thread_pool(), plan.out_size, cost,
                   [&](int64_t begin, int64_t end) { reduce_range<K, T>(px, py, plan, begin, end); });
      return Status::ok();
    };
    Status status;
    if constexpr (K == ReduceKind::kMax || K == ReduceKind::kMin) {
      status = dispatch_numeric_or_bool(x->dtype(), run);
    } else {
      status = dispatch_numeric(x->dtype(), run);
    }
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": input data: " + status.message());
    return status;
  }

 private:
  bool keepdims_ = true;
  bool noop_with_empty_axes_ = false;
  bool axes_from_input_ = false;
  std::vector<int64_t> attr_axes_;
};

using ReduceSumKernel = ReduceKernel<ReduceKind::kSum>;
using ReduceMeanKernel = ReduceKernel<ReduceKind::kMean>;
using ReduceMaxKernel = ReduceKernel<ReduceKind::kMax>;
using ReduceMinKernel = ReduceKernel<ReduceKind::kMin>;
using ReduceProdKernel = ReduceKernel<ReduceKind::kProd>;
using ReduceL1Kernel = ReduceKernel<ReduceKind::kL1>;
using ReduceL2Kernel = ReduceKernel<ReduceKind::kL2>;
using ReduceLogSumKernel = ReduceKernel<ReduceKind::kLogSum>;
using ReduceLogSumExpKernel = ReduceKernel<ReduceKind::kLogSumExp>;
using ReduceSumSquareKernel = ReduceKernel<ReduceKind::kSumSquare>;

std::vector<DataType> max_min_types() {
  std::vector<DataType> t = types::numeric();
  t.push_back(DataType::kBool);
  return t;
}

// One entry per axes-convention range; the kernel reads version() for the rest.
ONYX_REGISTER_CPU_KERNEL("", "ReduceSum", 1, 12, types::numeric(), ReduceSumKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceSum", 13, kLatestVersion, types::numeric(), ReduceSumKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceMean", 1, 17, types::numeric(), ReduceMeanKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceMean", 18, kLatestVersion, types::numeric(), ReduceMeanKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceMax", 1, 17, types::numeric(), ReduceMaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceMax", 18, 19, types::numeric(), ReduceMaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceMax", 20, kLatestVersion, max_min_types(), ReduceMaxKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceMin", 1, 17, types::numeric(), ReduceMinKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceMin", 18, 19, types::numeric(), ReduceMinKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceMin", 20, kLatestVersion, max_min_types(), ReduceMinKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceProd", 1, 17, types::numeric(), ReduceProdKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceProd", 18, kLatestVersion, types::numeric(), ReduceProdKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceL1", 1, 17, types::numeric(), ReduceL1Kernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceL1", 18, kLatestVersion, types::numeric(), ReduceL1Kernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceL2", 1, 17, types::numeric(), ReduceL2Kernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceL2", 18, kLatestVersion, types::numeric(), ReduceL2Kernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceLogSum", 1, 17, types::numeric(), ReduceLogSumKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceLogSum", 18, kLatestVersion, types::numeric(), ReduceLogSumKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceLogSumExp", 1, 17, types::numeric(), ReduceLogSumExpKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceLogSumExp", 18, kLatestVersion, types::numeric(), ReduceLogSumExpKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceSumSquare", 1, 17, types::numeric(), ReduceSumSquareKernel);
ONYX_REGISTER_CPU_KERNEL("", "ReduceSumSquare", 18, kLatestVersion, types::numeric(), ReduceSumSquareKernel);

}  // namespace
}  // namespace onyx::cpu
