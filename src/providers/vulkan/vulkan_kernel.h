// What every Vulkan kernel shares: its device, checks that a tensor is in
// that device's memory, dispatch over a flat range, and the definitions the
// provider's registry is filled with.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "providers/device_kernel.h"
#include "providers/kernel.h"
#include "providers/vulkan/vulkan_device.h"

namespace onyx::vulkan {

using DevicePtr = std::shared_ptr<VulkanDevice>;

class VulkanKernel : public Kernel {
 public:
  explicit VulkanKernel(DevicePtr device) : device_(std::move(device)) {}

 protected:
  // The buffer range of `t`, which must be in this device's memory; `what`
  // names it in the error ("input 0").
  Result<BufferRange> range(const std::string& label, const Tensor& t, const std::string& what) const;
  // Input i as a tensor on this device, of one of the 4-byte float type.
  Result<const Tensor*> float_input(KernelContext& ctx, size_t i) const;
  // A pipeline of this device (see VulkanDevice::pipeline).
  Result<const Pipeline*> pipeline(const std::string& shader, uint32_t bindings,
                                   const std::vector<int32_t>& specialisation = {},
                                   uint32_t local_size_x = 64) const {
    return device_->pipeline(shader, bindings, specialisation, local_size_x);
  }
  // One invocation per element of [0, n) (workgroups of the pipeline's width).
  Status dispatch_flat(const Pipeline& p, const std::vector<BufferRange>& buffers, const void* push,
                       size_t push_bytes, uint64_t n) const;
  // One workgroup per row of [0, rows).
  Status dispatch_rows(const Pipeline& p, const std::vector<BufferRange>& buffers, const void* push,
                       size_t push_bytes, uint64_t rows) const;

  DevicePtr device_;
};

// Runs `shader` ("matmul" or "conv2d") as a GEMM of m x n outputs per layer
// (workgroups z), tiled or flat as the device prefers (shaders/gemm_tile.glsl).
Status dispatch_gemm(VulkanDevice& device, const std::string& label, const std::string& shader,
                     const std::vector<int32_t>& specialisation, const std::vector<BufferRange>& buffers,
                     const void* push, size_t push_bytes, uint64_t m, uint64_t n, uint64_t layers);

// Copies a box of 32-bit words between two buffers through strides
// (shaders/copy_strided.comp); at most 6 dims (collapsed where they can be).
struct StridedCopy {
  std::vector<int64_t> dims;
  std::vector<int64_t> src_strides;
  std::vector<int64_t> dst_strides;
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
};
Status strided_copy(VulkanDevice& device, const std::string& label, const BufferRange& src, const BufferRange& dst,
                    StridedCopy copy);

// A definition whose factory hands the kernel its device.
template <typename Class>
KernelDef vulkan_kernel(const DevicePtr& device, const char* op, int since, int last,
                        std::vector<DataType> types = {DataType::kFloat}, std::vector<size_t> host_inputs = {}) {
  return device_kernel_def<Class>(device, op, since, last, std::move(types), std::move(host_inputs));
}

// Each family's kernels (one file each).
void add_elementwise_kernels(std::vector<KernelDef>& defs, const DevicePtr& device);
void add_matmul_kernels(std::vector<KernelDef>& defs, const DevicePtr& device);
void add_normalization_kernels(std::vector<KernelDef>& defs, const DevicePtr& device);
void add_tensor_kernels(std::vector<KernelDef>& defs, const DevicePtr& device);
void add_nn_kernels(std::vector<KernelDef>& defs, const DevicePtr& device);

}  // namespace onyx::vulkan
