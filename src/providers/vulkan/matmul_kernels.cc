// MatMul (numpy semantics, batch dims broadcast) and Gemm (transposes,
// alpha, beta, C broadcast), float32, on shaders/matmul.comp.
#include "providers/vulkan/vulkan_kernel.h"

namespace onyx::vulkan {
namespace {

struct MatMulPush {
  uint32_t m, n, k;
  uint32_t a_row, a_col, b_row, b_col;
  uint32_t c_row, c_col;
  float alpha, beta;
  uint32_t batch_dims[3];
  uint32_t a_batch[3];
  uint32_t b_batch[3];
};
static_assert(sizeof(MatMulPush) <= 128, "push constants");

Status run_matmul(VulkanDevice& device, const std::string& label, const MatMulPush& push, uint32_t batches,
                  const std::vector<BufferRange>& buffers, bool has_c) {
  return dispatch_gemm(device, label, "matmul", {has_c ? 1 : 0}, buffers, &push, sizeof(push), push.m, push.n,
                       batches);
}

class MatMulKernel final : public VulkanKernel {
 public:
  MatMulKernel(const KernelInfo&, DevicePtr device) : VulkanKernel(std::move(device)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* a, float_input(ctx, 0));
    ONYX_ASSIGN_OR_RETURN(const Tensor* b, float_input(ctx, 1));
    if (a->rank() == 0 || b->rank() == 0) return invalid_argument(ctx.label(), ": MatMul of a scalar");
    Shape as = a->shape(), bs = b->shape();
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    const int64_t m = as[as.size() - 2], k = as.back(), n = bs.back();
    if (bs[bs.size() - 2] != k) {
      return invalid_argument(ctx.label(), ": inner dimensions differ: ", a->describe(), " and ", b->describe());
    }
    // Batch dims: broadcast, then merged where both operands step alike.
    const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
    const size_t rank = std::max(ab.size(), bb.size());
    std::vector<int64_t> ad(rank, 1), bd(rank, 1), od(rank);
    for (size_t i = 0; i < ab.size(); ++i) ad[rank - ab.size() + i] = ab[i];
    for (size_t i = 0; i < bb.size(); ++i) bd[rank - bb.size() + i] = bb[i];
    for (size_t i = 0; i < rank; ++i) {
      if (ad[i] != bd[i] && ad[i] != 1 && bd[i] != 1) {
        return invalid_argument(ctx.label(), ": batch dimensions of ", a->describe(), " and ", b->describe(),
                                " do not broadcast");
      }
      od[i] = ad[i] == 1 ? bd[i] : ad[i];
    }
    Shape out(od.begin(), od.end());
    if (a->rank() > 1) out.push_back(m);
    if (b->rank() > 1) out.push_back(n);
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, out);
    if (y.size() == 0) return Status::ok();
    std::vector<int64_t> dims, sa, sb;
    int64_t stride_a = m * k, stride_b = k * n;
    std::vector<int64_t> as_(rank), bs_(rank);
    for (size_t i = rank; i-- > 0;) {
      as_[i] = ad[i] == 1 ? 0 : stride_a;
      bs_[i] = bd[i] == 1 ? 0 : stride_b;
      stride_a *= ad[i];
      stride_b *= bd[i];
    }
    for (size_t i = 0; i < rank; ++i) {
      if (od[i] == 1) continue;
      if (!dims.empty() && sa.back() == as_[i] * od[i] && sb.back() == bs_[i] * od[i]) {
        dims.back() *= od[i];
        sa.back() = as_[i];
        sb.back() = bs_[i];
        continue;
      }
      dims.push_back(od[i]);
      sa.push_back(as_[i]);
      sb.push_back(bs_[i]);
    }
    if (dims.size() > 3) return not_implemented(ctx.label(), ": MatMul over ", dims.size(), " independent batch dims");
    MatMulPush push{};
    push.m = static_cast<uint32_t>(m);
    push.n = static_cast<uint32_t>(n);
    push.k = static_cast<uint32_t>(k);
    push.a_row = static_cast<uint32_t>(k);
    push.a_col = 1;
    push.b_row = static_cast<uint32_t>(n);
    push.b_col = 1;
    push.alpha = 1.0f;
    uint32_t batches = 1;
    for (size_t i = 0; i < 3; ++i) push.batch_dims[i] = 1;
    // Right-aligned into the shader's three batch slots.
    const size_t first = 3 - dims.size();
    for (size_t i = 0; i < dims.size(); ++i) {
      push.batch_dims[first + i] = static_cast<uint32_t>(dims[i]);
      push.a_batch[first + i] = static_cast<uint32_t>(sa[i]);
      push.b_batch[first + i] = static_cast<uint32_t>(sb[i]);
      batches *= static_cast<uint32_t>(dims[i]);
    }
    ONYX_ASSIGN_OR_RETURN(BufferRange ra, range(ctx.label(), *a, "input 0"));
    ONYX_ASSIGN_OR_RETURN(BufferRange rb, range(ctx.label(), *b, "input 1"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    return run_matmul(*device_, ctx.label(), push, batches, {ra, rb, ra, ry}, false);
  }
};

class GemmKernel final : public VulkanKernel {
 public:
  GemmKernel(const KernelInfo& info, DevicePtr device)
      : VulkanKernel(std::move(device)),
        trans_a_(info.attr_int("transA", 0) != 0),
        trans_b_(info.attr_int("transB", 0) != 0),
        alpha_(info.attr_float("alpha", 1.0f)),
        beta_(info.attr_float("beta", 1.0f)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* a, float_input(ctx, 0));
    ONYX_ASSIGN_OR_RETURN(const Tensor* b, float_input(ctx, 1));
    if (a->rank() != 2 || b->rank() != 2) {
      return invalid_argument(ctx.label(), ": A and B must be 2-D, got ", a->describe(), " and ", b->describe());
    }
    const int64_t m = trans_a_ ? a->dim(1) : a->dim(0), k = trans_a_ ? a->dim(0) : a->dim(1);
    const int64_t kb = trans_b_ ? b->dim(1) : b->dim(0), n = trans_b_ ? b->dim(0) : b->dim(1);
    if (k != kb) return invalid_argument(ctx.label(), ": inner dimensions differ: ", a->describe(), " and ", b->describe());
    const Tensor* c = ctx.input_tensor(2);
    MatMulPush push{};
    push.m = static_cast<uint32_t>(m);
    push.n = static_cast<uint32_t>(n);
    push.k = static_cast<uint32_t>(k);
    push.a_row = static_cast<uint32_t>(trans_a_ ? 1 : a->dim(1));
    push.a_col = static_cast<uint32_t>(trans_a_ ? a->dim(1) : 1);
    push.b_row = static_cast<uint32_t>(trans_b_ ? 1 : b->dim(1));
    push.b_col = static_cast<uint32_t>(trans_b_ ? b->dim(1) : 1);
    push.alpha = alpha_;
    push.beta = beta_;
    for (int i = 0; i < 3; ++i) push.batch_dims[i] = 1;
    const bool has_c = c != nullptr && c->size() > 0 && beta_ != 0.0f;
    if (has_c) {
      if (c->dtype() != DataType::kFloat) return invalid_argument(ctx.label(), ": input C is not float");
      // C broadcasts unidirectionally to [M, N].
      Shape cs = c->shape();
      while (cs.size() < 2) cs.insert(cs.begin(), 1);
      if (cs.size() != 2 || (cs[0] != 1 && cs[0] != m) || (cs[1] != 1 && cs[1] != n)) {
        return invalid_argument(ctx.label(), ": input C ", c->describe(), " does not broadcast to [", m, ",", n, "]");
      }
      push.c_row = cs[0] == 1 ? 0 : static_cast<uint32_t>(cs[1]);
      push.c_col = cs[1] == 1 ? 0 : 1;
    }
    Tensor& y = ctx.allocate_output(0, DataType::kFloat, {m, n});
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(BufferRange ra, range(ctx.label(), *a, "input A"));
    ONYX_ASSIGN_OR_RETURN(BufferRange rb, range(ctx.label(), *b, "input B"));
    ONYX_ASSIGN_OR_RETURN(BufferRange ry, range(ctx.label(), y, "output 0"));
    BufferRange rc = ra;
    if (has_c) {
      ONYX_ASSIGN_OR_RETURN(rc, range(ctx.label(), *c, "input C"));
    }
    return run_matmul(*device_, ctx.label(), push, 1, {ra, rb, rc, ry}, has_c);
  }

 private:
  bool trans_a_, trans_b_;
  float alpha_, beta_;
};

}  // namespace

void add_matmul_kernels(std::vector<KernelDef>& defs, const DevicePtr& device) {
  defs.push_back(vulkan_kernel<MatMulKernel>(device, "MatMul", 1, kLatestVersion));
  defs.push_back(vulkan_kernel<GemmKernel>(device, "Gemm", 7, kLatestVersion));
}

}  // namespace onyx::vulkan
