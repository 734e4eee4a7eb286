// Device memory without a session: one provider per device (type and id),
// created on first use from the provider registry and kept for the life of
// the process, whose allocators and transfers serve device_allocator and
// copy_tensor.
#include "onyx/device.h"

#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "onyx/options.h"
#include "providers/data_transfer.h"
#include "providers/execution_provider.h"

namespace onyx {
namespace {

struct DeviceProviders {
  std::mutex mutex;
  std::map<std::pair<DeviceType, int32_t>, std::unique_ptr<ExecutionProvider>> providers;
};

DeviceProviders& device_providers() {
  // Never destroyed: tensors in their memory may be released by exit handlers
  // (Python's) after static destructors have run.
  static auto* providers = new DeviceProviders;
  return *providers;
}

// The process-wide provider for `device`'s type and id.
Result<const ExecutionProvider*> provider_serving(const Device& device) {
  DeviceProviders& cache = device_providers();
  std::lock_guard<std::mutex> lock(cache.mutex);
  const auto key = std::make_pair(device.type, device.id);
  auto it = cache.providers.find(key);
  if (it == cache.providers.end()) {
    const std::vector<std::string> names = providers_for_device(device.type);
    if (names.empty()) {
      return invalid_argument("no execution provider for device '", device_type_name(device.type),
                              "' is loaded in this build");
    }
    static const SessionOptions kDefaultSession;
    ProviderOptions options;
    options.session = &kDefaultSession;
    if (device.id != 0) options.values["device_id"] = std::to_string(device.id);
    std::string refusals;
    for (const std::string& name : names) {
      Result<std::unique_ptr<ExecutionProvider>> made = create_provider(name, options);
      if (!made.is_ok()) {
        refusals += str_cat("; ", name, ": ", made.status().message());
        continue;
      }
      std::unique_ptr<ExecutionProvider> provider = std::move(made).value();
      if (!provider->device().same_device(device)) {
        refusals += str_cat("; ", name, " serves ", device_to_string(provider->device()));
        continue;
      }
      it = cache.providers.emplace(key, std::move(provider)).first;
      break;
    }
    if (it == cache.providers.end()) {
      return invalid_argument("no execution provider serves device '", device_type_name(device.type), "' id ",
                              device.id, refusals);
    }
  }
  return it->second.get();
}

// Copies between the memories of `a` and `b`: the host's, and the transfers
// of the providers serving either.
Result<DataTransferRegistry> transfers_between(const Device& a, const Device& b) {
  DataTransferRegistry transfers;
  for (const Device* device : {&a, &b}) {
    if (device->is_cpu()) continue;
    Result<const ExecutionProvider*> provider = provider_serving(*device);
    ONYX_RETURN_IF_ERROR(provider.status());
    if (auto transfer = provider.value()->data_transfer()) transfers.add(std::move(transfer));
  }
  return transfers;
}

}  // namespace

std::string device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::kCpu:
      return "cpu";
    case DeviceType::kCuda:
      return "cuda";
    case DeviceType::kVulkan:
      return "vulkan";
    case DeviceType::kOpenVino:
      return "openvino";
    case DeviceType::kTest:
      return "test";
  }
  return "device type " + std::to_string(static_cast<int32_t>(type));
}

bool device_is_served(DeviceType type) { return type == DeviceType::kCpu || !providers_for_device(type).empty(); }

Allocator* device_allocator(const Device& device) {
  if (device.is_cpu()) return cpu_allocator();
  Result<const ExecutionProvider*> provider = provider_serving(device);
  throw_if_error(provider.status());
  Allocator* allocator = provider.value()->allocator(device.memory);
  if (allocator == nullptr) {
    throw Error(invalid_argument(provider.value()->name(), " has no memory ", device_to_string(device)));
  }
  return allocator;
}

Tensor copy_tensor(const Tensor& tensor, const Device& device) {
  Allocator* target = device_allocator(device);
  Result<DataTransferRegistry> transfers = transfers_between(tensor.device(), device);
  throw_if_error(transfers.status());
  Result<Tensor> copy = transfers.value().copy_to(tensor, target);
  throw_if_error(copy.status());
  return std::move(copy).value();
}

void copy_tensor_into(const Tensor& source, Tensor& destination) {
  if (source.dtype() != destination.dtype() || source.shape() != destination.shape()) {
    throw Error(invalid_argument("cannot copy ", source.describe(), " into ", destination.describe()));
  }
  Result<DataTransferRegistry> transfers = transfers_between(source.device(), destination.device());
  throw_if_error(transfers.status());
  throw_if_error(transfers.value().copy(source, destination));
}

}  // namespace onyx
