// The host transfer, the synchronous stream and the transfer registry.
#include "providers/data_transfer.h"

#include <cstring>
#include <string>

namespace onyx {
namespace {

class CompleteEvent final : public Event {
 public:
  Status wait_on_host() const override { return Status::ok(); }
};

}  // namespace

std::shared_ptr<Event> SynchronousStream::record_event() { return std::make_shared<CompleteEvent>(); }

Status HostDataTransfer::copy(const Tensor& src, Tensor& dst, Stream* /*stream*/) const {
  if (src.dtype() != dst.dtype() || src.size() != dst.size()) {
    return invalid_argument("copy from ", src.describe(), " into ", dst.describe(), ": element types or counts differ");
  }
  if (src.dtype() == DataType::kString) {
    const auto* from = src.data<std::string>();
    auto* to = dst.data<std::string>();
    for (int64_t i = 0; i < src.size(); ++i) to[i] = from[i];
  } else if (src.bytes() > 0 && src.raw_data() != dst.raw_data()) {
    std::memcpy(dst.raw_data(), src.raw_data(), src.bytes());
  }
  return Status::ok();
}

DataTransferRegistry::DataTransferRegistry() { transfers_.push_back(std::make_shared<HostDataTransfer>()); }

void DataTransferRegistry::add(std::shared_ptr<const DataTransfer> transfer) {
  if (transfer) transfers_.push_back(std::move(transfer));
}

const DataTransfer* DataTransferRegistry::find(const Device& src, const Device& dst) const {
  // Newest first: a provider's own transfer beats the generic host one for
  // memories both can reach (pinned staging buffers, say).
  for (auto it = transfers_.rbegin(); it != transfers_.rend(); ++it) {
    if ((*it)->can_copy(src, dst)) return it->get();
  }
  return nullptr;
}

Status DataTransferRegistry::copy(const Tensor& src, Tensor& dst, Stream* stream) const {
  if (const DataTransfer* direct = find(src.device(), dst.device())) return direct->copy(src, dst, stream);
  const Device host{};
  const DataTransfer* down = find(src.device(), host);
  const DataTransfer* up = find(host, dst.device());
  if (down == nullptr || up == nullptr) {
    return not_implemented("no data transfer copies from ", device_to_string(src.device()), " to ",
                           device_to_string(dst.device()), " (is the provider of that device loaded?)");
  }
  ONYX_ASSIGN_OR_RETURN(Tensor staging, Tensor::create(src.dtype(), src.shape()));
  ONYX_RETURN_IF_ERROR(down->copy(src, staging, stream));
  // The host buffer must hold the data before the second copy reads it.
  if (stream != nullptr) ONYX_RETURN_IF_ERROR(stream->synchronize());
  return up->copy(staging, dst, stream);
}

Result<Tensor> DataTransferRegistry::copy_to(const Tensor& src, Allocator* allocator, Stream* stream) const {
  ONYX_ASSIGN_OR_RETURN(Tensor dst, Tensor::create(src.dtype(), src.shape(), allocator));
  ONYX_RETURN_IF_ERROR(copy(src, dst, stream));
  return dst;
}

}  // namespace onyx
