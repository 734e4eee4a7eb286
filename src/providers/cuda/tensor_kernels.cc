// Data movement on CUDA, any element type: Reshape, Flatten, Squeeze and
// Unsqueeze are the CPU provider's own kernels (they relabel the input's
// buffer under a new shape and never read its data, so they run unchanged
// on device memory; only their shape and axes inputs stay on the host);
// Transpose is a strided copy (elementwise.cu) and Concat one 2-D copy per
// input (cudaMemcpy2DAsync).
#include <algorithm>

#include "providers/cuda/cuda_kernel.h"

namespace onyx::cuda {
namespace {

// Every element type device memory holds (all but strings).
std::vector<DataType> device_types() {
  std::vector<DataType> all = types::all_with_small_formats();
  std::erase(all, DataType::kString);
  return all;
}

class TransposeKernel final : public CudaKernel {
 public:
  TransposeKernel(const KernelInfo& info, ContextPtr context)
      : CudaKernel(std::move(context)), perm_(info.attr_ints("perm")) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, device_input(ctx, 0, "data"));
    const auto rank = static_cast<size_t>(x->rank());
    std::vector<int64_t> perm = perm_;
    if (perm.empty()) {
      perm.resize(rank);
      for (size_t d = 0; d < rank; ++d) perm[d] = static_cast<int64_t>(rank - 1 - d);
    }
    std::vector<bool> seen(rank, false);
    if (perm.size() != rank) {
      return invalid_argument(ctx.label(), ": perm has ", perm.size(), " entries for data ", x->describe());
    }
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)]) {
        return invalid_argument(ctx.label(), ": perm ", shape_to_string(perm), " is not a permutation of ", rank,
                                " axes");
      }
      seen[static_cast<size_t>(p)] = true;
    }
    std::vector<int64_t> in_strides(rank, 1);
    for (size_t d = rank; d-- > 1;) in_strides[d - 1] = in_strides[d] * x->dim(static_cast<int64_t>(d));
    Shape out(rank);
    std::vector<int64_t> strides(rank);
    for (size_t d = 0; d < rank; ++d) {
      out[d] = x->dim(perm[d]);
      strides[d] = in_strides[static_cast<size_t>(perm[d])];
    }
    const size_t bytes = dtype_size(x->dtype());
    if (x->dtype() == DataType::kString || (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8)) {
      return not_implemented(ctx.label(), ": the CUDA Transpose moves elements of 1, 2, 4 or 8 bytes, not ",
                             dtype_name(x->dtype()));
    }
    ONYX_ASSIGN_OR_RETURN(Strided shape, collapse_strided(ctx.label(), out, strides));
    Tensor& y = ctx.allocate_output(0, x->dtype(), out);
    ONYX_ASSIGN_OR_RETURN(cudaStream_t stream, begin(ctx));
    return launched(ctx,
                    launch_strided_copy(x->raw_data(), y.raw_data(), static_cast<int>(bytes), y.size(), shape, stream),
                    "Transpose launch");
  }

 private:
  std::vector<int64_t> perm_;
};

// Each input is `outer` blocks of (its axis dim x inner) elements, written
// at its offset within the output's blocks.
class ConcatKernel final : public CudaKernel {
 public:
  ConcatKernel(const KernelInfo& info, ContextPtr context)
      : CudaKernel(std::move(context)), axis_(info.attr_int("axis", 0)) {}

  Status compute(KernelContext& ctx) const override {
    std::vector<const Tensor*> inputs;
    for (size_t i = 0; i < ctx.input_count(); ++i) {
      const std::string name = str_cat("inputs[", i, "]");
      ONYX_ASSIGN_OR_RETURN(const Tensor* t, device_input(ctx, i, name.c_str()));
      inputs.push_back(t);
    }
    if (inputs.empty()) return invalid_argument(ctx.label(), ": Concat needs at least one input");
    const Tensor& first = *inputs[0];
    const int64_t rank = first.rank();
    const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (rank == 0 || axis < 0 || axis >= rank) {
      return invalid_argument(ctx.label(), ": axis ", axis_, " is out of range for inputs[0] ", first.describe());
    }
    Shape out = first.shape();
    out[static_cast<size_t>(axis)] = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& t = *inputs[i];
      bool matches = t.dtype() == first.dtype() && t.rank() == rank;
      for (int64_t d = 0; matches && d < rank; ++d) matches = d == axis || t.dim(d) == first.dim(d);
      if (!matches) {
        return invalid_argument(ctx.label(), ": inputs[", i, "] ", t.describe(), " does not match inputs[0] ",
                                first.describe(), " outside axis ", axis);
      }
      out[static_cast<size_t>(axis)] += t.dim(axis);
    }
    if (first.dtype() == DataType::kString) return not_implemented(ctx.label(), ": device memory holds no strings");
    Tensor& y = ctx.allocate_output(0, first.dtype(), out);
    if (y.size() == 0) return Status::ok();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d) outer *= out[static_cast<size_t>(d)];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= out[static_cast<size_t>(d)];
    const size_t bytes = dtype_size(first.dtype());
    const size_t out_row = static_cast<size_t>(out[static_cast<size_t>(axis)] * inner) * bytes;
    ONYX_ASSIGN_OR_RETURN(cudaStream_t stream, begin(ctx));
    size_t offset = 0;
    for (const Tensor* t : inputs) {
      const size_t row = static_cast<size_t>(t->dim(axis) * inner) * bytes;
      if (row > 0 && outer > 0) {
        ONYX_RETURN_IF_ERROR(
            launched(ctx,
                     cudaMemcpy2DAsync(static_cast<char*>(y.raw_data()) + offset, out_row, t->raw_data(), row, row,
                                       static_cast<size_t>(outer), cudaMemcpyDeviceToDevice, stream),
                     "Concat copy"));
      }
      offset += row;
    }
    return Status::ok();
  }

 private:
  int64_t axis_;
};

}  // namespace

void add_tensor_kernels(std::vector<KernelDef>& defs, const ContextPtr& context) {
  // The CPU's view kernels: where they read a shape or axes from an input,
  // that input stays on the host.
  for (const KernelDef& cpu : cpu_kernel_registry().all()) {
    if (!cpu.domain.empty()) continue;
    const bool reshape = cpu.op_type == "Reshape";
    const bool axes = cpu.op_type == "Squeeze" || cpu.op_type == "Unsqueeze";
    if (!reshape && !axes && cpu.op_type != "Flatten") continue;
    KernelDef def = cpu;
    if (def.types.empty()) def.types = device_types();
    std::erase(def.types, DataType::kString);
    if ((reshape && def.since_version >= 5) || (axes && def.since_version >= 13)) def.host_inputs = {1};
    defs.push_back(std::move(def));
  }
  // The strided copy moves words of up to 8 bytes: no complex128.
  std::vector<DataType> words = device_types();
  std::erase(words, DataType::kComplex128);
  defs.push_back(cuda_kernel<TransposeKernel>(context, "Transpose", 1, kLatestVersion, words));
  defs.push_back(cuda_kernel<ConcatKernel>(context, "Concat", 4, kLatestVersion, device_types()));
}

}  // namespace onyx::cuda
