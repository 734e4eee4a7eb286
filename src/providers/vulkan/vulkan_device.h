// One Vulkan device as the provider uses it: the instance and the chosen
// physical device, one compute queue, device-local memory handed out by an
// arena, host-visible staging buffers for transfers, and compute pipelines
// built once per (shader, specialisation) and cached.
//
// Device memory is addressed on the host by synthetic pointers: each arena
// block owns a range of addresses that no host mapping uses, and a Tensor's
// data pointer is an address in that range. resolve() turns such a pointer
// (or one inside it, as a reshaped view keeps) back into the block's buffer
// and an offset. Host code that dereferences one faults at once instead of
// reading stale bytes.
//
// Ordering: every piece of work (a dispatch, a copy) is recorded, under the
// queue's lock and in the order the host issues it, into the device's one
// open command buffer, after a full memory barrier; the buffer is submitted
// to the one queue when it holds kBatch commands or when the host needs the
// work done (a copy to the host, an event, a synchronize). So work runs in
// host order on the device, and memory freed on the host after its last use
// was issued can be handed out again at once: any later use is recorded
// after the earlier ones and waits for them. Each submission signals the
// next value of a timeline semaphore; its command buffer, descriptor pool
// and staging buffers are recycled once the value is reached.
#pragma once

#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "onyx/status.h"
#include "onyx/tensor.h"

namespace onyx::vulkan {

// A range of a device buffer: what a shader binds.
struct BufferRange {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceSize offset = 0;
  VkDeviceSize size = 0;
};

// SPIR-V of one shader, compiled at build time.
struct ShaderCode {
  const char* name;
  const uint32_t* words;
  size_t bytes;
};

// The shaders embedded in the library, by file name ("binary").
const ShaderCode* find_shader(const std::string& name);

// A compute pipeline with its layout: `bindings` storage buffers (set 0,
// bindings 0..n-1) and 128 bytes of push constants.
struct Pipeline {
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  uint32_t bindings = 0;
  uint32_t local_size_x = 64;
};

struct TransferCounters {
  std::atomic<int64_t> host_to_device{0};
  std::atomic<int64_t> host_to_device_bytes{0};
  std::atomic<int64_t> device_to_host{0};
  std::atomic<int64_t> device_to_host_bytes{0};
  std::atomic<int64_t> dispatches{0};
  std::atomic<int64_t> submissions{0};
};

class VulkanDevice : public std::enable_shared_from_this<VulkanDevice> {
 public:
  // The device `device_id` of those Vulkan lists (-1: the best one, a
  // discrete GPU before an integrated one before a software one). An error
  // says why none could be used (no loader, no device, no compute queue).
  static Result<std::shared_ptr<VulkanDevice>> create(int device_id);
  // The process's device for `device_id`, created on first use and shared by
  // every provider and tensor that names it.
  static Result<std::shared_ptr<VulkanDevice>> get(int device_id);
  // Every device the loader lists: "llvmpipe (LLVM 15.0.6, 256 bits) [cpu]".
  static Result<std::vector<std::string>> list_devices();
  ~VulkanDevice();
  VulkanDevice(const VulkanDevice&) = delete;
  VulkanDevice& operator=(const VulkanDevice&) = delete;

  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const char* type_name() const;
  Device device() const { return Device{DeviceType::kVulkan, id_}; }
  // Whether GEMMs (MatMul, Gemm, Conv) run the shared-memory tiled shaders
  // (GPUs) or the flat ones without barriers (CPU drivers such as lavapipe,
  // where a barrier switches every invocation's state).
  // ONYX_VULKAN_GEMM=tiled|flat forces one, so tests run both.
  bool tiled_gemm() const { return tiled_gemm_; }
  // The largest range one binding may have (maxStorageBufferRange).
  VkDeviceSize max_binding_bytes() const { return max_binding_bytes_; }
  // The device's memory, as an Allocator (an arena of device-local blocks).
  std::shared_ptr<Allocator> allocator();

  // The buffer range behind `bytes` bytes at synthetic address `address`.
  Result<BufferRange> resolve(const void* address, size_t bytes) const;

  // The pipeline for `shader` with these specialisation constants (ids 1..),
  // created on first use; its workgroup is `local_size_x` wide (constant 0).
  Result<const Pipeline*> pipeline(const std::string& shader, uint32_t bindings,
                                   const std::vector<int32_t>& specialisation, uint32_t local_size_x = 64);

  // Queues `groups` workgroups of `pipeline` over `buffers` with `push`
  // (at most 128 bytes) as push constants.
  Status dispatch(const Pipeline& pipeline, const std::vector<BufferRange>& buffers, const void* push,
                  size_t push_bytes, uint32_t groups_x, uint32_t groups_y = 1, uint32_t groups_z = 1);
  // Queues a copy of host bytes to the device (through a staging buffer, so
  // `host` may change as soon as this returns).
  Status upload(const void* host, const BufferRange& dst);
  // Copies device bytes to the host and waits for them.
  Status download(const BufferRange& src, void* host);
  // Queues a device-to-device copy.
  Status copy(const BufferRange& src, const BufferRange& dst);
  // Queues a fill of `dst` with a 32-bit pattern.
  Status fill(const BufferRange& dst, uint32_t pattern);

  // Submits the open batch (if any); the timeline value of the last
  // submission, which covers all work issued so far. wait() blocks the host
  // until the device has reached a value.
  Result<uint64_t> flush();
  Status wait(uint64_t value);

  TransferCounters& counters() { return counters_; }

 private:
  friend class Arena;
  VulkanDevice() = default;
  Status init(int device_id);

  // A command buffer with what it holds until the device is past it.
  // Commands per submitted command buffer at most.
  static constexpr uint32_t kBatch = 64;

  struct Submission {
    uint32_t commands_recorded = 0;
    VkCommandBuffer commands = VK_NULL_HANDLE;
    VkDescriptorPool descriptors = VK_NULL_HANDLE;
    std::vector<std::pair<VkBuffer, VkDeviceMemory>> staging;
    uint64_t value = 0;
  };
  // Under queue_mutex_: the open batch, with a barrier after all earlier
  // work; a new one when none is open or it is full (the full one submitted).
  Result<Submission*> begin();
  // Under queue_mutex_: ends, submits and tracks `s`; its timeline value.
  Result<uint64_t> submit(Submission* s);
  void recycle_completed();
  Result<std::pair<VkBuffer, VkDeviceMemory>> make_staging(VkDeviceSize bytes, void** mapped);
  void free_staging(const std::pair<VkBuffer, VkDeviceMemory>& staging);
  uint32_t find_memory_type(uint32_t type_bits, VkMemoryPropertyFlags wanted, VkMemoryPropertyFlags fallback) const;

  int id_ = 0;
  std::string name_;
  VkPhysicalDeviceType type_ = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  VkInstance instance_ = VK_NULL_HANDLE;
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t queue_family_ = 0;
  VkPhysicalDeviceMemoryProperties memory_{};
  VkDeviceSize max_binding_bytes_ = 0;
  VkDeviceSize max_allocation_bytes_ = 0;
  VkDeviceSize offset_alignment_ = 16;
  bool tiled_gemm_ = true;
  VkSemaphore timeline_ = VK_NULL_HANDLE;
  VkCommandPool command_pool_ = VK_NULL_HANDLE;
  VkPipelineCache pipeline_cache_ = VK_NULL_HANDLE;

  std::mutex queue_mutex_;
  std::deque<std::unique_ptr<Submission>> in_flight_;
  std::vector<std::unique_ptr<Submission>> free_;  // idle, and the open batch
  Submission* pending_ = nullptr;                   // the open batch (in free_ until submitted)
  std::atomic<uint64_t> submitted_{0};

  std::mutex pipeline_mutex_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  std::map<std::string, VkShaderModule> modules_;

  std::shared_ptr<Allocator> arena_;
  TransferCounters counters_;
};

}  // namespace onyx::vulkan
