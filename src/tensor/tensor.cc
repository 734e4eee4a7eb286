// Tensor storage: aligned host allocation, borrowing, and string tensors
// (which hold constructed std::string objects and destroy them on release).
#include "onyx/tensor.h"
#include "tensor/owned_pages.h"

#include <map>
#include <mutex>

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include <sys/mman.h>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace onyx {

int64_t shape_size(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string device_to_string(const Device& device) {
  std::string out;
  switch (device.type) {
    case DeviceType::kCpu:
      out = "Cpu";
      break;
    case DeviceType::kCuda:
      out = "Cuda";
      break;
    case DeviceType::kVulkan:
      out = "Vulkan";
      break;
    case DeviceType::kOpenVino:
      out = "OpenVINO";
      break;
    case DeviceType::kTest:
      out = "Test";
      break;
    default:
      out = "Device";
      out += std::to_string(static_cast<int>(device.type));
      break;
  }
  if (device.type != DeviceType::kCpu || device.id != 0) {
    out += ':';
    out += std::to_string(device.id);
  }
  if (device.memory == MemoryType::kHostPinned) out += " (pinned)";
  if (device.memory == MemoryType::kHostAccessible) out += " (host-accessible)";
  return out;
}

std::string shape_to_string(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

namespace {

// The largest single host allocation: ONYX_MAX_ALLOCATION_BYTES when set,
// else the machine's physical memory. A bigger request cannot succeed without
// swapping the machine to a halt (or is refused by sanitizers as a crash), so
// it is an error naming the size instead.
size_t host_allocation_limit() {
  if (const char* text = std::getenv("ONYX_MAX_ALLOCATION_BYTES")) {
    char* end = nullptr;
    const unsigned long long value = std::strtoull(text, &end, 10);
    if (end != text && *end == '\0' && value > 0) return static_cast<size_t>(value);
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return std::numeric_limits<size_t>::max();
  return static_cast<size_t>(pages) * static_cast<size_t>(page_size);
}

// Activations of one run are freed and asked for again by the next. glibc
// maps big blocks afresh each time (from 128 KiB, a threshold it raises only
// after freeing such a block) and trims the top of its heap, so every run
// paid a page fault per 4 KiB it wrote: ResNet-50 ran 9% slower and BERT's
// element-wise kernels several times slower than their arithmetic. The
// allocator, once per process, keeps blocks under 64 MiB in the heap and the
// heap untrimmed up to 256 MiB, where freed blocks are reused warm (as an
// arena would). ONYX_KEEP_MALLOC_SETTINGS=1 leaves glibc's settings alone.
void tune_malloc() {
#if defined(__GLIBC__)
  const char* keep = std::getenv("ONYX_KEEP_MALLOC_SETTINGS");
  if (keep != nullptr && std::strcmp(keep, "1") == 0) return;
  mallopt(M_MMAP_THRESHOLD, 64 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

std::mutex& owned_mutex() {
  static std::mutex mutex;
  return mutex;
}
std::map<uintptr_t, size_t>& owned_mappings() {             // start -> bytes
  static auto* mappings = new std::map<uintptr_t, size_t>;  // never destroyed: static tensors free late
  return *mappings;
}

// Blocks from here on get a mapping of their own (as glibc does with the
// threshold tune_malloc sets), registered so that their pages can be dropped.
constexpr size_t kOwnMappingBytes = size_t{64} << 20;

class CpuAllocator final : public Allocator {
 public:
  CpuAllocator() { tune_malloc(); }

  void* allocate(size_t bytes) override {
    if (bytes > limit_) {
      throw Error(runtime_error("cannot allocate ", bytes, " bytes: more than the host allocation limit of ", limit_,
                                " bytes (physical memory, or ONYX_MAX_ALLOCATION_BYTES)"));
    }
    // 64-byte alignment suits every SIMD width onyx uses.
    const size_t rounded = ((bytes == 0 ? 1 : bytes) + 63) / 64 * 64;
    void* p = rounded >= kOwnMappingBytes ? map_owned(rounded) : std::aligned_alloc(64, rounded);
    if (p == nullptr) throw Error(runtime_error("out of memory allocating ", bytes, " bytes"));
    return p;
  }
  void deallocate(void* pointer, size_t bytes) override {
    const size_t rounded = ((bytes == 0 ? 1 : bytes) + 63) / 64 * 64;
    if (rounded >= kOwnMappingBytes) {
      unmap_owned(pointer, rounded);
    } else {
      std::free(pointer);
    }
  }
  Device device() const override { return Device{}; }

 private:
  const size_t limit_ = host_allocation_limit();  // read once: the allocator never changes after start
};

// Checks a shape and computes its byte size without overflow.
Status checked_bytes(DataType dtype, const Shape& shape, size_t* bytes) {
  if (dtype == DataType::kUndefined) return invalid_argument("cannot allocate a tensor of undefined element type");
  // The product of the non-zero dims must fit in int64 too, even when a zero
  // dim makes the tensor empty: kernels compute strides from them.
  uint64_t count = 1;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) return invalid_argument("negative dimension ", d, " in shape ", shape_to_string(shape));
    if (d == 0) {
      empty = true;
      continue;
    }
    if (count > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(d)) {
      return invalid_argument("shape ", shape_to_string(shape), " has too many elements");
    }
    count *= static_cast<uint64_t>(d);
  }
  if (empty) count = 0;
  const uint64_t elem = dtype_size(dtype);
  if (elem == 0) {
    return invalid_argument("cannot allocate a tensor of unknown element type ", static_cast<int>(dtype));
  }
  // Stay far below what any allocator can give: 2^48 bytes.
  if (count > (uint64_t{1} << 48) / elem) {
    return invalid_argument("tensor ", dtype_name(dtype), shape_to_string(shape), " is too large to allocate");
  }
  *bytes = static_cast<size_t>(count * elem);
  return Status::ok();
}

}  // namespace

void* map_owned(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  std::lock_guard<std::mutex> lock(owned_mutex());
  owned_mappings()[reinterpret_cast<uintptr_t>(p)] = bytes;
  return p;
}

void unmap_owned(void* pointer, size_t bytes) {
  if (pointer == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(owned_mutex());
    owned_mappings().erase(reinterpret_cast<uintptr_t>(pointer));
  }
  munmap(pointer, bytes);
}

bool discard_owned_pages(const void* data, size_t bytes) {
  if (data == nullptr || bytes == 0) return false;
  const auto p = reinterpret_cast<uintptr_t>(data);
  std::lock_guard<std::mutex> lock(owned_mutex());
  auto it = owned_mappings().upper_bound(p);
  if (it == owned_mappings().begin()) return false;
  --it;
  if (p < it->first || p + bytes > it->first + it->second) return false;
  static const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t first = (p + page - 1) / page * page, last = (p + bytes) / page * page;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
  return true;
}

Allocator* cpu_allocator() {
  static CpuAllocator allocator;
  return &allocator;
}

Result<Tensor> Tensor::create(DataType dtype, Shape shape, Allocator* allocator) {
  size_t bytes = 0;
  ONYX_RETURN_IF_ERROR(checked_bytes(dtype, shape, &bytes));
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.device_ = allocator->device();
  void* p = nullptr;
  try {
    p = allocator->allocate(bytes);
  } catch (const Error& e) {
    return Status(e.code(), "tensor " + std::string(dtype_name(dtype)) + shape_to_string(t.shape_) + ": " + e.what());
  }
  t.data_ = p;
  t.owns_ = true;
  if (dtype == DataType::kString) {
    const int64_t n = t.size();
    auto* strings = static_cast<std::string*>(p);
    for (int64_t i = 0; i < n; ++i) new (&strings[i]) std::string();
    t.storage_ = std::shared_ptr<void>(p, [allocator, bytes, n, hold = allocator->weak_from_this().lock()](void* q) {
      auto* s = static_cast<std::string*>(q);
      for (int64_t i = 0; i < n; ++i) s[i].~basic_string();
      allocator->deallocate(q, bytes);
    });
  } else {
    t.storage_ = std::shared_ptr<void>(
        p, [allocator, bytes, hold = allocator->weak_from_this().lock()](void* q) { allocator->deallocate(q, bytes); });
  }
  return t;
}

Tensor::Tensor(DataType dtype, Shape shape, Allocator* allocator) {
  Result<Tensor> made = create(dtype, std::move(shape), allocator);
  if (!made.is_ok()) throw Error(made.status());
  *this = std::move(made).value();
}

Tensor Tensor::borrow(DataType dtype, Shape shape, void* data, Device device, std::shared_ptr<void> keep_alive) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.device_ = device;
  t.data_ = data;
  t.storage_ = keep_alive ? std::move(keep_alive) : std::shared_ptr<void>(data, [](void*) {});
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (dtype_ == DataType::kString) {
    const auto* src = data<std::string>();
    auto* dst = t.data<std::string>();
    for (int64_t i = 0; i < size(); ++i) dst[i] = src[i];
  } else if (bytes() > 0) {
    std::memcpy(t.data_, data_, bytes());
  }
  return t;
}

std::string Tensor::describe() const { return std::string(dtype_name(dtype_)) + shape_to_string(shape_); }

}  // namespace onyx
