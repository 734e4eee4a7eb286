// The CUDA provider's runtime pieces: errors, context, memory, streams,
// events and copies (cuda_device.h).
#include "providers/cuda/cuda_device.h"

namespace onyx::cuda {

Status cuda_status(cudaError_t error, const std::string& what) {
  if (error == cudaSuccess) return Status::ok();
  return runtime_error(what, ": ", cudaGetErrorName(error), " (", cudaGetErrorString(error), ")");
}

Status cublas_status(cublasStatus_t status, const std::string& what) {
  if (status == CUBLAS_STATUS_SUCCESS) return Status::ok();
  return runtime_error(what, ": cuBLASLt status ", static_cast<int>(status));
}

Status use_device(int device_id) {
  int current = -1;
  if (cudaGetDevice(&current) == cudaSuccess && current == device_id) return Status::ok();
  return cuda_status(cudaSetDevice(device_id), str_cat(kProviderName, ": cudaSetDevice(", device_id, ")"));
}

Result<std::shared_ptr<CudaContext>> CudaContext::create(const CudaOptions& options) {
  ONYX_RETURN_IF_ERROR(use_device(options.device_id));
  std::shared_ptr<CudaContext> context(new CudaContext(options));
  if (options.user_stream != nullptr) {
    context->stream_ = options.user_stream;
  } else {
    // Non-blocking: the legacy default stream, which other libraries in the
    // process may use, does not serialise with the session's work.
    ONYX_RETURN_IF_ERROR(cuda_status(cudaStreamCreateWithFlags(&context->stream_, cudaStreamNonBlocking),
                                     str_cat(kProviderName, ": cudaStreamCreateWithFlags")));
    context->owns_stream_ = true;
  }
  ONYX_RETURN_IF_ERROR(cublas_status(cublasLtCreate(&context->cublas_), str_cat(kProviderName, ": cublasLtCreate")));
  return context;
}

CudaContext::~CudaContext() {
  if (!use_device(options_.device_id).is_ok()) return;
  if (cublas_ != nullptr) cublasLtDestroy(cublas_);
  if (owns_stream_ && stream_ != nullptr) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

void* CudaMemory::allocate(size_t bytes) {
  Status current = use_device(device_id_);
  if (!current.is_ok()) throw Error(current);
  void* p = nullptr;
  const size_t n = bytes == 0 ? 1 : bytes;
  const bool pinned = memory_ == MemoryType::kHostPinned;
  Status made =
      pinned ? cuda_status(cudaHostAlloc(&p, n, cudaHostAllocPortable), str_cat("cudaHostAlloc of ", bytes, " bytes"))
             : cuda_status(cudaMalloc(&p, n), str_cat("cudaMalloc of ", bytes, " bytes"));
  if (!made.is_ok()) {
    cudaGetLastError();  // a failed allocation leaves an error that the next call would report
    throw Error(made);
  }
  return p;
}

void CudaMemory::deallocate(void* pointer, size_t) {
  if (pointer == nullptr || !use_device(device_id_).is_ok()) return;
  if (memory_ == MemoryType::kHostPinned) {
    cudaFreeHost(pointer);
  } else {
    cudaFree(pointer);
  }
}

void* DeviceArena::allocate(size_t bytes) {
  try {
    return arena_.allocate(bytes);
  } catch (const Error& e) {
    const size_t limit = arena_.config().max_mem;
    throw Error(Status(e.code(), str_cat(kProviderName, " on device ", backing_.device().id, " (gpu_mem_limit ",
                                         limit == 0 ? std::string("none") : std::to_string(limit), "): ", e.what())));
  }
}

CudaEvent::~CudaEvent() {
  if (use_device(device_id_).is_ok()) cudaEventDestroy(event_);
}

Status CudaEvent::wait_on_host() const {
  ONYX_RETURN_IF_ERROR(use_device(device_id_));
  return cuda_status(cudaEventSynchronize(event_), "cudaEventSynchronize");
}

namespace {

// An event that could not be recorded: waiting for it reports why, so the
// run fails instead of reading what may not be written yet.
class FailedEvent final : public Event {
 public:
  explicit FailedEvent(Status status) : status_(std::move(status)) {}
  Status wait_on_host() const override { return status_; }

 private:
  Status status_;
};

}  // namespace

std::shared_ptr<Event> CudaStream::record_event() {
  Status current = use_device(context_->device_id());
  if (!current.is_ok()) return std::make_shared<FailedEvent>(current);
  cudaEvent_t event = nullptr;
  Status made = cuda_status(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  if (!made.is_ok()) return std::make_shared<FailedEvent>(made);
  auto recorded = std::make_shared<CudaEvent>(context_->device_id(), event);
  Status queued = cuda_status(cudaEventRecord(event, context_->stream()), "cudaEventRecord");
  if (!queued.is_ok()) return std::make_shared<FailedEvent>(queued);
  return recorded;
}

Status CudaStream::wait_for(const Event& event) {
  if (const auto* cuda_event = dynamic_cast<const CudaEvent*>(&event)) {
    ONYX_RETURN_IF_ERROR(use_device(context_->device_id()));
    return cuda_status(cudaStreamWaitEvent(context_->stream(), cuda_event->event(), 0), "cudaStreamWaitEvent");
  }
  return event.wait_on_host();
}

Status CudaStream::synchronize() {
  ONYX_RETURN_IF_ERROR(use_device(context_->device_id()));
  return cuda_status(cudaStreamSynchronize(context_->stream()), str_cat(kProviderName, ": cudaStreamSynchronize"));
}

cudaStream_t stream_of(const Stream* stream, const CudaContext& context) {
  if (const auto* cuda_stream = dynamic_cast<const CudaStream*>(stream)) return cuda_stream->stream();
  return context.stream();
}

bool CudaTransfer::can_copy(const Device& src, const Device& dst) const {
  const bool from_here = on_this_device(src), to_here = on_this_device(dst);
  return (from_here && (to_here || dst.host_readable())) || (to_here && src.host_readable());
}

Status CudaTransfer::copy(const Tensor& src, Tensor& dst, Stream* stream) const {
  if (src.dtype() == DataType::kString) return not_implemented(kProviderName, ": device memory holds no strings");
  if (src.dtype() != dst.dtype() || src.bytes() != dst.bytes()) {
    return invalid_argument(kProviderName, ": copy from ", src.describe(), " into ", dst.describe());
  }
  ONYX_RETURN_IF_ERROR(use_device(device_id_));
  const size_t bytes = src.bytes();
  if (bytes == 0) return Status::ok();
  const std::string what = str_cat(kProviderName, ": copy of ", bytes, " bytes from ", device_to_string(src.device()),
                                   " to ", device_to_string(dst.device()));
  // cudaMemcpyDefault: unified addressing tells host and device pointers apart.
  if (stream == nullptr) return cuda_status(cudaMemcpy(dst.raw_data(), src.raw_data(), bytes, cudaMemcpyDefault), what);
  const auto* cuda_stream = dynamic_cast<const CudaStream*>(stream);
  if (cuda_stream == nullptr) {
    // Another provider's stream (the CPU's, which is synchronous).
    return cuda_status(cudaMemcpy(dst.raw_data(), src.raw_data(), bytes, cudaMemcpyDefault), what);
  }
  cudaStream_t s = cuda_stream->stream();
  ONYX_RETURN_IF_ERROR(cuda_status(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), bytes, cudaMemcpyDefault, s), what));
  // The host reads what comes back once this returns; and pinned memory
  // (unlike pageable, which the runtime stages before it returns) may be
  // reused by its owner as soon as the copy is queued.
  if (dst.device().host_readable() || src.device().memory == MemoryType::kHostPinned) {
    return cuda_status(cudaStreamSynchronize(s), what);
  }
  return Status::ok();
}

}  // namespace onyx::cuda
