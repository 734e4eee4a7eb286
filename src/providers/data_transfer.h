// Data transfers: copies of tensors between memories. Each provider brings
// the transfers its device needs (device <-> host, device <-> device); a
// session collects them in a DataTransferRegistry, which finds a direct
// transfer for a pair of memories or goes through the host.
#pragma once

#include <memory>
#include <vector>

#include "onyx/status.h"
#include "onyx/tensor.h"
#include "providers/stream.h"

namespace onyx {

class DataTransfer {
 public:
  virtual ~DataTransfer() = default;
  virtual bool can_copy(const Device& src, const Device& dst) const = 0;
  // Copies `src` into `dst` (allocated by the caller, same dtype and shape).
  // With a stream the copy is queued on it; the caller records an event to
  // know when it is done. Without one it completes before returning.
  virtual Status copy(const Tensor& src, Tensor& dst, Stream* stream) const = 0;
};

// Host to host: memcpy, and element-wise for strings.
class HostDataTransfer final : public DataTransfer {
 public:
  bool can_copy(const Device& src, const Device& dst) const override {
    return src.host_readable() && dst.host_readable();
  }
  Status copy(const Tensor& src, Tensor& dst, Stream* stream) const override;
};

class DataTransferRegistry {
 public:
  DataTransferRegistry();  // knows host-to-host copies
  void add(std::shared_ptr<const DataTransfer> transfer);
  // A transfer that copies src -> dst directly, or nullptr.
  const DataTransfer* find(const Device& src, const Device& dst) const;
  // Copies `src` into `dst`: directly where a transfer exists, else through
  // a host buffer (device -> host -> device). Errors name both memories.
  Status copy(const Tensor& src, Tensor& dst, Stream* stream = nullptr) const;
  // A copy of `src` in memory from `allocator`.
  Result<Tensor> copy_to(const Tensor& src, Allocator* allocator, Stream* stream = nullptr) const;

 private:
  std::vector<std::shared_ptr<const DataTransfer>> transfers_;
};

}  // namespace onyx
