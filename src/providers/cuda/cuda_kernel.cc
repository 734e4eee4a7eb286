// The checks and shape collapsing every CUDA kernel shares (cuda_kernel.h).
#include "providers/cuda/cuda_kernel.h"

namespace onyx::cuda {

Result<const Tensor*> CudaKernel::device_input(KernelContext& ctx, size_t i, const char* name) const {
  const Tensor* t = ctx.input_tensor(i);
  if (t == nullptr) return invalid_argument(ctx.label(), ": input ", name, " is missing");
  const Device d = t->device();
  if (d.type != DeviceType::kCuda || d.id != context_->device_id() || d.memory != MemoryType::kDefault) {
    return runtime_error(ctx.label(), ": input ", name, " is in ", device_to_string(d), " memory, not on ",
                         device_to_string(context_->device()), " (a copy is missing)");
  }
  return t;
}

Result<Element> CudaKernel::element_of(const KernelContext& ctx, const Tensor& t, const char* name) {
  if (t.dtype() == DataType::kFloat) return Element::kFloat;
  if (t.dtype() == DataType::kFloat16) return Element::kHalf;
  return invalid_argument(ctx.label(), ": input ", name, " has element type ", dtype_name(t.dtype()),
                          ", expected float or float16");
}

Result<cudaStream_t> CudaKernel::begin(KernelContext& ctx) const {
  ONYX_RETURN_IF_ERROR(use_device(context_->device_id()));
  return stream_of(ctx.stream(), *context_);
}

namespace {

// Merges per-operand strides over `out` (see collapse()).
Result<Strided> merge(const std::string& label, const Shape& out, const std::vector<std::vector<int64_t>>& strides) {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> merged(strides.size());
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool joins = !dims.empty();
    for (size_t k = 0; k < strides.size() && joins; ++k) joins = merged[k].back() == strides[k][d] * out[d];
    if (joins) {
      dims.back() *= out[d];
      for (size_t k = 0; k < strides.size(); ++k) merged[k].back() = strides[k][d];
      continue;
    }
    dims.push_back(out[d]);
    for (size_t k = 0; k < strides.size(); ++k) merged[k].push_back(strides[k][d]);
  }
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return not_implemented(label, ": the CUDA kernels index at most ", kMaxRank, " dims after merging, this needs ",
                           dims.size());
  }
  Strided s;
  s.rank = static_cast<int32_t>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    s.dims[d] = dims[d];
    for (size_t k = 0; k < strides.size(); ++k) s.strides[k][d] = merged[k][d];
  }
  return s;
}

}  // namespace

Result<Strided> collapse(const std::string& label, const Shape& out, const std::vector<Shape>& operands) {
  std::vector<std::vector<int64_t>> strides;
  for (const Shape& shape : operands) {
    if (shape.size() > out.size()) {
      return invalid_argument(label, ": an input of shape ", shape_to_string(shape), " has more dims than the output ",
                              shape_to_string(out));
    }
    std::vector<int64_t> s(out.size(), 0);
    const size_t pad = out.size() - shape.size();
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      if (shape[d] != 1 && shape[d] != out[pad + d]) {
        return invalid_argument(label, ": an input of shape ", shape_to_string(shape), " does not broadcast to ",
                                shape_to_string(out));
      }
      s[pad + d] = shape[d] == 1 ? 0 : stride;
      stride *= shape[d];
    }
    strides.push_back(std::move(s));
  }
  return merge(label, out, strides);
}

Result<Strided> collapse_strided(const std::string& label, const Shape& out, const std::vector<int64_t>& strides) {
  return merge(label, out, {strides});
}

}  // namespace onyx::cuda
