// MatMul and MatMulInteger: numpy matmul semantics (1-D operands promoted and
// their unit dim dropped, batch dims broadcast), one GEMM per batch matrix,
// or one for all of them when B is shared (then packed once if constant).
// MatMulInteger runs on the exact int8 GEMM (quant/qgemm_int8.h).
#include <algorithm>
#include <type_traits>
#include <vector>

#include "model/tensor_proto.h"
#include "providers/cpu/dispatch.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/cpu/nn/nn_util.h"
#include "providers/cpu/quant/qgemm_int8.h"

namespace onyx::cpu {
namespace {

// The batch layout of A (.. x M x K) times B (.. x K x N).
struct MatMulPlan {
  int64_t M = 0, N = 0, K = 0;
  Shape output;                   // the result's shape, 1-D dims dropped
  std::vector<int64_t> a_offset;  // per output batch matrix, element offset of its A matrix
  std::vector<int64_t> b_offset;
  bool b_shared = false;  // every batch uses the same B: A's batches fold into M
};

Result<MatMulPlan> plan_matmul(const std::string& label, const Shape& a_shape, const Shape& b_shape) {
  if (a_shape.empty() || b_shape.empty()) {
    return invalid_argument(label, ": inputs have shapes ", shape_to_string(a_shape), " and ", shape_to_string(b_shape),
                            ", expected rank >= 1 (matmul of scalars is undefined)");
  }
  Shape a = a_shape, b = b_shape;
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), 1);
  if (b_vector) b.push_back(1);
  MatMulPlan p;
  p.M = a[a.size() - 2];
  p.K = a[a.size() - 1];
  p.N = b[b.size() - 1];
  if (b[b.size() - 2] != p.K) {
    return invalid_argument(label, ": inputs have shapes ", shape_to_string(a_shape), " and ", shape_to_string(b_shape),
                            "; the inner dims differ (", p.K, " vs ", b[b.size() - 2], ")");
  }
  const size_t batch_rank = std::max(a.size(), b.size()) - 2;
  Shape batch(batch_rank), a_batch(batch_rank, 1), b_batch(batch_rank, 1);
  std::copy(a.begin(), a.end() - 2, a_batch.begin() + static_cast<std::ptrdiff_t>(batch_rank - (a.size() - 2)));
  std::copy(b.begin(), b.end() - 2, b_batch.begin() + static_cast<std::ptrdiff_t>(batch_rank - (b.size() - 2)));
  for (size_t d = 0; d < batch_rank; ++d) {
    if (a_batch[d] != b_batch[d] && a_batch[d] != 1 && b_batch[d] != 1) {
      return invalid_argument(label, ": batch dims of ", shape_to_string(a_shape), " and ", shape_to_string(b_shape),
                              " do not broadcast (", a_batch[d], " vs ", b_batch[d], ")");
    }
    batch[d] = (a_batch[d] == 1) ? b_batch[d] : a_batch[d];
  }
  p.output = batch;
  if (!a_vector) p.output.push_back(p.M);
  if (!b_vector) p.output.push_back(p.N);
  const int64_t count = shape_size(batch);
  p.b_shared = shape_size(b_batch) == 1;
  p.a_offset.resize(static_cast<size_t>(count));
  p.b_offset.resize(static_cast<size_t>(count));
  std::vector<int64_t> index(batch_rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t ao = 0, bo = 0;
    for (size_t d = 0; d < batch_rank; ++d) {
      ao = ao * a_batch[d] + (a_batch[d] == 1 ? 0 : index[d]);
      bo = bo * b_batch[d] + (b_batch[d] == 1 ? 0 : index[d]);
    }
    p.a_offset[static_cast<size_t>(i)] = ao * p.M * p.K;
    p.b_offset[static_cast<size_t>(i)] = bo * p.K * p.N;
    for (size_t d = batch_rank; d-- > 0;) {
      if (++index[d] < batch[d]) break;
      index[d] = 0;
    }
  }
  return p;
}

template <typename T>
void run_plan(const MatMulPlan& p, const T* a, const T* b, T* y, ThreadPool* pool) {
  const int64_t count = static_cast<int64_t>(p.a_offset.size());
  if (count == 0 || p.M == 0 || p.N == 0) return;
  // A's batch matrices are consecutive when B is shared and A is not broadcast.
  bool a_consecutive = p.b_shared;
  for (int64_t i = 0; a_consecutive && i < count; ++i) a_consecutive = p.a_offset[static_cast<size_t>(i)] == i * p.M * p.K;
  if (a_consecutive) {
    gemm<T>(false, false, count * p.M, p.N, p.K, T(1), a, p.K, b, p.N, T(0), y, p.N, pool);
    return;
  }
  const double flops = 2.0 * static_cast<double>(p.M * p.N * p.K);
  const int parallelism = pool ? pool->parallelism() : 1;
  if (count >= parallelism && flops < 4.0e6) {
    parallel_for(pool, count, flops, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        gemm<T>(false, false, p.M, p.N, p.K, T(1), a + p.a_offset[static_cast<size_t>(i)], p.K,
                b + p.b_offset[static_cast<size_t>(i)], p.N, T(0), y + i * p.M * p.N, p.N, nullptr);
      }
    });
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    gemm<T>(false, false, p.M, p.N, p.K, T(1), a + p.a_offset[static_cast<size_t>(i)], p.K,
            b + p.b_offset[static_cast<size_t>(i)], p.N, T(0), y + i * p.M * p.N, p.N, pool);
  }
}

class MatMulKernel final : public Kernel {
 public:
  explicit MatMulKernel(const KernelInfo& info) {
    // A constant float B without batch dims (weights) is packed for the GEMM
    // once, here; compute() uses it when every batch shares B.
    const Tensor* b = info.constant_input(1);
    if (b != nullptr && b->dtype() == DataType::kFloat && b->rank() >= 2 && b->size() > 0) {
      const int64_t K = b->dim(b->rank() - 2), N = b->dim(b->rank() - 1);
      if (N > 1 && K * N == b->size()) {
        std::function<void(const float*, size_t)> consumed;  // nothing else reads B: its pages go as packed
        if (info.consumes_constant(1)) consumed = [](const float* p, size_t n) { model::discard_weight_pages(p, n); };
        packed_b_ = pack_b(false, K, N, b->data<float>(), N, SgemmIsa::kAuto, consumed);
        packed_b_shape_ = b->shape();
      }
    }
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* a = ctx.input_tensor(0);
    const Tensor* b = ctx.input_tensor(1);
    if (a == nullptr || b == nullptr) return invalid_argument(ctx.label(), ": inputs A and B are required");
    if (a->dtype() != b->dtype()) {
      return invalid_argument(ctx.label(), ": input A is ", dtype_name(a->dtype()), " and B is ", dtype_name(b->dtype()),
                              ", expected one type");
    }
    ONYX_ASSIGN_OR_RETURN(MatMulPlan plan, plan_matmul(ctx.label(), a->shape(), b->shape()));
    Tensor& y = ctx.allocate_output(0, a->dtype(), plan.output);
    ThreadPool* pool = ctx.thread_pool();
    return dispatch_numeric(a->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<T, float>) {
        if (!packed_b_.empty() && plan.b_shared && b->shape() == packed_b_shape_) {
          // Every batch matrix of A is consecutive (B has no batch dims): one GEMM.
          const int64_t rows = static_cast<int64_t>(plan.a_offset.size()) * plan.M;
          sgemm_packed_b(false, rows, 1.0f, a->data<float>(), plan.K, packed_b_, 0.0f, y.data<float>(), plan.N, pool);
        } else {
          run_plan<float>(plan, a->data<float>(), b->data<float>(), y.data<float>(), pool);
        }
        return Status::ok();
      } else if constexpr (std::is_same_v<T, double> || std::is_same_v<T, int32_t> ||
                    std::is_same_v<T, int64_t> || std::is_same_v<T, uint32_t> || std::is_same_v<T, uint64_t>) {
        run_plan<T>(plan, a->data<T>(), b->data<T>(), y.data<T>(), pool);
        return Status::ok();
      } else if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
        const Tensor af = nn::to_float<T>(*a), bf = nn::to_float<T>(*b);
        std::vector<float> yf(static_cast<size_t>(y.size()));
        run_plan<float>(plan, af.data<float>(), bf.data<float>(), yf.data(), pool);
        nn::from_float<T>(yf.data(), y.size(), y.data<T>());
        return Status::ok();
      } else {
        return not_implemented(ctx.label(), ": MatMul of ", dtype_name(a->dtype()),
                                " is not supported (expected float, double, float16, bfloat16, int32, int64, uint32 "
                                "or uint64)");
      }
    });
  }

  // With B packed, compute() reads only B's shape.
  bool needs_constant_data(size_t i) const override { return i != 1 || packed_b_.empty(); }

 private:
  PackedMatrix packed_b_;  // B packed at creation when it is a constant float matrix
  Shape packed_b_shape_;
};

ONYX_REGISTER_CPU_KERNEL("", "MatMul", 1, 8, types::floats(), MatMulKernel);
ONYX_REGISTER_CPU_KERNEL("", "MatMul", 9, 12, types::numeric(), MatMulKernel);
ONYX_REGISTER_CPU_KERNEL("", "MatMul", 13, kLatestVersion, types::numeric(), MatMulKernel);

// MatMulInteger: (A - a_zero_point) * (B - b_zero_point) in int32. A zero point
// is a scalar, or per row of A (M values) / per column of B (N values).
class MatMulIntegerKernel final : public Kernel {
 public:
  explicit MatMulIntegerKernel(const KernelInfo& info) {
    // A constant 2-D B whose zero point is absent or constant is packed for
    // the GEMM once, here.
    const Tensor* b = info.constant_input(1);
    const bool zp_given = info.has_input(3);
    const Tensor* zp = zp_given ? info.constant_input(3) : nullptr;
    if (b == nullptr || !is_int8(b->dtype()) || b->rank() != 2 || (zp_given && zp == nullptr)) return;
    const int64_t k = b->dim(0), n = b->dim(1);
    if (zp != nullptr && (zp->dtype() != b->dtype() || (zp->size() != 1 && zp->size() != n))) return;
    const std::vector<int32_t> zero = zero_points(zp);
    packed_b_ = pack_int8_b(Int8Matrix{b->raw_data(), b->dtype() == DataType::kInt8, k, n, n, false}, zero.data(),
                            static_cast<int64_t>(zero.size()));
    packed_b_shape_ = b->shape();
  }

  static bool is_int8(DataType t) { return t == DataType::kInt8 || t == DataType::kUInt8; }

  static std::vector<int32_t> zero_points(const Tensor* zp) {
    std::vector<int32_t> out;
    if (zp == nullptr) return out;
    for (int64_t i = 0; i < zp->size(); ++i)
      out.push_back(zp->dtype() == DataType::kInt8 ? zp->data<int8_t>()[i] : zp->data<uint8_t>()[i]);
    return out;
  }

  static Result<std::vector<int32_t>> widen(const std::string& label, const char* name, const Tensor& t,
                                            const Tensor* zero_point, int64_t per_axis_length, bool per_row,
                                            int64_t rows, int64_t cols) {
    if (t.dtype() != DataType::kInt8 && t.dtype() != DataType::kUInt8) {
      return invalid_argument(label, ": input ", name, " is ", dtype_name(t.dtype()), ", expected int8 or uint8");
    }
    if (zero_point != nullptr && zero_point->dtype() != t.dtype()) {
      return invalid_argument(label, ": the zero point of ", name, " is ", dtype_name(zero_point->dtype()),
                              ", expected ", dtype_name(t.dtype()));
    }
    const int64_t zp_count = zero_point ? zero_point->size() : 0;
    if (zero_point != nullptr && zp_count != 1 && zp_count != per_axis_length) {
      return invalid_argument(label, ": the zero point of ", name, " has ", zp_count, " values, expected 1 or ",
                              per_axis_length);
    }
    auto read = [&](const Tensor& src, int64_t i) -> int32_t {
      return src.dtype() == DataType::kInt8 ? src.data<int8_t>()[i] : src.data<uint8_t>()[i];
    };
    std::vector<int32_t> out(static_cast<size_t>(t.size()));
    for (int64_t i = 0; i < t.size(); ++i) {
      int32_t zp = 0;
      if (zp_count == 1) {
        zp = read(*zero_point, 0);
      } else if (zp_count > 1) {
        const int64_t within = i % (rows * cols);
        zp = read(*zero_point, per_row ? within / cols : within % cols);
      }
      out[static_cast<size_t>(i)] = read(t, i) - zp;
    }
    return out;
  }

  Status compute(KernelContext& ctx) const override {
    const Tensor* a = ctx.input_tensor(0);
    const Tensor* b = ctx.input_tensor(1);
    if (a == nullptr || b == nullptr) return invalid_argument(ctx.label(), ": inputs A and B are required");
    ONYX_ASSIGN_OR_RETURN(MatMulPlan plan, plan_matmul(ctx.label(), a->shape(), b->shape()));
    const Tensor* a_zp = ctx.input_tensor(2);
    const Tensor* b_zp = ctx.input_tensor(3);
    // The GEMM takes every valid input; anything else goes on to widen(), whose checks name the problem.
    if (is_int8(a->dtype()) && is_int8(b->dtype()) &&
        (a_zp == nullptr || (a_zp->dtype() == a->dtype() && (a_zp->size() == 1 || a_zp->size() == plan.M))) &&
        (b_zp == nullptr || (b_zp->dtype() == b->dtype() && (b_zp->size() == 1 || b_zp->size() == plan.N)))) {
      Tensor& y = ctx.allocate_output(0, DataType::kInt32, plan.output);
      multiply(plan, *a, a_zp, *b, b_zp, y.data<int32_t>(), ctx.thread_pool());
      return Status::ok();
    }
    const int64_t a_rows = a->rank() == 1 ? 1 : plan.M;
    const int64_t b_cols = b->rank() == 1 ? 1 : plan.N;
    ONYX_ASSIGN_OR_RETURN(std::vector<int32_t> aw,
                          widen(ctx.label(), "A", *a, ctx.input_tensor(2), plan.M, true, a_rows, plan.K));
    ONYX_ASSIGN_OR_RETURN(std::vector<int32_t> bw,
                          widen(ctx.label(), "B", *b, ctx.input_tensor(3), plan.N, false, plan.K, b_cols));
    Tensor& y = ctx.allocate_output(0, DataType::kInt32, plan.output);
    run_plan<int32_t>(plan, aw.data(), bw.data(), y.data<int32_t>(), ctx.thread_pool());
    return Status::ok();
  }

 private:
  // Every batch matrix product on the GEMM; a zero point of A per row repeats
  // for each batch.
  void multiply(const MatMulPlan& p, const Tensor& a, const Tensor* a_zp, const Tensor& b, const Tensor* b_zp,
                int32_t* y, ThreadPool* pool) const {
    const int64_t count = static_cast<int64_t>(p.a_offset.size());
    if (count == 0 || p.M == 0 || p.N == 0) return;
    const std::vector<int32_t> a_zero = zero_points(a_zp), b_zero = zero_points(b_zp);
    const bool a_signed = a.dtype() == DataType::kInt8, b_signed = b.dtype() == DataType::kInt8;
    const auto* a_data = static_cast<const uint8_t*>(a.raw_data());
    const auto* b_data = static_cast<const uint8_t*>(b.raw_data());
    const bool b_packed = !packed_b_.empty() && b.shape() == packed_b_shape_;
    bool a_consecutive = p.b_shared;
    for (int64_t i = 0; a_consecutive && i < count; ++i)
      a_consecutive = p.a_offset[static_cast<size_t>(i)] == i * p.M * p.K;
    const int64_t products = a_consecutive ? 1 : count, rows = a_consecutive ? count * p.M : p.M;
    std::vector<int32_t> row_zero;
    if (a_zero.size() > 1) {
      for (int64_t r = 0; r < rows; ++r) row_zero.push_back(a_zero[static_cast<size_t>(r % p.M)]);
    } else {
      row_zero = a_zero;
    }
    PackedInt8 shared_b = b_packed ? packed_b_ : PackedInt8();
    for (int64_t i = 0; i < products; ++i) {
      const Int8Matrix am{a_data + p.a_offset[static_cast<size_t>(i)], a_signed, rows, p.K, p.K, false};
      const PackedInt8 pa = pack_int8_a(am, row_zero.data(), static_cast<int64_t>(row_zero.size()),
                                        shared_b.empty() ? Int8Isa::kAuto : shared_b.isa());
      PackedInt8 pb = shared_b;
      if (pb.empty()) {
        const Int8Matrix bm{b_data + p.b_offset[static_cast<size_t>(i)], b_signed, p.K, p.N, p.N, false};
        pb = pack_int8_b(bm, b_zero.data(), static_cast<int64_t>(b_zero.size()), pa.isa(), pool);
        if (p.b_shared) shared_b = pb;
      }
      qgemm_int8(pa, pb, y + i * p.M * p.N, p.N, pool);
    }
  }

  PackedInt8 packed_b_;  // a constant B, packed at creation
  Shape packed_b_shape_;
};

ONYX_REGISTER_CPU_KERNEL("", "MatMulInteger", 10, kLatestVersion, (std::vector<DataType>{DataType::kInt8, DataType::kUInt8}),
                         MatMulIntegerKernel);

}  // namespace
}  // namespace onyx::cpu
