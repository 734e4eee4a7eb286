// Device memory outside any session: tensors made on a device before a
// session exists, or read back after it is gone (onnxruntime's
// OrtValue.ortvalue_from_numpy(array, "cuda", 0)). Each device type is served
// by one process-wide provider, created on first use from the providers
// registered for that type.
#pragma once

#include <string>

#include "onyx/tensor.h"

namespace onyx {

// The allocator of `device`'s memory (the host allocator for the CPU). Throws
// onyx::Error when no provider of this build serves the device, e.g. "no
// execution provider for device 'cuda' is loaded in this build".
Allocator* device_allocator(const Device& device);
// A copy of `tensor` in `device`'s memory, through the providers of both
// memories (a host copy when both are host memory).
Tensor copy_tensor(const Tensor& tensor, const Device& device);
// Copies `source` into `destination` (same element type and shape), whichever
// memories they are in.
void copy_tensor_into(const Tensor& source, Tensor& destination);
// True when this build has a provider for `type`'s memory (always for the CPU).
bool device_is_served(DeviceType type);
// The lower-case name of a device type, as onnxruntime's Python API names
// devices: "cpu", "cuda", "vulkan", "openvino", "test".
std::string device_type_name(DeviceType type);

}  // namespace onyx
