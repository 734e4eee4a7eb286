// Transpose, and the block rearrangements DepthToSpace and SpaceToDepth that
// are a reshape, a transpose and a reshape (done as one strided copy).
#include <numeric>

#include "providers/cpu/tensor/tensor_util.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

// Writes the transpose by `perm` of `src` (shape in_shape) into dense `dst`.
void transpose_copy(DataType dtype, const void* src, const Shape& in_shape, const std::vector<int64_t>& perm,
                    void* dst, ThreadPool* pool) {
  const std::vector<int64_t> in_strides = contiguous_strides(in_shape);
  Shape out_shape(perm.size());
  std::vector<int64_t> src_strides(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    out_shape[i] = in_shape[static_cast<size_t>(perm[i])];
    src_strides[i] = in_strides[static_cast<size_t>(perm[i])];
  }
  strided_copy(dtype, dst, contiguous_strides(out_shape), src, src_strides, out_shape, pool);
}

class TransposeKernel final : public Kernel {
 public:
  explicit TransposeKernel(const KernelInfo& info) : perm_(info.attr_ints("perm")) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "data"));
    const int64_t rank = data->rank();
    std::vector<int64_t> perm = perm_;
    if (perm.empty()) {
      perm.resize(static_cast<size_t>(rank));
      for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = rank - 1 - i;
    }
    if (static_cast<int64_t>(perm.size()) != rank) {
      return invalid_argument(ctx.label(), ": perm ", shape_to_string(perm), " has ", perm.size(),
                              " entries, expected ", rank, " (the rank of data ", data->describe(), ")");
    }
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t& p : perm) {
      ONYX_ASSIGN_OR_RETURN(p, normalize_axis(p, rank, ctx.label(), "perm entry"));
      if (seen[static_cast<size_t>(p)]) {
        return invalid_argument(ctx.label(), ": perm ", shape_to_string(perm_), " is not a permutation");
      }
      seen[static_cast<size_t>(p)] = true;
    }
    Shape out_shape(static_cast<size_t>(rank));
    for (int64_t i = 0; i < rank; ++i) out_shape[static_cast<size_t>(i)] = data->dim(perm[static_cast<size_t>(i)]);
    Tensor& out = ctx.allocate_output(0, data->dtype(), out_shape);
    transpose_copy(data->dtype(), data->raw_data(), data->shape(), perm, out.raw_data(), ctx.thread_pool());
    return Status::ok();
  }

 private:
  std::vector<int64_t> perm_;
};

// DepthToSpace (mode DCR or CRD; v1 has only DCR) and SpaceToDepth (mode from v28).
class BlockRearrangeKernel : public Kernel {
 public:
  BlockRearrangeKernel(const KernelInfo& info, bool depth_to_space)
      : depth_to_space_(depth_to_space),
        blocksize_(info.attr_int("blocksize", 0)),
        crd_(info.attr_string("mode", "DCR") == "CRD") {
    const std::string mode = info.attr_string("mode", "DCR");
    if (mode != "DCR" && mode != "CRD") throw Error(invalid_model(info.label(), ": unknown mode '", mode, "'"));
    if (blocksize_ <= 0) throw Error(invalid_model(info.label(), ": blocksize ", blocksize_, " must be positive"));
  }

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* data, required_input(ctx, 0, "input"));
    if (data->rank() != 4) {
      return invalid_argument(ctx.label(), ": input has rank ", data->rank(), ", expected 4 (N,C,H,W)");
    }
    const int64_t b = data->dim(0), c = data->dim(1), h = data->dim(2), w = data->dim(3), bs = blocksize_;
    Shape tmp;
    std::vector<int64_t> perm;
    Shape out_shape;
    if (depth_to_space_) {
      if (c % (bs * bs) != 0) {
        return invalid_argument(ctx.label(), ": input channels ", c, " are not divisible by blocksize^2 = ", bs * bs);
      }
      const int64_t oc = c / (bs * bs);
      if (crd_) {
        tmp = {b, oc, bs, bs, h, w};
        perm = {0, 1, 4, 2, 5, 3};
      } else {
        tmp = {b, bs, bs, oc, h, w};
        perm = {0, 3, 4, 1, 5, 2};
      }
      out_shape = {b, oc, h * bs, w * bs};
    } else {
      if (h % bs != 0 || w % bs != 0) {
        return invalid_argument(ctx.label(), ": input height ", h, " and width ", w,
                                " must be divisible by blocksize ", bs);
      }
      tmp = {b, c, h / bs, bs, w / bs, bs};
      perm = crd_ ? std::vector<int64_t>{0, 1, 3, 5, 2, 4} : std::vector<int64_t>{0, 3, 5, 1, 2, 4};
      out_shape = {b, c * bs * bs, h / bs, w / bs};
    }
    Tensor& out = ctx.allocate_output(0, data->dtype(), out_shape);
    transpose_copy(data->dtype(), data->raw_data(), tmp, perm, out.raw_data(), ctx.thread_pool());
    return Status::ok();
  }

 private:
  bool depth_to_space_;
  int64_t blocksize_;
  bool crd_;
};

class DepthToSpaceKernel final : public BlockRearrangeKernel {
 public:
  explicit DepthToSpaceKernel(const KernelInfo& info) : BlockRearrangeKernel(info, true) {}
};
class SpaceToDepthKernel final : public BlockRearrangeKernel {
 public:
  explicit SpaceToDepthKernel(const KernelInfo& info) : BlockRearrangeKernel(info, false) {}
};

}  // namespace

ONYX_REGISTER_CPU_KERNEL("", "Transpose", 1, kLatestVersion, types::all(), TransposeKernel);
ONYX_REGISTER_CPU_KERNEL("", "DepthToSpace", 1, 10, types::all(), DepthToSpaceKernel);
ONYX_REGISTER_CPU_KERNEL("", "DepthToSpace", 11, kLatestVersion, types::all(), DepthToSpaceKernel);
ONYX_REGISTER_CPU_KERNEL("", "SpaceToDepth", 1, kLatestVersion, types::all(), SpaceToDepthKernel);

}  // namespace onyx::cpu
