// Device memory without a session (include/onyx/device.h), on the simulated
// test device: allocators and copies from the process-wide providers, and
// the errors for devices no provider serves.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onyx/device.h"
#include "onyx/session.h"
#include "providers/execution_provider.h"
#include "providers/testing/test_device.h"

namespace onyx {
namespace {

using testing::test_device;
using testing::test_device_counters;

TEST(DeviceMemory, RegistryKnowsWhichProvidersServeADevice) {
  register_testing_providers();
  const std::vector<std::string> serving = providers_for_device(DeviceType::kTest);
  EXPECT_EQ(serving.size(), 2u);
  for (const std::string& name : serving) EXPECT_NE(name.find("Test"), std::string::npos) << name;
  EXPECT_TRUE(providers_for_device(DeviceType::kCpu).empty());
  EXPECT_TRUE(device_is_served(DeviceType::kCpu));
  EXPECT_TRUE(device_is_served(DeviceType::kTest));
}

TEST(DeviceMemory, CopiesToTheDeviceAndBackWithoutASession) {
  register_testing_providers();
  Allocator* allocator = device_allocator(test_device());
  ASSERT_NE(allocator, nullptr);
  EXPECT_EQ(allocator->device(), test_device());
  EXPECT_EQ(device_allocator(test_device()), allocator);  // one provider per device, kept

  const Tensor host = Tensor::from_vector<float>({1.5f, -2.0f, 3.25f}, {3});
  test_device_counters().reset();
  Tensor on_device = copy_tensor(host, test_device());
  EXPECT_EQ(on_device.device(), test_device());
  EXPECT_EQ(test_device_counters().host_to_device, 1);
  Tensor back = copy_tensor(on_device, Device{});
  EXPECT_EQ(test_device_counters().device_to_host, 1);
  ASSERT_TRUE(back.device().is_cpu());
  EXPECT_EQ(std::vector<float>(back.data<float>(), back.data<float>() + 3), std::vector<float>({1.5f, -2.0f, 3.25f}));

  Tensor into(DataType::kFloat, {3}, allocator);
  copy_tensor_into(on_device, into);
  Tensor wrong(DataType::kFloat, {4}, allocator);
  EXPECT_THROW(copy_tensor_into(on_device, wrong), Error);
  Tensor read = copy_tensor(into, Device{});
  EXPECT_EQ(read.data<float>()[2], 3.25f);
}

TEST(DeviceMemory, DevicesNoProviderServesAreClearErrors) {
  try {
    device_allocator(Device{DeviceType::kCuda, 0});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "no execution provider for device 'cuda' is loaded in this build");
  }
  register_testing_providers();
  try {
    copy_tensor(Tensor::scalar(1.0f), Device{DeviceType::kTest, 3});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("serves Test:0"), std::string::npos) << e.what();
  }
  EXPECT_EQ(device_type_name(DeviceType::kOpenVino), "openvino");
}

}  // namespace
}  // namespace onyx
