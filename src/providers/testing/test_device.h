// A simulated device for testing the provider interface on every commit
// (C++ tests, `onyx conformance --providers`, pytest). It is part of the
// library but registered only on request (register_test_device_providers).
// Its memory is scrambled (every byte XOR 0xA5) and, under AddressSanitizer,
// poisoned outside its own kernels and copies, so a host kernel that reads
// device memory directly gets garbage or an ASan report, never the right
// answer. It has its own copies, streams and events, counted, and kernels
// for a few ops (element-wise, MatMul, Softmax, Reshape with its shape on the
// host). Two providers use it:
//  - TestDeviceExecutionProvider: a kernel provider;
//  - TestCompilerExecutionProvider: a compiling provider that claims
//    connected groups of element-wise nodes and runs each as one fused node.
#pragma once

#include <atomic>
#include <string>

#include "onyx/tensor.h"

namespace onyx::testing {

constexpr const char* kTestDeviceProvider = "TestDeviceExecutionProvider";
constexpr const char* kTestCompilerProvider = "TestCompilerExecutionProvider";

struct TestDeviceCounters {
  std::atomic<int> host_to_device{0};
  std::atomic<int> device_to_host{0};
  std::atomic<int> kernels_run{0};
  std::atomic<int> events_recorded{0};
  std::atomic<int> event_waits{0};  // stream waits and host waits
  std::atomic<int> streams_created{0};
  std::atomic<int> groups_compiled{0};
  std::atomic<int> fused_runs{0};
  void reset();
};

TestDeviceCounters& test_device_counters();

// Registers both providers by name (idempotent).
void register_test_device_providers();

// The test device's memory descriptor.
inline Device test_device() { return Device{DeviceType::kTest, 0}; }

// Host <-> device, as the device's own transfer does (counted).
Tensor to_test_device(const Tensor& host);
Tensor from_test_device(const Tensor& device);

}  // namespace onyx::testing
