// MatMul and Gemm on CUDA through cuBLASLt, float and float16 (float16
// accumulates in float32). float32 runs in full precision unless the
// provider option use_tf32 allows TF32 tensor cores.
//
// cuBLASLt is column-major; a row-major matrix is the column-major view of
// its transpose, so Y = A B (row-major) is computed as Y^T = B^T A^T: B is
// cuBLASLt's first operand and A its second, each with its own transpose flag.
#include <array>
#include <map>

#include "providers/cpu/broadcast.h"
#include "providers/cuda/cuda_kernel.h"

namespace onyx::cuda {
namespace {

// cuBLASLt's own recommendation for Hopper; Ampere needs less.
constexpr size_t kWorkspaceBytes = 32u << 20;

// One (batched) GEMM: Y[b] = alpha op(A[b]) op(B[b]) + beta Y[b], row-major,
// with batch strides in elements (0: the same matrix for every batch).
struct GemmCall {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int64_t batch = 1, stride_a = 0, stride_b = 0;
  const void* a = nullptr;
  const void* b = nullptr;
  void* y = nullptr;
  float alpha = 1.0f, beta = 0.0f;
};

using MatmulDesc = Owned<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using Layout = Owned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using Preference = Owned<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

// What MatMul and Gemm share: the cuBLASLt call and a cache of the
// algorithm its heuristic picked for each shape (heuristics cost more than
// a small GEMM).
class GemmKernel : public CudaKernel {
 public:
  using CudaKernel::CudaKernel;

 protected:
  Status gemm(KernelContext& ctx, cudaStream_t stream, Element type, const GemmCall& c) const {
    if (c.m == 0 || c.n == 0 || c.batch == 0) return Status::ok();
    const std::string what = ctx.label() + ": cuBLASLt";
    const cudaDataType_t data = type == Element::kFloat ? CUDA_R_32F : CUDA_R_16F;
    const cublasComputeType_t compute =
        type == Element::kFloat && context_->options().use_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    MatmulDesc op;
    ONYX_RETURN_IF_ERROR(cublas_status(cublasLtMatmulDescCreate(&op.handle, compute, CUDA_R_32F), what));
    const cublasOperation_t op_first = c.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_second = c.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    ONYX_RETURN_IF_ERROR(cublas_status(
        cublasLtMatmulDescSetAttribute(op.handle, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof(op_first)), what));
    ONYX_RETURN_IF_ERROR(cublas_status(
        cublasLtMatmulDescSetAttribute(op.handle, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof(op_second)), what));
    // Column-major views: B stored (trans_b ? n x k : k x n) row-major.
    Layout first, second, out;
    const auto u = [](int64_t v) { return static_cast<uint64_t>(v); };
    const int64_t first_ld = c.trans_b ? c.k : c.n, second_ld = c.trans_a ? c.m : c.k;
    ONYX_RETURN_IF_ERROR(cublas_status(
        cublasLtMatrixLayoutCreate(&first.handle, data, u(first_ld), u(c.trans_b ? c.n : c.k), first_ld), what));
    ONYX_RETURN_IF_ERROR(cublas_status(
        cublasLtMatrixLayoutCreate(&second.handle, data, u(second_ld), u(c.trans_a ? c.k : c.m), second_ld), what));
    ONYX_RETURN_IF_ERROR(cublas_status(cublasLtMatrixLayoutCreate(&out.handle, data, u(c.n), u(c.m), c.n), what));
    if (c.batch > 1) {
      const auto count = static_cast<int32_t>(c.batch);
      const int64_t stride_y = c.m * c.n;
      for (auto [layout, stride] : {std::pair{first.handle, c.stride_b}, std::pair{second.handle, c.stride_a},
                                    std::pair{out.handle, stride_y}}) {
        ONYX_RETURN_IF_ERROR(cublas_status(
            cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)), what));
        ONYX_RETURN_IF_ERROR(
            cublas_status(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                           sizeof(stride)),
                          what));
      }
    }
    ONYX_ASSIGN_OR_RETURN(cublasLtMatmulAlgo_t algo, pick(c, type, op.handle, first.handle, second.handle, out.handle));
    Tensor workspace(DataType::kUInt8, {static_cast<int64_t>(kWorkspaceBytes)}, ctx.allocator());
    std::lock_guard<std::mutex> lock(context_->cublas_mutex());
    return cublas_status(
        cublasLtMatmul(context_->cublas(), op.handle, &c.alpha, c.b, first.handle, c.a, second.handle, &c.beta, c.y,
                       out.handle, c.y, out.handle, &algo, workspace.raw_data(), kWorkspaceBytes, stream),
        what);
  }

 private:
  Result<cublasLtMatmulAlgo_t> pick(const GemmCall& c, Element type, cublasLtMatmulDesc_t op,
                                    cublasLtMatrixLayout_t first, cublasLtMatrixLayout_t second,
                                    cublasLtMatrixLayout_t out) const {
    const std::array<int64_t, 9> key{c.m,
                                     c.n,
                                     c.k,
                                     c.batch,
                                     c.stride_a,
                                     c.stride_b,
                                     (c.trans_a ? 1 : 0) + (c.trans_b ? 2 : 0),
                                     static_cast<int64_t>(type),
                                     c.beta != 0.0f ? 1 : 0};
    std::lock_guard<std::mutex> lock(mutex_);
    auto found = algos_.find(key);
    if (found != algos_.end()) return found->second;
    Preference preference;
    const std::string what = "cuBLASLt heuristic";
    ONYX_RETURN_IF_ERROR(cublas_status(cublasLtMatmulPreferenceCreate(&preference.handle), what));
    const size_t workspace = kWorkspaceBytes;
    ONYX_RETURN_IF_ERROR(
        cublas_status(cublasLtMatmulPreferenceSetAttribute(preference.handle, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                           &workspace, sizeof(workspace)),
                      what));
    cublasLtMatmulHeuristicResult_t result{};
    int count = 0;
    ONYX_RETURN_IF_ERROR(cublas_status(cublasLtMatmulAlgoGetHeuristic(context_->cublas(), op, first, second, out, out,
                                                                      preference.handle, 1, &result, &count),
                                       what));
    if (count == 0) {
      return not_implemented("cuBLASLt has no algorithm for a ", c.m, "x", c.k, " by ", c.k, "x", c.n, " GEMM");
    }
    algos_.emplace(key, result.algo);
    return result.algo;
  }

  mutable std::mutex mutex_;
  mutable std::map<std::array<int64_t, 9>, cublasLtMatmulAlgo_t> algos_;
};

// Copies `t` into a new tensor of shape `to` it broadcasts to.
Result<Tensor> expand(KernelContext& ctx, cudaStream_t stream, const Tensor& t, const Shape& to) {
  ONYX_ASSIGN_OR_RETURN(Strided shape, collapse(ctx.label(), to, {t.shape()}));
  Tensor out(t.dtype(), to, ctx.allocator());
  ONYX_RETURN_IF_ERROR(
      cuda_status(launch_strided_copy(t.raw_data(), out.raw_data(), static_cast<int>(dtype_size(t.dtype())), out.size(),
                                      shape, stream),
                  ctx.label() + ": broadcast copy"));
  return out;
}

int64_t count_of(const Shape& s) { return shape_size(s); }

// numpy matmul: 1-D operands gain (and lose) a dim, batch dims broadcast.
class MatMulKernel final : public GemmKernel {
 public:
  MatMulKernel(const KernelInfo&, ContextPtr context) : GemmKernel(std::move(context)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* a, device_input(ctx, 0, "A"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* b, device_input(ctx, 1, "B"));
    ONYX_ASSIGN_OR_RETURN(Element type, element_of(ctx, *a, "A"));
    if (b->dtype() != a->dtype() || a->rank() == 0 || b->rank() == 0) {
      return invalid_argument(ctx.label(), ": inputs A ", a->describe(), " and B ", b->describe(),
                              " must be of one element type and rank 1 or more");
    }
    const Shape as = a->rank() == 1 ? Shape{1, a->dim(0)} : a->shape();
    const Shape bs = b->rank() == 1 ? Shape{b->dim(0), 1} : b->shape();
    const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
    if (bs[bs.size() - 2] != k) {
      return invalid_argument(ctx.label(), ": A ", a->describe(), " has ", k, " columns but B ", b->describe(), " has ",
                              bs[bs.size() - 2], " rows");
    }
    const Shape a_batch(as.begin(), as.end() - 2), b_batch(bs.begin(), bs.end() - 2);
    ONYX_ASSIGN_OR_RETURN(Shape batch, cpu::broadcast_shapes(ctx.label(), {a_batch, b_batch}, {"A", "B"}));
    Shape out = batch;
    if (a->rank() > 1) out.push_back(m);
    if (b->rank() > 1) out.push_back(n);
    Tensor& y = ctx.allocate_output(0, a->dtype(), out);
    ONYX_ASSIGN_OR_RETURN(cudaStream_t stream, begin(ctx));
    if (k == 0) {
      return launched(ctx, cudaMemsetAsync(y.raw_data(), 0, y.bytes(), stream), "zero fill");
    }
    GemmCall c;
    c.n = n;
    c.k = k;
    c.a = a->raw_data();
    c.b = b->raw_data();
    c.y = y.raw_data();
    const int64_t batches = count_of(batch);
    Tensor a_full, b_full;  // operands expanded to every batch, where needed
    if (count_of(b_batch) == 1) {
      c.m = batches * m;  // A's rows of every batch against one B
    } else if (count_of(a_batch) == 1) {
      c.m = m;
      c.batch = batches;
      c.stride_b = k * n;  // A's one matrix (stride 0) against each B
    } else {
      c.m = m;
      c.batch = batches;
      c.stride_a = m * k;
      c.stride_b = k * n;
      Shape full_a = batch, full_b = batch;
      full_a.insert(full_a.end(), {m, k});
      full_b.insert(full_b.end(), {k, n});
      if (a_batch != batch) {
        ONYX_ASSIGN_OR_RETURN(a_full, expand(ctx, stream, *a, full_a));
        c.a = a_full.raw_data();
      }
      if (b_batch != batch) {
        ONYX_ASSIGN_OR_RETURN(b_full, expand(ctx, stream, *b, full_b));
        c.b = b_full.raw_data();
      }
    }
    return gemm(ctx, stream, type, c);
  }
};

// Y = alpha op(A) op(B) + beta C, C broadcast to [M, N].
class GemmOpKernel final : public GemmKernel {
 public:
  GemmOpKernel(const KernelInfo& info, ContextPtr context)
      : GemmKernel(std::move(context)),
        trans_a_(info.attr_int("transA", 0) != 0),
        trans_b_(info.attr_int("transB", 0) != 0),
        alpha_(info.attr_float("alpha", 1.0f)),
        beta_(info.attr_float("beta", 1.0f)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* a, device_input(ctx, 0, "A"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* b, device_input(ctx, 1, "B"));
    ONYX_ASSIGN_OR_RETURN(Element type, element_of(ctx, *a, "A"));
    const Tensor* c_in = nullptr;
    if (ctx.input_tensor(2) != nullptr) {
      ONYX_ASSIGN_OR_RETURN(c_in, device_input(ctx, 2, "C"));
    }
    if (a->rank() != 2 || b->rank() != 2 || b->dtype() != a->dtype() || (c_in && c_in->dtype() != a->dtype())) {
      return invalid_argument(ctx.label(), ": A ", a->describe(), " and B ", b->describe(),
                              " must be matrices of one element type (and C too)");
    }
    GemmCall c;
    c.m = trans_a_ ? a->dim(1) : a->dim(0);
    c.k = trans_a_ ? a->dim(0) : a->dim(1);
    c.n = trans_b_ ? b->dim(0) : b->dim(1);
    const int64_t kb = trans_b_ ? b->dim(1) : b->dim(0);
    if (kb != c.k) {
      return invalid_argument(ctx.label(), ": op(A) of A ", a->describe(), " has ", c.k, " columns but op(B) of B ",
                              b->describe(), " has ", kb, " rows");
    }
    c.trans_a = trans_a_;
    c.trans_b = trans_b_;
    c.alpha = alpha_;
    c.beta = c_in != nullptr ? beta_ : 0.0f;
    c.a = a->raw_data();
    c.b = b->raw_data();
    Tensor& y = ctx.allocate_output(0, a->dtype(), {c.m, c.n});
    c.y = y.raw_data();
    ONYX_ASSIGN_OR_RETURN(cudaStream_t stream, begin(ctx));
    if (c.beta != 0.0f) {
      if (!cpu::broadcasts_to(c_in->shape(), y.shape())) {
        return invalid_argument(ctx.label(), ": C ", c_in->describe(), " does not broadcast to [", c.m, ",", c.n, "]");
      }
      ONYX_ASSIGN_OR_RETURN(Strided shape, collapse(ctx.label(), y.shape(), {c_in->shape()}));
      ONYX_RETURN_IF_ERROR(
          launched(ctx,
                   launch_strided_copy(c_in->raw_data(), y.raw_data(), static_cast<int>(dtype_size(y.dtype())),
                                       y.size(), shape, stream),
                   "copy of C"));
    } else if (c.k == 0) {
      return launched(ctx, cudaMemsetAsync(y.raw_data(), 0, y.bytes(), stream), "zero fill");
    }
    if (c.k == 0) {  // Y = beta C
      return launched(ctx,
                      launch_unary(UnaryOp::kScale, type, y.raw_data(), y.raw_data(), y.size(), c.beta, 0.0f, stream),
                      "scaling of C");
    }
    return gemm(ctx, stream, type, c);
  }

 private:
  bool trans_a_, trans_b_;
  float alpha_, beta_;
};

}  // namespace

void add_matmul_kernels(std::vector<KernelDef>& defs, const ContextPtr& context) {
  defs.push_back(cuda_kernel<MatMulKernel>(context, "MatMul", 1, kLatestVersion));
  defs.push_back(cuda_kernel<GemmOpKernel>(context, "Gemm", 7, kLatestVersion));
}

}  // namespace onyx::cuda
