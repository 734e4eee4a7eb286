// The `_onyx` extension: onyx's C API (include/onyx/onyx_c_api.h) as Python
// classes. Every call into onyx goes through the API's function table, so
// what Python can do, a C program can do too. The onnxruntime-compatible API
// on top of it is python/onyx/*.py; the test-only hooks are testing_hooks.cc.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onyx/onyx_c_api.h"

namespace nb = nanobind;

void register_testing_hooks(nb::module_& m);  // testing_hooks.cc
void register_genai(nb::module_& m);          // genai_bindings.cc

namespace {

const OnyxApi* g_api = nullptr;

// ---- errors ----------------------------------------------------------------------

// An error from the C API (or from this module's own checks), raised in
// Python as the class of its code.
struct ApiError {
  OnyxErrorCode code;
  std::string message;
};

[[noreturn]] void fail(OnyxErrorCode code, std::string message) { throw ApiError{code, std::move(message)}; }
[[noreturn]] void invalid(std::string message) { fail(ONYX_INVALID_ARGUMENT, std::move(message)); }

// Throws the status's error (and releases it); nothing for NULL.
void check(OnyxStatus* status) {
  if (status == nullptr) return;
  ApiError error{g_api->GetErrorCode(status), g_api->GetErrorMessage(status)};
  g_api->ReleaseStatus(status);
  throw error;
}

// Exception classes with onnxruntime's names (its capi.onnxruntime_pybind11_state),
// each directly below OnyxError, which is below Exception as onnxruntime's
// classes are: `except InvalidArgument` catches what it catches there, and
// `except RuntimeError` does not catch them, as there.
std::map<OnyxErrorCode, PyObject*> g_error_classes;
PyObject* g_error_base = nullptr;

void translate_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const ApiError& e) {
    auto found = g_error_classes.find(e.code);
    PyObject* cls = found != g_error_classes.end() ? found->second : g_error_base;
    // Messages quote names from the model, which may not be valid UTF-8.
    PyObject* message = PyUnicode_DecodeUTF8(e.message.data(), static_cast<Py_ssize_t>(e.message.size()), "replace");
    if (message == nullptr) return;  // the decoding error is already set
    PyErr_SetObject(cls, message);
    Py_DECREF(message);
  }
}

PyObject* new_error_class(nb::module_& m, const char* name, PyObject* base, const char* doc) {
  std::string qualified = std::string("onyx.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (cls == nullptr) throw nb::python_error();
  m.attr(name) = nb::handle(cls);
  return cls;
}

// ---- owned handles -------------------------------------------------------------------

template <typename T, void (*OnyxApi::*Release)(T*) noexcept>
struct Releaser {
  void operator()(T* p) const {
    if (p != nullptr) (g_api->*Release)(p);
  }
};
template <typename T, void (*OnyxApi::*Release)(T*) noexcept>
using Owned = std::unique_ptr<T, Releaser<T, Release>>;

using ValueHandle = Owned<OnyxValue, &OnyxApi::ReleaseValue>;
using TypeInfoHandle = Owned<OnyxTypeInfo, &OnyxApi::ReleaseTypeInfo>;
using TensorInfoHandle = Owned<OnyxTensorTypeAndShapeInfo, &OnyxApi::ReleaseTensorTypeAndShapeInfo>;
using MemoryInfoHandle = Owned<OnyxMemoryInfo, &OnyxApi::ReleaseMemoryInfo>;
using OptionsHandle = Owned<OnyxSessionOptions, &OnyxApi::ReleaseSessionOptions>;
using RunOptionsHandle = Owned<OnyxRunOptions, &OnyxApi::ReleaseRunOptions>;
using SessionHandle = Owned<OnyxSession, &OnyxApi::ReleaseSession>;
using BindingHandle = Owned<OnyxIoBinding, &OnyxApi::ReleaseIoBinding>;
using MetadataHandle = Owned<OnyxModelMetadata, &OnyxApi::ReleaseModelMetadata>;

OnyxAllocator* default_allocator() {
  static OnyxAllocator* allocator = [] {
    OnyxAllocator* a = nullptr;
    check(g_api->GetAllocatorWithDefaultOptions(&a));
    return a;
  }();
  return allocator;
}

// A string the API allocated with the default allocator, taken and freed.
std::string take_string(char* s) {
  std::string out = s != nullptr ? s : "";
  if (s != nullptr) check(g_api->AllocatorFree(default_allocator(), s));
  return out;
}

// ---- devices ---------------------------------------------------------------------

// The devices Python names, by the number the Python layer passes, with the
// memory name the C API knows them by.
struct DeviceName {
  const char* python;  // onnxruntime's Python device name
  const char* memory;  // the C API's memory info name
};
constexpr DeviceName kDevices[] = {
    {"cpu", "Cpu"}, {"cuda", "Cuda"}, {"vulkan", "Vulkan"}, {"openvino", "OpenVINO"}, {"test", "Test"},
};
constexpr int kDeviceCount = static_cast<int>(sizeof(kDevices) / sizeof(kDevices[0]));

const DeviceName& device_named(int type) {
  if (type < 0 || type >= kDeviceCount) invalid("unknown device type number " + std::to_string(type));
  return kDevices[type];
}

MemoryInfoHandle memory_info(int type, int id) {
  if (id < 0) invalid("device id " + std::to_string(id) + " is negative");
  OnyxMemoryInfo* info = nullptr;
  if (type == 0) {
    check(g_api->CreateCpuMemoryInfo(OnyxArenaAllocator, OnyxMemTypeDefault, &info));
  } else {
    check(g_api->CreateMemoryInfo(device_named(type).memory, OnyxDeviceAllocator, id, OnyxMemTypeDefault, &info));
  }
  return MemoryInfoHandle(info);
}

// The process's allocator of a device's memory; an error naming the device
// when no provider of this build serves it.
OnyxAllocator* device_allocator(int type, int id) {
  MemoryInfoHandle info = memory_info(type, id);
  OnyxAllocator* allocator = nullptr;
  check(g_api->GetSharedAllocator(nullptr, info.get(), &allocator));
  if (allocator == nullptr) {
    invalid(std::string("no execution provider for device '") + device_named(type).python +
            "' is loaded in this build");
  }
  return allocator;
}

bool device_is_served(int type) {
  MemoryInfoHandle info = memory_info(type, 0);
  OnyxAllocator* allocator = nullptr;
  check(g_api->GetSharedAllocator(nullptr, info.get(), &allocator));
  return allocator != nullptr;
}

// The device number of a memory info's name ("Cpu", "Cuda", ...).
int device_number(const OnyxMemoryInfo* info) {
  const char* name = nullptr;
  check(g_api->MemoryInfoGetName(info, &name));
  std::string lower;
  for (const char* c = name; *c != '\0'; ++c) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(*c)));
  if (lower == "cudapinned") return 0;  // host memory
  for (int i = 0; i < kDeviceCount; ++i) {
    if (lower == kDevices[i].python || lower.rfind(std::string(kDevices[i].python) + "_", 0) == 0) return i;
  }
  return 0;
}

// ---- element types -------------------------------------------------------------------

const char* element_name(int type) {
  static const char* const kNames[] = {
      "undefined", "float",      "uint8",      "int8",         "uint16",         "int16",      "int32",
      "int64",     "string",     "bool",       "float16",      "double",         "uint32",     "uint64",
      "complex64", "complex128", "bfloat16",   "float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
      "uint4",     "int4",       "float4e2m1", "float8e8m0",   "uint2",          "int2"};
  return type >= 0 && type <= ONNX_TENSOR_ELEMENT_DATA_TYPE_INT2 ? kNames[type] : "undefined";
}

// Bytes per element as onyx stores them (4- and 2-bit types one per byte);
// 0 for strings and unknown types.
size_t element_size(int type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64:
      return 8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128:
      return 16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
      return 4;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
      return 2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED:
      return 0;
    default:
      return type > 0 && type <= ONNX_TENSOR_ELEMENT_DATA_TYPE_INT2 ? 1 : 0;
  }
}

// The DLPack type numpy understands for each element type. Types numpy lacks
// are shown through an integer view of the same width: bfloat16 as uint16,
// the float8 family and float4 as uint8, the unpacked 4-/2-bit integers as
// int8/uint8.
bool dlpack_dtype_for(int type, nb::dlpack::dtype* out) {
  using nb::dlpack::dtype_code;
  auto make = [out](dtype_code code, int bits) {
    out->code = static_cast<uint8_t>(code);
    out->bits = static_cast<uint8_t>(bits);
    out->lanes = 1;
    return true;
  };
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return make(dtype_code::Float, 32);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return make(dtype_code::Float, 64);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return make(dtype_code::Float, 16);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
      return make(dtype_code::UInt, 16);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      return make(dtype_code::Int, 8);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
      return make(dtype_code::Int, 16);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return make(dtype_code::Int, 32);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return make(dtype_code::Int, 64);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return make(dtype_code::UInt, 8);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
      return make(dtype_code::UInt, 16);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
      return make(dtype_code::UInt, 32);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
      return make(dtype_code::UInt, 64);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return make(dtype_code::Bool, 8);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64:
      return make(dtype_code::Complex, 64);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128:
      return make(dtype_code::Complex, 128);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E8M0:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT4E2M1:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT2:
      return make(dtype_code::UInt, 8);
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT2:
      return make(dtype_code::Int, 8);
    default: return false;
  }
}

// The element type of a DLPack type as numpy exports it; UNDEFINED if none.
int element_type_of(const nb::dlpack::dtype& t) {
  using nb::dlpack::dtype_code;
  if (t.lanes != 1) return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  switch (static_cast<dtype_code>(t.code)) {
    case dtype_code::Float:
      if (t.bits == 32) return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
      if (t.bits == 64) return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
      if (t.bits == 16) return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16;
      break;
    case dtype_code::Int:
      if (t.bits == 8) return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8;
      if (t.bits == 16) return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16;
      if (t.bits == 32) return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32;
      if (t.bits == 64) return ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64;
      break;
    case dtype_code::UInt:
      if (t.bits == 8) return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8;
      if (t.bits == 16) return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16;
      if (t.bits == 32) return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32;
      if (t.bits == 64) return ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64;
      break;
    case dtype_code::Bool:
      if (t.bits == 8) return ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL;
      break;
    case dtype_code::Complex:
      if (t.bits == 64) return ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64;
      if (t.bits == 128) return ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128;
      break;
    case dtype_code::Bfloat:
      if (t.bits == 16) return ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16;
      break;
    default: break;
  }
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

std::string dlpack_dtype_name(const nb::dlpack::dtype& t) {
  static const char* const kCodes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  const char* code = t.code < 7 ? kCodes[t.code] : "dlpack-code-";
  return std::string(code) + (t.code < 7 ? "" : std::to_string(t.code)) + std::to_string(static_cast<int>(t.bits));
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

int64_t element_count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) invalid("negative dimension in shape " + shape_string(shape));
    n *= d;
  }
  return n;
}

// ---- types ---------------------------------------------------------------------------

// A value's type as the C API describes it (kinds are ONNXType numbers), with
// the type info kept for the values made from it (an empty optional, an
// empty sequence).
struct ValueType {
  int kind = ONNX_TYPE_UNKNOWN;
  int elem_type = 0;  // tensors
  int key_type = 0;   // maps
  std::shared_ptr<ValueType> inner;
  std::shared_ptr<OnyxTypeInfo> info;

  std::string to_string() const {
    const std::string in = inner ? inner->to_string() : std::string("unknown");
    switch (kind) {
      case ONNX_TYPE_TENSOR:
        return std::string("tensor(") + element_name(elem_type) + ")";
      case ONNX_TYPE_SPARSETENSOR:
        return std::string("sparse_tensor(") + element_name(elem_type) + ")";
      case ONNX_TYPE_SEQUENCE:
        return "seq(" + in + ")";
      case ONNX_TYPE_OPTIONAL:
        return "optional(" + in + ")";
      case ONNX_TYPE_MAP:
        return std::string("map(") + element_name(key_type) + "," + in + ")";
      default:
        return "unknown";
    }
  }
};

// Takes ownership of `owned_info`.
std::shared_ptr<ValueType> value_type_of(OnyxTypeInfo* owned_info) {
  auto type = std::make_shared<ValueType>();
  type->info = std::shared_ptr<OnyxTypeInfo>(owned_info, Releaser<OnyxTypeInfo, &OnyxApi::ReleaseTypeInfo>());
  const OnyxTypeInfo* info = owned_info;
  ONNXType kind = ONNX_TYPE_UNKNOWN;
  check(g_api->GetOnnxTypeFromTypeInfo(info, &kind));
  type->kind = kind;
  OnyxTypeInfo* inner = nullptr;
  if (kind == ONNX_TYPE_TENSOR || kind == ONNX_TYPE_SPARSETENSOR) {
    const OnyxTensorTypeAndShapeInfo* tensor = nullptr;
    check(g_api->CastTypeInfoToTensorInfo(info, &tensor));
    ONNXTensorElementDataType elem = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    if (tensor != nullptr) check(g_api->GetTensorElementType(tensor, &elem));
    type->elem_type = elem;
  } else if (kind == ONNX_TYPE_SEQUENCE) {
    const OnyxSequenceTypeInfo* sequence = nullptr;
    check(g_api->CastTypeInfoToSequenceTypeInfo(info, &sequence));
    check(g_api->GetSequenceElementType(sequence, &inner));
  } else if (kind == ONNX_TYPE_MAP) {
    const OnyxMapTypeInfo* map = nullptr;
    check(g_api->CastTypeInfoToMapTypeInfo(info, &map));
    ONNXTensorElementDataType key = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    check(g_api->GetMapKeyType(map, &key));
    type->key_type = key;
    check(g_api->GetMapValueType(map, &inner));
  } else if (kind == ONNX_TYPE_OPTIONAL) {
    const OnyxOptionalTypeInfo* optional = nullptr;
    check(g_api->CastTypeInfoToOptionalTypeInfo(info, &optional));
    check(g_api->GetOptionalContainedTypeInfo(optional, &inner));
  }
  if (inner != nullptr) {
    ONNXType inner_kind = ONNX_TYPE_UNKNOWN;
    check(g_api->GetOnnxTypeFromTypeInfo(inner, &inner_kind));
    if (inner_kind == ONNX_TYPE_UNKNOWN) {
      g_api->ReleaseTypeInfo(inner);
    } else {
      type->inner = value_type_of(inner);
    }
  }
  return type;
}

// A session input's or output's name, type and shape.
struct ValueMetadata {
  std::string name;
  std::shared_ptr<ValueType> type;
  nb::object shape;  // onnxruntime's: int, str (symbolic) or None (unknown) per dimension
};

ValueMetadata metadata_of(std::string name, OnyxTypeInfo* owned_info) {
  ValueMetadata meta;
  meta.name = std::move(name);
  meta.type = value_type_of(owned_info);
  nb::list shape;
  const OnyxTensorTypeAndShapeInfo* tensor = nullptr;
  check(g_api->CastTypeInfoToTensorInfo(meta.type->info.get(), &tensor));
  if (tensor != nullptr) {
    size_t rank = 0;
    check(g_api->GetDimensionsCount(tensor, &rank));
    std::vector<int64_t> dims(rank);
    std::vector<const char*> symbols(rank, nullptr);
    check(g_api->GetDimensions(tensor, dims.data(), rank));
    check(g_api->GetSymbolicDimensions(tensor, symbols.data(), rank));
    for (size_t i = 0; i < rank; ++i) {
      if (symbols[i] != nullptr && *symbols[i] != '\0') {
        shape.append(nb::str(symbols[i]));
      } else if (dims[i] >= 0) {
        shape.append(nb::int_(dims[i]));
      } else {
        shape.append(nb::none());
      }
    }
  }
  meta.shape = shape;
  return meta;
}

// ---- values ----------------------------------------------------------------------------

// An OnyxValue, and the Python objects whose memory it borrows (numpy arrays,
// the values a sequence or map was made of): they live as long as it does.
struct Value {
  std::shared_ptr<OnyxValue> handle;
  std::vector<nb::object> borrowed;

  OnyxValue* get() const { return handle.get(); }

  static Value own(OnyxValue* v) {
    Value out;
    out.handle = std::shared_ptr<OnyxValue>(v, Releaser<OnyxValue, &OnyxApi::ReleaseValue>());
    return out;
  }

  bool is_tensor() const {
    int out = 0;
    check(g_api->IsTensor(get(), &out));
    return out != 0;
  }
  ONNXType onnx_type() const {
    ONNXType out = ONNX_TYPE_UNKNOWN;
    check(g_api->GetValueType(get(), &out));
    return out;
  }
  bool is_none() const {
    int out = 0;
    check(g_api->HasValue(get(), &out));
    return out == 0;
  }
  // Element type and shape of a tensor.
  std::pair<int, std::vector<int64_t>> tensor_type() const {
    OnyxTensorTypeAndShapeInfo* raw = nullptr;
    check(g_api->GetTensorTypeAndShape(get(), &raw));
    TensorInfoHandle info(raw);
    ONNXTensorElementDataType elem = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    size_t rank = 0;
    check(g_api->GetTensorElementType(info.get(), &elem));
    check(g_api->GetDimensionsCount(info.get(), &rank));
    std::vector<int64_t> dims(rank);
    check(g_api->GetDimensions(info.get(), dims.data(), rank));
    return {elem, std::move(dims)};
  }
  const OnyxMemoryInfo* memory() const {
    const OnyxMemoryInfo* info = nullptr;
    check(g_api->GetTensorMemoryInfo(get(), &info));
    return info;
  }
  std::string type_string() const {
    OnyxTypeInfo* info = nullptr;
    check(g_api->GetTypeInfo(get(), &info));
    return value_type_of(info)->to_string();
  }
  void* data() const {
    void* out = nullptr;
    check(g_api->GetTensorMutableData(get(), &out));
    return out;
  }
  // A member of a sequence (or a map's keys, 0, and values, 1).
  Value item(int index) const {
    OnyxValue* out = nullptr;
    check(g_api->GetValue(get(), index, default_allocator(), &out));
    Value v = own(out);
    v.borrowed = borrowed;
    return v;
  }
  size_t count() const {
    size_t out = 0;
    check(g_api->GetValueCount(get(), &out));
    return out;
  }
};

Value empty_tensor(OnyxAllocator* allocator, int elem_type, const std::vector<int64_t>& shape) {
  element_count(shape);  // refuses negative dimensions
  OnyxValue* out = nullptr;
  check(g_api->CreateTensorAsOnyxValue(allocator, shape.data(), shape.size(),
                                       static_cast<ONNXTensorElementDataType>(elem_type), &out));
  return Value::own(out);
}

// A copy of a tensor in another memory.
Value copy_to(const Value& source, OnyxAllocator* allocator) {
  auto [elem, shape] = source.tensor_type();
  Value copy = empty_tensor(allocator, elem, shape);
  const OnyxValue* src = source.get();
  OnyxValue* dst = copy.get();
  check(g_api->CopyTensors(nullptr, &src, &dst, nullptr, 1));
  return copy;
}

// Wraps a C-contiguous CPU numpy array as a tensor without copying; the
// Value keeps the array alive. `as_type` (optional) reinterprets the bytes
// as another type of the same width, e.g. uint16 numbers as bfloat16.
Value tensor_from_numpy(nb::handle array, int as_type) {
  nb::ndarray<nb::ro, nb::device::cpu> view;
  if (!nb::try_cast(array, view, false)) {
    invalid("expected a numpy array on the CPU, got " + nb::cast<std::string>(nb::str(array.type().attr("__name__"))));
  }
  int elem = element_type_of(view.dtype());
  if (elem == ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED) {
    invalid("numpy element type " + dlpack_dtype_name(view.dtype()) + " has no ONNX equivalent");
  }
  if (as_type != 0 && as_type != elem) {
    if (element_size(as_type) != element_size(elem) || element_size(as_type) == 0) {
      invalid(std::string("cannot view numpy ") + element_name(elem) + " data as " + element_name(as_type));
    }
    elem = as_type;
  }
  std::vector<int64_t> shape(view.ndim());
  for (size_t i = 0; i < view.ndim(); ++i) shape[i] = static_cast<int64_t>(view.shape(i));
  const int64_t count = element_count(shape);
  // Row-major check: a dimension of extent 1 may carry any stride, and an
  // empty array any strides at all.
  int64_t expected = 1;
  for (size_t i = view.ndim(); i-- > 0 && count != 0;) {
    if (shape[i] != 1 && view.stride(i) != expected) {
      invalid("numpy array is not C-contiguous (use numpy.ascontiguousarray)");
    }
    expected *= shape[i];
  }
  MemoryInfoHandle cpu = memory_info(0, 0);
  static uint64_t empty_buffer[2] = {0, 0};
  void* data = count == 0 ? static_cast<void*>(empty_buffer) : const_cast<void*>(view.data());
  OnyxValue* out = nullptr;
  check(g_api->CreateTensorWithDataAsOnyxValue(cpu.get(), data, static_cast<size_t>(count) * element_size(elem),
                                               shape.data(), shape.size(), static_cast<ONNXTensorElementDataType>(elem),
                                               &out));
  Value v = Value::own(out);
  v.borrowed.push_back(nb::borrow(array));
  return v;
}

// A string tensor from a flat Python sequence of str (or bytes) items.
Value tensor_from_strings(nb::handle items, const std::vector<int64_t>& shape) {
  nb::list flat = nb::list(items);
  const int64_t count = element_count(shape);
  if (static_cast<int64_t>(flat.size()) != count) {
    invalid("string tensor of shape " + shape_string(shape) + " needs " + std::to_string(count) + " items, got " +
            std::to_string(flat.size()));
  }
  std::vector<std::string> strings(flat.size());
  for (size_t i = 0; i < flat.size(); ++i) {
    nb::handle item = flat[i];
    if (PyUnicode_Check(item.ptr())) {
      Py_ssize_t size = 0;
      const char* utf8 = PyUnicode_AsUTF8AndSize(item.ptr(), &size);
      if (utf8 == nullptr) throw nb::python_error();
      strings[i].assign(utf8, static_cast<size_t>(size));
    } else if (PyBytes_Check(item.ptr())) {
      strings[i].assign(PyBytes_AS_STRING(item.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(item.ptr())));
    } else {
      strings[i] = nb::cast<std::string>(nb::str(item));
    }
  }
  std::vector<const char*> pointers(strings.size());
  for (size_t i = 0; i < strings.size(); ++i) pointers[i] = strings[i].c_str();
  Value v = empty_tensor(default_allocator(), ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, shape);
  check(g_api->FillStringTensor(v.get(), pointers.data(), pointers.size()));
  return v;
}

nb::object decode_utf8(const char* s, size_t size) {
  // Never fails: bytes that are not UTF-8 become U+FFFD.
  PyObject* text = PyUnicode_DecodeUTF8(s, static_cast<Py_ssize_t>(size), "replace");
  if (text == nullptr) throw nb::python_error();
  return nb::steal(text);
}

nb::object numpy_module() {
  // Kept for the life of the process and never released: a static nb::object
  // would be decref'd by exit handlers after the interpreter is gone.
  static PyObject* numpy = nb::module_::import_("numpy").release().ptr();
  return nb::borrow(numpy);
}

nb::tuple dims_tuple(const std::vector<int64_t>& shape) {
  nb::tuple dims = nb::steal<nb::tuple>(PyTuple_New(static_cast<Py_ssize_t>(shape.size())));
  for (size_t i = 0; i < shape.size(); ++i) {
    PyTuple_SET_ITEM(dims.ptr(), static_cast<Py_ssize_t>(i), PyLong_FromLongLong(shape[i]));
  }
  return dims;
}

// The Python function (set by onyx._types) that turns the integer view of a
// type numpy lacks (bfloat16 as uint16, ...) into an ml_dtypes array:
// converter(array, element_type). Null where ml_dtypes is not installed.
PyObject* g_view_converter = nullptr;

bool is_view_type(int elem) {
  return elem == ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16 ||
         (elem >= ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN && elem <= ONNX_TENSOR_ELEMENT_DATA_TYPE_INT2);
}

// A tensor as a numpy array. Numbers in host memory are not copied: the
// array's base is a capsule holding the value. Device memory is copied to
// the host first.
nb::object tensor_to_numpy(const Value& tensor) {
  const Value host = device_number(tensor.memory()) == 0 ? tensor : copy_to(tensor, default_allocator());
  auto [elem, shape] = host.tensor_type();
  if (elem == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) {
    const int64_t n = element_count(shape);
    size_t total = 0;
    check(g_api->GetStringTensorDataLength(host.get(), &total));
    std::string chars(total, '\0');
    std::vector<size_t> offsets(static_cast<size_t>(n));
    check(g_api->GetStringTensorContent(host.get(), chars.data(), total, offsets.data(), offsets.size()));
    nb::list items;
    for (int64_t i = 0; i < n; ++i) {
      const size_t begin = offsets[i];
      const size_t end = i + 1 < n ? offsets[i + 1] : total;
      items.append(decode_utf8(chars.data() + begin, end - begin));
    }
    nb::object np = numpy_module();
    nb::object array = np.attr("empty")(nb::int_(n), nb::arg("dtype") = np.attr("object_"));
    // array[:] = items assigns element-wise: a str never becomes a nested array.
    if (n > 0) array[nb::slice(nb::none(), nb::none(), nb::none())] = items;
    return array.attr("reshape")(dims_tuple(shape));
  }
  nb::dlpack::dtype dt;
  if (!dlpack_dtype_for(elem, &dt)) {
    fail(ONYX_NOT_IMPLEMENTED, std::string("output element type ") + element_name(elem) + " has no numpy equivalent");
  }
  std::vector<size_t> dims(shape.begin(), shape.end());
  void* data = element_count(shape) == 0 ? nullptr : host.data();
  auto* owner_value = new Value(host);
  nb::capsule owner(owner_value, [](void* p) noexcept { delete static_cast<Value*>(p); });
  // A zero-sized tensor may have no buffer; numpy still wants a non-null pointer.
  static uint64_t empty_buffer[2] = {0, 0};
  nb::ndarray<nb::numpy> array(data != nullptr ? data : static_cast<void*>(empty_buffer), dims.size(), dims.data(),
                               owner, nullptr, dt);
  if (g_view_converter != nullptr && is_view_type(elem)) {
    return nb::borrow(g_view_converter)(array.cast(), nb::int_(elem));
  }
  return array.cast();
}

nb::object value_to_python(const Value& value) {
  if (value.is_none()) return nb::none();
  switch (value.onnx_type()) {
    case ONNX_TYPE_TENSOR:
      return tensor_to_numpy(value);
    case ONNX_TYPE_SEQUENCE: {
      nb::list items;
      const size_t n = value.count();
      for (size_t i = 0; i < n; ++i) items.append(value_to_python(value.item(static_cast<int>(i))));
      return items;
    }
    case ONNX_TYPE_MAP: {
      nb::object keys = tensor_to_numpy(value.item(0)).attr("tolist")();
      nb::object values = tensor_to_numpy(value.item(1)).attr("tolist")();
      nb::dict out;
      nb::list key_list(keys), value_list(values);
      if (key_list.size() != value_list.size()) {
        fail(ONYX_FAIL, "map output has " + std::to_string(key_list.size()) + " keys but " +
                            std::to_string(value_list.size()) + " values");
      }
      for (size_t i = 0; i < key_list.size(); ++i) out[key_list[i]] = value_list[i];
      return out;
    }
    default:
      break;
  }
  return nb::none();
}

Value sequence_of(const std::vector<Value*>& items, const ValueType* elem_type) {
  OnyxValue* out = nullptr;
  if (items.empty()) {
    check(g_api->CreateEmptySequence(elem_type != nullptr ? elem_type->info.get() : nullptr, &out));
    return Value::own(out);
  }
  std::vector<const OnyxValue*> handles;
  for (const Value* item : items) handles.push_back(item->get());
  check(g_api->CreateValue(handles.data(), handles.size(), ONNX_TYPE_SEQUENCE, &out));
  Value v = Value::own(out);
  for (const Value* item : items) v.borrowed.insert(v.borrowed.end(), item->borrowed.begin(), item->borrowed.end());
  return v;
}

// ---- options -----------------------------------------------------------------------

// Session options as Python sets them, turned into the C API's options when
// a session is made. Custom-op libraries are registered at once (an error
// shows where the call is), on options kept for that.
struct SessionOptions {
  GraphOptimizationLevel graph_optimization_level = ONYX_ENABLE_ALL;
  int intra_op_num_threads = 0;
  int inter_op_num_threads = 0;
  ExecutionMode execution_mode = ONYX_SEQUENTIAL;
  bool enable_profiling = false;
  std::string profile_file_prefix = "onyx_profile";
  int log_severity_level = 2;
  std::string log_id;
  std::string optimized_model_filepath;
  std::vector<std::string> disabled_optimizers;
  bool enable_mem_pattern = true;
  bool enable_cpu_mem_arena = true;
  std::map<std::string, std::string> config_entries;
  std::map<std::string, std::map<std::string, std::string>> provider_options;
  std::map<std::string, int64_t> free_dimension_overrides;
  std::map<std::string, int64_t> free_dimension_overrides_by_denotation;
  std::vector<std::pair<std::string, Value>> initializers;
  std::shared_ptr<OnyxSessionOptions> libraries;  // holds the registered custom-op libraries

  SessionOptions() {
    OnyxSessionOptions* o = nullptr;
    check(g_api->CreateSessionOptions(&o));
    libraries = std::shared_ptr<OnyxSessionOptions>(o, Releaser<OnyxSessionOptions, &OnyxApi::ReleaseSessionOptions>());
  }
  SessionOptions(const SessionOptions& other) = default;

  SessionOptions copy() const {
    SessionOptions out(*this);
    OnyxSessionOptions* o = nullptr;
    check(g_api->CloneSessionOptions(libraries.get(), &o));
    out.libraries =
        std::shared_ptr<OnyxSessionOptions>(o, Releaser<OnyxSessionOptions, &OnyxApi::ReleaseSessionOptions>());
    return out;
  }

  // The C API's options for a session with `providers`, in order.
  OptionsHandle build(const std::vector<std::string>& providers) const {
    OnyxSessionOptions* raw = nullptr;
    check(g_api->CloneSessionOptions(libraries.get(), &raw));
    OptionsHandle o(raw);
    check(g_api->SetSessionGraphOptimizationLevel(o.get(), graph_optimization_level));
    check(g_api->SetIntraOpNumThreads(o.get(), intra_op_num_threads));
    check(g_api->SetInterOpNumThreads(o.get(), inter_op_num_threads));
    check(g_api->SetSessionExecutionMode(o.get(), execution_mode));
    if (enable_profiling) {
      check(g_api->EnableProfiling(o.get(), profile_file_prefix.c_str()));
    } else {
      check(g_api->DisableProfiling(o.get()));
    }
    check(g_api->SetSessionLogSeverityLevel(o.get(), log_severity_level));
    check(g_api->SetSessionLogId(o.get(), log_id.c_str()));
    check(g_api->SetOptimizedModelFilePath(o.get(), optimized_model_filepath.c_str()));
    check(enable_mem_pattern ? g_api->EnableMemPattern(o.get()) : g_api->DisableMemPattern(o.get()));
    check(enable_cpu_mem_arena ? g_api->EnableCpuMemArena(o.get()) : g_api->DisableCpuMemArena(o.get()));
    std::map<std::string, std::string> entries = config_entries;
    if (!disabled_optimizers.empty()) {
      std::string& list = entries["optimization.disable_specified_optimizers"];
      for (const std::string& name : disabled_optimizers) list += (list.empty() ? "" : ",") + name;
    }
    for (const auto& [key, value] : entries) check(g_api->AddSessionConfigEntry(o.get(), key.c_str(), value.c_str()));
    for (const auto& [name, value] : free_dimension_overrides) {
      check(g_api->AddFreeDimensionOverrideByName(o.get(), name.c_str(), value));
    }
    for (const auto& [name, value] : free_dimension_overrides_by_denotation) {
      check(g_api->AddFreeDimensionOverride(o.get(), name.c_str(), value));
    }
    for (const auto& [name, value] : initializers) check(g_api->AddInitializer(o.get(), name.c_str(), value.get()));
    for (const std::string& provider : providers) {
      std::vector<const char*> keys, values;
      auto given = provider_options.find(provider);
      if (given != provider_options.end()) {
        for (const auto& [key, value] : given->second) {
          keys.push_back(key.c_str());
          values.push_back(value.c_str());
        }
      }
      check(g_api->SessionOptionsAppendExecutionProvider(o.get(), provider.c_str(), keys.data(), values.data(),
                                                         keys.size()));
    }
    return o;
  }
};

struct RunOptions {
  RunOptionsHandle handle;
  int log_severity_level = -1;  // -1: the session's
  bool terminate = false;

  RunOptions() {
    OnyxRunOptions* o = nullptr;
    check(g_api->CreateRunOptions(&o));
    handle.reset(o);
  }
  std::string run_tag() const {
    const char* tag = nullptr;
    check(g_api->RunOptionsGetRunTag(handle.get(), &tag));
    return tag != nullptr ? tag : "";
  }
};

// ---- sessions --------------------------------------------------------------------------

struct Session {
  SessionHandle handle;
  std::vector<Value> initializers;  // the options' initializers: their memory is shared, not copied
  std::vector<ValueMetadata> inputs, outputs, overridable;
  std::vector<std::string> output_names;

  static std::unique_ptr<Session> create(
      const SessionOptions& options, const std::vector<std::string>& providers,
      const std::function<OnyxStatus*(const OnyxSessionOptions*, OnyxSession**)>& make) {
    OptionsHandle built = options.build(providers);
    OnyxSession* raw = nullptr;
    OnyxStatus* status = nullptr;
    {
      nb::gil_scoped_release release;
      status = make(built.get(), &raw);
    }
    check(status);
    auto session = std::make_unique<Session>();
    session->handle.reset(raw);
    for (const auto& entry : options.initializers) session->initializers.push_back(entry.second);
    session->describe();
    return session;
  }

  void describe() {
    auto list = [this](OnyxStatus* (*count_fn)(const OnyxSession*, size_t*) noexcept,
                       OnyxStatus* (*name_fn)(const OnyxSession*, size_t, OnyxAllocator*, char**) noexcept,
                       OnyxStatus* (*type_fn)(const OnyxSession*, size_t, OnyxTypeInfo**) noexcept) {
      std::vector<ValueMetadata> out;
      size_t n = 0;
      check(count_fn(handle.get(), &n));
      for (size_t i = 0; i < n; ++i) {
        char* name = nullptr;
        check(name_fn(handle.get(), i, default_allocator(), &name));
        std::string owned = take_string(name);
        OnyxTypeInfo* info = nullptr;
        check(type_fn(handle.get(), i, &info));
        out.push_back(metadata_of(std::move(owned), info));
      }
      return out;
    };
    inputs = list(g_api->SessionGetInputCount, g_api->SessionGetInputName, g_api->SessionGetInputTypeInfo);
    outputs = list(g_api->SessionGetOutputCount, g_api->SessionGetOutputName, g_api->SessionGetOutputTypeInfo);
    overridable = list(g_api->SessionGetOverridableInitializerCount, g_api->SessionGetOverridableInitializerName,
                       g_api->SessionGetOverridableInitializerTypeInfo);
    for (const auto& o : outputs) output_names.push_back(o.name);
  }

  // Runs with the GIL released (other Python threads run meanwhile, and may
  // set RunOptions.terminate). No names: every output.
  std::vector<Value> run(const std::vector<std::string>& names, nb::list feeds, const RunOptions& run_options) {
    const std::vector<std::string>& wanted = names.empty() ? output_names : names;
    std::vector<std::string> input_names;
    std::vector<const OnyxValue*> input_values;
    for (nb::handle feed : feeds) {
      nb::tuple pair = nb::cast<nb::tuple>(feed);
      input_names.push_back(nb::cast<std::string>(pair[0]));
      input_values.push_back(nb::cast<Value*>(pair[1])->get());
    }
    std::vector<const char*> in_names, out_names;
    for (const auto& n : input_names) in_names.push_back(n.c_str());
    for (const auto& n : wanted) out_names.push_back(n.c_str());
    std::vector<OnyxValue*> results(wanted.size(), nullptr);
    OnyxStatus* status = nullptr;
    {
      nb::gil_scoped_release release;
      status = g_api->Run(handle.get(), run_options.handle.get(), in_names.data(), input_values.data(),
                          input_values.size(), out_names.data(), out_names.size(), results.data());
    }
    check(status);
    std::vector<Value> out;
    for (OnyxValue* v : results) out.push_back(Value::own(v));
    return out;
  }

  std::map<std::string, std::map<std::string, std::string>> provider_options() const {
    std::map<std::string, std::map<std::string, std::string>> out;
    for (const std::string& provider : providers()) {
      char** keys = nullptr;
      char** values = nullptr;
      size_t n = 0;
      check(g_api->SessionGetProviderOptions(handle.get(), provider.c_str(), default_allocator(), &keys, &values, &n));
      auto& options = out[provider];
      for (size_t i = 0; i < n; ++i) {
        std::string key = take_string(keys[i]);
        options[key] = take_string(values[i]);
      }
      if (keys != nullptr) check(g_api->AllocatorFree(default_allocator(), keys));
      if (values != nullptr) check(g_api->AllocatorFree(default_allocator(), values));
    }
    return out;
  }

  std::vector<std::string> providers() const {
    char** names = nullptr;
    int n = 0;
    check(g_api->SessionGetProviders(handle.get(), &names, &n));
    std::vector<std::string> out(names, names + n);
    check(g_api->ReleaseAvailableProviders(names, n));
    return out;
  }

  nb::dict metadata() const {
    OnyxModelMetadata* raw = nullptr;
    check(g_api->SessionGetModelMetadata(handle.get(), &raw));
    MetadataHandle meta(raw);
    auto text = [&](OnyxStatus* (*fn)(const OnyxModelMetadata*, OnyxAllocator*, char**) noexcept) {
      char* s = nullptr;
      check(fn(meta.get(), default_allocator(), &s));
      return take_string(s);
    };
    nb::dict out;
    out["producer_name"] = text(g_api->ModelMetadataGetProducerName);
    out["graph_name"] = text(g_api->ModelMetadataGetGraphName);
    out["domain"] = text(g_api->ModelMetadataGetDomain);
    out["description"] = text(g_api->ModelMetadataGetDescription);
    out["graph_description"] = text(g_api->ModelMetadataGetGraphDescription);
    int64_t version = 0;
    check(g_api->ModelMetadataGetVersion(meta.get(), &version));
    out["version"] = version;
    char** keys = nullptr;
    int64_t n = 0;
    check(g_api->ModelMetadataGetCustomMetadataMapKeys(meta.get(), default_allocator(), &keys, &n));
    nb::dict custom;
    for (int64_t i = 0; i < n; ++i) {
      std::string key = take_string(keys[i]);
      char* value = nullptr;
      check(g_api->ModelMetadataLookupCustomMetadataMap(meta.get(), default_allocator(), key.c_str(), &value));
      custom[nb::str(key.c_str())] = take_string(value);
    }
    if (keys != nullptr) check(g_api->AllocatorFree(default_allocator(), keys));
    out["custom_metadata_map"] = custom;
    return out;
  }
};

// An I/O binding of a session; the Python layer fills one per run.
struct IoBinding {
  BindingHandle handle;
  std::vector<Value> bound;  // inputs and output destinations: their memory is the caller's

  explicit IoBinding(Session& session) {
    OnyxIoBinding* b = nullptr;
    check(g_api->CreateIoBinding(session.handle.get(), &b));
    handle.reset(b);
  }

  std::vector<Value> outputs() const {
    OnyxValue** values = nullptr;
    size_t n = 0;
    check(g_api->GetBoundOutputValues(handle.get(), default_allocator(), &values, &n));
    std::vector<Value> out;
    for (size_t i = 0; i < n; ++i) out.push_back(Value::own(values[i]));
    if (values != nullptr) check(g_api->AllocatorFree(default_allocator(), values));
    return out;
  }

  std::vector<std::string> output_names() const {
    char* buffer = nullptr;
    size_t* lengths = nullptr;
    size_t n = 0;
    check(g_api->GetBoundOutputNames(handle.get(), default_allocator(), &buffer, &lengths, &n));
    std::vector<std::string> out;
    size_t at = 0;
    for (size_t i = 0; i < n; ++i) {
      out.emplace_back(buffer + at, lengths[i]);
      at += lengths[i];
    }
    if (buffer != nullptr) check(g_api->AllocatorFree(default_allocator(), buffer));
    if (lengths != nullptr) check(g_api->AllocatorFree(default_allocator(), lengths));
    return out;
  }
};

std::vector<std::string> available_providers() {
  char** names = nullptr;
  int n = 0;
  check(g_api->GetAvailableProviders(&names, &n));
  std::vector<std::string> out(names, names + n);
  check(g_api->ReleaseAvailableProviders(names, n));
  return out;
}

}  // namespace

NB_MODULE(_onyx, m) {
  m.doc() = "onyx's C API as Python classes; use the `onyx` package, not this module";
  g_api = OnyxGetApiBase()->GetApi(ONYX_API_VERSION);
  if (g_api == nullptr) throw std::runtime_error("the onyx library is older than this extension's C API header");

  g_error_base = new_error_class(m, "OnyxError", PyExc_Exception, "Base of every error onyx's core raises.");
  m.def(
      "_set_view_converter",
      [](nb::object converter) {
        // Kept for the life of the process, like numpy_module().
        PyObject* previous = g_view_converter;
        g_view_converter = converter.is_none() ? nullptr : converter.release().ptr();
        Py_XDECREF(previous);
      },
      "Sets converter(array, element_type), which turns the integer view of an element type numpy lacks "
      "into the array returned (onyx._types: ml_dtypes arrays); None returns the views.");
  g_error_classes[ONYX_INVALID_ARGUMENT] =
      new_error_class(m, "InvalidArgument", g_error_base, "A wrong feed, option or call argument.");
  g_error_classes[ONYX_INVALID_GRAPH] =
      new_error_class(m, "InvalidGraph", g_error_base, "The model's graph is malformed.");
  g_error_classes[ONYX_INVALID_PROTOBUF] =
      new_error_class(m, "InvalidProtobuf", g_error_base, "The model file is not a readable ONNX protobuf.");
  g_error_classes[ONYX_NOT_IMPLEMENTED] =
      new_error_class(m, "NotImplemented", g_error_base, "The model needs an op, version or type onyx lacks.");
  g_error_classes[ONYX_FAIL] = new_error_class(m, "Fail", g_error_base, "A kernel failed, or a run was terminated.");
  g_error_classes[ONYX_NO_SUCHFILE] = new_error_class(m, "NoSuchFile", g_error_base, "The model path does not exist.");
  // onnxruntime's other classes exist so that code catching them ports unchanged.
  g_error_classes[ONYX_NO_MODEL] = new_error_class(m, "NoModel", g_error_base, "onnxruntime's NoModel.");
  g_error_classes[ONYX_ENGINE_ERROR] = new_error_class(m, "EngineError", g_error_base, "onnxruntime's EngineError.");
  g_error_classes[ONYX_RUNTIME_EXCEPTION] =
      new_error_class(m, "RuntimeException", g_error_base, "onnxruntime's RuntimeException.");
  g_error_classes[ONYX_MODEL_LOADED] = new_error_class(m, "ModelLoaded", g_error_base, "onnxruntime's ModelLoaded.");
  g_error_classes[ONYX_EP_FAIL] = new_error_class(m, "EPFail", g_error_base, "onnxruntime's EPFail.");
  nb::register_exception_translator(translate_error);

  // Arithmetic like onnxruntime's enums: int(level) and comparisons with ints work.
  nb::enum_<GraphOptimizationLevel>(m, "GraphOptimizationLevel", nb::is_arithmetic())
      .value("ORT_DISABLE_ALL", ONYX_DISABLE_ALL)
      .value("ORT_ENABLE_BASIC", ONYX_ENABLE_BASIC)
      .value("ORT_ENABLE_EXTENDED", ONYX_ENABLE_EXTENDED)
      .value("ORT_ENABLE_LAYOUT", ONYX_ENABLE_LAYOUT)
      .value("ORT_ENABLE_ALL", ONYX_ENABLE_ALL);

  nb::enum_<ExecutionMode>(m, "ExecutionMode", nb::is_arithmetic())
      .value("ORT_SEQUENTIAL", ONYX_SEQUENTIAL)
      .value("ORT_PARALLEL", ONYX_PARALLEL);

  nb::class_<SessionOptions>(m, "SessionOptions")
      .def(nb::init<>())
      .def("__copy__", &SessionOptions::copy)
      .def_rw("graph_optimization_level", &SessionOptions::graph_optimization_level)
      .def_rw("intra_op_num_threads", &SessionOptions::intra_op_num_threads)
      .def_rw("inter_op_num_threads", &SessionOptions::inter_op_num_threads)
      .def_rw("execution_mode", &SessionOptions::execution_mode)
      .def_rw("enable_profiling", &SessionOptions::enable_profiling)
      .def_rw("profile_file_prefix", &SessionOptions::profile_file_prefix)
      .def_rw("log_severity_level", &SessionOptions::log_severity_level)
      .def_rw("log_id", &SessionOptions::log_id)
      .def_rw("optimized_model_filepath", &SessionOptions::optimized_model_filepath)
      .def_rw("disabled_optimizers", &SessionOptions::disabled_optimizers)
      .def_rw("enable_mem_pattern", &SessionOptions::enable_mem_pattern)
      .def_rw("enable_cpu_mem_arena", &SessionOptions::enable_cpu_mem_arena)
      .def_rw("config_entries", &SessionOptions::config_entries)
      .def_rw("provider_options", &SessionOptions::provider_options)
      .def_rw("free_dimension_overrides", &SessionOptions::free_dimension_overrides)
      .def_rw("free_dimension_overrides_by_denotation", &SessionOptions::free_dimension_overrides_by_denotation)
      .def(
          "set_initializer_override",
          [](SessionOptions& o, const std::string& name, const Value& value) {
            if (!value.is_tensor()) invalid("initializer '" + name + "' must be a tensor");
            for (auto& entry : o.initializers) {
              if (entry.first == name) {
                entry.second = value;
                return;
              }
            }
            o.initializers.emplace_back(name, value);
          },
          nb::arg("name"), nb::arg("value"))
      .def(
          "register_custom_ops_library",
          [](SessionOptions& o, const std::string& path) {
            check(g_api->RegisterCustomOpsLibrary_V2(o.libraries.get(), path.c_str()));
          },
          nb::arg("path"))
      .def_prop_ro("initializer_override_names", [](const SessionOptions& o) {
        std::vector<std::string> names;
        for (const auto& entry : o.initializers) names.push_back(entry.first);
        return names;
      });

  nb::class_<RunOptions>(m, "RunOptions")
      .def(nb::init<>())
      .def_prop_rw(
          "log_severity_level", [](const RunOptions& o) { return o.log_severity_level; },
          [](RunOptions& o, int level) {
            if (level >= 0) check(g_api->RunOptionsSetRunLogSeverityLevel(o.handle.get(), level));
            o.log_severity_level = level;
          })
      .def_prop_rw(
          "run_tag", &RunOptions::run_tag,
          [](RunOptions& o, const std::string& tag) { check(g_api->RunOptionsSetRunTag(o.handle.get(), tag.c_str())); })
      .def_prop_rw(
          "terminate", [](const RunOptions& o) { return o.terminate; },
          [](RunOptions& o, bool value) {
            check(value ? g_api->RunOptionsSetTerminate(o.handle.get())
                        : g_api->RunOptionsUnsetTerminate(o.handle.get()));
            o.terminate = value;
          });

  nb::class_<ValueType>(m, "ValueType")
      .def_ro("kind", &ValueType::kind)
      .def_ro("elem_type", &ValueType::elem_type)
      .def_ro("key_type", &ValueType::key_type)
      .def_ro("inner", &ValueType::inner)
      .def("__str__", &ValueType::to_string)
      .def("__repr__", [](const ValueType& t) { return "ValueType(" + t.to_string() + ")"; });
  m.attr("KIND_TENSOR") = static_cast<int>(ONNX_TYPE_TENSOR);
  m.attr("KIND_SEQUENCE") = static_cast<int>(ONNX_TYPE_SEQUENCE);
  m.attr("KIND_MAP") = static_cast<int>(ONNX_TYPE_MAP);
  m.attr("KIND_OPTIONAL") = static_cast<int>(ONNX_TYPE_OPTIONAL);
  m.attr("KIND_SPARSE_TENSOR") = static_cast<int>(ONNX_TYPE_SPARSETENSOR);

  nb::class_<ValueMetadata>(m, "ValueMetadata")
      .def_ro("name", &ValueMetadata::name)
      .def_ro("value_type", &ValueMetadata::type)
      .def_prop_ro("type", [](const ValueMetadata& v) { return v.type->to_string(); })
      .def_ro("shape", &ValueMetadata::shape);

  // A value made from Python objects (numpy memory borrowed, not copied), or
  // one a run returned.
  nb::class_<Value>(m, "Value")
      .def_static("from_numpy", &tensor_from_numpy, nb::arg("array"), nb::arg("as_type") = 0)
      .def_static("from_strings", &tensor_from_strings, nb::arg("items"), nb::arg("shape"))
      .def_static(
          "sequence",
          [](const std::vector<Value*>& items, const ValueType* elem_type) { return sequence_of(items, elem_type); },
          nb::arg("items"), nb::arg("elem_type").none() = nb::none())
      .def_static(
          "map",
          [](const Value& keys, const Value& values) {
            const OnyxValue* parts[] = {keys.get(), values.get()};
            OnyxValue* out = nullptr;
            check(g_api->CreateValue(parts, 2, ONNX_TYPE_MAP, &out));
            Value v = Value::own(out);
            v.borrowed = keys.borrowed;
            v.borrowed.insert(v.borrowed.end(), values.borrowed.begin(), values.borrowed.end());
            return v;
          },
          nb::arg("keys"), nb::arg("values"))
      .def_static(
          "none",
          [](const ValueType* type) {
            OnyxValue* out = nullptr;
            check(g_api->CreateNoneValue(type != nullptr ? type->info.get() : nullptr, &out));
            return Value::own(out);
          },
          nb::arg("type").none() = nb::none())
      // An optional input takes the value itself.
      .def("as_optional", [](const Value& v) { return v; })
      .def_static(
          "empty",
          [](int elem_type, const std::vector<int64_t>& shape, int device_type, int device_id) {
            if (elem_type <= 0 || elem_type > ONNX_TENSOR_ELEMENT_DATA_TYPE_INT2) {
              invalid("unknown ONNX element type " + std::to_string(elem_type));
            }
            if (elem_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING && device_type != 0) {
              invalid(std::string("string tensors live in host memory only, not on ") +
                      device_named(device_type).python);
            }
            return empty_tensor(device_allocator(device_type, device_id), elem_type, shape);
          },
          nb::arg("elem_type"), nb::arg("shape"), nb::arg("device_type") = 0, nb::arg("device_id") = 0)
      // A copy of a tensor in a device's memory (the host's for the CPU).
      .def(
          "to_device",
          [](const Value& v, int device_type, int device_id) {
            if (!v.is_tensor()) invalid("only tensors can be copied to a device, not " + v.type_string());
            if (v.tensor_type().first == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING && device_type != 0) {
              invalid(std::string("string tensors live in host memory only, not on ") +
                      device_named(device_type).python);
            }
            return copy_to(v, device_allocator(device_type, device_id));
          },
          nb::arg("device_type"), nb::arg("device_id"))
      // Memory the caller owns and keeps alive (IOBinding.bind_input's buffer_ptr).
      .def_static(
          "from_pointer",
          [](uintptr_t pointer, int elem_type, const std::vector<int64_t>& shape, int device_type, int device_id) {
            if (element_size(elem_type) == 0)
              invalid("cannot bind memory of ONNX element type " + std::to_string(elem_type));
            device_allocator(device_type, device_id);  // refuses a device no provider serves
            const int64_t count = element_count(shape);
            if (pointer == 0 && count != 0) invalid("null buffer pointer");
            MemoryInfoHandle info = memory_info(device_type, device_id);
            OnyxValue* out = nullptr;
            check(g_api->CreateTensorWithDataAsOnyxValue(
                info.get(), reinterpret_cast<void*>(pointer), static_cast<size_t>(count) * element_size(elem_type),
                shape.data(), shape.size(), static_cast<ONNXTensorElementDataType>(elem_type), &out));
            return Value::own(out);
          },
          nb::arg("pointer"), nb::arg("elem_type"), nb::arg("shape"), nb::arg("device_type") = 0,
          nb::arg("device_id") = 0)
      // Copies a tensor's elements into this tensor's memory (same type and shape).
      .def("copy_from",
           [](Value& self, const Value& source) {
             if (!self.is_tensor() || !source.is_tensor()) invalid("copy_from needs two tensors");
             const OnyxValue* src = source.get();
             OnyxValue* dst = self.get();
             check(g_api->CopyTensors(nullptr, &src, &dst, nullptr, 1));
           })
      .def("numpy", &value_to_python)
      .def_prop_ro("type", &Value::type_string)
      .def_prop_ro("is_tensor", &Value::is_tensor)
      .def_prop_ro("is_sequence", [](const Value& v) { return v.onnx_type() == ONNX_TYPE_SEQUENCE && !v.is_none(); })
      .def_prop_ro("is_none", &Value::is_none)
      .def_prop_ro("elem_type", [](const Value& v) { return v.is_tensor() ? v.tensor_type().first : 0; })
      .def_prop_ro("shape",
                   [](const Value& v) { return v.is_tensor() ? v.tensor_type().second : std::vector<int64_t>(); })
      .def_prop_ro("device_type", [](const Value& v) { return v.is_tensor() ? device_number(v.memory()) : 0; })
      .def_prop_ro("device_id",
                   [](const Value& v) {
                     int id = 0;
                     if (v.is_tensor()) check(g_api->MemoryInfoGetId(v.memory(), &id));
                     return id;
                   })
      .def_prop_ro("data_ptr", [](const Value& v) { return v.is_tensor() ? reinterpret_cast<uintptr_t>(v.data()) : 0; })
      .def_prop_ro("size_in_bytes",
                   [](const Value& v) {
                     if (!v.is_tensor()) return size_t{0};
                     auto [elem, shape] = v.tensor_type();
                     if (elem != ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING) {
                       return static_cast<size_t>(element_count(shape)) * element_size(elem);
                     }
                     size_t total = 0;
                     check(g_api->GetStringTensorDataLength(v.get(), &total));
                     return total;
                   })
      .def("__repr__", [](const Value& v) {
        std::string shape = v.is_tensor() ? " " + shape_string(v.tensor_type().second) : "";
        return "Value(" + v.type_string() + shape + ")";
      });

  nb::class_<IoBinding>(m, "IoBinding")
      .def(nb::init<Session&>(), nb::arg("session"))
      .def(
          "bind_input",
          [](IoBinding& b, const std::string& name, const Value& value) {
            check(g_api->BindInput(b.handle.get(), name.c_str(), value.get()));
            b.bound.push_back(value);
          },
          nb::arg("name"), nb::arg("value"))
      .def(
          "bind_output",
          [](IoBinding& b, const std::string& name, int device_type, int device_id) {
            MemoryInfoHandle info = memory_info(device_type, device_id);
            check(g_api->BindOutputToDevice(b.handle.get(), name.c_str(), info.get()));
          },
          nb::arg("name"), nb::arg("device_type") = 0, nb::arg("device_id") = 0)
      .def(
          "bind_output_to",
          [](IoBinding& b, const std::string& name, const Value& destination) {
            if (!destination.is_tensor()) {
              invalid("output '" + name + "' can be bound to a tensor only, not " + destination.type_string());
            }
            check(g_api->BindOutput(b.handle.get(), name.c_str(), destination.get()));
            b.bound.push_back(destination);
          },
          nb::arg("name"), nb::arg("destination"))
      .def("clear_inputs", [](IoBinding& b) { g_api->ClearBoundInputs(b.handle.get()); })
      .def("clear_outputs", [](IoBinding& b) { g_api->ClearBoundOutputs(b.handle.get()); })
      .def("output_names", &IoBinding::output_names)
      .def_prop_ro("outputs", &IoBinding::outputs);

  m.def("device_type_name", [](int type) { return std::string(device_named(type).python); });
  m.def("device_is_served", [](int type) { return device_is_served(type); });
  {
    nb::dict types;
    for (int i = 0; i < kDeviceCount; ++i) types[kDevices[i].python] = i;
    m.attr("DEVICE_TYPES") = types;
  }

  nb::class_<Session>(m, "InferenceSession")
      .def_static(
          "from_file",
          [](const std::string& path, const SessionOptions& options, const std::vector<std::string>& providers) {
            return Session::create(options, providers, [&](const OnyxSessionOptions* o, OnyxSession** out) {
              return g_api->CreateSession(nullptr, path.c_str(), o, out);
            });
          },
          nb::arg("path"), nb::arg("options"), nb::arg("providers"))
      .def_static(
          "from_bytes",
          [](nb::bytes bytes, const SessionOptions& options, const std::vector<std::string>& providers) {
            // `bytes` is immutable and held by the caller while the GIL is released.
            return Session::create(options, providers, [&](const OnyxSessionOptions* o, OnyxSession** out) {
              return g_api->CreateSessionFromArray(nullptr, bytes.data(), bytes.size(), o, out);
            });
          },
          nb::arg("data"), nb::arg("options"), nb::arg("providers"))
      .def(
          "run",
          [](Session& session, const std::vector<std::string>& output_names, nb::list feeds,
             const RunOptions& run_options) {
            nb::list result;
            for (const Value& v : session.run(output_names, feeds, run_options)) result.append(value_to_python(v));
            return result;
          },
          nb::arg("output_names"), nb::arg("feeds"), nb::arg("run_options"))
      // The same, returning the outputs as Values (OrtValue, IOBinding).
      .def("run_values", &Session::run, nb::arg("output_names"), nb::arg("feeds"), nb::arg("run_options"))
      .def(
          "run_with_binding",
          [](Session& session, IoBinding& binding, const RunOptions& run_options) {
            OnyxStatus* status = nullptr;
            {
              nb::gil_scoped_release release;
              status = g_api->RunWithBinding(session.handle.get(), run_options.handle.get(), binding.handle.get());
            }
            check(status);
            return binding.outputs();
          },
          nb::arg("binding"), nb::arg("run_options"))
      // Metadata is copied out: it is small and read once per session.
      .def_prop_ro("inputs", [](const Session& s) { return s.inputs; })
      .def_prop_ro("outputs", [](const Session& s) { return s.outputs; })
      .def_prop_ro("overridable_initializers", [](const Session& s) { return s.overridable; })
      .def_prop_ro("metadata", &Session::metadata)
      .def("providers", &Session::providers)
      .def("provider_options", &Session::provider_options)
      .def("memory_profile",
           [](const Session& session) {
             int64_t peak = -1;
             int64_t in_use = -1;
             check(g_api->SessionGetMemoryProfile(session.handle.get(), &peak, &in_use));
             return std::make_pair(peak, in_use);
           })
      .def("end_profiling",
           [](Session& session) {
             char* path = nullptr;
             check(g_api->SessionEndProfiling(session.handle.get(), default_allocator(), &path));
             return take_string(path);
           })
      .def("profiling_start_time_ns", [](const Session& session) {
        uint64_t ns = 0;
        check(g_api->SessionGetProfilingStartTimeNs(session.handle.get(), &ns));
        return ns;
      });

  m.def("available_providers", &available_providers);
  m.def("version", []() { return std::string(OnyxGetApiBase()->GetVersionString()); });
  register_testing_hooks(m);
  register_genai(m);
}
