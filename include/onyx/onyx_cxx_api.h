// onyx's C++ API: a header-only layer over the C API (onyx_c_api.h), in the
// shape of onnxruntime's C++ API with `Ort` renamed `Onyx` (namespace Onyx:
// Env, SessionOptions, Session, Value, MemoryInfo, ... and CustomOpBase).
//
// It uses nothing of libonyx but the C API's entry point OnyxGetApiBase, so
// a program built with it depends on the C ABI alone. Define
// ONYX_API_MANUAL_INIT to use not even that, and call Onyx::InitApi with
// the table onyx hands you (a custom operator library's RegisterCustomOps).
//
// Rules:
// - Owning wrappers are move-only and release their handle in the
//   destructor; `release()` gives the handle away. `Onyx::X{nullptr}` is an
//   empty X (a null RunOptions or SessionOptions means "the defaults").
// - A C call that fails throws Onyx::Exception, which carries the status's
//   code and message. Nothing else throws, except std::bad_alloc.
// - Const* / Unowned* wrappers are views of a handle owned elsewhere (a
//   type info's tensor info, a kernel context's inputs): they live no
//   longer than their owner.
// - A custom op written with CustomOpBase never lets an exception reach
//   onyx: what its kernel throws becomes an error status naming the node.
#ifndef ONYX_CXX_API_H_
#define ONYX_CXX_API_H_

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "onyx_cxx_api.h needs C++17 or newer"
#endif

#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "onyx/onyx_c_api.h"

namespace Onyx {

// ---- Errors ---------------------------------------------------------------

// What every failing call throws: the C status's code and message.
struct Exception : std::exception {
  Exception(std::string message, OnyxErrorCode code) : message_(std::move(message)), code_(code) {}
  OnyxErrorCode GetOnyxErrorCode() const noexcept { return code_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
  OnyxErrorCode code_;
};

// ---- The table ----------------------------------------------------------------

namespace detail {
// The one table this program uses, filled at first use unless
// ONYX_API_MANUAL_INIT asks for InitApi.
inline const OnyxApi*& ApiSlot() noexcept {
#ifdef ONYX_API_MANUAL_INIT
  static const OnyxApi* api = nullptr;
#else
  static const OnyxApi* api = OnyxGetApiBase()->GetApi(ONYX_API_VERSION);
#endif
  return api;
}
}  // namespace detail

// Uses `api` from now on (a custom op library: api_base->GetApi(ONYX_API_VERSION)).
inline void InitApi(const OnyxApi* api) noexcept { detail::ApiSlot() = api; }

#ifndef ONYX_API_MANUAL_INIT
inline void InitApi() noexcept { InitApi(OnyxGetApiBase()->GetApi(ONYX_API_VERSION)); }
#endif

// The table; throws when the library is older than this header (its
// GetApi(ONYX_API_VERSION) was NULL) or InitApi was never called.
inline const OnyxApi& GetApi() {
  const OnyxApi* api = detail::ApiSlot();
  if (api == nullptr) {
    throw Exception("the onyx library does not serve C API version " + std::to_string(ONYX_API_VERSION) +
                        " (it is older than this header), or Onyx::InitApi was not called",
                    ONYX_FAIL);
  }
  return *api;
}

// Throws the error `status` holds (releasing it); does nothing for NULL.
inline void ThrowOnError(OnyxStatus* status) {
  if (status == nullptr) return;
  const OnyxApi& api = GetApi();
  std::string message = api.GetErrorMessage(status);
  const OnyxErrorCode code = api.GetErrorCode(status);
  api.ReleaseStatus(status);
  throw Exception(std::move(message), code);
}

// ---- Ownership --------------------------------------------------------------

namespace detail {
#define ONYX_CXX_DEFINE_RELEASE(NAME)                                \
  inline void OnyxRelease(Onyx##NAME* handle) noexcept {             \
    if (handle != nullptr) detail::ApiSlot()->Release##NAME(handle); \
  }
ONYX_CXX_DEFINE_RELEASE(Status)
ONYX_CXX_DEFINE_RELEASE(Env)
ONYX_CXX_DEFINE_RELEASE(SessionOptions)
ONYX_CXX_DEFINE_RELEASE(Session)
ONYX_CXX_DEFINE_RELEASE(RunOptions)
ONYX_CXX_DEFINE_RELEASE(Value)
ONYX_CXX_DEFINE_RELEASE(MemoryInfo)
ONYX_CXX_DEFINE_RELEASE(IoBinding)
ONYX_CXX_DEFINE_RELEASE(TypeInfo)
ONYX_CXX_DEFINE_RELEASE(TensorTypeAndShapeInfo)
ONYX_CXX_DEFINE_RELEASE(ModelMetadata)
ONYX_CXX_DEFINE_RELEASE(CustomOpDomain)
ONYX_CXX_DEFINE_RELEASE(Allocator)
#undef ONYX_CXX_DEFINE_RELEASE

// Marks a wrapper as a view: Base<Unowned<T>> never releases.
template <typename T>
struct Unowned {
  using Type = T;
};
}  // namespace detail

// Owns one C handle: move-only, released in the destructor.
template <typename T>
struct Base {
  using contained_type = T;

  constexpr Base() = default;
  constexpr explicit Base(contained_type* p) noexcept : p_(p) {}
  ~Base() { detail::OnyxRelease(p_); }

  Base(const Base&) = delete;
  Base& operator=(const Base&) = delete;
  Base(Base&& other) noexcept : p_(other.release()) {}
  Base& operator=(Base&& other) noexcept {
    if (this != &other) {
      detail::OnyxRelease(p_);
      p_ = other.release();
    }
    return *this;
  }

  constexpr operator contained_type*() const noexcept { return p_; }  // NOLINT: as onnxruntime's
  // Gives the handle away: the caller releases it.
  contained_type* release() noexcept {
    contained_type* p = p_;
    p_ = nullptr;
    return p;
  }

 protected:
  contained_type* p_ = nullptr;
};

// A view of a handle someone else owns: copyable, never releases.
template <typename T>
struct Base<detail::Unowned<T>> {
  using contained_type = typename detail::Unowned<T>::Type;

  constexpr Base() = default;
  constexpr explicit Base(contained_type* p) noexcept : p_(p) {}

  constexpr operator contained_type*() const noexcept { return p_; }  // NOLINT: as onnxruntime's

 protected:
  contained_type* p_ = nullptr;
};

// An error status, or none (IsOK). Owns the OnyxStatus*; a custom op hands
// one to onyx with `release()`.
struct Status : Base<OnyxStatus> {
  Status() = default;
  explicit Status(std::nullptr_t) noexcept {}
  explicit Status(OnyxStatus* status) noexcept : Base(status) {}
  Status(const char* message, OnyxErrorCode code) : Base(GetApi().CreateStatus(code, message)) {}
  explicit Status(const Exception& e) : Status(e.what(), e.GetOnyxErrorCode()) {}
  explicit Status(const std::exception& e) : Status(e.what(), ONYX_FAIL) {}

  bool IsOK() const noexcept { return p_ == nullptr; }
  std::string GetErrorMessage() const { return p_ != nullptr ? GetApi().GetErrorMessage(p_) : std::string(); }
  OnyxErrorCode GetErrorCode() const { return p_ != nullptr ? GetApi().GetErrorCode(p_) : ONYX_OK; }
};

// Throws the error `status` holds, if any (the status is left as it was).
inline void ThrowOnError(const Status& status) {
  if (!status.IsOK()) throw Exception(status.GetErrorMessage(), status.GetErrorCode());
}

namespace detail {
// The exception being handled as a new status (code and message kept).
inline OnyxStatus* StatusFromCurrentException() noexcept {
  const OnyxApi* api = ApiSlot();
  if (api == nullptr) return nullptr;  // nothing can be reported without the table
  try {
    throw;
  } catch (const Exception& e) {
    return api->CreateStatus(e.GetOnyxErrorCode() == ONYX_OK ? ONYX_FAIL : e.GetOnyxErrorCode(), e.what());
  } catch (const std::exception& e) {
    return api->CreateStatus(ONYX_FAIL, e.what());
  } catch (...) {
    return api->CreateStatus(ONYX_FAIL, "an unknown C++ exception was thrown");
  }
}
}  // namespace detail

// ---- Element types ------------------------------------------------------------

// The bits of a float16 or bfloat16 element.
struct Float16_t {
  uint16_t value;
  static constexpr Float16_t FromBits(uint16_t bits) noexcept { return Float16_t{bits}; }
};
struct BFloat16_t {
  uint16_t value;
  static constexpr BFloat16_t FromBits(uint16_t bits) noexcept { return BFloat16_t{bits}; }
};
static_assert(sizeof(Float16_t) == 2 && sizeof(BFloat16_t) == 2, "16-bit element types");

// The ONNX element type of a C++ type (CreateTensor<T>).
template <typename T>
struct TypeToTensorType;
#define ONYX_CXX_TENSOR_TYPE(CXX, ONNX)                                                     \
  template <>                                                                               \
  struct TypeToTensorType<CXX> {                                                            \
    static constexpr ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_##ONNX; \
  };
ONYX_CXX_TENSOR_TYPE(float, FLOAT)
ONYX_CXX_TENSOR_TYPE(double, DOUBLE)
ONYX_CXX_TENSOR_TYPE(Float16_t, FLOAT16)
ONYX_CXX_TENSOR_TYPE(BFloat16_t, BFLOAT16)
ONYX_CXX_TENSOR_TYPE(int8_t, INT8)
ONYX_CXX_TENSOR_TYPE(int16_t, INT16)
ONYX_CXX_TENSOR_TYPE(int32_t, INT32)
ONYX_CXX_TENSOR_TYPE(int64_t, INT64)
ONYX_CXX_TENSOR_TYPE(uint8_t, UINT8)
ONYX_CXX_TENSOR_TYPE(uint16_t, UINT16)
ONYX_CXX_TENSOR_TYPE(uint32_t, UINT32)
ONYX_CXX_TENSOR_TYPE(uint64_t, UINT64)
ONYX_CXX_TENSOR_TYPE(bool, BOOL)
ONYX_CXX_TENSOR_TYPE(std::string, STRING)
#undef ONYX_CXX_TENSOR_TYPE

// ---- Library-wide ---------------------------------------------------------------

// "0.1.0": the library's version.
inline std::string GetVersionString() { return OnyxGetApiBase()->GetVersionString(); }
inline std::string GetBuildInfoString() { return GetApi().GetBuildInfoString(); }

inline std::vector<std::string> GetAvailableProviders() {
  char** names = nullptr;
  int count = 0;
  ThrowOnError(GetApi().GetAvailableProviders(&names, &count));
  std::vector<std::string> providers;
  try {
    providers.assign(names, names + count);
  } catch (...) {
    GetApi().ReleaseAvailableProviders(names, count);
    throw;
  }
  ThrowOnError(GetApi().ReleaseAvailableProviders(names, count));
  return providers;
}

// The logging level and id of the process's sessions.
struct Env : Base<OnyxEnv> {
  explicit Env(std::nullptr_t) noexcept {}
  explicit Env(OnyxLoggingLevel logging_level = ONYX_LOGGING_LEVEL_WARNING, const char* logid = "") {
    ThrowOnError(GetApi().CreateEnv(logging_level, logid, &p_));
  }
  explicit Env(OnyxEnv* env) noexcept : Base(env) {}
};

// ---- Memory ----------------------------------------------------------------------

namespace detail {
template <typename T>
struct MemoryInfoImpl : Base<T> {
  using Base<T>::Base;

  std::string GetAllocatorName() const {
    const char* name = nullptr;
    ThrowOnError(GetApi().MemoryInfoGetName(this->p_, &name));
    return name;
  }
  OnyxAllocatorType GetAllocatorType() const {
    OnyxAllocatorType type;
    ThrowOnError(GetApi().MemoryInfoGetType(this->p_, &type));
    return type;
  }
  int GetDeviceId() const {
    int id = 0;
    ThrowOnError(GetApi().MemoryInfoGetId(this->p_, &id));
    return id;
  }
  OnyxMemType GetMemoryType() const {
    OnyxMemType type;
    ThrowOnError(GetApi().MemoryInfoGetMemType(this->p_, &type));
    return type;
  }
  // Whether both describe the same memory.
  template <typename U>
  bool operator==(const MemoryInfoImpl<U>& other) const {
    int comparison = -1;
    ThrowOnError(GetApi().CompareMemoryInfo(this->p_, other, &comparison));
    return comparison == 0;
  }
  template <typename U>
  bool operator!=(const MemoryInfoImpl<U>& other) const {
    return !(*this == other);
  }
};
}  // namespace detail

using ConstMemoryInfo = detail::MemoryInfoImpl<detail::Unowned<const OnyxMemoryInfo>>;

// Where a value's memory is: CreateCpu for the host, or a device by name
// ("Cpu", "Cuda", "OpenVINO", "Test") and id.
struct MemoryInfo : detail::MemoryInfoImpl<OnyxMemoryInfo> {
  explicit MemoryInfo(std::nullptr_t) noexcept {}
  explicit MemoryInfo(OnyxMemoryInfo* info) noexcept : MemoryInfoImpl(info) {}
  MemoryInfo(const char* name, OnyxAllocatorType type, int id, OnyxMemType mem_type) {
    ThrowOnError(GetApi().CreateMemoryInfo(name, type, id, mem_type, &p_));
  }
  static MemoryInfo CreateCpu(OnyxAllocatorType type, OnyxMemType mem_type) {
    OnyxMemoryInfo* info = nullptr;
    ThrowOnError(GetApi().CreateCpuMemoryInfo(type, mem_type, &info));
    return MemoryInfo(info);
  }
};

namespace detail {
// Frees what an allocator gave (names, metadata strings).
struct AllocatedFree {
  OnyxAllocator* allocator;
  explicit AllocatedFree(OnyxAllocator* a) noexcept : allocator(a) {}
  void operator()(void* p) const noexcept {
    if (p != nullptr) allocator->Free(allocator, p);
  }
};
}  // namespace detail

// A string allocated by an onyx allocator, freed with it.
using AllocatedStringPtr = std::unique_ptr<char, detail::AllocatedFree>;

// One block from an allocator, freed with it.
struct MemoryAllocation {
  MemoryAllocation(OnyxAllocator* allocator, void* p, size_t size) noexcept
      : allocator_(allocator), p_(p), size_(size) {}
  ~MemoryAllocation() {
    if (p_ != nullptr) allocator_->Free(allocator_, p_);
  }
  MemoryAllocation(const MemoryAllocation&) = delete;
  MemoryAllocation& operator=(const MemoryAllocation&) = delete;
  MemoryAllocation(MemoryAllocation&& other) noexcept
      : allocator_(other.allocator_), p_(std::exchange(other.p_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  MemoryAllocation& operator=(MemoryAllocation&& other) noexcept {
    if (this != &other) {
      if (p_ != nullptr) allocator_->Free(allocator_, p_);
      allocator_ = other.allocator_;
      p_ = std::exchange(other.p_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  void* get() noexcept { return p_; }
  size_t size() const noexcept { return size_; }

 private:
  OnyxAllocator* allocator_;
  void* p_;
  size_t size_;
};

namespace detail {
template <typename T>
struct AllocatorImpl : Base<T> {
  using Base<T>::Base;

  void* Alloc(size_t size) {
    void* p = nullptr;
    ThrowOnError(GetApi().AllocatorAlloc(this->p_, size, &p));
    return p;
  }
  MemoryAllocation GetAllocation(size_t size) { return MemoryAllocation(this->p_, Alloc(size), size); }
  void Free(void* p) { ThrowOnError(GetApi().AllocatorFree(this->p_, p)); }
  ConstMemoryInfo GetInfo() const {
    const OnyxMemoryInfo* info = nullptr;
    ThrowOnError(GetApi().AllocatorGetInfo(this->p_, &info));
    return ConstMemoryInfo(info);
  }
};
}  // namespace detail

// The process's host allocator (never released).
struct AllocatorWithDefaultOptions : detail::AllocatorImpl<detail::Unowned<OnyxAllocator>> {
  AllocatorWithDefaultOptions() { ThrowOnError(GetApi().GetAllocatorWithDefaultOptions(&p_)); }
};

using UnownedAllocator = detail::AllocatorImpl<detail::Unowned<OnyxAllocator>>;

struct Session;

// A session's allocator for a memory (Allocator(session, memory_info)).
struct Allocator : detail::AllocatorImpl<OnyxAllocator> {
  explicit Allocator(std::nullptr_t) noexcept {}
  Allocator(const Session& session, const OnyxMemoryInfo* memory_info);
};

// ---- Type information --------------------------------------------------------------

namespace detail {
template <typename T>
struct TensorTypeAndShapeInfoImpl : Base<T> {
  using Base<T>::Base;

  ONNXTensorElementDataType GetElementType() const {
    ONNXTensorElementDataType type;
    ThrowOnError(GetApi().GetTensorElementType(this->p_, &type));
    return type;
  }
  // The product of the dimensions: elements of the tensor. A shape with an
  // unknown dimension has none known: this is then SIZE_MAX (the C API's -1).
  size_t GetElementCount() const {
    size_t count = 0;
    ThrowOnError(GetApi().GetTensorShapeElementCount(this->p_, &count));
    return count;
  }
  size_t GetDimensionsCount() const {
    size_t count = 0;
    ThrowOnError(GetApi().GetDimensionsCount(this->p_, &count));
    return count;
  }
  void GetDimensions(int64_t* values, size_t values_count) const {
    ThrowOnError(GetApi().GetDimensions(this->p_, values, values_count));
  }
  void GetSymbolicDimensions(const char** values, size_t values_count) const {
    ThrowOnError(GetApi().GetSymbolicDimensions(this->p_, values, values_count));
  }
  // -1 for a dimension of unknown size.
  std::vector<int64_t> GetShape() const {
    std::vector<int64_t> shape(GetDimensionsCount());
    GetDimensions(shape.data(), shape.size());
    return shape;
  }
  // "" where a dimension has no symbol; owned by the info.
  std::vector<const char*> GetSymbolicDimensions() const {
    std::vector<const char*> symbols(GetDimensionsCount());
    GetSymbolicDimensions(symbols.data(), symbols.size());
    return symbols;
  }
};
}  // namespace detail

using ConstTensorTypeAndShapeInfo =
    detail::TensorTypeAndShapeInfoImpl<detail::Unowned<const OnyxTensorTypeAndShapeInfo>>;

struct TensorTypeAndShapeInfo : detail::TensorTypeAndShapeInfoImpl<OnyxTensorTypeAndShapeInfo> {
  explicit TensorTypeAndShapeInfo(std::nullptr_t) noexcept {}
  explicit TensorTypeAndShapeInfo(OnyxTensorTypeAndShapeInfo* info) noexcept : TensorTypeAndShapeInfoImpl(info) {}
  // A new description: element type and dimensions (-1: unknown).
  TensorTypeAndShapeInfo(ONNXTensorElementDataType type, const std::vector<int64_t>& shape) {
    ThrowOnError(GetApi().CreateTensorTypeAndShapeInfo(&p_));
    SetElementType(type);
    SetDimensions(shape.data(), shape.size());
  }
  void SetElementType(ONNXTensorElementDataType type) { ThrowOnError(GetApi().SetTensorElementType(p_, type)); }
  void SetDimensions(const int64_t* values, size_t count) { ThrowOnError(GetApi().SetDimensions(p_, values, count)); }
  ConstTensorTypeAndShapeInfo GetConst() const { return ConstTensorTypeAndShapeInfo(p_); }
};

struct TypeInfo;

// A sequence type's element type (a view of its TypeInfo).
struct ConstSequenceTypeInfo : Base<detail::Unowned<const OnyxSequenceTypeInfo>> {
  using Base::Base;
  TypeInfo GetSequenceElementType() const;
};

// A map type's key and value types (a view of its TypeInfo).
struct ConstMapTypeInfo : Base<detail::Unowned<const OnyxMapTypeInfo>> {
  using Base::Base;
  ONNXTensorElementDataType GetMapKeyType() const {
    ONNXTensorElementDataType type;
    ThrowOnError(GetApi().GetMapKeyType(p_, &type));
    return type;
  }
  TypeInfo GetMapValueType() const;
};

namespace detail {
template <typename T>
struct TypeInfoImpl : Base<T> {
  using Base<T>::Base;

  ONNXType GetONNXType() const {
    ONNXType type;
    ThrowOnError(GetApi().GetOnnxTypeFromTypeInfo(this->p_, &type));
    return type;
  }
  // A view owned by this type info; throws when it is not a tensor.
  ConstTensorTypeAndShapeInfo GetTensorTypeAndShapeInfo() const {
    const OnyxTensorTypeAndShapeInfo* info = nullptr;
    ThrowOnError(GetApi().CastTypeInfoToTensorInfo(this->p_, &info));
    if (info == nullptr) throw Exception("the type is not a tensor type", ONYX_INVALID_ARGUMENT);
    return ConstTensorTypeAndShapeInfo(info);
  }
  ConstSequenceTypeInfo GetSequenceTypeInfo() const {
    const OnyxSequenceTypeInfo* info = nullptr;
    ThrowOnError(GetApi().CastTypeInfoToSequenceTypeInfo(this->p_, &info));
    if (info == nullptr) throw Exception("the type is not a sequence type", ONYX_INVALID_ARGUMENT);
    return ConstSequenceTypeInfo(info);
  }
  ConstMapTypeInfo GetMapTypeInfo() const {
    const OnyxMapTypeInfo* info = nullptr;
    ThrowOnError(GetApi().CastTypeInfoToMapTypeInfo(this->p_, &info));
    if (info == nullptr) throw Exception("the type is not a map type", ONYX_INVALID_ARGUMENT);
    return ConstMapTypeInfo(info);
  }
  std::string GetDenotation() const {
    const char* denotation = nullptr;
    size_t length = 0;
    ThrowOnError(GetApi().GetDenotationFromTypeInfo(this->p_, &denotation, &length));
    return denotation != nullptr ? std::string(denotation, length) : std::string();
  }
};
}  // namespace detail

using ConstTypeInfo = detail::TypeInfoImpl<detail::Unowned<const OnyxTypeInfo>>;

// The type of an input, an output or a value: a tensor, sequence, map...
struct TypeInfo : detail::TypeInfoImpl<OnyxTypeInfo> {
  explicit TypeInfo(std::nullptr_t) noexcept {}
  explicit TypeInfo(OnyxTypeInfo* info) noexcept : TypeInfoImpl(info) {}
  ConstTypeInfo GetConst() const { return ConstTypeInfo(p_); }
};

inline TypeInfo ConstSequenceTypeInfo::GetSequenceElementType() const {
  OnyxTypeInfo* info = nullptr;
  ThrowOnError(GetApi().GetSequenceElementType(p_, &info));
  return TypeInfo(info);
}

inline TypeInfo ConstMapTypeInfo::GetMapValueType() const {
  OnyxTypeInfo* info = nullptr;
  ThrowOnError(GetApi().GetMapValueType(p_, &info));
  return TypeInfo(info);
}

// ---- Values ------------------------------------------------------------------------

struct Value;

namespace detail {
// What may be read of any value.
template <typename T>
struct ConstValueImpl : Base<T> {
  using Base<T>::Base;

  bool IsTensor() const {
    int out = 0;
    ThrowOnError(GetApi().IsTensor(this->p_, &out));
    return out != 0;
  }
  // False for an empty optional.
  bool HasValue() const {
    int out = 0;
    ThrowOnError(GetApi().HasValue(this->p_, &out));
    return out != 0;
  }
  // A sequence's element count; 2 for a map (keys, values).
  size_t GetCount() const {
    size_t out = 0;
    ThrowOnError(GetApi().GetValueCount(this->p_, &out));
    return out;
  }
  // A sequence's element `index`, or a map's keys (0) or values (1), sharing
  // this value's memory.
  Value GetValue(int index, OnyxAllocator* allocator) const;

  template <typename R>
  const R* GetTensorData() const {
    return static_cast<const R*>(GetTensorRawData());
  }
  const void* GetTensorRawData() const {
    void* out = nullptr;
    ThrowOnError(GetApi().GetTensorMutableData(const_cast<OnyxValue*>(static_cast<const OnyxValue*>(this->p_)), &out));
    return out;
  }
  TypeInfo GetTypeInfo() const {
    OnyxTypeInfo* info = nullptr;
    ThrowOnError(GetApi().GetTypeInfo(this->p_, &info));
    return TypeInfo(info);
  }
  TensorTypeAndShapeInfo GetTensorTypeAndShapeInfo() const {
    OnyxTensorTypeAndShapeInfo* info = nullptr;
    ThrowOnError(GetApi().GetTensorTypeAndShape(this->p_, &info));
    return TensorTypeAndShapeInfo(info);
  }
  // Owned by the value.
  ConstMemoryInfo GetTensorMemoryInfo() const {
    const OnyxMemoryInfo* info = nullptr;
    ThrowOnError(GetApi().GetTensorMemoryInfo(this->p_, &info));
    return ConstMemoryInfo(info);
  }

  // String tensors.
  size_t GetStringTensorDataLength() const {
    size_t out = 0;
    ThrowOnError(GetApi().GetStringTensorDataLength(this->p_, &out));
    return out;
  }
  void GetStringTensorContent(void* buffer, size_t buffer_length, size_t* offsets, size_t offsets_count) const {
    ThrowOnError(GetApi().GetStringTensorContent(this->p_, buffer, buffer_length, offsets, offsets_count));
  }
  size_t GetStringTensorElementLength(size_t element_index) const {
    size_t out = 0;
    ThrowOnError(GetApi().GetStringTensorElementLength(this->p_, element_index, &out));
    return out;
  }
  void GetStringTensorElement(size_t buffer_length, size_t element_index, void* buffer) const {
    ThrowOnError(GetApi().GetStringTensorElement(this->p_, buffer_length, element_index, buffer));
  }
  std::string GetStringTensorElement(size_t element_index) const {
    std::string s(GetStringTensorElementLength(element_index), '\0');
    if (!s.empty()) GetStringTensorElement(s.size(), element_index, &s[0]);
    return s;
  }
};

// What may be changed of a value one may write.
template <typename T>
struct ValueImpl : ConstValueImpl<T> {
  using ConstValueImpl<T>::ConstValueImpl;

  template <typename R>
  R* GetTensorMutableData() {
    return static_cast<R*>(GetTensorMutableRawData());
  }
  void* GetTensorMutableRawData() {
    void* out = nullptr;
    ThrowOnError(GetApi().GetTensorMutableData(this->p_, &out));
    return out;
  }
  void FillStringTensor(const char* const* s, size_t s_len) {
    ThrowOnError(GetApi().FillStringTensor(this->p_, s, s_len));
  }
  void FillStringTensorElement(const char* s, size_t index) {
    ThrowOnError(GetApi().FillStringTensorElement(this->p_, s, index));
  }
};
}  // namespace detail

// A kernel's input: read-only, owned by the kernel context.
using ConstValue = detail::ConstValueImpl<detail::Unowned<const OnyxValue>>;
// A kernel's output, or a value held elsewhere: writable, not owned.
using UnownedValue = detail::ValueImpl<detail::Unowned<OnyxValue>>;

// A tensor, sequence, map or optional; owns its OnyxValue.
struct Value : detail::ValueImpl<OnyxValue> {
  Value() = default;
  explicit Value(std::nullptr_t) noexcept {}
  explicit Value(OnyxValue* value) noexcept : ValueImpl(value) {}

  ConstValue GetConst() const noexcept { return ConstValue(p_); }
  UnownedValue GetUnowned() noexcept { return UnownedValue(p_); }

  // A tensor over the caller's memory, no copy: `p_data` (`element_count`
  // elements) must outlive the value and the run outputs that share it.
  template <typename T>
  static Value CreateTensor(const OnyxMemoryInfo* info, T* p_data, size_t element_count, const int64_t* shape,
                            size_t shape_len) {
    static_assert(!std::is_same_v<std::remove_cv_t<T>, std::string>,
                  "string tensors are made with an allocator and FillStringTensor");
    return CreateTensor(info, p_data, element_count * sizeof(T), shape, shape_len, TypeToTensorType<T>::type);
  }
  static Value CreateTensor(const OnyxMemoryInfo* info, void* p_data, size_t byte_count, const int64_t* shape,
                            size_t shape_len, ONNXTensorElementDataType type) {
    OnyxValue* out = nullptr;
    ThrowOnError(GetApi().CreateTensorWithDataAsOnyxValue(info, p_data, byte_count, shape, shape_len, type, &out));
    return Value(out);
  }
  // A new, zeroed tensor (empty strings) in `allocator`'s memory.
  template <typename T>
  static Value CreateTensor(OnyxAllocator* allocator, const int64_t* shape, size_t shape_len) {
    return CreateTensor(allocator, shape, shape_len, TypeToTensorType<T>::type);
  }
  static Value CreateTensor(OnyxAllocator* allocator, const int64_t* shape, size_t shape_len,
                            ONNXTensorElementDataType type) {
    OnyxValue* out = nullptr;
    ThrowOnError(GetApi().CreateTensorAsOnyxValue(allocator, shape, shape_len, type, &out));
    return Value(out);
  }
  // A sequence of the values (which stay the caller's; the sequence shares
  // their memory).
  static Value CreateSequence(const std::vector<Value>& values) {
    std::vector<const OnyxValue*> handles;
    handles.reserve(values.size());
    for (const Value& v : values) handles.push_back(v);
    OnyxValue* out = nullptr;
    ThrowOnError(GetApi().CreateValue(handles.data(), handles.size(), ONNX_TYPE_SEQUENCE, &out));
    return Value(out);
  }
  // A map from a 1-D keys tensor and a 1-D values tensor of the same length.
  static Value CreateMap(const Value& keys, const Value& values) {
    const OnyxValue* handles[2] = {keys, values};
    OnyxValue* out = nullptr;
    ThrowOnError(GetApi().CreateValue(handles, 2, ONNX_TYPE_MAP, &out));
    return Value(out);
  }
};

// Session::Run passes arrays of Values as arrays of handles.
static_assert(sizeof(Value) == sizeof(OnyxValue*), "Value must be exactly one handle");

template <typename T>
Value detail::ConstValueImpl<T>::GetValue(int index, OnyxAllocator* allocator) const {
  OnyxValue* out = nullptr;
  ThrowOnError(GetApi().GetValue(this->p_, index, allocator, &out));
  return Value(out);
}

// ---- Options ---------------------------------------------------------------------

struct CustomOpDomain : Base<OnyxCustomOpDomain> {
  explicit CustomOpDomain(std::nullptr_t) noexcept {}
  // "" is ai.onnx; any other name is a new domain.
  explicit CustomOpDomain(const char* domain) { ThrowOnError(GetApi().CreateCustomOpDomain(domain, &p_)); }
  // The domain keeps `op` (not a copy): it must outlive the sessions.
  void Add(const OnyxCustomOp* op) { ThrowOnError(GetApi().CustomOpDomain_Add(p_, op)); }
};

struct RunOptions : Base<OnyxRunOptions> {
  explicit RunOptions(std::nullptr_t) noexcept {}
  RunOptions() { ThrowOnError(GetApi().CreateRunOptions(&p_)); }

  RunOptions& SetRunLogSeverityLevel(int level) {
    ThrowOnError(GetApi().RunOptionsSetRunLogSeverityLevel(p_, level));
    return *this;
  }
  int GetRunLogSeverityLevel() const {
    int level = 0;
    ThrowOnError(GetApi().RunOptionsGetRunLogSeverityLevel(p_, &level));
    return level;
  }
  RunOptions& SetRunTag(const char* run_tag) {
    ThrowOnError(GetApi().RunOptionsSetRunTag(p_, run_tag));
    return *this;
  }
  // Owned by the options.
  const char* GetRunTag() const {
    const char* tag = nullptr;
    ThrowOnError(GetApi().RunOptionsGetRunTag(p_, &tag));
    return tag;
  }
  RunOptions& AddConfigEntry(const char* key, const char* value) {
    ThrowOnError(GetApi().AddRunConfigEntry(p_, key, value));
    return *this;
  }
  // From any thread: a run in flight with these options stops between nodes.
  RunOptions& SetTerminate() {
    ThrowOnError(GetApi().RunOptionsSetTerminate(p_));
    return *this;
  }
  RunOptions& UnsetTerminate() {
    ThrowOnError(GetApi().RunOptionsUnsetTerminate(p_));
    return *this;
  }
};

namespace detail {
template <typename T>
struct SessionOptionsImpl : Base<T> {
  using Base<T>::Base;
  using Self = SessionOptionsImpl;

  Self& SetIntraOpNumThreads(int threads) {
    ThrowOnError(GetApi().SetIntraOpNumThreads(this->p_, threads));
    return *this;
  }
  Self& SetInterOpNumThreads(int threads) {
    ThrowOnError(GetApi().SetInterOpNumThreads(this->p_, threads));
    return *this;
  }
  Self& SetGraphOptimizationLevel(GraphOptimizationLevel level) {
    ThrowOnError(GetApi().SetSessionGraphOptimizationLevel(this->p_, level));
    return *this;
  }
  Self& SetExecutionMode(ExecutionMode mode) {
    ThrowOnError(GetApi().SetSessionExecutionMode(this->p_, mode));
    return *this;
  }
  Self& SetOptimizedModelFilePath(const char* path) {
    ThrowOnError(GetApi().SetOptimizedModelFilePath(this->p_, path));
    return *this;
  }
  Self& EnableProfiling(const char* profile_file_prefix) {
    ThrowOnError(GetApi().EnableProfiling(this->p_, profile_file_prefix));
    return *this;
  }
  Self& DisableProfiling() {
    ThrowOnError(GetApi().DisableProfiling(this->p_));
    return *this;
  }
  Self& EnableMemPattern() {
    ThrowOnError(GetApi().EnableMemPattern(this->p_));
    return *this;
  }
  Self& DisableMemPattern() {
    ThrowOnError(GetApi().DisableMemPattern(this->p_));
    return *this;
  }
  Self& EnableCpuMemArena() {
    ThrowOnError(GetApi().EnableCpuMemArena(this->p_));
    return *this;
  }
  Self& DisableCpuMemArena() {
    ThrowOnError(GetApi().DisableCpuMemArena(this->p_));
    return *this;
  }
  Self& SetLogId(const char* logid) {
    ThrowOnError(GetApi().SetSessionLogId(this->p_, logid));
    return *this;
  }
  Self& SetLogSeverityLevel(int level) {
    ThrowOnError(GetApi().SetSessionLogSeverityLevel(this->p_, level));
    return *this;
  }
  Self& AddConfigEntry(const char* key, const char* value) {
    ThrowOnError(GetApi().AddSessionConfigEntry(this->p_, key, value));
    return *this;
  }
  Self& AddFreeDimensionOverrideByName(const char* dim_name, int64_t dim_value) {
    ThrowOnError(GetApi().AddFreeDimensionOverrideByName(this->p_, dim_name, dim_value));
    return *this;
  }
  Self& AddFreeDimensionOverride(const char* dim_denotation, int64_t dim_value) {
    ThrowOnError(GetApi().AddFreeDimensionOverride(this->p_, dim_denotation, dim_value));
    return *this;
  }
  // The sessions share `value`'s buffer: it must outlive them.
  Self& AddInitializer(const char* name, const OnyxValue* value) {
    ThrowOnError(GetApi().AddInitializer(this->p_, name, value));
    return *this;
  }
  // Providers in the order appended; the CPU provider is always the fallback.
  Self& AppendExecutionProvider(const std::string& provider_name,
                                const std::unordered_map<std::string, std::string>& provider_options = {}) {
    std::vector<const char*> keys, values;
    for (const auto& [key, value] : provider_options) {
      keys.push_back(key.c_str());
      values.push_back(value.c_str());
    }
    ThrowOnError(GetApi().SessionOptionsAppendExecutionProvider(this->p_, provider_name.c_str(), keys.data(),
                                                                values.data(), keys.size()));
    return *this;
  }
  // The options keep a reference to the domain.
  Self& Add(OnyxCustomOpDomain* domain) {
    ThrowOnError(GetApi().AddCustomOpDomain(this->p_, domain));
    return *this;
  }
  // Loads the library (it stays loaded) and calls its RegisterCustomOps.
  Self& RegisterCustomOpsLibrary(const char* library_path) {
    ThrowOnError(GetApi().RegisterCustomOpsLibrary_V2(this->p_, library_path));
    return *this;
  }
  Self& RegisterCustomOpsUsingFunction(const char* registration_function_name) {
    ThrowOnError(GetApi().RegisterCustomOpsUsingFunction(this->p_, registration_function_name));
    return *this;
  }
};
}  // namespace detail

// The options a RegisterCustomOps function is handed.
using UnownedSessionOptions = detail::SessionOptionsImpl<detail::Unowned<OnyxSessionOptions>>;

struct SessionOptions : detail::SessionOptionsImpl<OnyxSessionOptions> {
  explicit SessionOptions(std::nullptr_t) noexcept {}
  explicit SessionOptions(OnyxSessionOptions* options) noexcept : SessionOptionsImpl(options) {}
  SessionOptions() { ThrowOnError(GetApi().CreateSessionOptions(&p_)); }
  SessionOptions Clone() const {
    OnyxSessionOptions* out = nullptr;
    ThrowOnError(GetApi().CloneSessionOptions(p_, &out));
    return SessionOptions(out);
  }
};

// ---- Model metadata --------------------------------------------------------------------

struct ModelMetadata : Base<OnyxModelMetadata> {
  explicit ModelMetadata(std::nullptr_t) noexcept {}
  explicit ModelMetadata(OnyxModelMetadata* metadata) noexcept : Base(metadata) {}

  AllocatedStringPtr GetProducerNameAllocated(OnyxAllocator* allocator) const {
    return Take(GetApi().ModelMetadataGetProducerName, allocator);
  }
  AllocatedStringPtr GetGraphNameAllocated(OnyxAllocator* allocator) const {
    return Take(GetApi().ModelMetadataGetGraphName, allocator);
  }
  AllocatedStringPtr GetDomainAllocated(OnyxAllocator* allocator) const {
    return Take(GetApi().ModelMetadataGetDomain, allocator);
  }
  AllocatedStringPtr GetDescriptionAllocated(OnyxAllocator* allocator) const {
    return Take(GetApi().ModelMetadataGetDescription, allocator);
  }
  AllocatedStringPtr GetGraphDescriptionAllocated(OnyxAllocator* allocator) const {
    return Take(GetApi().ModelMetadataGetGraphDescription, allocator);
  }
  // Empty (a null pointer) when the key is absent.
  AllocatedStringPtr LookupCustomMetadataMapAllocated(const char* key, OnyxAllocator* allocator) const {
    char* value = nullptr;
    ThrowOnError(GetApi().ModelMetadataLookupCustomMetadataMap(p_, allocator, key, &value));
    return AllocatedStringPtr(value, detail::AllocatedFree(allocator));
  }
  std::vector<AllocatedStringPtr> GetCustomMetadataMapKeysAllocated(OnyxAllocator* allocator) const {
    char** keys = nullptr;
    int64_t count = 0;
    ThrowOnError(GetApi().ModelMetadataGetCustomMetadataMapKeys(p_, allocator, &keys, &count));
    std::vector<AllocatedStringPtr> result;
    if (keys == nullptr) return result;
    // Each key is owned from here on; the array itself is freed now.
    for (int64_t i = 0; i < count; ++i) result.emplace_back(keys[i], detail::AllocatedFree(allocator));
    allocator->Free(allocator, keys);
    return result;
  }
  int64_t GetVersion() const {
    int64_t version = 0;
    ThrowOnError(GetApi().ModelMetadataGetVersion(p_, &version));
    return version;
  }

 private:
  template <typename F>
  AllocatedStringPtr Take(F function, OnyxAllocator* allocator) const {
    char* value = nullptr;
    ThrowOnError(function(p_, allocator, &value));
    return AllocatedStringPtr(value, detail::AllocatedFree(allocator));
  }
};

// ---- Sessions -------------------------------------------------------------------------

namespace detail {
// Names the C API allocates, turned into std::strings.
inline std::string TakeString(char* s, OnyxAllocator* allocator) {
  AllocatedStringPtr owned(s, AllocatedFree(allocator));
  return s != nullptr ? std::string(s) : std::string();
}
}  // namespace detail

struct IoBinding;

struct Session : Base<OnyxSession> {
  explicit Session(std::nullptr_t) noexcept {}
  explicit Session(OnyxSession* session) noexcept : Base(session) {}
  // `env` and `options` may be empty (Env{nullptr}, SessionOptions{nullptr}).
  Session(const Env& env, const char* model_path, const SessionOptions& options) {
    ThrowOnError(GetApi().CreateSession(env, model_path, options, &p_));
  }
  Session(const Env& env, const void* model_data, size_t model_data_length, const SessionOptions& options) {
    ThrowOnError(GetApi().CreateSessionFromArray(env, model_data, model_data_length, options, &p_));
  }

  size_t GetInputCount() const { return Count(GetApi().SessionGetInputCount); }
  size_t GetOutputCount() const { return Count(GetApi().SessionGetOutputCount); }
  size_t GetOverridableInitializerCount() const { return Count(GetApi().SessionGetOverridableInitializerCount); }

  AllocatedStringPtr GetInputNameAllocated(size_t index, OnyxAllocator* allocator) const {
    return Name(GetApi().SessionGetInputName, index, allocator);
  }
  AllocatedStringPtr GetOutputNameAllocated(size_t index, OnyxAllocator* allocator) const {
    return Name(GetApi().SessionGetOutputName, index, allocator);
  }
  AllocatedStringPtr GetOverridableInitializerNameAllocated(size_t index, OnyxAllocator* allocator) const {
    return Name(GetApi().SessionGetOverridableInitializerName, index, allocator);
  }
  std::vector<std::string> GetInputNames() const { return Names(GetInputCount(), GetApi().SessionGetInputName); }
  std::vector<std::string> GetOutputNames() const { return Names(GetOutputCount(), GetApi().SessionGetOutputName); }
  std::vector<std::string> GetOverridableInitializerNames() const {
    return Names(GetOverridableInitializerCount(), GetApi().SessionGetOverridableInitializerName);
  }

  TypeInfo GetInputTypeInfo(size_t index) const { return Type(GetApi().SessionGetInputTypeInfo, index); }
  TypeInfo GetOutputTypeInfo(size_t index) const { return Type(GetApi().SessionGetOutputTypeInfo, index); }
  TypeInfo GetOverridableInitializerTypeInfo(size_t index) const {
    return Type(GetApi().SessionGetOverridableInitializerTypeInfo, index);
  }

  ModelMetadata GetModelMetadata() const {
    OnyxModelMetadata* out = nullptr;
    ThrowOnError(GetApi().SessionGetModelMetadata(p_, &out));
    return ModelMetadata(out);
  }
  // The providers this session runs on, in order.
  std::vector<std::string> GetProviders() const {
    char** names = nullptr;
    int count = 0;
    ThrowOnError(GetApi().SessionGetProviders(p_, &names, &count));
    std::vector<std::string> providers;
    try {
      providers.assign(names, names + count);
    } catch (...) {
      GetApi().ReleaseAvailableProviders(names, count);
      throw;
    }
    ThrowOnError(GetApi().ReleaseAvailableProviders(names, count));
    return providers;
  }
  uint64_t GetProfilingStartTimeNs() const {
    uint64_t out = 0;
    ThrowOnError(GetApi().SessionGetProfilingStartTimeNs(p_, &out));
    return out;
  }
  // Ends profiling; the profile's file name.
  AllocatedStringPtr EndProfilingAllocated(OnyxAllocator* allocator) {
    char* out = nullptr;
    ThrowOnError(GetApi().SessionEndProfiling(p_, allocator, &out));
    return AllocatedStringPtr(out, detail::AllocatedFree(allocator));
  }

  // Runs the model; the outputs named, as new values. Thread-safe.
  std::vector<Value> Run(const RunOptions& run_options, const char* const* input_names, const Value* input_values,
                         size_t input_count, const char* const* output_names, size_t output_count) {
    std::vector<Value> outputs(output_count);
    Run(run_options, input_names, input_values, input_count, output_names, outputs.data(), output_count);
    return outputs;
  }
  // The same, into `output_values`: an empty Value receives a new one, a
  // tensor (of the output's type and shape) is written in place.
  void Run(const RunOptions& run_options, const char* const* input_names, const Value* input_values, size_t input_count,
           const char* const* output_names, Value* output_values, size_t output_count) {
    // A Value is exactly its handle (static_assert above), so arrays of
    // Values are arrays of handles.
    ThrowOnError(GetApi().Run(p_, run_options, input_names, reinterpret_cast<const OnyxValue* const*>(input_values),
                              input_count, output_names, output_count, reinterpret_cast<OnyxValue**>(output_values)));
  }
  void Run(const RunOptions& run_options, const IoBinding& binding);

 private:
  using CountFunction = OnyxStatus*(ONYX_API_CALL*)(const OnyxSession*, size_t*)ONYX_NO_EXCEPTION;
  using NameFunction = OnyxStatus*(ONYX_API_CALL*)(const OnyxSession*, size_t, OnyxAllocator*, char**)ONYX_NO_EXCEPTION;
  using TypeFunction = OnyxStatus*(ONYX_API_CALL*)(const OnyxSession*, size_t, OnyxTypeInfo**)ONYX_NO_EXCEPTION;

  size_t Count(CountFunction function) const {
    size_t out = 0;
    ThrowOnError(function(p_, &out));
    return out;
  }
  AllocatedStringPtr Name(NameFunction function, size_t index, OnyxAllocator* allocator) const {
    char* out = nullptr;
    ThrowOnError(function(p_, index, allocator, &out));
    return AllocatedStringPtr(out, detail::AllocatedFree(allocator));
  }
  std::vector<std::string> Names(size_t count, NameFunction function) const {
    AllocatorWithDefaultOptions allocator;
    std::vector<std::string> names;
    for (size_t i = 0; i < count; ++i) names.emplace_back(Name(function, i, allocator).get());
    return names;
  }
  TypeInfo Type(TypeFunction function, size_t index) const {
    OnyxTypeInfo* out = nullptr;
    ThrowOnError(function(p_, index, &out));
    return TypeInfo(out);
  }
};

inline Allocator::Allocator(const Session& session, const OnyxMemoryInfo* memory_info) {
  ThrowOnError(GetApi().CreateAllocator(session, memory_info, &p_));
}

// Inputs bound where they are, outputs into the caller's values or left on
// a device; run with Session::Run(run_options, binding).
struct IoBinding : Base<OnyxIoBinding> {
  explicit IoBinding(std::nullptr_t) noexcept {}
  explicit IoBinding(Session& session) { ThrowOnError(GetApi().CreateIoBinding(session, &p_)); }

  void BindInput(const char* name, const Value& value) { ThrowOnError(GetApi().BindInput(p_, name, value)); }
  void BindOutput(const char* name, const Value& value) { ThrowOnError(GetApi().BindOutput(p_, name, value)); }
  void BindOutput(const char* name, const OnyxMemoryInfo* memory_info) {
    ThrowOnError(GetApi().BindOutputToDevice(p_, name, memory_info));
  }
  void ClearBoundInputs() { GetApi().ClearBoundInputs(p_); }
  void ClearBoundOutputs() { GetApi().ClearBoundOutputs(p_); }

  std::vector<std::string> GetOutputNames() const { return GetOutputNames(AllocatorWithDefaultOptions()); }
  std::vector<std::string> GetOutputNames(OnyxAllocator* allocator) const {
    char* buffer = nullptr;
    size_t* lengths = nullptr;
    size_t count = 0;
    ThrowOnError(GetApi().GetBoundOutputNames(p_, allocator, &buffer, &lengths, &count));
    AllocatedStringPtr owned_buffer(buffer, detail::AllocatedFree(allocator));
    std::unique_ptr<size_t, detail::AllocatedFree> owned_lengths(lengths, detail::AllocatedFree(allocator));
    std::vector<std::string> names;
    for (size_t i = 0, offset = 0; i < count; offset += lengths[i], ++i)
      names.emplace_back(buffer + offset, lengths[i]);
    return names;
  }
  // The bound outputs after a run, as new values.
  std::vector<Value> GetOutputValues() const { return GetOutputValues(AllocatorWithDefaultOptions()); }
  std::vector<Value> GetOutputValues(OnyxAllocator* allocator) const {
    OnyxValue** values = nullptr;
    size_t count = 0;
    ThrowOnError(GetApi().GetBoundOutputValues(p_, allocator, &values, &count));
    std::unique_ptr<OnyxValue*, detail::AllocatedFree> owned_array(values, detail::AllocatedFree(allocator));
    std::vector<Value> result;
    result.reserve(count);
    for (size_t i = 0; i < count; ++i) result.emplace_back(values[i]);
    return result;
  }
};

inline void Session::Run(const RunOptions& run_options, const IoBinding& binding) {
  ThrowOnError(GetApi().RunWithBinding(p_, run_options, binding));
}

// ---- Custom operators -----------------------------------------------------------------

namespace detail {
template <typename T>
struct KernelInfoImpl : Base<T> {
  using Base<T>::Base;

  // GetAttribute<float>, <int64_t> or <std::string>; throws when absent.
  template <typename R>
  R GetAttribute(const char* name) const {
    if constexpr (std::is_same_v<R, float>) {
      float out = 0;
      ThrowOnError(GetApi().KernelInfoGetAttribute_float(this->p_, name, &out));
      return out;
    } else if constexpr (std::is_same_v<R, int64_t>) {
      int64_t out = 0;
      ThrowOnError(GetApi().KernelInfoGetAttribute_int64(this->p_, name, &out));
      return out;
    } else {
      static_assert(std::is_same_v<R, std::string>, "attributes are float, int64_t or std::string");
      size_t size = 0;
      ThrowOnError(GetApi().KernelInfoGetAttribute_string(this->p_, name, nullptr, &size));
      std::string out(size, '\0');
      ThrowOnError(GetApi().KernelInfoGetAttribute_string(this->p_, name, &out[0], &size));
      out.resize(size > 0 ? size - 1 : 0);  // without the NUL
      return out;
    }
  }
  // GetAttributes<float> or <int64_t>: a list attribute.
  template <typename R>
  std::vector<R> GetAttributes(const char* name) const {
    static_assert(std::is_same_v<R, float> || std::is_same_v<R, int64_t>, "list attributes are float or int64_t");
    auto get = [&](R* out, size_t* size) {
      if constexpr (std::is_same_v<R, float>) {
        return GetApi().KernelInfoGetAttributeArray_float(this->p_, name, out, size);
      } else {
        return GetApi().KernelInfoGetAttributeArray_int64(this->p_, name, out, size);
      }
    };
    size_t size = 0;
    ThrowOnError(get(nullptr, &size));
    std::vector<R> out(size);
    if (size > 0) ThrowOnError(get(out.data(), &size));
    return out;
  }
  size_t GetInputCount() const {
    size_t out = 0;
    ThrowOnError(GetApi().KernelInfo_GetInputCount(this->p_, &out));
    return out;
  }
  size_t GetOutputCount() const {
    size_t out = 0;
    ThrowOnError(GetApi().KernelInfo_GetOutputCount(this->p_, &out));
    return out;
  }
  std::string GetNodeName() const {
    size_t size = 0;
    ThrowOnError(GetApi().KernelInfo_GetNodeName(this->p_, nullptr, &size));
    std::string out(size, '\0');
    ThrowOnError(GetApi().KernelInfo_GetNodeName(this->p_, &out[0], &size));
    out.resize(size > 0 ? size - 1 : 0);
    return out;
  }
};
}  // namespace detail

// What a kernel sees of its node when it is created.
using ConstKernelInfo = detail::KernelInfoImpl<detail::Unowned<const OnyxKernelInfo>>;

// A kernel's inputs and outputs during one compute call.
struct KernelContext {
  explicit KernelContext(OnyxKernelContext* context) noexcept : context_(context) {}

  size_t GetInputCount() const {
    size_t out = 0;
    ThrowOnError(GetApi().KernelContext_GetInputCount(context_, &out));
    return out;
  }
  size_t GetOutputCount() const {
    size_t out = 0;
    ThrowOnError(GetApi().KernelContext_GetOutputCount(context_, &out));
    return out;
  }
  // Empty (converts to NULL) for an omitted optional input.
  ConstValue GetInput(size_t index) const {
    const OnyxValue* out = nullptr;
    ThrowOnError(GetApi().KernelContext_GetInput(context_, index, &out));
    return ConstValue(out);
  }
  // Allocates output `index` with that shape.
  UnownedValue GetOutput(size_t index, const int64_t* dim_values, size_t dim_count) const {
    OnyxValue* out = nullptr;
    ThrowOnError(GetApi().KernelContext_GetOutput(context_, index, dim_values, dim_count, &out));
    return UnownedValue(out);
  }
  UnownedValue GetOutput(size_t index, const std::vector<int64_t>& dims) const {
    return GetOutput(index, dims.data(), dims.size());
  }
  OnyxKernelContext* GetOnyxKernelContext() const noexcept { return context_; }

 private:
  OnyxKernelContext* context_;
};

// Shape inference of a custom op at session creation (TOp::InferOutputShape).
struct ShapeInferContext {
  // A dimension: a size, or a symbol ("batch") when the size is not known.
  struct SymbolicInteger {
    SymbolicInteger(int64_t value) : value_(value), is_int_(true) {}          // NOLINT: implicit, as onnxruntime's
    SymbolicInteger(const char* symbol) : symbol_(symbol), is_int_(false) {}  // NOLINT
    bool IsInt() const noexcept { return is_int_; }
    int64_t AsInt() const noexcept { return value_; }
    const char* AsSym() const noexcept { return symbol_.c_str(); }
    bool operator==(const SymbolicInteger& other) const {
      return is_int_ == other.is_int_ && (is_int_ ? value_ == other.value_ : symbol_ == other.symbol_);
    }

   private:
    int64_t value_ = -1;
    std::string symbol_;
    bool is_int_;
  };
  using Shape = std::vector<SymbolicInteger>;

  explicit ShapeInferContext(OnyxShapeInferContext* context) : context_(context) {
    size_t count = 0;
    ThrowOnError(GetApi().ShapeInferContext_GetInputCount(context_, &count));
    for (size_t i = 0; i < count; ++i) {
      OnyxTensorTypeAndShapeInfo* handle = nullptr;
      ThrowOnError(GetApi().ShapeInferContext_GetInputTypeShape(context_, i, &handle));
      TensorTypeAndShapeInfo info(handle);
      types_.push_back(info.GetElementType());
      const std::vector<int64_t> dims = info.GetShape();
      const std::vector<const char*> symbols = info.GetSymbolicDimensions();
      Shape shape;
      for (size_t d = 0; d < dims.size(); ++d) {
        if (dims[d] < 0 && symbols[d] != nullptr && symbols[d][0] != '\0') {
          shape.emplace_back(symbols[d]);
        } else {
          shape.emplace_back(dims[d]);
        }
      }
      shapes_.push_back(std::move(shape));
    }
  }

  size_t GetInputCount() const noexcept { return shapes_.size(); }
  // Unknown dimensions without a symbol are -1.
  const Shape& GetInputShape(size_t index) const { return shapes_.at(index); }
  ONNXTensorElementDataType GetInputType(size_t index) const { return types_.at(index); }
  // Output `index`'s type and shape; a symbolic dimension is recorded as
  // unknown (the C API sets sizes only).
  Status SetOutputShape(size_t index, const Shape& shape,
                        ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
    try {
      std::vector<int64_t> dims;
      for (const SymbolicInteger& d : shape) dims.push_back(d.IsInt() ? d.AsInt() : -1);
      TensorTypeAndShapeInfo info(type, dims);
      return Status(GetApi().ShapeInferContext_SetOutputTypeShape(context_, index, info));
    } catch (const Exception& e) {
      return Status(e);
    }
  }

 private:
  OnyxShapeInferContext* context_;
  std::vector<Shape> shapes_;
  std::vector<ONNXTensorElementDataType> types_;
};

// An OnyxCustomOp filled from a C++ class, as onnxruntime's CustomOpBase:
//
//   struct MyKernel {
//     MyKernel(const OnyxApi& api, const OnyxKernelInfo* info);
//     void Compute(OnyxKernelContext* context);            // may throw
//   };
//   struct MyOp : Onyx::CustomOpBase<MyOp, MyKernel> {
//     void* CreateKernel(const OnyxApi& api, const OnyxKernelInfo* info) const { return new MyKernel(api, info); }
//     const char* GetName() const { return "MyOp"; }
//     size_t GetInputTypeCount() const { return 1; }
//     ONNXTensorElementDataType GetInputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
//     size_t GetOutputTypeCount() const { return 1; }
//     ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
//     // optional: static Onyx::Status (or OnyxStatusPtr) InferOutputShape(Onyx::ShapeInferContext&);
//   };
//
// With WithStatus = true, TOp has `OnyxStatusPtr CreateKernelV2(const OnyxApi&,
// const OnyxKernelInfo*, void** kernel) const` and TKernel `OnyxStatusPtr
// ComputeV2(OnyxKernelContext*)` instead. Either way, what CreateKernel,
// Compute or InferOutputShape throw reaches onyx as an error status (an
// Onyx::Exception keeps its code), which fails the session or the run
// naming the node. The op object must outlive the sessions that use it.
template <typename TOp, typename TKernel, bool WithStatus = false>
struct CustomOpBase : OnyxCustomOp {
  CustomOpBase() {
    static_cast<OnyxCustomOp&>(*this) = OnyxCustomOp{};  // optional members NULL
    OnyxCustomOp::version = ONYX_API_VERSION;
    OnyxCustomOp::GetName = [](const OnyxCustomOp* self) { return Self(self)->GetName(); };
    OnyxCustomOp::GetExecutionProviderType = [](const OnyxCustomOp* self) {
      return Self(self)->GetExecutionProviderType();
    };
    OnyxCustomOp::GetInputTypeCount = [](const OnyxCustomOp* self) { return Self(self)->GetInputTypeCount(); };
    OnyxCustomOp::GetInputType = [](const OnyxCustomOp* self, size_t index) { return Self(self)->GetInputType(index); };
    OnyxCustomOp::GetOutputTypeCount = [](const OnyxCustomOp* self) { return Self(self)->GetOutputTypeCount(); };
    OnyxCustomOp::GetOutputType = [](const OnyxCustomOp* self, size_t index) {
      return Self(self)->GetOutputType(index);
    };
    OnyxCustomOp::GetInputCharacteristic = [](const OnyxCustomOp* self, size_t index) {
      return Self(self)->GetInputCharacteristic(index);
    };
    OnyxCustomOp::GetOutputCharacteristic = [](const OnyxCustomOp* self, size_t index) {
      return Self(self)->GetOutputCharacteristic(index);
    };
    OnyxCustomOp::GetInputMemoryType = [](const OnyxCustomOp* self, size_t index) {
      return Self(self)->GetInputMemoryType(index);
    };
    OnyxCustomOp::GetVariadicInputMinArity = [](const OnyxCustomOp* self) {
      return Self(self)->GetVariadicInputMinArity();
    };
    OnyxCustomOp::GetVariadicInputHomogeneity = [](const OnyxCustomOp* self) {
      return static_cast<int>(Self(self)->GetVariadicInputHomogeneity());
    };
    OnyxCustomOp::GetVariadicOutputMinArity = [](const OnyxCustomOp* self) {
      return Self(self)->GetVariadicOutputMinArity();
    };
    OnyxCustomOp::GetVariadicOutputHomogeneity = [](const OnyxCustomOp* self) {
      return static_cast<int>(Self(self)->GetVariadicOutputHomogeneity());
    };
    // Only the status-returning entry points are set, so that an exception
    // never leaves this header.
    OnyxCustomOp::CreateKernelV2 = [](const OnyxCustomOp* self, const OnyxApi* api, const OnyxKernelInfo* info,
                                      void** kernel) -> OnyxStatusPtr {
      try {
        if constexpr (WithStatus) {
          return Self(self)->CreateKernelV2(*api, info, kernel);
        } else {
          *kernel = Self(self)->CreateKernel(*api, info);
          return nullptr;
        }
      } catch (...) {
        return detail::StatusFromCurrentException();
      }
    };
    OnyxCustomOp::KernelComputeV2 = [](void* kernel, OnyxKernelContext* context) -> OnyxStatusPtr {
      try {
        if constexpr (WithStatus) {
          return static_cast<TKernel*>(kernel)->ComputeV2(context);
        } else {
          static_cast<TKernel*>(kernel)->Compute(context);
          return nullptr;
        }
      } catch (...) {
        return detail::StatusFromCurrentException();
      }
    };
    OnyxCustomOp::KernelDestroy = [](void* kernel) { delete static_cast<TKernel*>(kernel); };
    if constexpr (HasInferOutputShape<TOp>::value) {
      OnyxCustomOp::InferOutputShapeFn = [](const OnyxCustomOp*, OnyxShapeInferContext* context) -> OnyxStatusPtr {
        try {
          ShapeInferContext cxx_context(context);
          // onnxruntime's returns an OrtStatusPtr; an Onyx::Status is taken too.
          if constexpr (std::is_same_v<decltype(TOp::InferOutputShape(cxx_context)), Status>) {
            return TOp::InferOutputShape(cxx_context).release();
          } else {
            return TOp::InferOutputShape(cxx_context);
          }
        } catch (...) {
          return detail::StatusFromCurrentException();
        }
      };
    }
    OnyxCustomOp::GetStartVersion = [](const OnyxCustomOp* self) { return Self(self)->start_ver_; };
    OnyxCustomOp::GetEndVersion = [](const OnyxCustomOp* self) { return Self(self)->end_ver_; };
  }

  // Defaults a TOp may hide with its own.
  const char* GetExecutionProviderType() const { return nullptr; }  // the CPU
  OnyxCustomOpInputOutputCharacteristic GetInputCharacteristic(size_t) const { return INPUT_OUTPUT_REQUIRED; }
  OnyxCustomOpInputOutputCharacteristic GetOutputCharacteristic(size_t) const { return INPUT_OUTPUT_REQUIRED; }
  OnyxMemType GetInputMemoryType(size_t) const { return OnyxMemTypeDefault; }
  int GetVariadicInputMinArity() const { return 1; }
  bool GetVariadicInputHomogeneity() const { return true; }
  int GetVariadicOutputMinArity() const { return 1; }
  bool GetVariadicOutputHomogeneity() const { return true; }

 protected:
  // The opset versions of the domain the op exists in (inclusive).
  int start_ver_ = 1;
  int end_ver_ = 1 << 30;

 private:
  static const TOp* Self(const OnyxCustomOp* op) { return static_cast<const TOp*>(op); }

  template <typename C, typename = void>
  struct HasInferOutputShape : std::false_type {};
  template <typename C>
  struct HasInferOutputShape<C, std::void_t<decltype(C::InferOutputShape(std::declval<ShapeInferContext&>()))>>
      : std::true_type {};
};

}  // namespace Onyx

#endif  // ONYX_CXX_API_H_
