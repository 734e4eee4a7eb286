// Tensor: a dense, row-major buffer of one element type, owning or borrowed,
// on a device. Copies of a Tensor share the buffer (like a shared_ptr).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "onyx/dtype.h"
#include "onyx/status.h"

namespace onyx {

using Shape = std::vector<int64_t>;

// Number of elements of a shape; 1 for a scalar (rank 0).
int64_t shape_size(const Shape& shape);
std::string shape_to_string(const Shape& shape);

enum class DeviceType : int32_t { kCpu = 0, kCuda = 1, kVulkan = 2, kOpenVino = 3, kTest = 100 };

// Which memory of a device: its own (kDefault), host memory the device can
// reach fast (kHostPinned, for staging copies), or device memory the host can
// read and write directly (kHostAccessible, e.g. unified memory).
enum class MemoryType : int32_t { kDefault = 0, kHostPinned = 1, kHostAccessible = 2 };

// The memory descriptor every tensor carries: device type, device id and
// memory type. Host code may dereference a tensor's data only when
// host_readable() holds.
struct Device {
  DeviceType type = DeviceType::kCpu;
  int32_t id = 0;
  MemoryType memory = MemoryType::kDefault;
  bool operator==(const Device& other) const { return type == other.type && id == other.id && memory == other.memory; }
  bool operator!=(const Device& other) const { return !(*this == other); }
  bool operator<(const Device& other) const {
    if (type != other.type) return type < other.type;
    if (id != other.id) return id < other.id;
    return memory < other.memory;
  }
  bool is_cpu() const { return type == DeviceType::kCpu; }
  // The same device and id (any memory type).
  bool same_device(const Device& other) const { return type == other.type && id == other.id; }
  // Host code may read and write this memory directly.
  bool host_readable() const { return type == DeviceType::kCpu || memory != MemoryType::kDefault; }
};

// "Cpu", "Cuda:0", "Test:1 (pinned)".
std::string device_to_string(const Device& device);

// Hands out device memory. Implementations are thread-safe. An allocator
// owned through a shared_ptr (a session's arena, a provider's device memory)
// is kept alive by every tensor it allocated, so outputs may outlive the
// session that made them.
class Allocator : public std::enable_shared_from_this<Allocator> {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* pointer, size_t bytes) = 0;
  virtual Device device() const = 0;
};

// The process-wide host allocator (64-byte aligned).
Allocator* cpu_allocator();

class Tensor {
 public:
  Tensor() = default;

  // Allocates an uninitialised tensor (strings start empty; numbers are zeroed
  // only when zero_fill is set). Throws onyx::Error on size overflow.
  Tensor(DataType dtype, Shape shape, Allocator* allocator = cpu_allocator());
  static Result<Tensor> create(DataType dtype, Shape shape, Allocator* allocator = cpu_allocator());

  // Wraps memory owned elsewhere; `keep_alive` (may be null) holds it while the
  // tensor or a copy of it lives. No copy is made.
  static Tensor borrow(DataType dtype, Shape shape, void* data, Device device = {},
                       std::shared_ptr<void> keep_alive = nullptr);

  // A scalar or 1-D tensor on the host from values.
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, Shape shape);
  template <typename T>
  static Tensor scalar(T value) {
    return from_vector<T>({value}, {});
  }

  bool defined() const { return dtype_ != DataType::kUndefined; }
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t dim(int64_t axis) const { return shape_[static_cast<size_t>(axis)]; }
  int64_t size() const { return shape_size(shape_); }
  size_t bytes() const { return static_cast<size_t>(size()) * dtype_size(dtype_); }
  const Device& device() const { return device_; }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }

  // Same buffer, new shape with the same element count.
  Tensor reshaped(Shape shape) const;
  // A deep copy on the host.
  Tensor clone() const;
  // True when both tensors share storage.
  bool shares_buffer_with(const Tensor& other) const { return storage_ && storage_ == other.storage_; }
  // True when this tensor allocated its buffer (create) and no other tensor
  // shares it, so it may be overwritten once this tensor is no longer read.
  bool owns_buffer_alone() const { return owns_ && storage_.use_count() == 1; }

  std::string describe() const;  // "float[2,3]"

 private:
  DataType dtype_ = DataType::kUndefined;
  Shape shape_;
  Device device_;
  void* data_ = nullptr;
  std::shared_ptr<void> storage_;
  bool owns_ = false;  // storage_ is a buffer this tensor's create() allocated
};

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, Shape shape) {
  Tensor tensor(DataTypeOf<T>::value, std::move(shape));
  T* out = tensor.data<T>();
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < tensor.size(); ++i) out[i] = values[i];
  return tensor;
}

}  // namespace onyx
