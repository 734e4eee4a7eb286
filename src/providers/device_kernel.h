// Kernel definitions for device providers: the factory hands each kernel the
// provider's shared state (its device or context) beside the KernelInfo.
#pragma once

#include <memory>
#include <vector>

#include "providers/kernel.h"

namespace onyx {

// A definition whose factory makes `Class(info, shared)`; `host_inputs` are
// the inputs the kernel reads on the host (shape tensors, axes).
template <typename Class, typename Shared>
KernelDef device_kernel_def(const Shared& shared, const char* op, int since, int last, std::vector<DataType> types,
                            std::vector<size_t> host_inputs = {}) {
  KernelDef def;
  def.op_type = op;
  def.since_version = since;
  def.last_version = last;
  def.types = std::move(types);
  def.host_inputs = std::move(host_inputs);
  def.factory = [shared](const KernelInfo& info) -> Result<std::unique_ptr<Kernel>> {
    return std::unique_ptr<Kernel>(new Class(info, shared));
  };
  return def;
}

}  // namespace onyx
