// The C API's table (include/onyx/onyx_c_api.h) over the C++ API. Every
// function catches whatever the C++ side throws and turns it into a status.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "capi/handles.h"
#include "onyx/device.h"

namespace onyx::capi {
namespace {

#define ONYX_API_BEGIN try {
#define ONYX_API_END                                                      \
  }                                                                       \
  catch (const ::onyx::Error& e) {                                        \
    return to_status(::onyx::Status(e.code(), e.what()));                 \
  }                                                                       \
  catch (const std::bad_alloc&) {                                         \
    return make_status(ONYX_FAIL, "out of memory");                       \
  }                                                                       \
  catch (const std::exception& e) {                                       \
    return make_status(ONYX_FAIL, e.what());                              \
  }                                                                       \
  catch (...) {                                                           \
    return make_status(ONYX_FAIL, "an unknown C++ exception was caught"); \
  }                                                                       \
  return nullptr;

#define ONYX_CHECK_ARG(cond, what) \
  if (!(cond)) return make_status(ONYX_INVALID_ARGUMENT, what)

// ---- allocators -------------------------------------------------------------

// onyx's allocators behind the C struct. Free is given no size, so the sizes
// of live blocks are kept here.
struct AllocatorImpl : OnyxAllocator {
  Allocator* allocator = nullptr;
  // Keeps a session's allocator (an arena, a device's) alive while this
  // handle lives, where it is shared-owned.
  std::shared_ptr<Allocator> keep_alive;
  OnyxMemoryInfo info;
  std::mutex mutex;
  std::unordered_map<void*, size_t> sizes;
  bool process_wide = false;  // the default allocator: never released
};

void* ONYX_API_CALL impl_alloc(OnyxAllocator* self, size_t size) {
  auto* a = static_cast<AllocatorImpl*>(self);
  try {
    void* p = a->allocator->allocate(size == 0 ? 1 : size);
    if (p == nullptr) return nullptr;
    std::lock_guard<std::mutex> lock(a->mutex);
    a->sizes[p] = size == 0 ? 1 : size;
    return p;
  } catch (...) {
    return nullptr;
  }
}

void ONYX_API_CALL impl_free(OnyxAllocator* self, void* p) {
  if (p == nullptr) return;
  auto* a = static_cast<AllocatorImpl*>(self);
  size_t size = 0;
  {
    std::lock_guard<std::mutex> lock(a->mutex);
    auto it = a->sizes.find(p);
    if (it == a->sizes.end()) return;  // not ours: leave it
    size = it->second;
    a->sizes.erase(it);
  }
  a->allocator->deallocate(p, size);
}

const OnyxMemoryInfo* ONYX_API_CALL impl_info(const OnyxAllocator* self) {
  return &static_cast<const AllocatorImpl*>(self)->info;
}

AllocatorImpl* new_allocator(Allocator* allocator, OnyxMemoryInfo info) {
  auto* a = new AllocatorImpl();
  a->version = ONYX_API_VERSION;
  a->Alloc = impl_alloc;
  a->Free = impl_free;
  a->Info = impl_info;
  a->allocator = allocator;
  a->keep_alive = allocator->weak_from_this().lock();
  a->info = std::move(info);
  return a;
}

OnyxMemoryInfo cpu_memory_info() {
  OnyxMemoryInfo info;
  info.name = "Cpu";
  info.type = OnyxArenaAllocator;
  return info;
}

AllocatorImpl* default_allocator() {
  static AllocatorImpl* instance = [] {
    AllocatorImpl* a = new_allocator(cpu_allocator(), cpu_memory_info());
    a->process_wide = true;
    return a;
  }();
  return instance;
}

// A copy of `s` in memory from `allocator` (NUL-terminated).
OnyxStatus* allocate_string(OnyxAllocator* allocator, const std::string& s, char** out) {
  ONYX_CHECK_ARG(allocator != nullptr && out != nullptr, "allocator and out must not be NULL");
  char* p = static_cast<char*>(allocator->Alloc(allocator, s.size() + 1));
  if (p == nullptr) return make_status(ONYX_FAIL, "the allocator returned no memory");
  std::memcpy(p, s.c_str(), s.size() + 1);
  *out = p;
  return nullptr;
}

// ---- memory info --------------------------------------------------------------

Result<Device> device_of(const std::string& name, int id, OnyxMemType mem_type) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  Device device;
  device.id = id;
  if (lower == "cpu") {
    device.type = DeviceType::kCpu;
  } else if (lower == "cuda" || lower == "cudapinned") {
    device.type = DeviceType::kCuda;
    if (lower == "cudapinned") device.memory = MemoryType::kHostPinned;
  } else if (lower == "vulkan") {
    device.type = DeviceType::kVulkan;
  } else if (lower == "openvino" || lower.rfind("openvino_", 0) == 0) {
    device.type = DeviceType::kOpenVino;
  } else if (lower == "test") {
    device.type = DeviceType::kTest;
  } else {
    return invalid_argument("unknown memory name '", name,
                            "': expected Cpu, Cuda, CudaPinned, Vulkan, OpenVINO or Test");
  }
  if (device.type != DeviceType::kCpu && mem_type != OnyxMemTypeDefault) device.memory = MemoryType::kHostPinned;
  if (device.type == DeviceType::kCpu) device.id = 0;
  return device;
}

OnyxMemoryInfo memory_info_of(const Device& device) {
  OnyxMemoryInfo info;
  info.device = device;
  info.name = device_to_string(Device{device.type, 0, MemoryType::kDefault});
  if (size_t colon = info.name.find(':'); colon != std::string::npos) info.name.resize(colon);
  info.type = device.is_cpu() ? OnyxArenaAllocator : OnyxDeviceAllocator;
  info.mem_type = device.memory == MemoryType::kDefault || device.is_cpu() ? OnyxMemTypeDefault : OnyxMemTypeCPU;
  return info;
}

// ---- types ----------------------------------------------------------------------

ONNXType onnx_type_of(ValueType::Kind kind) {
  switch (kind) {
    case ValueType::Kind::kTensor:
      return ONNX_TYPE_TENSOR;
    case ValueType::Kind::kSequence:
      return ONNX_TYPE_SEQUENCE;
    case ValueType::Kind::kMap:
      return ONNX_TYPE_MAP;
    case ValueType::Kind::kOptional:
      return ONNX_TYPE_OPTIONAL;
    case ValueType::Kind::kSparseTensor:
      return ONNX_TYPE_SPARSETENSOR;
    default:
      return ONNX_TYPE_UNKNOWN;
  }
}

std::unique_ptr<OnyxTypeInfo> type_info_of(const ValueType& type) {
  auto info = std::make_unique<OnyxTypeInfo>();
  info->type = onnx_type_of(type.kind);
  if (type.kind == ValueType::Kind::kMap) {
    info->tensor.type = to_c(type.key_type);
  } else {
    info->tensor.type = to_c(type.elem_type);
  }
  info->tensor.has_shape = false;
  if (type.inner) info->element = type_info_of(*type.inner);
  return info;
}

std::unique_ptr<OnyxTypeInfo> type_info_of(const ValueMetadata& meta) {
  auto info = type_info_of(meta.type);
  if (meta.has_shape) {
    info->tensor.has_shape = true;
    info->tensor.dims = meta.dims;
    info->tensor.symbols.assign(meta.dims.size(), std::string());
    for (size_t i = 0; i < meta.dim_params.size() && i < meta.dims.size(); ++i)
      info->tensor.symbols[i] = meta.dim_params[i];
  }
  return info;
}

OnyxTensorTypeAndShapeInfo* tensor_info_of(const Tensor& tensor) {
  auto* info = new OnyxTensorTypeAndShapeInfo();
  info->type = to_c(tensor.dtype());
  info->dims = tensor.shape();
  info->symbols.assign(info->dims.size(), std::string());
  return info;
}

OnyxTypeInfo* type_info_of_value(const Value& value) {
  auto info = type_info_of(value.type());
  if (value.is_tensor()) {
    info->tensor.has_shape = true;
    info->tensor.dims = value.tensor().shape();
    info->tensor.symbols.assign(info->tensor.dims.size(), std::string());
  }
  return info.release();
}

Shape shape_of(const int64_t* dims, size_t count) { return Shape(dims, dims + count); }

OnyxStatus* check_shape(const int64_t* shape, size_t shape_len) {
  if (shape_len > 0 && shape == nullptr) return make_status(ONYX_INVALID_ARGUMENT, "shape is NULL but shape_len > 0");
  for (size_t i = 0; i < shape_len; ++i) {
    if (shape[i] < 0) {
      return make_status(ONYX_INVALID_ARGUMENT, "dimension " + std::to_string(i) + " of the shape is negative (" +
                                                    std::to_string(shape[i]) + ")");
    }
  }
  return nullptr;
}

const Tensor* tensor_of(const OnyxValue* value) {
  return value != nullptr && value->value.is_tensor() ? &value->value.tensor() : nullptr;
}

// ---- outputs that share a feed's memory ------------------------------------------

// The caller owns its feeds' memory and may free or change it after the run:
// an output that shares a feed's buffer (Identity of an input, a sequence
// holding one) is given its own copy, in the same memory.
Value unaliased(const Value& value, const std::vector<const Tensor*>& fed) {
  if (value.is_tensor()) {
    const Tensor& t = value.tensor();
    for (const Tensor* f : fed) {
      if (!t.shares_buffer_with(*f)) continue;
      Value copy(t.device().host_readable() ? t.clone() : copy_tensor(t, t.device()));
      copy.set_optional(value.is_optional());
      return copy;
    }
    return value;
  }
  if (value.is_sequence()) {
    Sequence items;
    items.reserve(value.items().size());
    for (const Value& item : value.items()) items.push_back(unaliased(item, fed));
    Value copy = Value::sequence(std::move(items), value.declared_type());
    copy.set_optional(value.is_optional());
    return copy;
  }
  if (value.is_map()) {
    const Map& map = value.map_data();
    Value keys = unaliased(Value(map.keys), fed);
    Value values = unaliased(Value(map.values), fed);
    return Value::map(Map{keys.tensor(), values.tensor()});
  }
  return value;
}

void collect_tensors(const Value& value, std::vector<const Tensor*>* out) {
  if (value.is_tensor()) {
    if (value.tensor().raw_data() != nullptr) out->push_back(&value.tensor());
  } else if (value.is_sequence()) {
    for (const Value& item : value.items()) collect_tensors(item, out);
  } else if (value.is_map()) {
    out->push_back(&value.map_data().keys);
    out->push_back(&value.map_data().values);
  }
}

void unalias_outputs(std::vector<Value>& outputs, const Feeds& feeds) {
  std::vector<const Tensor*> fed;
  for (const auto& feed : feeds) collect_tensors(feed.second, &fed);
  if (fed.empty()) return;
  for (Value& v : outputs) v = unaliased(v, fed);
}

// ---- the functions ----------------------------------------------------------------

OnyxStatus* ONYX_API_CALL CreateStatus(OnyxErrorCode code, const char* msg) noexcept {
  try {
    return make_status(code, msg != nullptr ? msg : "");
  } catch (...) {
    return nullptr;
  }
}
OnyxErrorCode ONYX_API_CALL GetErrorCode(const OnyxStatus* status) noexcept {
  return status != nullptr ? status->code : ONYX_OK;
}
const char* ONYX_API_CALL GetErrorMessage(const OnyxStatus* status) noexcept {
  return status != nullptr ? status->message.c_str() : "";
}
void ONYX_API_CALL ReleaseStatus(OnyxStatus* status) noexcept { delete status; }

OnyxStatus* ONYX_API_CALL CreateEnv(OnyxLoggingLevel level, const char* logid, OnyxEnv** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(out != nullptr, "out must not be NULL");
  auto* env = new OnyxEnv();
  env->level = level;
  env->logid = logid != nullptr ? logid : "";
  *out = env;
  ONYX_API_END
}
void ONYX_API_CALL ReleaseEnv(OnyxEnv* env) noexcept { delete env; }

OnyxStatus* ONYX_API_CALL CreateSessionOptions(OnyxSessionOptions** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(out != nullptr, "out must not be NULL");
  *out = new OnyxSessionOptions();
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL CloneSessionOptions(const OnyxSessionOptions* in, OnyxSessionOptions** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(in != nullptr && out != nullptr, "options and out must not be NULL");
  *out = new OnyxSessionOptions(*in);
  ONYX_API_END
}

#define ONYX_OPTIONS_SETTER(NAME, TYPE, BODY)                                        \
  OnyxStatus* ONYX_API_CALL NAME(OnyxSessionOptions* options, TYPE value) noexcept { \
    ONYX_API_BEGIN                                                                   \
    ONYX_CHECK_ARG(options != nullptr, "options must not be NULL");                  \
    SessionOptions& o = options->options;                                            \
    BODY;                                                                            \
    ONYX_API_END                                                                     \
  }
#define ONYX_OPTIONS_FLAG(NAME, BODY)                                    \
  OnyxStatus* ONYX_API_CALL NAME(OnyxSessionOptions* options) noexcept { \
    ONYX_API_BEGIN                                                       \
    ONYX_CHECK_ARG(options != nullptr, "options must not be NULL");      \
    SessionOptions& o = options->options;                                \
    BODY;                                                                \
    ONYX_API_END                                                         \
  }

ONYX_OPTIONS_SETTER(SetIntraOpNumThreads, int, {
  ONYX_CHECK_ARG(value >= 0, "intra_op_num_threads must be 0 (one per core) or more");
  o.intra_op_num_threads = value;
})
ONYX_OPTIONS_SETTER(SetInterOpNumThreads, int, {
  ONYX_CHECK_ARG(value >= 0, "inter_op_num_threads must be 0 (default) or more");
  o.inter_op_num_threads = value;
})
ONYX_OPTIONS_SETTER(SetSessionGraphOptimizationLevel, ::GraphOptimizationLevel, {
  ONYX_CHECK_ARG(value == ONYX_DISABLE_ALL || value == ONYX_ENABLE_BASIC || value == ONYX_ENABLE_EXTENDED ||
                     value == ONYX_ENABLE_LAYOUT || value == ONYX_ENABLE_ALL,
                 "unknown graph optimization level");
  o.graph_optimization_level = static_cast<onyx::GraphOptimizationLevel>(value);
})
ONYX_OPTIONS_SETTER(SetSessionExecutionMode, ::ExecutionMode, {
  ONYX_CHECK_ARG(value == ONYX_SEQUENTIAL || value == ONYX_PARALLEL, "unknown execution mode");
  o.execution_mode = static_cast<onyx::ExecutionMode>(value);
})
ONYX_OPTIONS_SETTER(SetOptimizedModelFilePath, const char*, o.optimized_model_filepath = value != nullptr ? value : "")
ONYX_OPTIONS_SETTER(EnableProfiling, const char*, {
  o.enable_profiling = true;
  if (value != nullptr && *value != '\0') o.profile_file_prefix = value;
})
ONYX_OPTIONS_FLAG(DisableProfiling, o.enable_profiling = false)
ONYX_OPTIONS_FLAG(EnableMemPattern, o.enable_mem_pattern = true)
ONYX_OPTIONS_FLAG(DisableMemPattern, o.enable_mem_pattern = false)
ONYX_OPTIONS_FLAG(EnableCpuMemArena, o.enable_cpu_mem_arena = true)
ONYX_OPTIONS_FLAG(DisableCpuMemArena, o.enable_cpu_mem_arena = false)
ONYX_OPTIONS_SETTER(SetSessionLogId, const char*, o.log_id = value != nullptr ? value : "")
ONYX_OPTIONS_SETTER(SetSessionLogSeverityLevel, int, {
  ONYX_CHECK_ARG(value >= 0 && value <= 4, "log severity level must be 0 (verbose) to 4 (fatal)");
  o.log_severity_level = value;
})

OnyxStatus* ONYX_API_CALL AddSessionConfigEntry(OnyxSessionOptions* options, const char* key,
                                                const char* value) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(options != nullptr && key != nullptr && value != nullptr, "options, key and value must not be NULL");
  options->options.config_entries[key] = value;
  if (std::string_view(key) == "optimization.disable_specified_optimizers") {
    std::vector<std::string>& disabled = options->options.disabled_optimizers;
    disabled.clear();
    std::string_view list(value);
    while (!list.empty()) {
      const size_t comma = list.find(',');
      std::string_view name = list.substr(0, comma);
      while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
      while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
      if (!name.empty()) disabled.emplace_back(name);
      list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    }
  }
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL AddFreeDimensionOverrideByName(OnyxSessionOptions* options, const char* name,
                                                         int64_t value) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(options != nullptr && name != nullptr, "options and dim_name must not be NULL");
  ONYX_CHECK_ARG(value >= 0, std::string("the free dimension override of '") + name + "' is " + std::to_string(value) +
                                 ": it must be 0 or more");
  options->options.free_dimension_overrides[name] = value;
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL AddFreeDimensionOverride(OnyxSessionOptions* options, const char* denotation,
                                                   int64_t value) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(options != nullptr && denotation != nullptr, "options and dim_denotation must not be NULL");
  ONYX_CHECK_ARG(value >= 0, std::string("the free dimension override of denotation '") + denotation + "' is " +
                                 std::to_string(value) + ": it must be 0 or more");
  options->options.free_dimension_overrides_by_denotation[denotation] = value;
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL AddInitializer(OnyxSessionOptions* options, const char* name,
                                         const OnyxValue* value) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(options != nullptr && name != nullptr, "options and name must not be NULL");
  const Tensor* tensor = tensor_of(value);
  ONYX_CHECK_ARG(tensor != nullptr, "AddInitializer takes a tensor value");
  options->options.initializer_overrides.emplace_back(name, *tensor);
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL SessionOptionsAppendExecutionProvider(OnyxSessionOptions* options, const char* name,
                                                                const char* const* keys, const char* const* values,
                                                                size_t num_keys) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(options != nullptr && name != nullptr, "options and provider_name must not be NULL");
  ONYX_CHECK_ARG(num_keys == 0 || (keys != nullptr && values != nullptr), "keys and values must not be NULL");
  auto& provider = options->options.provider_options[name];
  for (size_t i = 0; i < num_keys; ++i) {
    ONYX_CHECK_ARG(keys[i] != nullptr && values[i] != nullptr, "a provider option key or value is NULL");
    provider[keys[i]] = values[i];
  }
  options->providers.emplace_back(name);
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL AddCustomOpDomain(OnyxSessionOptions* options, OnyxCustomOpDomain* domain) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(options != nullptr && domain != nullptr, "options and custom_op_domain must not be NULL");
  Result<std::shared_ptr<const KernelRegistry>> registry = custom_op_registry(*domain);
  if (!registry.is_ok()) return to_status(registry.status());
  options->options.custom_op_registries.push_back(std::move(registry).value());
  ONYX_API_END
}
void ONYX_API_CALL ReleaseSessionOptions(OnyxSessionOptions* options) noexcept { delete options; }

OnyxStatus* ONYX_API_CALL CreateCustomOpDomain(const char* domain, OnyxCustomOpDomain** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(domain != nullptr && out != nullptr, "domain and out must not be NULL");
  auto* d = new OnyxCustomOpDomain();
  d->domain = std::string(domain) == "ai.onnx" ? std::string() : std::string(domain);
  *out = d;
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL CustomOpDomain_Add(OnyxCustomOpDomain* domain, const OnyxCustomOp* op) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(domain != nullptr && op != nullptr, "custom_op_domain and op must not be NULL");
  domain->ops.push_back(op);
  ONYX_API_END
}
void ONYX_API_CALL ReleaseCustomOpDomain(OnyxCustomOpDomain* domain) noexcept { delete domain; }

// ---- sessions ----------------------------------------------------------------

std::vector<std::string> providers_of(const OnyxSessionOptions* options) {
  return options != nullptr ? options->providers : std::vector<std::string>();
}

OnyxStatus* ONYX_API_CALL CreateSession(const OnyxEnv* env, const char* path, const OnyxSessionOptions* options,
                                        OnyxSession** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(path != nullptr && out != nullptr, "model_path and out must not be NULL");
  struct stat st {};
  if (::stat(path, &st) != 0) return make_status(ONYX_NO_SUCHFILE, std::string("no model file at '") + path + "'");
  SessionOptions so = options != nullptr ? options->options : SessionOptions();
  if (env != nullptr && options == nullptr) so.log_severity_level = env->level;
  auto session = InferenceSession::from_file(path, so, providers_of(options));
  *out = new OnyxSession{std::move(session)};
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL CreateSessionFromArray(const OnyxEnv* env, const void* data, size_t length,
                                                 const OnyxSessionOptions* options, OnyxSession** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(data != nullptr && out != nullptr, "model_data and out must not be NULL");
  SessionOptions so = options != nullptr ? options->options : SessionOptions();
  if (env != nullptr && options == nullptr) so.log_severity_level = env->level;
  auto session =
      InferenceSession::from_bytes(std::string_view(static_cast<const char*>(data), length), so, providers_of(options));
  *out = new OnyxSession{std::move(session)};
  ONYX_API_END
}

OnyxStatus* ONYX_API_CALL Run(OnyxSession* session, const OnyxRunOptions* run_options, const char* const* input_names,
                              const OnyxValue* const* inputs, size_t input_len, const char* const* output_names,
                              size_t output_len, OnyxValue** outputs) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(session != nullptr, "session must not be NULL");
  ONYX_CHECK_ARG(input_len == 0 || (input_names != nullptr && inputs != nullptr),
                 "input_names and inputs must not be NULL");
  ONYX_CHECK_ARG(output_len > 0 && output_names != nullptr && outputs != nullptr,
                 "Run needs at least one output name and an outputs array");
  Feeds feeds;
  feeds.reserve(input_len);
  for (size_t i = 0; i < input_len; ++i) {
    if (input_names[i] == nullptr)
      return make_status(ONYX_INVALID_ARGUMENT, "input name " + std::to_string(i) + " is NULL");
    if (inputs[i] == nullptr) {
      return make_status(ONYX_INVALID_ARGUMENT, std::string("input '") + input_names[i] + "' is a NULL value");
    }
    feeds.emplace_back(input_names[i], inputs[i]->value);
  }
  std::vector<std::string> names;
  names.reserve(output_len);
  for (size_t i = 0; i < output_len; ++i) {
    if (output_names[i] == nullptr)
      return make_status(ONYX_INVALID_ARGUMENT, "output name " + std::to_string(i) + " is NULL");
    names.emplace_back(output_names[i]);
  }
  static const RunOptions kDefaultRunOptions;
  std::vector<Value> results;
  Status status =
      session->session->run(names, feeds, run_options != nullptr ? run_options->options : kDefaultRunOptions, &results);
  if (!status.is_ok()) return to_status(status);
  unalias_outputs(results, feeds);
  // Pre-allocated outputs are written in place; the others are new values.
  for (size_t i = 0; i < output_len; ++i) {
    if (outputs[i] == nullptr) continue;
    Tensor* destination = outputs[i]->value.is_tensor() ? &outputs[i]->value.tensor() : nullptr;
    if (destination == nullptr || !results[i].is_tensor() || destination->dtype() != results[i].tensor().dtype() ||
        destination->shape() != results[i].tensor().shape()) {
      return make_status(ONYX_INVALID_ARGUMENT, "output '" + names[i] + "' is " + results[i].describe() +
                                                    ", but the value given for it is " + outputs[i]->value.describe());
    }
  }
  for (size_t i = 0; i < output_len; ++i) {
    if (outputs[i] != nullptr) {
      copy_tensor_into(results[i].tensor(), outputs[i]->value.tensor());
    } else {
      outputs[i] = new OnyxValue{std::move(results[i]), nullptr};
    }
  }
  ONYX_API_END
}

#define ONYX_SESSION_COUNT(NAME, LIST)                                                        \
  OnyxStatus* ONYX_API_CALL NAME(const OnyxSession* session, size_t* out) noexcept {          \
    ONYX_API_BEGIN                                                                            \
    ONYX_CHECK_ARG(session != nullptr && out != nullptr, "session and out must not be NULL"); \
    *out = session->session->LIST().size();                                                   \
    ONYX_API_END                                                                              \
  }
ONYX_SESSION_COUNT(SessionGetInputCount, inputs)
ONYX_SESSION_COUNT(SessionGetOutputCount, outputs)
ONYX_SESSION_COUNT(SessionGetOverridableInitializerCount, overridable_initializers)

const ValueMetadata* metadata_at(const std::vector<ValueMetadata>& list, size_t index) {
  return index < list.size() ? &list[index] : nullptr;
}
std::string index_error(const char* what, size_t index, size_t count) {
  return std::string(what) + " index " + std::to_string(index) + " is out of range: the model has " +
         std::to_string(count);
}

#define ONYX_SESSION_NAME(NAME, LIST, WHAT)                                                                \
  OnyxStatus* ONYX_API_CALL NAME(const OnyxSession* session, size_t index, OnyxAllocator* allocator,       \
                                 char** value) noexcept {                                                  \
    ONYX_API_BEGIN                                                                                         \
    ONYX_CHECK_ARG(session != nullptr, "session must not be NULL");                                        \
    const auto& list = session->session->LIST();                                                           \
    const ValueMetadata* meta = metadata_at(list, index);                                                  \
    if (meta == nullptr) return make_status(ONYX_INVALID_ARGUMENT, index_error(WHAT, index, list.size())); \
    return allocate_string(allocator, meta->name, value);                                                  \
    ONYX_API_END                                                                                           \
  }
ONYX_SESSION_NAME(SessionGetInputName, inputs, "input")
ONYX_SESSION_NAME(SessionGetOutputName, outputs, "output")
ONYX_SESSION_NAME(SessionGetOverridableInitializerName, overridable_initializers, "overridable initializer")

#define ONYX_SESSION_TYPE(NAME, LIST, WHAT)                                                                \
  OnyxStatus* ONYX_API_CALL NAME(const OnyxSession* session, size_t index, OnyxTypeInfo** out) noexcept {  \
    ONYX_API_BEGIN                                                                                         \
    ONYX_CHECK_ARG(session != nullptr && out != nullptr, "session and type_info must not be NULL");        \
    const auto& list = session->session->LIST();                                                           \
    const ValueMetadata* meta = metadata_at(list, index);                                                  \
    if (meta == nullptr) return make_status(ONYX_INVALID_ARGUMENT, index_error(WHAT, index, list.size())); \
    *out = type_info_of(*meta).release();                                                                  \
    ONYX_API_END                                                                                           \
  }
ONYX_SESSION_TYPE(SessionGetInputTypeInfo, inputs, "input")
ONYX_SESSION_TYPE(SessionGetOutputTypeInfo, outputs, "output")
ONYX_SESSION_TYPE(SessionGetOverridableInitializerTypeInfo, overridable_initializers, "overridable initializer")

OnyxStatus* ONYX_API_CALL SessionGetModelMetadata(const OnyxSession* session, OnyxModelMetadata** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(session != nullptr && out != nullptr, "session and out must not be NULL");
  *out = new OnyxModelMetadata{session->session->metadata()};
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL SessionEndProfiling(OnyxSession* session, OnyxAllocator* allocator, char** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(session != nullptr, "session must not be NULL");
  return allocate_string(allocator, session->session->end_profiling(), out);
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL SessionGetProfilingStartTimeNs(const OnyxSession* session, uint64_t* out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(session != nullptr && out != nullptr, "session and out must not be NULL");
  *out = static_cast<uint64_t>(session->session->profiling_start_time_ns());
  ONYX_API_END
}
void ONYX_API_CALL ReleaseSession(OnyxSession* session) noexcept { delete session; }

// ---- run options ------------------------------------------------------------------

OnyxStatus* ONYX_API_CALL CreateRunOptions(OnyxRunOptions** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(out != nullptr, "out must not be NULL");
  *out = new OnyxRunOptions();
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL RunOptionsSetRunLogSeverityLevel(OnyxRunOptions* options, int level) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(options != nullptr, "options must not be NULL");
  ONYX_CHECK_ARG(level >= 0 && level <= 4, "log severity level must be 0 (verbose) to 4 (fatal)");
  options->options.log_severity_level = level;
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL RunOptionsGetRunLogSeverityLevel(const OnyxRunOptions* options, int* level) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(options != nullptr && level != nullptr, "options and level must not be NULL");
  *level = options->options.log_severity_level;
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL RunOptionsSetRunTag(OnyxRunOptions* options, const char* tag) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(options != nullptr, "options must not be NULL");
  options->options.run_tag = tag != nullptr ? tag : "";
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL RunOptionsGetRunTag(const OnyxRunOptions* options, const char** tag) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(options != nullptr && tag != nullptr, "options and run_tag must not be NULL");
  *tag = options->options.run_tag.c_str();
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL RunOptionsSetTerminate(OnyxRunOptions* options) noexcept {
  ONYX_CHECK_ARG(options != nullptr, "options must not be NULL");
  options->options.terminate.set(true);
  return nullptr;
}
OnyxStatus* ONYX_API_CALL RunOptionsUnsetTerminate(OnyxRunOptions* options) noexcept {
  ONYX_CHECK_ARG(options != nullptr, "options must not be NULL");
  options->options.terminate.set(false);
  return nullptr;
}
OnyxStatus* ONYX_API_CALL AddRunConfigEntry(OnyxRunOptions* options, const char* key, const char* value) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(options != nullptr && key != nullptr && value != nullptr, "options, key and value must not be NULL");
  options->options.config_entries[key] = value;
  ONYX_API_END
}
void ONYX_API_CALL ReleaseRunOptions(OnyxRunOptions* options) noexcept { delete options; }

// ---- memory info and allocators ---------------------------------------------------

OnyxStatus* ONYX_API_CALL CreateCpuMemoryInfo(OnyxAllocatorType type, OnyxMemType mem_type,
                                              OnyxMemoryInfo** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(out != nullptr, "out must not be NULL");
  auto* info = new OnyxMemoryInfo(cpu_memory_info());
  info->type = type;
  info->mem_type = mem_type;
  *out = info;
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL CreateMemoryInfo(const char* name, OnyxAllocatorType type, int id, OnyxMemType mem_type,
                                           OnyxMemoryInfo** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(name != nullptr && out != nullptr, "name and out must not be NULL");
  ONYX_CHECK_ARG(id >= 0, "the device id must be 0 or more");
  Result<Device> device = device_of(name, id, mem_type);
  if (!device.is_ok()) return to_status(device.status());
  auto* info = new OnyxMemoryInfo();
  info->name = name;
  info->type = type;
  info->mem_type = mem_type;
  info->device = device.value();
  *out = info;
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL MemoryInfoGetName(const OnyxMemoryInfo* info, const char** out) noexcept {
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "info and out must not be NULL");
  *out = info->name.c_str();
  return nullptr;
}
OnyxStatus* ONYX_API_CALL MemoryInfoGetId(const OnyxMemoryInfo* info, int* out) noexcept {
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "info and out must not be NULL");
  *out = info->device.id;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL MemoryInfoGetMemType(const OnyxMemoryInfo* info, OnyxMemType* out) noexcept {
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "info and out must not be NULL");
  *out = info->mem_type;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL MemoryInfoGetType(const OnyxMemoryInfo* info, OnyxAllocatorType* out) noexcept {
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "info and out must not be NULL");
  *out = info->type;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL CompareMemoryInfo(const OnyxMemoryInfo* a, const OnyxMemoryInfo* b, int* out) noexcept {
  ONYX_CHECK_ARG(a != nullptr && b != nullptr && out != nullptr, "info1, info2 and out must not be NULL");
  *out = (a->device == b->device && a->type == b->type && a->mem_type == b->mem_type) ? 0 : -1;
  return nullptr;
}
void ONYX_API_CALL ReleaseMemoryInfo(OnyxMemoryInfo* info) noexcept { delete info; }

OnyxStatus* ONYX_API_CALL GetAllocatorWithDefaultOptions(OnyxAllocator** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(out != nullptr, "out must not be NULL");
  *out = default_allocator();
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL CreateAllocator(const OnyxSession* session, const OnyxMemoryInfo* info,
                                          OnyxAllocator** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(session != nullptr && info != nullptr && out != nullptr, "session, mem_info and out must not be NULL");
  Allocator* allocator = session->session->allocator(info->device);
  if (allocator == nullptr) allocator = device_allocator(info->device);
  *out = new_allocator(allocator, *info);
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL AllocatorAlloc(OnyxAllocator* allocator, size_t size, void** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(allocator != nullptr && out != nullptr, "allocator and out must not be NULL");
  void* p = allocator->Alloc(allocator, size);
  if (p == nullptr)
    return make_status(ONYX_FAIL, "the allocator could not allocate " + std::to_string(size) + " bytes");
  *out = p;
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL AllocatorFree(OnyxAllocator* allocator, void* p) noexcept {
  ONYX_CHECK_ARG(allocator != nullptr, "allocator must not be NULL");
  allocator->Free(allocator, p);
  return nullptr;
}
OnyxStatus* ONYX_API_CALL AllocatorGetInfo(const OnyxAllocator* allocator, const OnyxMemoryInfo** out) noexcept {
  ONYX_CHECK_ARG(allocator != nullptr && out != nullptr, "allocator and out must not be NULL");
  *out = allocator->Info(allocator);
  return nullptr;
}
void ONYX_API_CALL ReleaseAllocator(OnyxAllocator* allocator) noexcept {
  // Only CreateAllocator's handles are released; the default allocator and
  // the caller's own allocators are left alone.
  if (allocator == nullptr || allocator->Alloc != impl_alloc) return;
  auto* a = static_cast<AllocatorImpl*>(allocator);
  if (!a->process_wide) delete a;
}

// ---- values ----------------------------------------------------------------------

// Frees a tensor's buffer through the caller's allocator.
struct CallerAllocation {
  OnyxAllocator* allocator;
  void* data;
  ~CallerAllocation() { allocator->Free(allocator, data); }
};

OnyxStatus* ONYX_API_CALL CreateTensorAsOnyxValue(OnyxAllocator* allocator, const int64_t* shape, size_t shape_len,
                                                  ONNXTensorElementDataType type, OnyxValue** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(allocator != nullptr && out != nullptr, "allocator and out must not be NULL");
  if (OnyxStatus* bad = check_shape(shape, shape_len)) return bad;
  const DataType dtype = from_c(type);
  ONYX_CHECK_ARG(dtype != DataType::kUndefined, "unknown tensor element type " + std::to_string(type));
  Shape dims = shape_of(shape, shape_len);
  if (allocator->Alloc == impl_alloc) {
    // One of onyx's: the tensor allocates from it directly.
    Allocator* inner = static_cast<AllocatorImpl*>(allocator)->allocator;
    Result<Tensor> tensor = Tensor::create(dtype, dims, inner);
    if (!tensor.is_ok()) return to_status(tensor.status());
    if (dtype != DataType::kString && inner->device().host_readable()) {
      std::memset(tensor->raw_data(), 0, tensor->bytes());
    }
    *out = new OnyxValue{Value(std::move(tensor).value()), nullptr};
    return nullptr;
  }
  ONYX_CHECK_ARG(dtype != DataType::kString, "string tensors are made with onyx's allocators");
  const int64_t count = shape_size(dims);
  ONYX_CHECK_ARG(count >= 0, "the shape's element count overflows");
  const size_t bytes = static_cast<size_t>(count) * dtype_size(dtype);
  void* data = allocator->Alloc(allocator, bytes == 0 ? 1 : bytes);
  if (data == nullptr)
    return make_status(ONYX_FAIL, "the allocator could not allocate " + std::to_string(bytes) + " bytes");
  std::memset(data, 0, bytes);
  auto owner = std::make_shared<CallerAllocation>(CallerAllocation{allocator, data});
  *out = new OnyxValue{Value(Tensor::borrow(dtype, std::move(dims), data, Device{}, owner)), nullptr};
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL CreateTensorWithDataAsOnyxValue(const OnyxMemoryInfo* info, void* data, size_t data_len,
                                                          const int64_t* shape, size_t shape_len,
                                                          ONNXTensorElementDataType type, OnyxValue** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "info and out must not be NULL");
  if (OnyxStatus* bad = check_shape(shape, shape_len)) return bad;
  const DataType dtype = from_c(type);
  ONYX_CHECK_ARG(dtype != DataType::kUndefined, "unknown tensor element type " + std::to_string(type));
  ONYX_CHECK_ARG(dtype != DataType::kString,
                 "a string tensor cannot be made over caller memory: use CreateTensorAsOnyxValue and FillStringTensor");
  Shape dims = shape_of(shape, shape_len);
  const int64_t count = shape_size(dims);
  const size_t needed = static_cast<size_t>(count) * dtype_size(dtype);
  if (data_len < needed) {
    return make_status(ONYX_INVALID_ARGUMENT, "p_data_len is " + std::to_string(data_len) + " bytes, but shape " +
                                                  shape_to_string(dims) + " of " + dtype_name(dtype) + " needs " +
                                                  std::to_string(needed));
  }
  ONYX_CHECK_ARG(data != nullptr || needed == 0, "p_data must not be NULL");
  *out = new OnyxValue{Value(Tensor::borrow(dtype, std::move(dims), data, info->device)), nullptr};
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL IsTensor(const OnyxValue* value, int* out) noexcept {
  ONYX_CHECK_ARG(value != nullptr && out != nullptr, "value and out must not be NULL");
  *out = value->value.is_tensor() ? 1 : 0;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL HasValue(const OnyxValue* value, int* out) noexcept {
  ONYX_CHECK_ARG(value != nullptr && out != nullptr, "value and out must not be NULL");
  *out = value->value.is_none() ? 0 : 1;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL GetTensorMutableData(OnyxValue* value, void** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(value != nullptr && out != nullptr, "value and out must not be NULL");
  ONYX_CHECK_ARG(value->value.is_tensor(), "the value is not a tensor: " + value->value.describe());
  *out = value->value.tensor().raw_data();
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL GetTensorMemoryInfo(const OnyxValue* value, const OnyxMemoryInfo** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(value != nullptr && out != nullptr, "value and mem_info must not be NULL");
  ONYX_CHECK_ARG(value->value.is_tensor(), "the value is not a tensor: " + value->value.describe());
  if (!value->memory_info)
    value->memory_info = std::make_unique<OnyxMemoryInfo>(memory_info_of(value->value.tensor().device()));
  *out = value->memory_info.get();
  ONYX_API_END
}

OnyxStatus* string_tensor(const OnyxValue* value, const Tensor** out) {
  const Tensor* tensor = tensor_of(value);
  ONYX_CHECK_ARG(tensor != nullptr && tensor->dtype() == DataType::kString, "the value is not a string tensor");
  *out = tensor;
  return nullptr;
}

OnyxStatus* ONYX_API_CALL FillStringTensor(OnyxValue* value, const char* const* s, size_t s_len) noexcept {
  ONYX_API_BEGIN
  const Tensor* tensor = nullptr;
  if (OnyxStatus* bad = string_tensor(value, &tensor)) return bad;
  ONYX_CHECK_ARG(
      static_cast<int64_t>(s_len) == tensor->size(),
      "s_len is " + std::to_string(s_len) + " but the tensor has " + std::to_string(tensor->size()) + " elements");
  std::string* data = value->value.tensor().data<std::string>();
  for (size_t i = 0; i < s_len; ++i) data[i] = s[i] != nullptr ? s[i] : "";
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL FillStringTensorElement(OnyxValue* value, const char* s, size_t index) noexcept {
  ONYX_API_BEGIN
  const Tensor* tensor = nullptr;
  if (OnyxStatus* bad = string_tensor(value, &tensor)) return bad;
  ONYX_CHECK_ARG(static_cast<int64_t>(index) < tensor->size(), "index " + std::to_string(index) + " is out of range");
  value->value.tensor().data<std::string>()[index] = s != nullptr ? s : "";
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL GetStringTensorDataLength(const OnyxValue* value, size_t* len) noexcept {
  ONYX_API_BEGIN
  const Tensor* tensor = nullptr;
  if (OnyxStatus* bad = string_tensor(value, &tensor)) return bad;
  ONYX_CHECK_ARG(len != nullptr, "len must not be NULL");
  size_t total = 0;
  for (int64_t i = 0; i < tensor->size(); ++i) total += tensor->data<std::string>()[i].size();
  *len = total;
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL GetStringTensorContent(const OnyxValue* value, void* s, size_t s_len, size_t* offsets,
                                                 size_t offsets_len) noexcept {
  ONYX_API_BEGIN
  const Tensor* tensor = nullptr;
  if (OnyxStatus* bad = string_tensor(value, &tensor)) return bad;
  ONYX_CHECK_ARG(static_cast<int64_t>(offsets_len) == tensor->size(),
                 "offsets_len must be the element count, " + std::to_string(tensor->size()));
  ONYX_CHECK_ARG(offsets != nullptr || offsets_len == 0, "offsets must not be NULL");
  size_t at = 0;
  const std::string* strings = tensor->data<std::string>();
  for (size_t i = 0; i < offsets_len; ++i) {
    if (at + strings[i].size() > s_len) {
      return make_status(ONYX_INVALID_ARGUMENT, "s_len is too small for the strings (GetStringTensorDataLength)");
    }
    offsets[i] = at;
    if (!strings[i].empty()) std::memcpy(static_cast<char*>(s) + at, strings[i].data(), strings[i].size());
    at += strings[i].size();
  }
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL GetStringTensorElementLength(const OnyxValue* value, size_t index, size_t* out) noexcept {
  ONYX_API_BEGIN
  const Tensor* tensor = nullptr;
  if (OnyxStatus* bad = string_tensor(value, &tensor)) return bad;
  ONYX_CHECK_ARG(out != nullptr, "out must not be NULL");
  ONYX_CHECK_ARG(static_cast<int64_t>(index) < tensor->size(), "index " + std::to_string(index) + " is out of range");
  *out = tensor->data<std::string>()[index].size();
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL GetStringTensorElement(const OnyxValue* value, size_t s_len, size_t index, void* s) noexcept {
  ONYX_API_BEGIN
  const Tensor* tensor = nullptr;
  if (OnyxStatus* bad = string_tensor(value, &tensor)) return bad;
  ONYX_CHECK_ARG(static_cast<int64_t>(index) < tensor->size(), "index " + std::to_string(index) + " is out of range");
  const std::string& element = tensor->data<std::string>()[index];
  ONYX_CHECK_ARG(s_len >= element.size(), "s_len is smaller than the element (GetStringTensorElementLength)");
  if (!element.empty()) std::memcpy(s, element.data(), element.size());
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL GetValueType(const OnyxValue* value, ONNXType* out) noexcept {
  ONYX_CHECK_ARG(value != nullptr && out != nullptr, "value and out must not be NULL");
  switch (value->value.kind()) {
    case Value::Kind::kTensor:
      *out = ONNX_TYPE_TENSOR;
      break;
    case Value::Kind::kSequence:
      *out = ONNX_TYPE_SEQUENCE;
      break;
    case Value::Kind::kMap:
      *out = ONNX_TYPE_MAP;
      break;
    default:
      *out = ONNX_TYPE_OPTIONAL;
      break;
  }
  return nullptr;
}
OnyxStatus* ONYX_API_CALL GetTypeInfo(const OnyxValue* value, OnyxTypeInfo** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(value != nullptr && out != nullptr, "value and out must not be NULL");
  *out = type_info_of_value(value->value);
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL GetTensorTypeAndShape(const OnyxValue* value, OnyxTensorTypeAndShapeInfo** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(value != nullptr && out != nullptr, "value and out must not be NULL");
  ONYX_CHECK_ARG(value->value.is_tensor(), "the value is not a tensor: " + value->value.describe());
  *out = tensor_info_of(value->value.tensor());
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL GetValueCount(const OnyxValue* value, size_t* out) noexcept {
  ONYX_CHECK_ARG(value != nullptr && out != nullptr, "value and out must not be NULL");
  if (value->value.is_sequence()) {
    *out = value->value.items().size();
  } else if (value->value.is_map()) {
    *out = 2;
  } else {
    return make_status(ONYX_INVALID_ARGUMENT,
                       "GetValueCount takes a sequence or a map, not " + value->value.describe());
  }
  return nullptr;
}
OnyxStatus* ONYX_API_CALL GetValue(const OnyxValue* value, int index, OnyxAllocator* /*allocator*/,
                                   OnyxValue** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(value != nullptr && out != nullptr, "value and out must not be NULL");
  ONYX_CHECK_ARG(index >= 0, "index must be 0 or more");
  if (value->value.is_sequence()) {
    const Sequence& items = value->value.items();
    ONYX_CHECK_ARG(
        static_cast<size_t>(index) < items.size(),
        "index " + std::to_string(index) + " is out of range: the sequence has " + std::to_string(items.size()));
    *out = new OnyxValue{items[static_cast<size_t>(index)], nullptr};
  } else if (value->value.is_map()) {
    ONYX_CHECK_ARG(index <= 1, "a map's values are 0 (keys) and 1 (values)");
    const Map& map = value->value.map_data();
    *out = new OnyxValue{Value(index == 0 ? map.keys : map.values), nullptr};
  } else {
    return make_status(ONYX_INVALID_ARGUMENT, "GetValue takes a sequence or a map, not " + value->value.describe());
  }
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL CreateValue(const OnyxValue* const* in, size_t num_values, ONNXType value_type,
                                      OnyxValue** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(out != nullptr && (in != nullptr || num_values == 0), "in and out must not be NULL");
  for (size_t i = 0; i < num_values; ++i) ONYX_CHECK_ARG(in[i] != nullptr, "value " + std::to_string(i) + " is NULL");
  if (value_type == ONNX_TYPE_SEQUENCE) {
    Sequence items;
    ValueType element;
    for (size_t i = 0; i < num_values; ++i) {
      ValueType t = in[i]->value.type();
      if (i == 0) {
        element = t;
      } else if (t.to_string() != element.to_string()) {
        return make_status(ONYX_INVALID_ARGUMENT, "a sequence's values must have one type: value 0 is " +
                                                      element.to_string() + ", value " + std::to_string(i) + " is " +
                                                      t.to_string());
      }
      items.push_back(in[i]->value);
    }
    *out = new OnyxValue{Value::sequence(std::move(items), element), nullptr};
    return nullptr;
  }
  if (value_type == ONNX_TYPE_MAP) {
    ONYX_CHECK_ARG(num_values == 2, "a map is made of 2 values: keys and values");
    const Tensor* keys = tensor_of(in[0]);
    const Tensor* values = tensor_of(in[1]);
    ONYX_CHECK_ARG(keys != nullptr && values != nullptr && keys->rank() == 1 && values->rank() == 1 &&
                       keys->size() == values->size(),
                   "a map's keys and values must be 1-D tensors of the same length");
    ONYX_CHECK_ARG(keys->dtype() == DataType::kInt64 || keys->dtype() == DataType::kString,
                   "a map's keys must be int64 or string");
    *out = new OnyxValue{Value::map(Map{*keys, *values}), nullptr};
    return nullptr;
  }
  return make_status(ONYX_INVALID_ARGUMENT, "CreateValue makes ONNX_TYPE_SEQUENCE or ONNX_TYPE_MAP values");
  ONYX_API_END
}
void ONYX_API_CALL ReleaseValue(OnyxValue* value) noexcept { delete value; }

// ---- type information -----------------------------------------------------------

OnyxStatus* ONYX_API_CALL GetOnnxTypeFromTypeInfo(const OnyxTypeInfo* info, ONNXType* out) noexcept {
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "type_info and out must not be NULL");
  *out = info->type;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL CastTypeInfoToTensorInfo(const OnyxTypeInfo* info,
                                                   const OnyxTensorTypeAndShapeInfo** out) noexcept {
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "type_info and out must not be NULL");
  *out = info->type == ONNX_TYPE_TENSOR || info->type == ONNX_TYPE_SPARSETENSOR ? &info->tensor : nullptr;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL CastTypeInfoToSequenceTypeInfo(const OnyxTypeInfo* info,
                                                         const OnyxSequenceTypeInfo** out) noexcept {
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "type_info and out must not be NULL");
  *out = info->type == ONNX_TYPE_SEQUENCE ? reinterpret_cast<const OnyxSequenceTypeInfo*>(info) : nullptr;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL CastTypeInfoToMapTypeInfo(const OnyxTypeInfo* info, const OnyxMapTypeInfo** out) noexcept {
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "type_info and out must not be NULL");
  *out = info->type == ONNX_TYPE_MAP ? reinterpret_cast<const OnyxMapTypeInfo*>(info) : nullptr;
  return nullptr;
}
OnyxTypeInfo* copy_type_info(const OnyxTypeInfo& info) {
  auto* copy = new OnyxTypeInfo();
  copy->type = info.type;
  copy->tensor = info.tensor;
  copy->denotation = info.denotation;
  if (info.element) copy->element.reset(copy_type_info(*info.element));
  return copy;
}
OnyxStatus* ONYX_API_CALL GetSequenceElementType(const OnyxSequenceTypeInfo* sequence, OnyxTypeInfo** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(sequence != nullptr && out != nullptr, "sequence_type_info and type_info must not be NULL");
  const auto* info = reinterpret_cast<const OnyxTypeInfo*>(sequence);
  *out = info->element ? copy_type_info(*info->element) : new OnyxTypeInfo();
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL GetMapKeyType(const OnyxMapTypeInfo* map, ONNXTensorElementDataType* out) noexcept {
  ONYX_CHECK_ARG(map != nullptr && out != nullptr, "map_type_info and out must not be NULL");
  *out = reinterpret_cast<const OnyxTypeInfo*>(map)->tensor.type;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL GetMapValueType(const OnyxMapTypeInfo* map, OnyxTypeInfo** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(map != nullptr && out != nullptr, "map_type_info and type_info must not be NULL");
  const auto* info = reinterpret_cast<const OnyxTypeInfo*>(map);
  *out = info->element ? copy_type_info(*info->element) : new OnyxTypeInfo();
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL GetDenotationFromTypeInfo(const OnyxTypeInfo* info, const char** denotation,
                                                    size_t* len) noexcept {
  ONYX_CHECK_ARG(info != nullptr && denotation != nullptr && len != nullptr, "arguments must not be NULL");
  *denotation = info->denotation.c_str();
  *len = info->denotation.size();
  return nullptr;
}
void ONYX_API_CALL ReleaseTypeInfo(OnyxTypeInfo* info) noexcept { delete info; }

OnyxStatus* ONYX_API_CALL CreateTensorTypeAndShapeInfo(OnyxTensorTypeAndShapeInfo** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(out != nullptr, "out must not be NULL");
  *out = new OnyxTensorTypeAndShapeInfo();
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL SetTensorElementType(OnyxTensorTypeAndShapeInfo* info,
                                               ONNXTensorElementDataType type) noexcept {
  ONYX_CHECK_ARG(info != nullptr, "info must not be NULL");
  info->type = type;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL SetDimensions(OnyxTensorTypeAndShapeInfo* info, const int64_t* dims, size_t count) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(info != nullptr && (dims != nullptr || count == 0), "info and dim_values must not be NULL");
  info->has_shape = true;
  info->dims.assign(dims, dims + count);
  info->symbols.assign(count, std::string());
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL GetTensorElementType(const OnyxTensorTypeAndShapeInfo* info,
                                               ONNXTensorElementDataType* out) noexcept {
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "info and out must not be NULL");
  *out = info->type;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL GetDimensionsCount(const OnyxTensorTypeAndShapeInfo* info, size_t* out) noexcept {
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "info and out must not be NULL");
  *out = info->dims.size();
  return nullptr;
}
OnyxStatus* ONYX_API_CALL GetDimensions(const OnyxTensorTypeAndShapeInfo* info, int64_t* dims, size_t length) noexcept {
  ONYX_CHECK_ARG(info != nullptr && (dims != nullptr || length == 0), "info and dim_values must not be NULL");
  for (size_t i = 0; i < length && i < info->dims.size(); ++i) dims[i] = info->dims[i];
  return nullptr;
}
OnyxStatus* ONYX_API_CALL GetSymbolicDimensions(const OnyxTensorTypeAndShapeInfo* info, const char* params[],
                                                size_t length) noexcept {
  ONYX_CHECK_ARG(info != nullptr && (params != nullptr || length == 0), "info and dim_params must not be NULL");
  for (size_t i = 0; i < length && i < info->symbols.size(); ++i) params[i] = info->symbols[i].c_str();
  return nullptr;
}
OnyxStatus* ONYX_API_CALL GetTensorShapeElementCount(const OnyxTensorTypeAndShapeInfo* info, size_t* out) noexcept {
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "info and out must not be NULL");
  size_t count = 1;
  for (int64_t d : info->dims) {
    if (d < 0) {
      *out = static_cast<size_t>(-1);
      return nullptr;
    }
    count *= static_cast<size_t>(d);
  }
  *out = count;
  return nullptr;
}
void ONYX_API_CALL ReleaseTensorTypeAndShapeInfo(OnyxTensorTypeAndShapeInfo* info) noexcept { delete info; }

// ---- model metadata ----------------------------------------------------------------

#define ONYX_METADATA_STRING(NAME, FIELD)                                                                       \
  OnyxStatus* ONYX_API_CALL NAME(const OnyxModelMetadata* m, OnyxAllocator* allocator, char** value) noexcept { \
    ONYX_API_BEGIN                                                                                              \
    ONYX_CHECK_ARG(m != nullptr, "model_metadata must not be NULL");                                            \
    return allocate_string(allocator, m->metadata.FIELD, value);                                                \
    ONYX_API_END                                                                                                \
  }
ONYX_METADATA_STRING(ModelMetadataGetProducerName, producer_name)
ONYX_METADATA_STRING(ModelMetadataGetGraphName, graph_name)
ONYX_METADATA_STRING(ModelMetadataGetDomain, domain)
ONYX_METADATA_STRING(ModelMetadataGetDescription, description)
ONYX_METADATA_STRING(ModelMetadataGetGraphDescription, graph_description)

OnyxStatus* ONYX_API_CALL ModelMetadataGetVersion(const OnyxModelMetadata* m, int64_t* value) noexcept {
  ONYX_CHECK_ARG(m != nullptr && value != nullptr, "model_metadata and value must not be NULL");
  *value = m->metadata.version;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL ModelMetadataLookupCustomMetadataMap(const OnyxModelMetadata* m, OnyxAllocator* allocator,
                                                               const char* key, char** value) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(m != nullptr && key != nullptr && value != nullptr, "model_metadata, key and value must not be NULL");
  auto it = m->metadata.custom_metadata_map.find(key);
  if (it == m->metadata.custom_metadata_map.end()) {
    *value = nullptr;
    return nullptr;
  }
  return allocate_string(allocator, it->second, value);
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL ModelMetadataGetCustomMetadataMapKeys(const OnyxModelMetadata* m, OnyxAllocator* allocator,
                                                                char*** keys, int64_t* num_keys) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(m != nullptr && allocator != nullptr && keys != nullptr && num_keys != nullptr,
                 "arguments must not be NULL");
  const auto& map = m->metadata.custom_metadata_map;
  *num_keys = static_cast<int64_t>(map.size());
  if (map.empty()) {
    *keys = nullptr;
    return nullptr;
  }
  auto** array = static_cast<char**>(allocator->Alloc(allocator, sizeof(char*) * map.size()));
  if (array == nullptr) return make_status(ONYX_FAIL, "the allocator returned no memory");
  size_t i = 0;
  for (const auto& [key, unused] : map) {
    if (OnyxStatus* failed = allocate_string(allocator, key, &array[i])) {
      for (size_t j = 0; j < i; ++j) allocator->Free(allocator, array[j]);
      allocator->Free(allocator, array);
      return failed;
    }
    ++i;
  }
  *keys = array;
  ONYX_API_END
}
void ONYX_API_CALL ReleaseModelMetadata(OnyxModelMetadata* m) noexcept { delete m; }

// ---- I/O binding ----------------------------------------------------------------

OnyxStatus* ONYX_API_CALL CreateIoBinding(OnyxSession* session, OnyxIoBinding** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(session != nullptr && out != nullptr, "session and out must not be NULL");
  auto* binding = new OnyxIoBinding();
  binding->session = session;
  *out = binding;
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL BindInput(OnyxIoBinding* binding, const char* name, const OnyxValue* value) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(binding != nullptr && name != nullptr && value != nullptr, "binding, name and value must not be NULL");
  binding->binding.bind_input(name, value->value);
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL BindOutput(OnyxIoBinding* binding, const char* name, const OnyxValue* value) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(binding != nullptr && name != nullptr && value != nullptr, "binding, name and value must not be NULL");
  const Tensor* tensor = tensor_of(value);
  ONYX_CHECK_ARG(tensor != nullptr, "an output is bound to a tensor");
  binding->binding.bind_output(name, *tensor);
  binding->bound_to_caller.insert(name);
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL BindOutputToDevice(OnyxIoBinding* binding, const char* name,
                                             const OnyxMemoryInfo* info) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(binding != nullptr && name != nullptr && info != nullptr,
                 "binding, name and mem_info must not be NULL");
  binding->binding.bind_output(name, info->device);
  binding->bound_to_caller.erase(name);
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL GetBoundOutputNames(const OnyxIoBinding* binding, OnyxAllocator* allocator, char** buffer,
                                              size_t** lengths, size_t* count) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(
      binding != nullptr && allocator != nullptr && buffer != nullptr && lengths != nullptr && count != nullptr,
      "arguments must not be NULL");
  std::vector<std::string> names = binding->binding.output_names();
  *count = names.size();
  if (names.empty()) {
    *buffer = nullptr;
    *lengths = nullptr;
    return nullptr;
  }
  size_t total = 0;
  for (const auto& n : names) total += n.size();
  auto* chars = static_cast<char*>(allocator->Alloc(allocator, total == 0 ? 1 : total));
  auto* sizes = static_cast<size_t*>(allocator->Alloc(allocator, sizeof(size_t) * names.size()));
  if (chars == nullptr || sizes == nullptr) {
    allocator->Free(allocator, chars);
    allocator->Free(allocator, sizes);
    return make_status(ONYX_FAIL, "the allocator returned no memory");
  }
  size_t at = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    std::memcpy(chars + at, names[i].data(), names[i].size());
    sizes[i] = names[i].size();
    at += names[i].size();
  }
  *buffer = chars;
  *lengths = sizes;
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL GetBoundOutputValues(const OnyxIoBinding* binding, OnyxAllocator* allocator,
                                               OnyxValue*** output, size_t* count) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(binding != nullptr && allocator != nullptr && output != nullptr && count != nullptr,
                 "arguments must not be NULL");
  const std::vector<Value>& results = binding->outputs;
  *count = results.size();
  if (results.empty()) {
    *output = nullptr;
    return nullptr;
  }
  auto** array = static_cast<OnyxValue**>(allocator->Alloc(allocator, sizeof(OnyxValue*) * results.size()));
  if (array == nullptr) return make_status(ONYX_FAIL, "the allocator returned no memory");
  for (size_t i = 0; i < results.size(); ++i) array[i] = new OnyxValue{results[i], nullptr};
  *output = array;
  ONYX_API_END
}
void ONYX_API_CALL ClearBoundInputs(OnyxIoBinding* binding) noexcept {
  if (binding != nullptr) binding->binding.clear_inputs();
}
void ONYX_API_CALL ClearBoundOutputs(OnyxIoBinding* binding) noexcept {
  if (binding == nullptr) return;
  binding->binding.clear_outputs();
  binding->outputs.clear();
  binding->bound_to_caller.clear();
}
OnyxStatus* ONYX_API_CALL RunWithBinding(OnyxSession* session, const OnyxRunOptions* run_options,
                                         const OnyxIoBinding* binding) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(session != nullptr && binding != nullptr, "session and binding must not be NULL");
  static const RunOptions kDefaultRunOptions;
  // The binding's results change with the run: the C signature takes it const
  // as onnxruntime's does.
  auto* bound = const_cast<OnyxIoBinding*>(binding);
  bound->outputs.clear();
  session->session->run_with_binding(bound->binding,
                                     run_options != nullptr ? run_options->options : kDefaultRunOptions);
  bound->outputs = bound->binding.outputs();
  // An output written into the caller's own tensor stays there, even where
  // that tensor is also fed as an input: the caller asked for exactly that.
  const std::vector<std::string> names = bound->binding.output_names();
  std::vector<const Tensor*> fed;
  for (const auto& feed : bound->binding.inputs()) collect_tensors(feed.second, &fed);
  for (size_t k = 0; k < bound->outputs.size() && !fed.empty(); ++k) {
    if (k < names.size() && bound->bound_to_caller.count(names[k]) != 0) continue;
    bound->outputs[k] = unaliased(bound->outputs[k], fed);
  }
  ONYX_API_END
}
void ONYX_API_CALL ReleaseIoBinding(OnyxIoBinding* binding) noexcept { delete binding; }

// ---- providers --------------------------------------------------------------------

OnyxStatus* string_array(const std::vector<std::string>& list, char*** out, int* length) {
  ONYX_CHECK_ARG(out != nullptr && length != nullptr, "out and provider_length must not be NULL");
  auto** array = new char*[list.size() + 1];
  for (size_t i = 0; i < list.size(); ++i) {
    array[i] = new char[list[i].size() + 1];
    std::memcpy(array[i], list[i].c_str(), list[i].size() + 1);
  }
  array[list.size()] = nullptr;
  *out = array;
  *length = static_cast<int>(list.size());
  return nullptr;
}
OnyxStatus* ONYX_API_CALL GetAvailableProviders(char*** out, int* length) noexcept {
  ONYX_API_BEGIN
  return string_array(available_providers(), out, length);
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL ReleaseAvailableProviders(char** array, int length) noexcept {
  if (array == nullptr) return nullptr;
  for (int i = 0; i < length; ++i) delete[] array[i];
  delete[] array;
  return nullptr;
}
const char* ONYX_API_CALL GetBuildInfoString() noexcept {
  static const std::string info = std::string("onyx ") + version() + ", C API version " +
                                  std::to_string(ONYX_API_VERSION) + ", built with " +
#if defined(__clang__)
                                  "clang " __clang_version__;
#elif defined(__GNUC__)
                                  "g++ " __VERSION__;
#else
                                  "an unknown compiler";
#endif
  return info.c_str();
}
OnyxStatus* ONYX_API_CALL SessionGetProviders(const OnyxSession* session, char*** out, int* length) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(session != nullptr, "session must not be NULL");
  return string_array(session->session->providers(), out, length);
  ONYX_API_END
}

// ---- additions: optional types, values, shared memory, provider options ------------

OnyxStatus* ONYX_API_CALL CastTypeInfoToOptionalTypeInfo(const OnyxTypeInfo* info,
                                                         const OnyxOptionalTypeInfo** out) noexcept {
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "type_info and out must not be NULL");
  *out = info->type == ONNX_TYPE_OPTIONAL ? reinterpret_cast<const OnyxOptionalTypeInfo*>(info) : nullptr;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL GetOptionalContainedTypeInfo(const OnyxOptionalTypeInfo* optional,
                                                       OnyxTypeInfo** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(optional != nullptr && out != nullptr, "optional_type_info and out must not be NULL");
  const auto* info = reinterpret_cast<const OnyxTypeInfo*>(optional);
  *out = info->element ? copy_type_info(*info->element) : new OnyxTypeInfo();
  ONYX_API_END
}

// The value type a type info describes (shapes aside).
ValueType value_type_of(const OnyxTypeInfo& info) {
  ValueType type;
  switch (info.type) {
    case ONNX_TYPE_TENSOR:
      type.kind = ValueType::Kind::kTensor;
      break;
    case ONNX_TYPE_SPARSETENSOR:
      type.kind = ValueType::Kind::kSparseTensor;
      break;
    case ONNX_TYPE_SEQUENCE:
      type.kind = ValueType::Kind::kSequence;
      break;
    case ONNX_TYPE_MAP:
      type.kind = ValueType::Kind::kMap;
      break;
    case ONNX_TYPE_OPTIONAL:
      type.kind = ValueType::Kind::kOptional;
      break;
    default:
      return type;
  }
  if (info.type == ONNX_TYPE_MAP) {
    type.key_type = from_c(info.tensor.type);
  } else {
    type.elem_type = from_c(info.tensor.type);
  }
  if (info.element) type.inner = std::make_shared<ValueType>(value_type_of(*info.element));
  return type;
}

OnyxStatus* ONYX_API_CALL CreateNoneValue(const OnyxTypeInfo* type_info, OnyxValue** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(out != nullptr, "out must not be NULL");
  *out = new OnyxValue{Value::none(type_info != nullptr ? value_type_of(*type_info) : ValueType{}), nullptr};
  ONYX_API_END
}
OnyxStatus* ONYX_API_CALL CreateEmptySequence(const OnyxTypeInfo* element_type, OnyxValue** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(out != nullptr, "out must not be NULL");
  *out =
      new OnyxValue{Value::sequence({}, element_type != nullptr ? value_type_of(*element_type) : ValueType{}), nullptr};
  ONYX_API_END
}

OnyxStatus* ONYX_API_CALL CopyTensors(const OnyxEnv* /*env*/, const OnyxValue* const* src, OnyxValue* const* dst,
                                      OnyxSyncStream* stream, size_t count) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(count == 0 || (src != nullptr && dst != nullptr), "src_tensors and dst_tensors must not be NULL");
  ONYX_CHECK_ARG(stream == nullptr, "onyx's CopyTensors takes no stream: pass NULL (the copy is synchronous)");
  for (size_t i = 0; i < count; ++i) {
    const Tensor* from = tensor_of(src[i]);
    Tensor* to = dst[i] != nullptr && dst[i]->value.is_tensor() ? &dst[i]->value.tensor() : nullptr;
    if (from == nullptr || to == nullptr) {
      return make_status(ONYX_INVALID_ARGUMENT,
                         "CopyTensors copies tensors: pair " + std::to_string(i) + " is not two tensors");
    }
    if (from->dtype() != to->dtype() || from->shape() != to->shape()) {
      return make_status(ONYX_INVALID_ARGUMENT, "CopyTensors pair " + std::to_string(i) + ": cannot copy " +
                                                    from->describe() + " into " + to->describe());
    }
    if (from->raw_data() == to->raw_data()) continue;
    copy_tensor_into(*from, *to);
  }
  ONYX_API_END
}

OnyxStatus* ONYX_API_CALL GetSharedAllocator(OnyxEnv* /*env*/, const OnyxMemoryInfo* info,
                                             OnyxAllocator** out) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(info != nullptr && out != nullptr, "mem_info and out must not be NULL");
  *out = nullptr;
  if (info->device.is_cpu()) {
    *out = default_allocator();
    return nullptr;
  }
  if (!device_is_served(info->device.type)) return nullptr;
  static std::mutex mutex;
  static std::map<std::string, AllocatorImpl*> shared;  // never freed: valid for the process
  std::lock_guard<std::mutex> lock(mutex);
  const std::string key = device_to_string(info->device);
  AllocatorImpl*& a = shared[key];
  if (a == nullptr) {
    a = new_allocator(device_allocator(info->device), memory_info_of(info->device));
    a->process_wide = true;
  }
  *out = a;
  ONYX_API_END
}

OnyxStatus* ONYX_API_CALL SessionGetMemoryProfile(const OnyxSession* session, int64_t* peak_bytes,
                                                  int64_t* in_use_bytes) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(session != nullptr && peak_bytes != nullptr && in_use_bytes != nullptr, "arguments must not be NULL");
  const onyx::InferenceSession::MemoryProfile profile = session->session->memory_profile();
  *peak_bytes = profile.peak_bytes;
  *in_use_bytes = profile.in_use_bytes;
  ONYX_API_END
}

OnyxStatus* ONYX_API_CALL SessionGetProviderOptions(const OnyxSession* session, const char* provider,
                                                    OnyxAllocator* allocator, char*** keys, char*** values,
                                                    size_t* num_keys) noexcept {
  ONYX_API_BEGIN
  ONYX_CHECK_ARG(session != nullptr && provider != nullptr && allocator != nullptr && keys != nullptr &&
                     values != nullptr && num_keys != nullptr,
                 "arguments must not be NULL");
  const std::vector<std::string> used = session->session->providers();
  if (std::find(used.begin(), used.end(), provider) == used.end()) {
    std::string list;
    for (const auto& name : used) list += (list.empty() ? "" : ", ") + name;
    return make_status(ONYX_INVALID_ARGUMENT,
                       std::string("the session does not use provider '") + provider + "'; it uses " + list);
  }
  const auto all = session->session->provider_options();
  const auto found = all.find(provider);
  const std::map<std::string, std::string> options =
      found != all.end() ? found->second : std::map<std::string, std::string>();
  *keys = nullptr;
  *values = nullptr;
  *num_keys = 0;
  if (options.empty()) return nullptr;
  auto** k = static_cast<char**>(allocator->Alloc(allocator, sizeof(char*) * options.size()));
  auto** v = static_cast<char**>(allocator->Alloc(allocator, sizeof(char*) * options.size()));
  if (k == nullptr || v == nullptr) {
    allocator->Free(allocator, k);
    allocator->Free(allocator, v);
    return make_status(ONYX_FAIL, "the allocator returned no memory");
  }
  size_t i = 0;
  for (const auto& [key, value] : options) {
    OnyxStatus* bad = allocate_string(allocator, key, &k[i]);
    if (bad == nullptr) bad = allocate_string(allocator, value, &v[i]);
    if (bad != nullptr) {
      for (size_t j = 0; j < i; ++j) {
        allocator->Free(allocator, k[j]);
        allocator->Free(allocator, v[j]);
      }
      allocator->Free(allocator, k);
      allocator->Free(allocator, v);
      return bad;
    }
    ++i;
  }
  *keys = k;
  *values = v;
  *num_keys = options.size();
  ONYX_API_END
}

}  // namespace

// Defined in custom_op.cc.
OnyxStatus* ONYX_API_CALL KernelInfoGetAttribute_float(const OnyxKernelInfo*, const char*, float*) noexcept;
OnyxStatus* ONYX_API_CALL KernelInfoGetAttribute_int64(const OnyxKernelInfo*, const char*, int64_t*) noexcept;
OnyxStatus* ONYX_API_CALL KernelInfoGetAttribute_string(const OnyxKernelInfo*, const char*, char*, size_t*) noexcept;
OnyxStatus* ONYX_API_CALL KernelInfoGetAttributeArray_float(const OnyxKernelInfo*, const char*, float*,
                                                            size_t*) noexcept;
OnyxStatus* ONYX_API_CALL KernelInfoGetAttributeArray_int64(const OnyxKernelInfo*, const char*, int64_t*,
                                                            size_t*) noexcept;
OnyxStatus* ONYX_API_CALL KernelInfo_GetInputCount(const OnyxKernelInfo*, size_t*) noexcept;
OnyxStatus* ONYX_API_CALL KernelInfo_GetOutputCount(const OnyxKernelInfo*, size_t*) noexcept;
OnyxStatus* ONYX_API_CALL KernelInfo_GetNodeName(const OnyxKernelInfo*, char*, size_t*) noexcept;
OnyxStatus* ONYX_API_CALL KernelContext_GetInputCount(const OnyxKernelContext*, size_t*) noexcept;
OnyxStatus* ONYX_API_CALL KernelContext_GetOutputCount(const OnyxKernelContext*, size_t*) noexcept;
OnyxStatus* ONYX_API_CALL KernelContext_GetInput(const OnyxKernelContext*, size_t, const OnyxValue**) noexcept;
OnyxStatus* ONYX_API_CALL KernelContext_GetOutput(OnyxKernelContext*, size_t, const int64_t*, size_t,
                                                  OnyxValue**) noexcept;
OnyxStatus* ONYX_API_CALL ShapeInferContext_GetInputCount(const OnyxShapeInferContext*, size_t*) noexcept;
OnyxStatus* ONYX_API_CALL ShapeInferContext_GetInputTypeShape(const OnyxShapeInferContext*, size_t,
                                                              OnyxTensorTypeAndShapeInfo**) noexcept;
OnyxStatus* ONYX_API_CALL ShapeInferContext_SetOutputTypeShape(const OnyxShapeInferContext*, size_t,
                                                               const OnyxTensorTypeAndShapeInfo*) noexcept;
OnyxStatus* ONYX_API_CALL RegisterCustomOpsLibrary_V2(OnyxSessionOptions* options, const char* path) noexcept;
OnyxStatus* ONYX_API_CALL RegisterCustomOpsUsingFunction(OnyxSessionOptions* options, const char* name) noexcept;

namespace {

#ifdef ONYX_ABI_TEST_NEXT
// The ABI test's library (libonyx_abi_next.so): version 2's appended function.
const char* ONYX_API_CALL AbiTestAppended() noexcept { return "appended in version 2"; }
#endif

const OnyxApi kApi = {
    CreateStatus,
    GetErrorCode,
    GetErrorMessage,
    ReleaseStatus,
    CreateEnv,
    ReleaseEnv,
    CreateSessionOptions,
    CloneSessionOptions,
    SetIntraOpNumThreads,
    SetInterOpNumThreads,
    SetSessionGraphOptimizationLevel,
    SetSessionExecutionMode,
    SetOptimizedModelFilePath,
    EnableProfiling,
    DisableProfiling,
    EnableMemPattern,
    DisableMemPattern,
    EnableCpuMemArena,
    DisableCpuMemArena,
    SetSessionLogId,
    SetSessionLogSeverityLevel,
    AddSessionConfigEntry,
    AddFreeDimensionOverrideByName,
    AddFreeDimensionOverride,
    AddInitializer,
    SessionOptionsAppendExecutionProvider,
    AddCustomOpDomain,
    onyx::capi::RegisterCustomOpsLibrary_V2,
    onyx::capi::RegisterCustomOpsUsingFunction,
    ReleaseSessionOptions,
    CreateCustomOpDomain,
    CustomOpDomain_Add,
    ReleaseCustomOpDomain,
    CreateSession,
    CreateSessionFromArray,
    Run,
    SessionGetInputCount,
    SessionGetOutputCount,
    SessionGetOverridableInitializerCount,
    SessionGetInputName,
    SessionGetOutputName,
    SessionGetOverridableInitializerName,
    SessionGetInputTypeInfo,
    SessionGetOutputTypeInfo,
    SessionGetOverridableInitializerTypeInfo,
    SessionGetModelMetadata,
    SessionEndProfiling,
    SessionGetProfilingStartTimeNs,
    ReleaseSession,
    CreateRunOptions,
    RunOptionsSetRunLogSeverityLevel,
    RunOptionsGetRunLogSeverityLevel,
    RunOptionsSetRunTag,
    RunOptionsGetRunTag,
    RunOptionsSetTerminate,
    RunOptionsUnsetTerminate,
    AddRunConfigEntry,
    ReleaseRunOptions,
    CreateCpuMemoryInfo,
    CreateMemoryInfo,
    MemoryInfoGetName,
    MemoryInfoGetId,
    MemoryInfoGetMemType,
    MemoryInfoGetType,
    CompareMemoryInfo,
    ReleaseMemoryInfo,
    GetAllocatorWithDefaultOptions,
    CreateAllocator,
    AllocatorAlloc,
    AllocatorFree,
    AllocatorGetInfo,
    ReleaseAllocator,
    CreateTensorAsOnyxValue,
    CreateTensorWithDataAsOnyxValue,
    IsTensor,
    HasValue,
    GetTensorMutableData,
    GetTensorMemoryInfo,
    FillStringTensor,
    FillStringTensorElement,
    GetStringTensorDataLength,
    GetStringTensorContent,
    GetStringTensorElementLength,
    GetStringTensorElement,
    GetValueType,
    GetTypeInfo,
    GetTensorTypeAndShape,
    GetValueCount,
    GetValue,
    CreateValue,
    ReleaseValue,
    GetOnnxTypeFromTypeInfo,
    CastTypeInfoToTensorInfo,
    CastTypeInfoToSequenceTypeInfo,
    CastTypeInfoToMapTypeInfo,
    GetSequenceElementType,
    GetMapKeyType,
    GetMapValueType,
    GetDenotationFromTypeInfo,
    ReleaseTypeInfo,
    CreateTensorTypeAndShapeInfo,
    SetTensorElementType,
    SetDimensions,
    GetTensorElementType,
    GetDimensionsCount,
    GetDimensions,
    GetSymbolicDimensions,
    GetTensorShapeElementCount,
    ReleaseTensorTypeAndShapeInfo,
    ModelMetadataGetProducerName,
    ModelMetadataGetGraphName,
    ModelMetadataGetDomain,
    ModelMetadataGetDescription,
    ModelMetadataGetGraphDescription,
    ModelMetadataGetVersion,
    ModelMetadataLookupCustomMetadataMap,
    ModelMetadataGetCustomMetadataMapKeys,
    ReleaseModelMetadata,
    CreateIoBinding,
    BindInput,
    BindOutput,
    BindOutputToDevice,
    GetBoundOutputNames,
    GetBoundOutputValues,
    ClearBoundInputs,
    ClearBoundOutputs,
    RunWithBinding,
    ReleaseIoBinding,
    onyx::capi::KernelInfoGetAttribute_float,
    onyx::capi::KernelInfoGetAttribute_int64,
    onyx::capi::KernelInfoGetAttribute_string,
    onyx::capi::KernelInfoGetAttributeArray_float,
    onyx::capi::KernelInfoGetAttributeArray_int64,
    onyx::capi::KernelInfo_GetInputCount,
    onyx::capi::KernelInfo_GetOutputCount,
    onyx::capi::KernelInfo_GetNodeName,
    onyx::capi::KernelContext_GetInputCount,
    onyx::capi::KernelContext_GetOutputCount,
    onyx::capi::KernelContext_GetInput,
    onyx::capi::KernelContext_GetOutput,
    onyx::capi::ShapeInferContext_GetInputCount,
    onyx::capi::ShapeInferContext_GetInputTypeShape,
    onyx::capi::ShapeInferContext_SetOutputTypeShape,
    GetAvailableProviders,
    ReleaseAvailableProviders,
    GetBuildInfoString,
    SessionGetProviders,
    CastTypeInfoToOptionalTypeInfo,
    GetOptionalContainedTypeInfo,
    CreateNoneValue,
    CreateEmptySequence,
    CopyTensors,
    GetSharedAllocator,
    SessionGetProviderOptions,
    SessionGetMemoryProfile,
#ifdef ONYX_ABI_TEST_NEXT
    AbiTestAppended,
#endif
};

const OnyxApi* ONYX_API_CALL get_api(uint32_t version) noexcept {
  return version >= 1 && version <= ONYX_API_VERSION ? &kApi : nullptr;
}
const char* ONYX_API_CALL get_version_string() noexcept { return version(); }

const OnyxApiBase kApiBase = {get_api, get_version_string};

}  // namespace

const OnyxApi* api() { return &kApi; }

OnyxStatus* make_status(OnyxErrorCode code, std::string message) { return new OnyxStatus{code, std::move(message)}; }

OnyxStatus* to_status(const Status& status) {
  if (status.is_ok()) return nullptr;
  OnyxErrorCode code = ONYX_FAIL;
  switch (status.code()) {
    case StatusCode::kInvalidArgument:
      code = ONYX_INVALID_ARGUMENT;
      break;
    case StatusCode::kInvalidModel:
      // The reader's errors carry this prefix (InferenceSession::from_*).
      code = status.message().rfind("cannot load model", 0) == 0 ? ONYX_INVALID_PROTOBUF : ONYX_INVALID_GRAPH;
      break;
    case StatusCode::kNotImplemented:
      code = ONYX_NOT_IMPLEMENTED;
      break;
    case StatusCode::kRuntimeError:
      // A kernel that failed during a run: onnxruntime's ORT_FAIL (Python's Fail).
      code = ONYX_FAIL;
      break;
    default:
      break;
  }
  return make_status(code, status.message());
}

std::string take_message(OnyxStatus* status) {
  std::string message = status != nullptr ? status->message : std::string();
  delete status;
  return message;
}

ONNXTensorElementDataType to_c(DataType type) {
  const int value = static_cast<int>(type);
  return value <= ONNX_TENSOR_ELEMENT_DATA_TYPE_INT2 ? static_cast<ONNXTensorElementDataType>(value)
                                                     : ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

DataType from_c(ONNXTensorElementDataType type) {
  const int value = static_cast<int>(type);
  return value > 0 && value <= ONNX_TENSOR_ELEMENT_DATA_TYPE_INT2 ? static_cast<DataType>(value) : DataType::kUndefined;
}

}  // namespace onyx::capi

extern "C" {

const OnyxApiBase* ONYX_API_CALL OnyxGetApiBase(void) noexcept { return &onyx::capi::kApiBase; }

const OnyxApi* ONYX_API_CALL OnyxGetApi(uint32_t version) noexcept { return onyx::capi::get_api(version); }

}  // extern "C"
