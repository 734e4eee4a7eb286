// What the CUDA provider is built on: errors of the CUDA runtime as Status,
// the provider's options, its context (device, stream, cuBLASLt handle), its
// memory (an arena over cudaMalloc, pinned host memory), streams and events
// over cudaStream_t / cudaEvent_t, and the copies between host and device.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "onyx/status.h"
#include "onyx/tensor.h"
#include "providers/data_transfer.h"
#include "providers/stream.h"
#include "tensor/arena.h"

namespace onyx::cuda {

constexpr const char* kProviderName = "CUDAExecutionProvider";

// "<what>: cudaErrorMemoryAllocation (out of memory)"; ok for cudaSuccess.
Status cuda_status(cudaError_t error, const std::string& what);
Status cublas_status(cublasStatus_t status, const std::string& what);

// The CUDA runtime's current device is per host thread: every thread that
// allocates, copies or launches for a provider first makes its device current.
Status use_device(int device_id);

enum class ConvAlgoSearch { kExhaustive, kHeuristic, kDefault };

// The provider options, as onnxruntime's CUDA provider names them.
struct CudaOptions {
  int device_id = 0;
  size_t gpu_mem_limit = 0;  // bytes; 0: no limit
  ArenaExtendStrategy arena_extend_strategy = ArenaExtendStrategy::kNextPowerOfTwo;
  bool use_tf32 = false;  // float32 GEMMs and convolutions may round inputs to TF32
  ConvAlgoSearch conv_algo_search = ConvAlgoSearch::kExhaustive;
  cudaStream_t user_stream = nullptr;  // the caller's stream, or null for one of the provider's own
  // The options as given, for get_provider_options().
  std::map<std::string, std::string> given;
};

// One provider's device, stream and cuBLASLt handle, shared by its kernels,
// its streams and its transfers. All of a session's work is ordered on the
// one stream, so memory its arena frees after the last kernel that reads it
// was queued may be handed to the next kernel at once.
class CudaContext {
 public:
  // Makes the stream (unless options.user_stream) and the cuBLASLt handle.
  static Result<std::shared_ptr<CudaContext>> create(const CudaOptions& options);
  ~CudaContext();
  CudaContext(const CudaContext&) = delete;
  CudaContext& operator=(const CudaContext&) = delete;

  int device_id() const { return options_.device_id; }
  Device device(MemoryType memory = MemoryType::kDefault) const {
    return Device{DeviceType::kCuda, options_.device_id, memory};
  }
  const CudaOptions& options() const { return options_; }
  cudaStream_t stream() const { return stream_; }
  cublasLtHandle_t cublas() const { return cublas_; }
  // Held while a GEMM is queued: one handle serves every thread.
  std::mutex& cublas_mutex() const { return cublas_mutex_; }

 private:
  explicit CudaContext(CudaOptions options) : options_(std::move(options)) {}
  CudaOptions options_;
  cudaStream_t stream_ = nullptr;
  bool owns_stream_ = false;
  cublasLtHandle_t cublas_ = nullptr;
  mutable std::mutex cublas_mutex_;
};
using ContextPtr = std::shared_ptr<const CudaContext>;

// Owns a library object (a cuBLASLt layout, a cuDNN descriptor) and
// destroys it with `Destroy`.
template <typename T, auto Destroy>
struct Owned {
  T handle = nullptr;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (handle != nullptr) Destroy(handle);
  }
};

// Memory straight from the CUDA runtime: device memory (kDefault, cudaMalloc;
// the arena's backing) or page-locked host memory (kHostPinned,
// cudaHostAlloc), which the host reads and writes and the device copies from
// without staging.
class CudaMemory final : public Allocator {
 public:
  CudaMemory(int device_id, MemoryType memory) : device_id_(device_id), memory_(memory) {}
  void* allocate(size_t bytes) override;  // throws onyx::Error when there is no room
  void deallocate(void* pointer, size_t bytes) override;
  Device device() const override { return Device{DeviceType::kCuda, device_id_, memory_}; }

 private:
  int device_id_;
  MemoryType memory_;
};

// The provider's default memory: an ArenaAllocator over CudaMemory, with
// gpu_mem_limit as its max_mem. Requests of every size go through the arena
// (cudaMalloc and cudaFree wait for the device).
class DeviceArena final : public Allocator {
 public:
  DeviceArena(int device_id, ArenaConfig config)
      : backing_(device_id, MemoryType::kDefault), arena_(&backing_, config) {}
  // Past gpu_mem_limit (or when the device is full) throws onyx::Error
  // naming the provider and the limit.
  void* allocate(size_t bytes) override;
  void deallocate(void* pointer, size_t bytes) override { arena_.deallocate(pointer, bytes); }
  Device device() const override { return backing_.device(); }
  ArenaStats stats() const { return arena_.stats(); }

 private:
  CudaMemory backing_;  // declared first: the arena returns its regions to it
  ArenaAllocator arena_;
};

// A cudaEvent_t recorded on a stream.
class CudaEvent final : public Event {
 public:
  CudaEvent(int device_id, cudaEvent_t event) : device_id_(device_id), event_(event) {}
  ~CudaEvent() override;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  Status wait_on_host() const override;
  cudaEvent_t event() const { return event_; }

 private:
  int device_id_;
  cudaEvent_t event_;
};

// A run's view of the provider's stream: events are cudaEventRecord, a wait
// for another CUDA event is cudaStreamWaitEvent (the host does not block), a
// wait for any other kind (the CPU's) blocks the host until it completes.
class CudaStream final : public Stream {
 public:
  explicit CudaStream(ContextPtr context) : context_(std::move(context)) {}
  Device device() const override { return context_->device(); }
  std::shared_ptr<Event> record_event() override;
  Status wait_for(const Event& event) override;
  Status synchronize() override;
  cudaStream_t stream() const { return context_->stream(); }

 private:
  ContextPtr context_;
};

// Copies between this device and the host (pinned or not) and within the
// device. Queued on the given stream; a copy to the host, and a copy out of
// pinned host memory the caller may reuse at once, wait for it before
// returning. Without a stream every copy completes before it returns.
class CudaTransfer final : public DataTransfer {
 public:
  explicit CudaTransfer(int device_id) : device_id_(device_id) {}
  bool can_copy(const Device& src, const Device& dst) const override;
  Status copy(const Tensor& src, Tensor& dst, Stream* stream) const override;

 private:
  bool on_this_device(const Device& d) const {
    return d.type == DeviceType::kCuda && d.id == device_id_ && d.memory == MemoryType::kDefault;
  }
  int device_id_;
};

// The stream a kernel queues on: the run's CudaStream, else the context's.
cudaStream_t stream_of(const Stream* stream, const CudaContext& context);

}  // namespace onyx::cuda
