// Col2Im (v18): sums column blocks [N, C * prod(block), L] back into an image
// [N, C, image...] (PyTorch's fold), with strides, dilations and pads per axis.
#include <vector>

#include "providers/cpu/dispatch.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

Result<std::vector<int64_t>> int64_vector(const KernelContext& ctx, size_t index, const char* name) {
  const Tensor* t = ctx.input_tensor(index);
  if (t == nullptr || t->dtype() != DataType::kInt64 || t->rank() != 1) {
    return invalid_argument(ctx.label(), ": input ", name, " must be a 1-D int64 tensor");
  }
  return std::vector<int64_t>(t->data<int64_t>(), t->data<int64_t>() + t->size());
}

class Col2ImKernel final : public Kernel {
 public:
  explicit Col2ImKernel(const KernelInfo& info)
      : strides_(info.attr_ints("strides")), dilations_(info.attr_ints("dilations")), pads_(info.attr_ints("pads")) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor* x = ctx.input_tensor(0);
    if (x == nullptr) return invalid_argument(ctx.label(), ": input input is required");
    ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> image, int64_vector(ctx, 1, "image_shape"));
    ONYX_ASSIGN_OR_RETURN(std::vector<int64_t> block, int64_vector(ctx, 2, "block_shape"));
    const size_t rank = image.size();
    if (rank == 0 || block.size() != rank) {
      return invalid_argument(ctx.label(), ": image_shape has ", rank, " values and block_shape ", block.size(),
                              ", expected the same non-zero count");
    }
    auto fill = [&](const std::vector<int64_t>& given, size_t n, int64_t dflt, const char* name,
                    std::vector<int64_t>& out) -> Status {
      if (given.empty()) {
        out.assign(n, dflt);
      } else if (given.size() != n) {
        return invalid_argument(ctx.label(), ": attribute ", name, " has ", given.size(), " values, expected ", n);
      } else {
        out = given;
      }
      return Status::ok();
    };
    std::vector<int64_t> strides, dilations, pads;
    ONYX_RETURN_IF_ERROR(fill(strides_, rank, 1, "strides", strides));
    ONYX_RETURN_IF_ERROR(fill(dilations_, rank, 1, "dilations", dilations));
    ONYX_RETURN_IF_ERROR(fill(pads_, 2 * rank, 0, "pads", pads));
    int64_t block_size = 1, blocks = 1;
    std::vector<int64_t> grid(rank);
    for (size_t d = 0; d < rank; ++d) {
      if (block[d] < 1 || strides[d] < 1 || dilations[d] < 1 || image[d] < 0 || pads[d] < 0 || pads[d + rank] < 0) {
        return invalid_argument(ctx.label(), ": axis ", d, " has block ", block[d], ", stride ", strides[d],
                                ", dilation ", dilations[d], ", image ", image[d], " (expected positive sizes)");
      }
      const int64_t span = image[d] + pads[d] + pads[d + rank] - dilations[d] * (block[d] - 1) - 1;
      grid[d] = span < 0 ? 0 : span / strides[d] + 1;
      block_size *= block[d];
      blocks *= grid[d];
    }
    if (x->rank() != 3 || x->dim(1) % block_size != 0 || x->dim(2) != blocks) {
      return invalid_argument(ctx.label(), ": input has shape ", shape_to_string(x->shape()), ", expected [N, C * ",
                              block_size, ", ", blocks, "]");
    }
    const int64_t batch = x->dim(0), channels = x->dim(1) / block_size;
    Shape out_shape{batch, channels};
    out_shape.insert(out_shape.end(), image.begin(), image.end());
    Tensor& y = ctx.allocate_output(0, x->dtype(), out_shape);
    const int64_t plane = shape_size(image);
    return dispatch_numeric(x->dtype(), [&](auto tag) -> Status {
      using T = typename decltype(tag)::type;
      using C = compute_t<T>;
      const T* xp = x->data<T>();
      T* yp = y.data<T>();
      parallel_for(ctx.thread_pool(), batch * channels, static_cast<double>(block_size * blocks * 4),
                   [&](int64_t begin, int64_t end) {
        std::vector<C> acc(static_cast<size_t>(plane));
        std::vector<int64_t> b_index(rank), l_index(rank);
        for (int64_t job = begin; job < end; ++job) {
          std::fill(acc.begin(), acc.end(), C(0));
          for (int64_t b = 0; b < block_size; ++b) {
            int64_t rest = b;
            for (size_t d = rank; d-- > 0;) {
              b_index[d] = rest % block[d];
              rest /= block[d];
            }
            const T* column = xp + (job * block_size + b) * blocks;
            for (int64_t l = 0; l < blocks; ++l) {
              rest = l;
              int64_t offset = 0;
              bool inside = true;
              for (size_t d = rank; d-- > 0;) {
                l_index[d] = rest % grid[d];
                rest /= grid[d];
              }
              for (size_t d = 0; d < rank && inside; ++d) {
                const int64_t p = l_index[d] * strides[d] - pads[d] + b_index[d] * dilations[d];
                inside = p >= 0 && p < image[d];
                offset = offset * image[d] + p;
              }
              if (inside) acc[static_cast<size_t>(offset)] += static_cast<C>(column[l]);
            }
          }
          for (int64_t k = 0; k < plane; ++k) yp[job * plane + k] = static_cast<T>(acc[static_cast<size_t>(k)]);
        }
      });
      return Status::ok();
    });
  }

 private:
  std::vector<int64_t> strides_, dilations_, pads_;
};

ONYX_REGISTER_CPU_KERNEL("", "Col2Im", 18, kLatestVersion, types::numeric(), Col2ImKernel);

}  // namespace
}  // namespace onyx::cpu
