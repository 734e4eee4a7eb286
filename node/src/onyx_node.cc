// onyx's Node.js addon: plain N-API (node_api.h) over onyx's C API
// (include/onyx/onyx_c_api.h) and nothing else of onyx. node/lib/index.js
// gives it onnxruntime-node's shape; this file only moves values across.
//
// Sessions are created and run on libuv's thread pool (napi_create_async_work),
// so the event loop keeps turning while a model runs; the C API's Run is
// thread-safe, so runs of one session may overlap. Input tensors are C
// tensors over the typed arrays' own memory (no copy), each typed array held
// by a reference until its run completes. Outputs are copied once into new
// ArrayBuffers, so that they outlive the session and never share memory with
// an input or with onyx's arena.
#define NAPI_VERSION 8
#include <node_api.h>

#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "onyx/onyx_c_api.h"

namespace {

const OnyxApi* g_api = nullptr;

// ---- Errors ------------------------------------------------------------------
//
// Inside this file errors are C++ exceptions; each exported function turns
// them into a JS exception (or a rejected promise) at its edge.

// A napi call failed: a JS exception may already be pending.
struct NapiFailure {
  napi_status status;
};
// The caller passed something of the wrong kind.
struct TypeError {
  std::string message;
};
// An error status from onyx: its message, and its code as a string
// ("ONYX_INVALID_ARGUMENT") for the JS error's `code`.
struct OnyxFailure {
  OnyxErrorCode code;
  std::string message;
};

const char* code_name(OnyxErrorCode code) {
  static const char* const kNames[] = {
      "ONYX_OK",
      "ONYX_FAIL",
      "ONYX_INVALID_ARGUMENT",
      "ONYX_NO_SUCHFILE",
      "ONYX_NO_MODEL",
      "ONYX_ENGINE_ERROR",
      "ONYX_RUNTIME_EXCEPTION",
      "ONYX_INVALID_PROTOBUF",
      "ONYX_MODEL_LOADED",
      "ONYX_NOT_IMPLEMENTED",
      "ONYX_INVALID_GRAPH",
      "ONYX_EP_FAIL",
  };
  const size_t index = static_cast<size_t>(code);
  return index < std::size(kNames) ? kNames[index] : "ONYX_FAIL";
}

void check(napi_status status) {
  if (status != napi_ok) throw NapiFailure{status};
}

// Takes `status` (releasing it) and throws it when it is an error.
void check(OnyxStatus* status) {
  if (status == nullptr) return;
  OnyxFailure failure{g_api->GetErrorCode(status), g_api->GetErrorMessage(status)};
  g_api->ReleaseStatus(status);
  throw failure;
}

// The JS error for a failure caught at an edge.
napi_value make_error(napi_env env, const OnyxFailure& failure) {
  napi_value code = nullptr, message = nullptr, error = nullptr;
  napi_create_string_utf8(env, code_name(failure.code), NAPI_AUTO_LENGTH, &code);
  napi_create_string_utf8(env, failure.message.c_str(), failure.message.size(), &message);
  napi_create_error(env, code, message, &error);
  return error;
}
napi_value make_type_error(napi_env env, const std::string& text) {
  napi_value message = nullptr, error = nullptr;
  napi_create_string_utf8(env, text.c_str(), text.size(), &message);
  napi_create_type_error(env, nullptr, message, &error);
  return error;
}
// A napi failure with no exception pending: name the call's error.
napi_value make_napi_error(napi_env env, napi_status status) {
  const napi_extended_error_info* info = nullptr;
  napi_get_last_error_info(env, &info);
  std::string text = "N-API call failed";
  if (info != nullptr && info->error_message != nullptr) text += std::string(": ") + info->error_message;
  text += " (status " + std::to_string(static_cast<int>(status)) + ")";
  napi_value message = nullptr, error = nullptr;
  napi_create_string_utf8(env, text.c_str(), text.size(), &message);
  napi_create_error(env, nullptr, message, &error);
  return error;
}

// Runs `body`; a failure becomes a thrown JS exception and the result NULL.
template <typename Body>
napi_value guarded(napi_env env, Body&& body) {
  try {
    return body();
  } catch (const NapiFailure& failure) {
    bool pending = false;
    napi_is_exception_pending(env, &pending);
    if (!pending) napi_throw(env, make_napi_error(env, failure.status));
  } catch (const TypeError& failure) {
    napi_throw(env, make_type_error(env, failure.message));
  } catch (const OnyxFailure& failure) {
    napi_throw(env, make_error(env, failure));
  } catch (const std::exception& e) {
    napi_throw_error(env, nullptr, e.what());
  }
  return nullptr;
}

// ---- Reading JS values ---------------------------------------------------------

napi_valuetype type_of(napi_env env, napi_value value) {
  napi_valuetype type;
  check(napi_typeof(env, value, &type));
  return type;
}

// obj[name], or nullptr when it is undefined or null.
napi_value property(napi_env env, napi_value object, const char* name) {
  napi_value value = nullptr;
  check(napi_get_named_property(env, object, name, &value));
  const napi_valuetype type = type_of(env, value);
  return type == napi_undefined || type == napi_null ? nullptr : value;
}

std::string to_string(napi_env env, napi_value value, const std::string& what) {
  if (type_of(env, value) != napi_string) throw TypeError{what + " must be a string"};
  size_t length = 0;
  check(napi_get_value_string_utf8(env, value, nullptr, 0, &length));
  std::string s(length, '\0');
  check(napi_get_value_string_utf8(env, value, s.data(), length + 1, &length));
  return s;
}

int64_t to_int64(napi_env env, napi_value value, const std::string& what) {
  if (type_of(env, value) != napi_number) throw TypeError{what + " must be a number"};
  int64_t n = 0;
  check(napi_get_value_int64(env, value, &n));
  return n;
}

bool to_bool(napi_env env, napi_value value, const std::string& what) {
  if (type_of(env, value) != napi_boolean) throw TypeError{what + " must be a boolean"};
  bool b = false;
  check(napi_get_value_bool(env, value, &b));
  return b;
}

std::vector<napi_value> elements(napi_env env, napi_value array, const std::string& what) {
  bool is_array = false;
  check(napi_is_array(env, array, &is_array));
  if (!is_array) throw TypeError{what + " must be an array"};
  uint32_t length = 0;
  check(napi_get_array_length(env, array, &length));
  std::vector<napi_value> items(length);
  for (uint32_t i = 0; i < length; ++i) check(napi_get_element(env, array, i, &items[i]));
  return items;
}

std::vector<std::string> strings(napi_env env, napi_value array, const std::string& what) {
  std::vector<std::string> out;
  for (napi_value item : elements(env, array, what)) out.push_back(to_string(env, item, what + "'s elements"));
  return out;
}

// [[key, value], ...] as two lists of strings.
void pairs(napi_env env, napi_value array, const std::string& what, std::vector<std::string>& keys,
           std::vector<std::string>& values) {
  for (napi_value pair : elements(env, array, what)) {
    std::vector<napi_value> kv = elements(env, pair, what + "'s entries");
    if (kv.size() != 2) throw TypeError{what + "'s entries must be [key, value] pairs"};
    keys.push_back(to_string(env, kv[0], what + "'s keys"));
    values.push_back(to_string(env, kv[1], what + "'s values"));
  }
}

// ---- Making JS values --------------------------------------------------------------

napi_value js_string(napi_env env, const char* s, size_t length = NAPI_AUTO_LENGTH) {
  napi_value value = nullptr;
  check(napi_create_string_utf8(env, s, length, &value));
  return value;
}
napi_value js_string(napi_env env, const std::string& s) { return js_string(env, s.c_str(), s.size()); }

napi_value js_number(napi_env env, double n) {
  napi_value value = nullptr;
  check(napi_create_double(env, n, &value));
  return value;
}

napi_value js_bool(napi_env env, bool b) {
  napi_value value = nullptr;
  check(napi_get_boolean(env, b, &value));
  return value;
}

napi_value js_object(napi_env env) {
  napi_value value = nullptr;
  check(napi_create_object(env, &value));
  return value;
}

napi_value js_array(napi_env env, const std::vector<napi_value>& items) {
  napi_value array = nullptr;
  check(napi_create_array_with_length(env, items.size(), &array));
  for (size_t i = 0; i < items.size(); ++i) check(napi_set_element(env, array, static_cast<uint32_t>(i), items[i]));
  return array;
}

void set(napi_env env, napi_value object, const char* name, napi_value value) {
  check(napi_set_named_property(env, object, name, value));
}

// ---- Element types ---------------------------------------------------------------------
//
// onnxruntime-node's Tensor types and the typed arrays that hold them: int64
// in BigInt64Array, bool in Uint8Array, float16 as its bits in Uint16Array.

struct ElementType {
  const char* name;
  ONNXTensorElementDataType onnx;
  napi_typedarray_type array;
  size_t size;  // bytes per element; 0 for strings
};

constexpr ElementType kElementTypes[] = {
    {"float32", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, napi_float32_array, 4},
    {"float64", ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE, napi_float64_array, 8},
    {"int8", ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8, napi_int8_array, 1},
    {"uint8", ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8, napi_uint8_array, 1},
    {"int16", ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16, napi_int16_array, 2},
    {"uint16", ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16, napi_uint16_array, 2},
    {"int32", ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32, napi_int32_array, 4},
    {"uint32", ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32, napi_uint32_array, 4},
    {"int64", ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, napi_bigint64_array, 8},
    {"uint64", ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64, napi_biguint64_array, 8},
    {"bool", ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL, napi_uint8_array, 1},
    {"float16", ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16, napi_uint16_array, 2},
    {"string", ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, napi_uint8_array, 0},
};

const ElementType* element_type(const std::string& name) {
  for (const ElementType& type : kElementTypes) {
    if (name == type.name) return &type;
  }
  return nullptr;
}
const ElementType* element_type(ONNXTensorElementDataType onnx) {
  for (const ElementType& type : kElementTypes) {
    if (onnx == type.onnx) return &type;
  }
  return nullptr;
}

// The name of any ONNX element type, for metadata and error messages; the
// ones without a Tensor type in JS get ONNX's lower-case name.
const char* element_type_name(ONNXTensorElementDataType onnx) {
  if (const ElementType* type = element_type(onnx)) return type->name;
  static const std::pair<ONNXTensorElementDataType, const char*> kOthers[] = {
      {ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64, "complex64"},
      {ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128, "complex128"},
      {ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16, "bfloat16"},
      {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN, "float8e4m3fn"},
      {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ, "float8e4m3fnuz"},
      {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2, "float8e5m2"},
      {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ, "float8e5m2fnuz"},
      {ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4, "uint4"},
      {ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4, "int4"},
      {ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT4E2M1, "float4e2m1"},
  };
  for (const auto& [type, name] : kOthers) {
    if (type == onnx) return name;
  }
  return "undefined";
}

const char* typed_array_name(napi_typedarray_type type) {
  // napi_typedarray_type's values, in order.
  static const char* const kNames[] = {
      "Int8Array",   "Uint8Array",   "Uint8ClampedArray", "Int16Array",    "Uint16Array",    "Int32Array",
      "Uint32Array", "Float32Array", "Float64Array",      "BigInt64Array", "BigUint64Array",
  };
  const size_t index = static_cast<size_t>(type);
  return index < std::size(kNames) ? kNames[index] : "typed array";
}

// ---- Session options -------------------------------------------------------------------
//
// node/lib/index.js checks and normalizes onnxruntime-node's options into
// plain fields; these are read here in one place.

struct SessionOptionsOwner {
  OnyxSessionOptions* options = nullptr;
  ~SessionOptionsOwner() { g_api->ReleaseSessionOptions(options); }
};

void apply_session_options(napi_env env, napi_value js, OnyxSessionOptions* options) {
  if (napi_value v = property(env, js, "intraOpNumThreads")) {
    check(g_api->SetIntraOpNumThreads(options, static_cast<int>(to_int64(env, v, "intraOpNumThreads"))));
  }
  if (napi_value v = property(env, js, "interOpNumThreads")) {
    check(g_api->SetInterOpNumThreads(options, static_cast<int>(to_int64(env, v, "interOpNumThreads"))));
  }
  if (napi_value v = property(env, js, "graphOptimizationLevel")) {
    check(g_api->SetSessionGraphOptimizationLevel(
        options, static_cast<GraphOptimizationLevel>(to_int64(env, v, "graphOptimizationLevel"))));
  }
  if (napi_value v = property(env, js, "executionMode")) {
    check(g_api->SetSessionExecutionMode(options, static_cast<ExecutionMode>(to_int64(env, v, "executionMode"))));
  }
  if (napi_value v = property(env, js, "enableCpuMemArena")) {
    check(to_bool(env, v, "enableCpuMemArena") ? g_api->EnableCpuMemArena(options)
                                               : g_api->DisableCpuMemArena(options));
  }
  if (napi_value v = property(env, js, "enableMemPattern")) {
    check(to_bool(env, v, "enableMemPattern") ? g_api->EnableMemPattern(options) : g_api->DisableMemPattern(options));
  }
  if (napi_value v = property(env, js, "profileFilePrefix")) {
    check(g_api->EnableProfiling(options, to_string(env, v, "profileFilePrefix").c_str()));
  }
  if (napi_value v = property(env, js, "logId"))
    check(g_api->SetSessionLogId(options, to_string(env, v, "logId").c_str()));
  if (napi_value v = property(env, js, "logSeverityLevel")) {
    check(g_api->SetSessionLogSeverityLevel(options, static_cast<int>(to_int64(env, v, "logSeverityLevel"))));
  }
  if (napi_value v = property(env, js, "optimizedModelFilePath")) {
    check(g_api->SetOptimizedModelFilePath(options, to_string(env, v, "optimizedModelFilePath").c_str()));
  }
  if (napi_value v = property(env, js, "freeDimensionOverrides")) {
    for (napi_value pair : elements(env, v, "freeDimensionOverrides")) {
      std::vector<napi_value> kv = elements(env, pair, "freeDimensionOverrides' entries");
      if (kv.size() != 2) throw TypeError{"freeDimensionOverrides' entries must be [name, size] pairs"};
      check(g_api->AddFreeDimensionOverrideByName(options, to_string(env, kv[0], "a dimension name").c_str(),
                                                  to_int64(env, kv[1], "a dimension size")));
    }
  }
  if (napi_value v = property(env, js, "configEntries")) {
    std::vector<std::string> keys, values;
    pairs(env, v, "extra", keys, values);
    for (size_t i = 0; i < keys.size(); ++i)
      check(g_api->AddSessionConfigEntry(options, keys[i].c_str(), values[i].c_str()));
  }
  if (napi_value v = property(env, js, "executionProviders")) {
    for (napi_value provider : elements(env, v, "executionProviders")) {
      const std::string name = to_string(env, property(env, provider, "name"), "an execution provider's name");
      std::vector<std::string> keys, values;
      if (napi_value provider_options = property(env, provider, "options")) {
        pairs(env, provider_options, "the options of " + name, keys, values);
      }
      std::vector<const char*> key_pointers, value_pointers;
      for (size_t i = 0; i < keys.size(); ++i) {
        key_pointers.push_back(keys[i].c_str());
        value_pointers.push_back(values[i].c_str());
      }
      check(g_api->SessionOptionsAppendExecutionProvider(options, name.c_str(), key_pointers.data(),
                                                         value_pointers.data(), keys.size()));
    }
  }
  if (napi_value v = property(env, js, "customOpsLibraries")) {
    for (const std::string& path : strings(env, v, "customOpsLibraries")) {
      check(g_api->RegisterCustomOpsLibrary_V2(options, path.c_str()));
    }
  }
}

// ---- Sessions ------------------------------------------------------------------------------

// A session shared by its JS handle and the runs in flight: released when
// the handle is released (or collected) and no run uses it any longer.
struct SessionHolder {
  OnyxSession* session = nullptr;
  ~SessionHolder() { g_api->ReleaseSession(session); }
};

// What a JS handle (a napi external) points to; `session` is reset by
// releaseSession, so a later run is refused instead of touching freed memory.
struct SessionHandle {
  std::shared_ptr<SessionHolder> session;
};

// Tags the externals this addon made, so that a stray object is refused.
constexpr napi_type_tag kSessionTag = {0x6f6e79786e6f6465ULL, 0x73657373696f6e31ULL};

std::shared_ptr<SessionHolder> session_of(napi_env env, napi_value handle) {
  bool tagged = false;
  if (type_of(env, handle) == napi_external) check(napi_check_object_type_tag(env, handle, &kSessionTag, &tagged));
  if (!tagged) throw TypeError{"not a session handle"};
  void* data = nullptr;
  check(napi_get_value_external(env, handle, &data));
  auto* session_handle = static_cast<SessionHandle*>(data);
  if (!session_handle->session) throw OnyxFailure{ONYX_INVALID_ARGUMENT, "the session was released"};
  return session_handle->session;
}

// Frees a C string the default allocator made.
struct AllocatedString {
  char* s = nullptr;
  ~AllocatedString() {
    OnyxAllocator* allocator = nullptr;
    if (s != nullptr && g_api->GetAllocatorWithDefaultOptions(&allocator) == nullptr) {
      g_api->AllocatorFree(allocator, s);
    }
  }
};

OnyxAllocator* default_allocator() {
  OnyxAllocator* allocator = nullptr;
  check(g_api->GetAllocatorWithDefaultOptions(&allocator));
  return allocator;
}

// onnxruntime-node's ValueMetadata: {name, isTensor, type, shape}, a
// symbolic dimension as its name, an unknown one as -1.
napi_value value_metadata(napi_env env, const std::string& name, OnyxTypeInfo* type_info) {
  napi_value meta = js_object(env);
  set(env, meta, "name", js_string(env, name));
  ONNXType onnx_type = ONNX_TYPE_UNKNOWN;
  check(g_api->GetOnnxTypeFromTypeInfo(type_info, &onnx_type));
  const OnyxTensorTypeAndShapeInfo* tensor = nullptr;
  if (onnx_type == ONNX_TYPE_TENSOR) check(g_api->CastTypeInfoToTensorInfo(type_info, &tensor));
  set(env, meta, "isTensor", js_bool(env, tensor != nullptr));
  if (tensor == nullptr) return meta;
  ONNXTensorElementDataType element = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  size_t rank = 0;
  check(g_api->GetTensorElementType(tensor, &element));
  check(g_api->GetDimensionsCount(tensor, &rank));
  std::vector<int64_t> dims(rank);
  std::vector<const char*> symbols(rank);
  check(g_api->GetDimensions(tensor, dims.data(), rank));
  check(g_api->GetSymbolicDimensions(tensor, symbols.data(), rank));
  std::vector<napi_value> shape;
  for (size_t i = 0; i < rank; ++i) {
    const bool symbolic = dims[i] < 0 && symbols[i] != nullptr && symbols[i][0] != '\0';
    shape.push_back(symbolic ? js_string(env, symbols[i]) : js_number(env, static_cast<double>(dims[i])));
  }
  set(env, meta, "type", js_string(env, element_type_name(element)));
  set(env, meta, "shape", js_array(env, shape));
  return meta;
}

struct TypeInfoOwner {
  OnyxTypeInfo* info = nullptr;
  ~TypeInfoOwner() { g_api->ReleaseTypeInfo(info); }
};

// The inputs' or outputs' names and metadata, into `names` and `metadata`.
void describe_values(napi_env env, const OnyxSession* session, bool inputs, napi_value* names, napi_value* metadata) {
  size_t count = 0;
  check(inputs ? g_api->SessionGetInputCount(session, &count) : g_api->SessionGetOutputCount(session, &count));
  std::vector<napi_value> name_values, metadata_values;
  for (size_t i = 0; i < count; ++i) {
    AllocatedString name;
    check(inputs ? g_api->SessionGetInputName(session, i, default_allocator(), &name.s)
                 : g_api->SessionGetOutputName(session, i, default_allocator(), &name.s));
    TypeInfoOwner type_info;
    check(inputs ? g_api->SessionGetInputTypeInfo(session, i, &type_info.info)
                 : g_api->SessionGetOutputTypeInfo(session, i, &type_info.info));
    name_values.push_back(js_string(env, name.s));
    metadata_values.push_back(value_metadata(env, name.s, type_info.info));
  }
  *names = js_array(env, name_values);
  *metadata = js_array(env, metadata_values);
}

napi_value model_metadata(napi_env env, const OnyxSession* session) {
  struct MetadataOwner {
    OnyxModelMetadata* metadata = nullptr;
    ~MetadataOwner() { g_api->ReleaseModelMetadata(metadata); }
  } owner;
  check(g_api->SessionGetModelMetadata(session, &owner.metadata));
  const OnyxModelMetadata* metadata = owner.metadata;
  OnyxAllocator* allocator = default_allocator();
  napi_value js = js_object(env);
  using Getter = OnyxStatus* (*)(const OnyxModelMetadata*, OnyxAllocator*, char**) noexcept;
  const std::pair<const char*, Getter> strings[] = {
      {"producerName", g_api->ModelMetadataGetProducerName},
      {"graphName", g_api->ModelMetadataGetGraphName},
      {"domain", g_api->ModelMetadataGetDomain},
      {"description", g_api->ModelMetadataGetDescription},
      {"graphDescription", g_api->ModelMetadataGetGraphDescription},
  };
  for (const auto& [name, getter] : strings) {
    AllocatedString value;
    check(getter(metadata, allocator, &value.s));
    set(env, js, name, js_string(env, value.s));
  }
  int64_t version = 0;
  check(g_api->ModelMetadataGetVersion(metadata, &version));
  set(env, js, "version", js_number(env, static_cast<double>(version)));
  char** keys = nullptr;
  int64_t key_count = 0;
  check(g_api->ModelMetadataGetCustomMetadataMapKeys(metadata, allocator, &keys, &key_count));
  napi_value custom = js_object(env);
  for (int64_t i = 0; i < key_count; ++i) {
    AllocatedString key{keys[i]};
    AllocatedString value;
    check(g_api->ModelMetadataLookupCustomMetadataMap(metadata, allocator, key.s, &value.s));
    set(env, custom, key.s, js_string(env, value.s != nullptr ? value.s : ""));
  }
  if (keys != nullptr) check(g_api->AllocatorFree(allocator, keys));
  set(env, js, "customMetadataMap", custom);
  return js;
}

void finalize_session_handle(napi_env, void* data, void*) { delete static_cast<SessionHandle*>(data); }

// {handle, inputNames, outputNames, inputMetadata, outputMetadata, modelMetadata}
napi_value session_object(napi_env env, OnyxSession* session) {
  auto* handle = new SessionHandle{std::make_shared<SessionHolder>()};
  handle->session->session = session;
  napi_value external = nullptr;
  napi_status status = napi_create_external(env, handle, finalize_session_handle, nullptr, &external);
  if (status != napi_ok) {
    delete handle;
    check(status);
  }
  check(napi_type_tag_object(env, external, &kSessionTag));
  napi_value js = js_object(env);
  set(env, js, "handle", external);
  napi_value names = nullptr, metadata = nullptr;
  describe_values(env, session, true, &names, &metadata);
  set(env, js, "inputNames", names);
  set(env, js, "inputMetadata", metadata);
  describe_values(env, session, false, &names, &metadata);
  set(env, js, "outputNames", names);
  set(env, js, "outputMetadata", metadata);
  set(env, js, "modelMetadata", model_metadata(env, session));
  return js;
}

// ---- Async work ----------------------------------------------------------------------------

// What every async call shares: its promise and its work, and the error its
// thread-pool half met (reported by the main-thread half).
struct AsyncCall {
  napi_deferred deferred = nullptr;
  napi_async_work work = nullptr;
  std::optional<OnyxFailure> error;

  virtual ~AsyncCall() = default;
  // On the thread pool: no JS here.
  virtual void execute() = 0;
  // On the main thread, after a successful execute: the promise's value.
  virtual napi_value result(napi_env env) = 0;
  // On the main thread, always: drop references to JS values.
  virtual void release_references(napi_env env) {}
};

void execute_call(napi_env, void* data) {
  auto* call = static_cast<AsyncCall*>(data);
  try {
    call->execute();
  } catch (const OnyxFailure& failure) {
    call->error = failure;
  } catch (const std::exception& e) {
    call->error = OnyxFailure{ONYX_FAIL, e.what()};
  }
}

void complete_call(napi_env env, napi_status status, void* data) {
  std::unique_ptr<AsyncCall> call(static_cast<AsyncCall*>(data));
  call->release_references(env);
  napi_delete_async_work(env, call->work);
  if (status == napi_cancelled) return;  // the environment is going away
  napi_value outcome = nullptr;
  bool resolved = false;
  if (call->error) {
    outcome = make_error(env, *call->error);
  } else {
    try {
      outcome = call->result(env);
      resolved = true;
    } catch (const NapiFailure& failure) {
      bool pending = false;
      napi_is_exception_pending(env, &pending);
      if (pending) {
        napi_get_and_clear_last_exception(env, &outcome);
      } else {
        outcome = make_napi_error(env, failure.status);
      }
    } catch (const TypeError& failure) {
      outcome = make_type_error(env, failure.message);
    } catch (const OnyxFailure& failure) {
      outcome = make_error(env, failure);
    } catch (const std::exception& e) {
      outcome = make_error(env, OnyxFailure{ONYX_FAIL, e.what()});
    }
  }
  if (resolved) {
    napi_resolve_deferred(env, call->deferred, outcome);
  } else {
    napi_reject_deferred(env, call->deferred, outcome);
  }
}

// Queues `call` (owned from here on) and returns its promise.
napi_value queue(napi_env env, std::unique_ptr<AsyncCall> call, const char* name) {
  napi_value promise = nullptr;
  check(napi_create_promise(env, &call->deferred, &promise));
  napi_value resource_name = js_string(env, name);
  check(napi_create_async_work(env, nullptr, resource_name, execute_call, complete_call, call.get(), &call->work));
  napi_status status = napi_queue_async_work(env, call->work);
  if (status != napi_ok) {
    call->release_references(env);
    napi_delete_async_work(env, call->work);
    check(status);
  }
  call.release();  // complete_call frees it
  return promise;
}

// ---- createSession(pathOrBytes, options) -> Promise<session object> ------------------------

struct CreateSessionCall : AsyncCall {
  SessionOptionsOwner options;
  std::string path;
  // The model's bytes when given as a buffer: its typed array, referenced
  // until the session is made (onyx copies what it keeps).
  napi_ref bytes_ref = nullptr;
  const void* bytes = nullptr;
  size_t length = 0;
  OnyxSession* session = nullptr;

  ~CreateSessionCall() override { g_api->ReleaseSession(session); }
  void execute() override {
    check(bytes_ref != nullptr ? g_api->CreateSessionFromArray(nullptr, bytes, length, options.options, &session)
                               : g_api->CreateSession(nullptr, path.c_str(), options.options, &session));
  }
  napi_value result(napi_env env) override {
    // The handle session_object makes owns the session from the start, so
    // that a failure there releases it once.
    return session_object(env, std::exchange(session, nullptr));
  }
  void release_references(napi_env env) override {
    if (bytes_ref != nullptr) napi_delete_reference(env, bytes_ref);
    bytes_ref = nullptr;
  }
};

napi_value create_session(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    size_t argc = 2;
    napi_value argv[2];
    check(napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
    if (argc < 2) throw TypeError{"createSession(pathOrBytes, options)"};
    auto call = std::make_unique<CreateSessionCall>();
    check(g_api->CreateSessionOptions(&call->options.options));
    apply_session_options(env, argv[1], call->options.options);
    bool is_typed_array = false;
    check(napi_is_typedarray(env, argv[0], &is_typed_array));
    if (is_typed_array) {
      napi_typedarray_type type;
      size_t length = 0;
      void* data = nullptr;
      check(napi_get_typedarray_info(env, argv[0], &type, &length, &data, nullptr, nullptr));
      if (type != napi_uint8_array) throw TypeError{"a model's bytes must be a Uint8Array"};
      call->bytes = data;
      call->length = length;
      check(napi_create_reference(env, argv[0], 1, &call->bytes_ref));
    } else {
      call->path = to_string(env, argv[0], "the model");
    }
    return queue(env, std::move(call), "onyx.createSession");
  });
}

// ---- run(handle, inputNames, inputs, outputNames, outputs, runOptions) -> Promise -------------

struct ValueOwner {
  OnyxValue* value = nullptr;
  ValueOwner() = default;
  ValueOwner(ValueOwner&& other) noexcept : value(std::exchange(other.value, nullptr)) {}
  ValueOwner& operator=(ValueOwner&&) = delete;
  ~ValueOwner() { g_api->ReleaseValue(value); }
};

struct RunCall : AsyncCall {
  std::shared_ptr<SessionHolder> session;
  std::vector<std::string> input_names, output_names;
  std::vector<ValueOwner> inputs;
  // Per output: a value over a caller's pre-allocated tensor (written in
  // place), or empty before the run and the run's result after it.
  std::vector<ValueOwner> outputs;
  std::vector<bool> preallocated;
  // The typed arrays whose memory the input and pre-allocated output values borrow.
  std::vector<napi_ref> borrowed;
  OnyxRunOptions* run_options = nullptr;

  ~RunCall() override { g_api->ReleaseRunOptions(run_options); }

  void execute() override {
    std::vector<const char*> in_names, out_names;
    std::vector<const OnyxValue*> in_values;
    for (size_t i = 0; i < inputs.size(); ++i) {
      in_names.push_back(input_names[i].c_str());
      in_values.push_back(inputs[i].value);
    }
    std::vector<OnyxValue*> out_values;
    for (size_t i = 0; i < outputs.size(); ++i) {
      out_names.push_back(output_names[i].c_str());
      out_values.push_back(outputs[i].value);
    }
    check(g_api->Run(session->session, run_options, in_names.data(), in_values.data(), in_values.size(),
                     out_names.data(), out_names.size(), out_values.data()));
    for (size_t i = 0; i < outputs.size(); ++i) outputs[i].value = out_values[i];
  }
  napi_value result(napi_env env) override;
  void release_references(napi_env env) override {
    for (napi_ref ref : borrowed) napi_delete_reference(env, ref);
    borrowed.clear();
  }
};

std::vector<int64_t> dims_of(napi_env env, napi_value tensor, const std::string& what) {
  std::vector<int64_t> dims;
  for (napi_value d : elements(env, property(env, tensor, "dims"), what + "'s dims")) {
    dims.push_back(to_int64(env, d, what + "'s dims"));
  }
  return dims;
}

// A C value for a JS Tensor ({type, data, dims}): over the typed array's
// memory (referenced in `call->borrowed` until the run completes), or, for
// strings, a new string tensor filled from the JS strings.
OnyxValue* value_of_tensor(napi_env env, napi_value tensor, const std::string& what, RunCall* call) {
  if (type_of(env, tensor) != napi_object) throw TypeError{what + " must be a Tensor"};
  napi_value type_value = property(env, tensor, "type");
  napi_value data = property(env, tensor, "data");
  if (type_value == nullptr || data == nullptr) throw TypeError{what + " must be a Tensor"};
  const std::string type_name = to_string(env, type_value, what + "'s type");
  const ElementType* type = element_type(type_name);
  if (type == nullptr) {
    throw TypeError{what + " has type '" + type_name + "', which onyx's Node.js binding does not support"};
  }
  const std::vector<int64_t> dims = dims_of(env, tensor, what);
  OnyxValue* value = nullptr;
  if (type->onnx == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) {
    const std::vector<std::string> texts = strings(env, data, what + "'s data");
    std::vector<const char*> pointers;
    for (const std::string& s : texts) {
      // The C API takes NUL-terminated strings: refuse what it would cut short.
      if (s.find('\0') != std::string::npos) throw TypeError{what + " holds a string with a NUL character"};
      pointers.push_back(s.c_str());
    }
    check(g_api->CreateTensorAsOnyxValue(default_allocator(), dims.data(), dims.size(), type->onnx, &value));
    if (OnyxStatus* status = g_api->FillStringTensor(value, pointers.data(), pointers.size())) {
      g_api->ReleaseValue(value);
      check(status);
    }
    return value;
  }
  bool is_typed_array = false;
  check(napi_is_typedarray(env, data, &is_typed_array));
  if (!is_typed_array) throw TypeError{what + "'s data must be a typed array"};
  napi_typedarray_type array_type;
  size_t length = 0;
  void* bytes = nullptr;
  check(napi_get_typedarray_info(env, data, &array_type, &length, &bytes, nullptr, nullptr));
  const bool matches =
      array_type == type->array || (type->array == napi_uint8_array && array_type == napi_uint8_clamped_array);
  if (!matches) {
    throw TypeError{what + " of type '" + type_name + "' needs its data in a " + typed_array_name(type->array) +
                    ", not a " + typed_array_name(array_type)};
  }
  OnyxMemoryInfo* cpu = nullptr;
  check(g_api->CreateCpuMemoryInfo(OnyxArenaAllocator, OnyxMemTypeDefault, &cpu));
  OnyxStatus* status = g_api->CreateTensorWithDataAsOnyxValue(cpu, bytes, length * type->size, dims.data(), dims.size(),
                                                              type->onnx, &value);
  g_api->ReleaseMemoryInfo(cpu);
  check(status);
  napi_ref ref = nullptr;
  napi_status ref_status = napi_create_reference(env, data, 1, &ref);
  if (ref_status != napi_ok) {
    g_api->ReleaseValue(value);
    check(ref_status);
  }
  call->borrowed.push_back(ref);
  return value;
}

// A run's output as {type, data, dims}, its elements copied into a new
// typed array (or JS strings).
napi_value tensor_of_value(napi_env env, OnyxValue* value, const std::string& name) {
  ONNXType onnx_type = ONNX_TYPE_UNKNOWN;
  check(g_api->GetValueType(value, &onnx_type));
  if (onnx_type != ONNX_TYPE_TENSOR) {
    throw OnyxFailure{ONYX_NOT_IMPLEMENTED, "output '" + name +
                                                "' is not a tensor (a sequence, map or optional), which onyx's "
                                                "Node.js binding does not return yet"};
  }
  struct ShapeOwner {
    OnyxTensorTypeAndShapeInfo* info = nullptr;
    ~ShapeOwner() { g_api->ReleaseTensorTypeAndShapeInfo(info); }
  } shape;
  check(g_api->GetTensorTypeAndShape(value, &shape.info));
  ONNXTensorElementDataType onnx = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  size_t rank = 0, count = 0;
  check(g_api->GetTensorElementType(shape.info, &onnx));
  check(g_api->GetDimensionsCount(shape.info, &rank));
  check(g_api->GetTensorShapeElementCount(shape.info, &count));
  std::vector<int64_t> dims(rank);
  check(g_api->GetDimensions(shape.info, dims.data(), rank));
  const ElementType* type = element_type(onnx);
  if (type == nullptr) {
    throw OnyxFailure{ONYX_NOT_IMPLEMENTED, "output '" + name + "' has element type " + element_type_name(onnx) +
                                                ", which onyx's Node.js binding does not support"};
  }
  napi_value data = nullptr;
  if (onnx == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) {
    size_t total = 0;
    check(g_api->GetStringTensorDataLength(value, &total));
    std::vector<char> content(total + 1);
    std::vector<size_t> offsets(count);
    check(g_api->GetStringTensorContent(value, content.data(), total, offsets.data(), count));
    std::vector<napi_value> texts;
    for (size_t i = 0; i < count; ++i) {
      const size_t end = i + 1 < count ? offsets[i + 1] : total;
      texts.push_back(js_string(env, content.data() + offsets[i], end - offsets[i]));
    }
    data = js_array(env, texts);
  } else {
    const size_t bytes = count * type->size;
    void* source = nullptr;
    check(g_api->GetTensorMutableData(value, &source));
    void* destination = nullptr;
    napi_value buffer = nullptr;
    check(napi_create_arraybuffer(env, bytes, &destination, &buffer));
    if (bytes > 0) std::memcpy(destination, source, bytes);
    check(napi_create_typedarray(env, type->array, count, buffer, 0, &data));
  }
  std::vector<napi_value> js_dims;
  for (int64_t d : dims) js_dims.push_back(js_number(env, static_cast<double>(d)));
  napi_value tensor = js_object(env);
  set(env, tensor, "type", js_string(env, type->name));
  set(env, tensor, "data", data);
  set(env, tensor, "dims", js_array(env, js_dims));
  return tensor;
}

// An array with, per output, {type, data, dims} or undefined where the
// caller gave the tensor (node/lib/index.js returns the caller's own).
napi_value RunCall::result(napi_env env) {
  std::vector<napi_value> results;
  for (size_t i = 0; i < outputs.size(); ++i) {
    napi_value undefined = nullptr;
    check(napi_get_undefined(env, &undefined));
    results.push_back(preallocated[i] ? undefined : tensor_of_value(env, outputs[i].value, output_names[i]));
  }
  return js_array(env, results);
}

void apply_run_options(napi_env env, napi_value js, OnyxRunOptions* options) {
  if (napi_value v = property(env, js, "logSeverityLevel")) {
    check(g_api->RunOptionsSetRunLogSeverityLevel(options, static_cast<int>(to_int64(env, v, "logSeverityLevel"))));
  }
  if (napi_value v = property(env, js, "tag"))
    check(g_api->RunOptionsSetRunTag(options, to_string(env, v, "tag").c_str()));
  if (napi_value v = property(env, js, "configEntries")) {
    std::vector<std::string> keys, values;
    pairs(env, v, "extra", keys, values);
    for (size_t i = 0; i < keys.size(); ++i)
      check(g_api->AddRunConfigEntry(options, keys[i].c_str(), values[i].c_str()));
  }
}

napi_value run(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    size_t argc = 6;
    napi_value argv[6];
    check(napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr));
    if (argc < 6) throw TypeError{"run(handle, inputNames, inputs, outputNames, outputs, runOptions)"};
    auto call = std::make_unique<RunCall>();
    // From here on a failure must drop the references taken so far.
    struct DropReferences {
      napi_env env;
      RunCall* call;
      ~DropReferences() {
        if (call != nullptr) call->release_references(env);
      }
    } drop{env, call.get()};
    call->session = session_of(env, argv[0]);
    call->input_names = strings(env, argv[1], "inputNames");
    const std::vector<napi_value> inputs = elements(env, argv[2], "inputs");
    if (inputs.size() != call->input_names.size()) throw TypeError{"inputNames and inputs differ in length"};
    for (size_t i = 0; i < inputs.size(); ++i) {
      ValueOwner owner;
      owner.value = value_of_tensor(env, inputs[i], "input '" + call->input_names[i] + "'", call.get());
      call->inputs.push_back(std::move(owner));
    }
    call->output_names = strings(env, argv[3], "outputNames");
    const std::vector<napi_value> outputs = elements(env, argv[4], "outputs");
    if (outputs.size() != call->output_names.size()) throw TypeError{"outputNames and outputs differ in length"};
    for (size_t i = 0; i < outputs.size(); ++i) {
      const napi_valuetype type = type_of(env, outputs[i]);
      ValueOwner owner;
      if (type != napi_undefined && type != napi_null) {
        owner.value = value_of_tensor(env, outputs[i], "output '" + call->output_names[i] + "'", call.get());
      }
      call->preallocated.push_back(owner.value != nullptr);
      call->outputs.push_back(std::move(owner));
    }
    check(g_api->CreateRunOptions(&call->run_options));
    apply_run_options(env, argv[5], call->run_options);
    drop.call = nullptr;
    return queue(env, std::move(call), "onyx.run");
  });
}

// ---- The rest -----------------------------------------------------------------------------------

// releaseSession(handle): the session goes once no run uses it.
napi_value release_session(napi_env env, napi_callback_info info) {
  return guarded(env, [&]() -> napi_value {
    size_t argc = 1;
    napi_value handle = nullptr;
    check(napi_get_cb_info(env, info, &argc, &handle, nullptr, nullptr));
    bool tagged = false;
    if (argc == 1 && type_of(env, handle) == napi_external) {
      check(napi_check_object_type_tag(env, handle, &kSessionTag, &tagged));
    }
    if (!tagged) throw TypeError{"not a session handle"};
    void* data = nullptr;
    check(napi_get_value_external(env, handle, &data));
    static_cast<SessionHandle*>(data)->session.reset();
    napi_value undefined = nullptr;
    check(napi_get_undefined(env, &undefined));
    return undefined;
  });
}

napi_value available_providers(napi_env env, napi_callback_info) {
  return guarded(env, [&]() -> napi_value {
    char** names = nullptr;
    int count = 0;
    check(g_api->GetAvailableProviders(&names, &count));
    std::vector<napi_value> values;
    for (int i = 0; i < count; ++i) values.push_back(js_string(env, names[i]));
    check(g_api->ReleaseAvailableProviders(names, count));
    return js_array(env, values);
  });
}

}  // namespace

NAPI_MODULE_INIT() {
  return guarded(env, [&]() -> napi_value {
    g_api = OnyxGetApi(ONYX_API_VERSION);
    if (g_api == nullptr) {
      throw OnyxFailure{ONYX_FAIL, "the onyx library loaded (libonyx) is older than this addon's C API version " +
                                       std::to_string(ONYX_API_VERSION)};
    }
    const std::pair<const char*, napi_callback> functions[] = {
        {"createSession", create_session},
        {"run", run},
        {"releaseSession", release_session},
        {"availableProviders", available_providers},
    };
    for (const auto& [name, function] : functions) {
      napi_value value = nullptr;
      check(napi_create_function(env, name, NAPI_AUTO_LENGTH, function, nullptr, &value));
      set(env, exports, name, value);
    }
    set(env, exports, "version", js_string(env, OnyxGetApiBase()->GetVersionString()));
    set(env, exports, "buildInfo", js_string(env, g_api->GetBuildInfoString()));
    return exports;
  });
}
