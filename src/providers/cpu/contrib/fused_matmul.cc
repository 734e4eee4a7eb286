// com.microsoft FusedMatMul: alpha * op(A) @ op(B) with numpy batch broadcasting,
// where op transposes the last two dims when transA / transB is set and moves
// dim 0 among the matrix dims when transBatchA / transBatchB is set.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/cpu/gemm/sgemm.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

class FusedMatMulKernel final : public Kernel {
 public:
  explicit FusedMatMulKernel(const KernelInfo& info)
      : alpha_(info.attr_float("alpha", 1.0f)),
        trans_a_(info.attr_int("transA", 0) != 0),
        trans_b_(info.attr_int("transB", 0) != 0),
        trans_batch_a_(info.attr_int("transBatchA", 0) != 0),
        trans_batch_b_(info.attr_int("transBatchB", 0) != 0) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* a = ctx.input_tensor(0);
    const Tensor* b = ctx.input_tensor(1);
    if (a == nullptr || b == nullptr) return invalid_argument(ctx.label(), ": inputs A and B are required");
    if (a->dtype() != b->dtype()) {
      return invalid_argument(ctx.label(), ": input B has type ", dtype_name(b->dtype()), ", expected ", dtype_name(a->dtype()));
    }
    if (a->rank() == 0 || b->rank() == 0) return invalid_argument(ctx.label(), ": inputs A and B must have rank >= 1");
    // transBatchA/B move dim 0 in among the two matrix dims (after the other batch
    // dims, before or after the last dim as transA/B says): materialize that
    // permutation once, then multiply plainly.
    Tensor permuted_a, permuted_b;
    bool trans_a = trans_a_, trans_b = trans_b_;
    if (trans_batch_a_ && a->rank() >= 2) {
      ONYX_ASSIGN_OR_RETURN(permuted_a, move_first_dim(ctx, *a, trans_a));
      a = &permuted_a;
      trans_a = false;
    }
    if (trans_batch_b_ && b->rank() >= 2) {
      ONYX_ASSIGN_OR_RETURN(permuted_b, move_first_dim(ctx, *b, trans_b));
      b = &permuted_b;
      trans_b = false;
    }
    // Promote 1-D operands as numpy matmul does, dropping the added dim after.
    Shape sa = a->shape(), sb = b->shape();
    const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
    if (a_vec) sa.insert(sa.begin(), 1);
    if (b_vec) sb.push_back(1);
    const int64_t m = trans_a && !a_vec ? sa[sa.size() - 1] : sa[sa.size() - 2];
    const int64_t k = trans_a && !a_vec ? sa[sa.size() - 2] : sa[sa.size() - 1];
    const int64_t kb = trans_b && !b_vec ? sb[sb.size() - 1] : sb[sb.size() - 2];
    const int64_t n = trans_b && !b_vec ? sb[sb.size() - 2] : sb[sb.size() - 1];
    if (k != kb) {
      return invalid_argument(ctx.label(), ": A is ", a->describe(), " and B is ", b->describe(), ": inner dims ", k, " and ", kb, " differ");
    }
    const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
    const size_t batch_rank = std::max(batch_a.size(), batch_b.size());
    Shape batch(batch_rank);
    for (size_t d = 0; d < batch_rank; ++d) {
      const int64_t da = d + batch_a.size() >= batch_rank ? batch_a[d + batch_a.size() - batch_rank] : 1;
      const int64_t db = d + batch_b.size() >= batch_rank ? batch_b[d + batch_b.size() - batch_rank] : 1;
      if (da != db && da != 1 && db != 1) {
        return invalid_argument(ctx.label(), ": batch dims of A ", a->describe(), " and B ", b->describe(), " do not broadcast");
      }
      batch[d] = std::max(da, db);
    }
    Shape out_shape = batch;
    if (!a_vec) out_shape.push_back(m);
    if (!b_vec) out_shape.push_back(n);
    const int64_t batches = shape_size(batch);
    // Offsets of each output batch into A and B (broadcast dims repeat).
    std::vector<int64_t> off_a(static_cast<size_t>(batches)), off_b(static_cast<size_t>(batches));
    for (int64_t i = 0; i < batches; ++i) {
      int64_t rest = i, oa = 0, ob = 0, stride_a = 1, stride_b = 1;
      for (size_t d = batch_rank; d-- > 0;) {
        const int64_t idx = rest % batch[d];
        rest /= batch[d];
        const int64_t ia = static_cast<int64_t>(d) - static_cast<int64_t>(batch_rank - batch_a.size());
        const int64_t ib = static_cast<int64_t>(d) - static_cast<int64_t>(batch_rank - batch_b.size());
        if (ia >= 0) {
          const int64_t dim = batch_a[static_cast<size_t>(ia)];
          if (dim != 1) oa += idx * stride_a;
          stride_a *= dim;
        }
        if (ib >= 0) {
          const int64_t dim = batch_b[static_cast<size_t>(ib)];
          if (dim != 1) ob += idx * stride_b;
          stride_b *= dim;
        }
      }
      off_a[static_cast<size_t>(i)] = oa * m * k;
      off_b[static_cast<size_t>(i)] = ob * k * n;
    }
    Status status = dispatch_float(a->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      Tensor& y = ctx.allocate_output(0, a->dtype(), out_shape);
      const T* pa = a->data<T>();
      const T* pb = b->data<T>();
      T* py = y.data<T>();
      const bool ta = trans_a && !a_vec, tb = trans_b && !b_vec;
      if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        // One GEMM per batch entry: the transposes are the GEMM's own flags
        // (that is what fusing them into the MatMul was for).
        for (int64_t bi = 0; bi < batches; ++bi) {
          gemm<T>(ta, tb, m, n, k, static_cast<T>(alpha_), pa + off_a[static_cast<size_t>(bi)], ta ? m : k,
                  pb + off_b[static_cast<size_t>(bi)], tb ? k : n, T(0), py + bi * m * n, n, ctx.thread_pool());
        }
        return Status::ok();
      }
      // Half types: row by row in float.
      parallel_for(ctx.thread_pool(), batches * m, static_cast<double>(k * n * 2), [&](int64_t begin, int64_t end) {
        std::vector<float> arow(static_cast<size_t>(k)), acc(static_cast<size_t>(n));
        for (int64_t row = begin; row < end; ++row) {
          const int64_t bi = row / m, i = row % m;
          const T* ma = pa + off_a[static_cast<size_t>(bi)];
          const T* mb = pb + off_b[static_cast<size_t>(bi)];
          for (int64_t p = 0; p < k; ++p) {
            arow[static_cast<size_t>(p)] = static_cast<float>(static_cast<compute_t<T>>(ta ? ma[p * m + i] : ma[i * k + p]));
          }
          std::fill(acc.begin(), acc.end(), 0.0f);
          if (tb) {
            for (int64_t j = 0; j < n; ++j) {
              float s = 0;
              for (int64_t p = 0; p < k; ++p) s += arow[static_cast<size_t>(p)] * static_cast<float>(static_cast<compute_t<T>>(mb[j * k + p]));
              acc[static_cast<size_t>(j)] = s;
            }
          } else {
            for (int64_t p = 0; p < k; ++p) {
              const float av = arow[static_cast<size_t>(p)];
              const T* brow = mb + p * n;
              for (int64_t j = 0; j < n; ++j) acc[static_cast<size_t>(j)] += av * static_cast<float>(static_cast<compute_t<T>>(brow[j]));
            }
          }
          T* out = py + row * n;
          for (int64_t j = 0; j < n; ++j) out[j] = static_cast<T>(static_cast<compute_t<T>>(alpha_ * acc[static_cast<size_t>(j)]));
        }
      });
      return Status::ok();
    });
    if (!status.is_ok()) return Status(status.code(), ctx.label() + ": input A: " + status.message());
    return status;
  }

  // t permuted by [1, ..., r-2, 0, r-1], or [1, ..., r-2, r-1, 0] when `last` is set.
  static Result<Tensor> move_first_dim(KernelContext& ctx, const Tensor& t, bool last) {
    const int64_t rank = t.rank();
    std::vector<int64_t> perm;
    for (int64_t d = 1; d < rank - 1; ++d) perm.push_back(d);
    if (last) {
      perm.push_back(rank - 1);
      perm.push_back(0);
    } else {
      perm.push_back(0);
      perm.push_back(rank - 1);
    }
    Shape out_shape(static_cast<size_t>(rank));
    for (int64_t d = 0; d < rank; ++d) out_shape[static_cast<size_t>(d)] = t.dim(perm[static_cast<size_t>(d)]);
    // Strides of the input, read in output order.
    std::vector<int64_t> in_strides(static_cast<size_t>(rank), 1), strides(static_cast<size_t>(rank));
    for (int64_t d = rank - 1; d > 0; --d) in_strides[static_cast<size_t>(d - 1)] = in_strides[static_cast<size_t>(d)] * t.dim(d);
    for (int64_t d = 0; d < rank; ++d) strides[static_cast<size_t>(d)] = in_strides[static_cast<size_t>(perm[static_cast<size_t>(d)])];
    ONYX_ASSIGN_OR_RETURN(Tensor out, Tensor::create(t.dtype(), out_shape, ctx.allocator()));
    const size_t elem = dtype_size(t.dtype());
    const char* src = static_cast<const char*>(t.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    std::vector<int64_t> index(static_cast<size_t>(rank), 0);
    const int64_t total = t.size();
    for (int64_t i = 0; i < total; ++i) {
      int64_t offset = 0;
      for (int64_t d = 0; d < rank; ++d) offset += index[static_cast<size_t>(d)] * strides[static_cast<size_t>(d)];
      std::memcpy(dst + static_cast<size_t>(i) * elem, src + static_cast<size_t>(offset) * elem, elem);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++index[static_cast<size_t>(d)] < out_shape[static_cast<size_t>(d)]) break;
        index[static_cast<size_t>(d)] = 0;
      }
    }
    return out;
  }

 private:
  float alpha_;
  bool trans_a_, trans_b_, trans_batch_a_, trans_batch_b_;
};

ONYX_REGISTER_CPU_KERNEL("com.microsoft", "FusedMatMul", 1, kLatestVersion, types::floats(), FusedMatMulKernel);

}  // namespace
}  // namespace onyx::cpu
