// Conv on CUDA through cuDNN (1-D, 2-D and 3-D, groups, dilations,
// symmetric pads), float and float16, where the build found cuDNN; without
// it the provider registers no Conv and the CPU runs it. The algorithm is
// chosen once per input shape as the provider option cudnn_conv_algo_search
// says: EXHAUSTIVE times cuDNN's candidates on the first run, HEURISTIC takes
// cuDNN's first suggestion that fits the workspace, DEFAULT always the
// implicit precomputed GEMM.
#include "providers/cuda/cuda_kernel.h"

#ifdef ONYX_CUDA_WITH_CUDNN
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>
#include <map>

#include "providers/cpu/nn/nn_util.h"
#endif

namespace onyx::cuda {

#ifdef ONYX_CUDA_WITH_CUDNN

bool has_cudnn() { return true; }

namespace {

// The most workspace one convolution may take (from the provider's arena).
constexpr size_t kMaxWorkspaceBytes = 256u << 20;

Status cudnn_status(cudnnStatus_t status, const std::string& what) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::ok();
  return runtime_error(what, ": ", cudnnGetErrorString(status));
}

// One cuDNN handle per provider; a call sets its stream and queues under the
// lock (a handle serves one thread at a time).
struct CudnnHandle {
  cudnnHandle_t handle = nullptr;
  std::mutex mutex;
  ~CudnnHandle() {
    if (handle != nullptr) cudnnDestroy(handle);
  }
};

using TensorDesc = Owned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDesc = Owned<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvDesc = Owned<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;

std::vector<int> as_ints(const std::vector<int64_t>& v) { return std::vector<int>(v.begin(), v.end()); }

std::vector<int> packed_strides(const std::vector<int>& dims) {
  std::vector<int> s(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) s[d - 1] = s[d] * dims[d];
  return s;
}

class ConvKernel final : public CudaKernel {
 public:
  ConvKernel(const KernelInfo& info, ContextPtr context, std::shared_ptr<CudnnHandle> cudnn)
      : CudaKernel(std::move(context)),
        cudnn_(std::move(cudnn)),
        attrs_(cpu::nn::WindowAttributes::from(info)),
        group_(info.attr_int("group", 1)) {}

  Status compute(KernelContext& ctx) const override {
    ONYX_ASSIGN_OR_RETURN(const Tensor* x, device_input(ctx, 0, "X"));
    ONYX_ASSIGN_OR_RETURN(const Tensor* w, device_input(ctx, 1, "W"));
    const Tensor* b = nullptr;
    if (ctx.input_tensor(2) != nullptr) {
      ONYX_ASSIGN_OR_RETURN(b, device_input(ctx, 2, "B"));
    }
    ONYX_ASSIGN_OR_RETURN(Element type, element_of(ctx, *x, "X"));
    if (x->rank() < 3 || x->rank() > 5 || w->rank() != x->rank()) {
      return not_implemented(ctx.label(), ": the CUDA Conv runs 1-D to 3-D convolutions; X is ", x->describe(),
                             " and W ", w->describe());
    }
    const int64_t channels = x->dim(1), m = w->dim(0);
    if (w->dtype() != x->dtype() || group_ < 1 || m % group_ != 0 || channels != w->dim(1) * group_) {
      return invalid_argument(ctx.label(), ": X ", x->describe(), " and W ", w->describe(), " with group ", group_,
                              " do not match (expected C == W.dim(1) * group, M divisible by group, one element type)");
    }
    if (b != nullptr && (b->dtype() != x->dtype() || b->size() != m)) {
      return invalid_argument(ctx.label(), ": B ", b->describe(), " does not have ", m, " values of X's type");
    }
    const Shape x_spatial(x->shape().begin() + 2, x->shape().end());
    const Shape w_spatial(w->shape().begin() + 2, w->shape().end());
    ONYX_ASSIGN_OR_RETURN(cpu::nn::Window window, cpu::nn::resolve_window(ctx.label(), attrs_, x_spatial, w_spatial));
    const size_t rank = window.rank();
    for (size_t d = 0; d < rank; ++d) {
      if (window.pads[d] != window.pads[d + rank]) {
        return not_implemented(ctx.label(), ": cuDNN takes symmetric pads only, got ", shape_to_string(window.pads));
      }
    }
    Shape out = {x->dim(0), m};
    out.insert(out.end(), window.output.begin(), window.output.end());
    Tensor& y = ctx.allocate_output(0, x->dtype(), out);
    if (y.size() == 0) return Status::ok();
    ONYX_ASSIGN_OR_RETURN(cudaStream_t stream, begin(ctx));

    // A 1-D convolution is a 2-D one over a plane of height 1.
    std::vector<int64_t> pads(window.pads.begin(), window.pads.begin() + static_cast<std::ptrdiff_t>(rank));
    std::vector<int64_t> strides = window.strides, dilations = window.dilations;
    Shape xs = x->shape(), ws = w->shape(), ys = out;
    if (rank == 1) {
      for (Shape* s : {&xs, &ws, &ys}) s->insert(s->begin() + 2, 1);
      pads.insert(pads.begin(), 0);
      strides.insert(strides.begin(), 1);
      dilations.insert(dilations.begin(), 1);
    }
    const std::string what = ctx.label() + ": cuDNN";
    const cudnnDataType_t data = type == Element::kFloat ? CUDNN_DATA_FLOAT : CUDNN_DATA_HALF;
    TensorDesc x_desc, y_desc, b_desc;
    FilterDesc w_desc;
    ConvDesc conv;
    const std::vector<int> xd = as_ints(xs), yd = as_ints(ys), wd = as_ints(ws);
    ONYX_RETURN_IF_ERROR(cudnn_status(cudnnCreateTensorDescriptor(&x_desc.handle), what));
    ONYX_RETURN_IF_ERROR(cudnn_status(cudnnCreateTensorDescriptor(&y_desc.handle), what));
    ONYX_RETURN_IF_ERROR(cudnn_status(cudnnCreateFilterDescriptor(&w_desc.handle), what));
    ONYX_RETURN_IF_ERROR(cudnn_status(cudnnCreateConvolutionDescriptor(&conv.handle), what));
    ONYX_RETURN_IF_ERROR(cudnn_status(cudnnSetTensorNdDescriptor(x_desc.handle, data, static_cast<int>(xd.size()),
                                                                 xd.data(), packed_strides(xd).data()),
                                      what));
    ONYX_RETURN_IF_ERROR(cudnn_status(cudnnSetTensorNdDescriptor(y_desc.handle, data, static_cast<int>(yd.size()),
                                                                 yd.data(), packed_strides(yd).data()),
                                      what));
    ONYX_RETURN_IF_ERROR(cudnn_status(
        cudnnSetFilterNdDescriptor(w_desc.handle, data, CUDNN_TENSOR_NCHW, static_cast<int>(wd.size()), wd.data()),
        what));
    const std::vector<int> pd = as_ints(pads), sd = as_ints(strides), dd = as_ints(dilations);
    ONYX_RETURN_IF_ERROR(
        cudnn_status(cudnnSetConvolutionNdDescriptor(conv.handle, static_cast<int>(pd.size()), pd.data(), sd.data(),
                                                     dd.data(), CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                     what));
    ONYX_RETURN_IF_ERROR(cudnn_status(cudnnSetConvolutionGroupCount(conv.handle, static_cast<int>(group_)), what));
    // float32 stays float32 unless use_tf32; float16 may use tensor cores.
    const cudnnMathType_t math = type == Element::kHalf         ? CUDNN_TENSOR_OP_MATH
                                 : context_->options().use_tf32 ? CUDNN_DEFAULT_MATH
                                                                : CUDNN_FMA_MATH;
    ONYX_RETURN_IF_ERROR(cudnn_status(cudnnSetConvolutionMathType(conv.handle, math), what));

    std::lock_guard<std::mutex> lock(cudnn_->mutex);
    ONYX_RETURN_IF_ERROR(cudnn_status(cudnnSetStream(cudnn_->handle, stream), what));
    ONYX_ASSIGN_OR_RETURN(Choice choice,
                          choose(ctx, xs, x_desc.handle, *x, w_desc.handle, *w, conv.handle, y_desc.handle, y));
    Tensor workspace(DataType::kUInt8, {static_cast<int64_t>(choice.workspace)}, ctx.allocator());
    const float one = 1.0f, zero = 0.0f;
    ONYX_RETURN_IF_ERROR(
        cudnn_status(cudnnConvolutionForward(cudnn_->handle, &one, x_desc.handle, x->raw_data(), w_desc.handle,
                                             w->raw_data(), conv.handle, choice.algo, workspace.raw_data(),
                                             choice.workspace, &zero, y_desc.handle, y.raw_data()),
                     what));
    if (b == nullptr) return Status::ok();
    std::vector<int> bd(yd.size(), 1);
    bd[1] = static_cast<int>(m);
    ONYX_RETURN_IF_ERROR(cudnn_status(cudnnCreateTensorDescriptor(&b_desc.handle), what));
    ONYX_RETURN_IF_ERROR(cudnn_status(cudnnSetTensorNdDescriptor(b_desc.handle, data, static_cast<int>(bd.size()),
                                                                 bd.data(), packed_strides(bd).data()),
                                      what));
    return cudnn_status(
        cudnnAddTensor(cudnn_->handle, &one, b_desc.handle, b->raw_data(), &one, y_desc.handle, y.raw_data()), what);
  }

 private:
  struct Choice {
    cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    size_t workspace = 0;
  };

  // Under the handle's lock.
  Result<Choice> choose(KernelContext& ctx, const Shape& key, cudnnTensorDescriptor_t x_desc, const Tensor& x,
                        cudnnFilterDescriptor_t w_desc, const Tensor& w, cudnnConvolutionDescriptor_t conv,
                        cudnnTensorDescriptor_t y_desc, Tensor& y) const {
    auto found = choices_.find(key);
    if (found != choices_.end()) return found->second;
    const std::string what = ctx.label() + ": cuDNN algorithm search";
    Choice choice;
    switch (context_->options().conv_algo_search) {
      case ConvAlgoSearch::kExhaustive: {
        Tensor workspace(DataType::kUInt8, {static_cast<int64_t>(kMaxWorkspaceBytes)}, ctx.allocator());
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int count = 0;
        // Runs each candidate on y (overwritten by the real run after).
        ONYX_RETURN_IF_ERROR(cudnn_status(
            cudnnFindConvolutionForwardAlgorithmEx(cudnn_->handle, x_desc, x.raw_data(), w_desc, w.raw_data(), conv,
                                                   y_desc, y.raw_data(), CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf,
                                                   workspace.raw_data(), kMaxWorkspaceBytes),
            what));
        int best = -1;
        for (int i = 0; i < count && best < 0; ++i) {
          if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kMaxWorkspaceBytes) best = i;
        }
        if (best < 0) return not_implemented(ctx.label(), ": cuDNN found no algorithm for this convolution");
        choice.algo = perf[best].algo;
        break;
      }
      case ConvAlgoSearch::kHeuristic: {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        int count = 0;
        ONYX_RETURN_IF_ERROR(
            cudnn_status(cudnnGetConvolutionForwardAlgorithm_v7(cudnn_->handle, x_desc, w_desc, conv, y_desc,
                                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf),
                         what));
        int best = -1;
        for (int i = 0; i < count && best < 0; ++i) {
          if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kMaxWorkspaceBytes) best = i;
        }
        if (best >= 0) choice.algo = perf[best].algo;
        break;
      }
      case ConvAlgoSearch::kDefault:
        break;
    }
    ONYX_RETURN_IF_ERROR(cudnn_status(cudnnGetConvolutionForwardWorkspaceSize(cudnn_->handle, x_desc, w_desc, conv,
                                                                              y_desc, choice.algo, &choice.workspace),
                                      what));
    choices_.emplace(key, choice);
    return choice;
  }

  std::shared_ptr<CudnnHandle> cudnn_;
  cpu::nn::WindowAttributes attrs_;
  int64_t group_;
  mutable std::map<Shape, Choice> choices_;  // by input shape, under cudnn_->mutex
};

}  // namespace

void add_conv_kernels(std::vector<KernelDef>& defs, const ContextPtr& context) {
  auto cudnn = std::make_shared<CudnnHandle>();
  Status made = cudnn_status(cudnnCreate(&cudnn->handle), "cudnnCreate");
  if (!made.is_ok()) {
    // Conv then runs on the CPU; say why where asked to.
    const char* debug = std::getenv("ONYX_DEBUG_PROVIDERS");
    if (debug != nullptr && std::string(debug) == "1") {
      std::fprintf(stderr, "onyx: %s runs no Conv: %s\n", kProviderName, made.message().c_str());
    }
    return;
  }
  KernelDef def;
  def.op_type = "Conv";
  def.types = {DataType::kFloat, DataType::kFloat16};
  def.factory = [context, cudnn](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new ConvKernel(info, context, cudnn));
  };
  defs.push_back(std::move(def));
}

#else

bool has_cudnn() { return false; }

void add_conv_kernels(std::vector<KernelDef>&, const ContextPtr&) {}

#endif

}  // namespace onyx::cuda
