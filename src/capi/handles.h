// What the C API's opaque handles are inside: each wraps the C++ object it
// stands for. Internal to src/capi.
#pragma once

#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "onyx/onyx_c_api.h"
#include "onyx/session.h"
#include "providers/kernel.h"

struct OnyxStatus {
  OnyxErrorCode code;
  std::string message;
};

struct OnyxEnv {
  OnyxLoggingLevel level = ONYX_LOGGING_LEVEL_WARNING;
  std::string logid;
};

struct OnyxSessionOptions {
  onyx::SessionOptions options;
  std::vector<std::string> providers;  // in the order appended
};

struct OnyxSession {
  std::unique_ptr<onyx::InferenceSession> session;
};

struct OnyxRunOptions {
  onyx::RunOptions options;
};

struct OnyxMemoryInfo {
  std::string name;  // as the caller named it ("Cpu", "Test", ...)
  OnyxAllocatorType type = OnyxDeviceAllocator;
  OnyxMemType mem_type = OnyxMemTypeDefault;
  onyx::Device device;
};

struct OnyxValue {
  onyx::Value value;
  // Made on first GetTensorMemoryInfo, owned here.
  mutable std::unique_ptr<OnyxMemoryInfo> memory_info;
};

struct OnyxTensorTypeAndShapeInfo {
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  bool has_shape = true;
  std::vector<int64_t> dims;         // -1: unknown
  std::vector<std::string> symbols;  // "" where none; same length as dims
};

struct OnyxTypeInfo {
  ONNXType type = ONNX_TYPE_UNKNOWN;
  OnyxTensorTypeAndShapeInfo tensor;      // tensors (and a map's key type)
  std::unique_ptr<OnyxTypeInfo> element;  // sequence / optional element, map value
  std::string denotation;
};
// The sequence and map views of a type info are the type info itself.
struct OnyxSequenceTypeInfo {
  OnyxTypeInfo info;
};
struct OnyxMapTypeInfo {
  OnyxTypeInfo info;
};
struct OnyxOptionalTypeInfo {
  OnyxTypeInfo info;
};

struct OnyxModelMetadata {
  onyx::ModelMetadata metadata;
};

struct OnyxIoBinding {
  OnyxSession* session = nullptr;
  onyx::IoBinding binding;
  // The last run's outputs, none sharing a bound input's memory but for
  // those the caller bound to its own tensor (a KV cache bound as both an
  // input and an output is appended to where it lies, on purpose).
  std::vector<onyx::Value> outputs;
  std::set<std::string> bound_to_caller;  // outputs bound with BindOutput (to the caller's tensor)
};

// A custom op domain: its name and the user's ops, which it does not own.
struct OnyxCustomOpDomain {
  std::string domain;
  std::vector<const OnyxCustomOp*> ops;
};

namespace onyx::capi {

// The table of this library's version.
const OnyxApi* api();

OnyxStatus* make_status(OnyxErrorCode code, std::string message);
OnyxStatus* to_status(const Status& status);
// The error message of `status`, and releases it.
std::string take_message(OnyxStatus* status);

ONNXTensorElementDataType to_c(DataType type);
DataType from_c(ONNXTensorElementDataType type);

// The kernels of a custom op domain, in a registry the CPU provider puts
// over its own (SessionOptions::custom_op_registries).
Result<std::shared_ptr<const KernelRegistry>> custom_op_registry(const OnyxCustomOpDomain& domain);

}  // namespace onyx::capi
