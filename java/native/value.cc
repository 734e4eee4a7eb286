// Native side of OnnxTensor, OnnxSequence and OnnxMap: values made over
// Java's direct buffers without a copy, string tensors, and the views and
// parts of the values a run returns.
#include <string>
#include <vector>

#include "jni_util.h"

// The declarations javac -h wrote from the Java classes (build/java/jni_headers).
#include "ai_onyx_NativeValue.h"
#include "ai_onyx_OnnxTensor.h"

using namespace onyx_jni;

extern "C" {

#define VALUE(name) Java_ai_onyx_NativeValue_##name
#define TENSOR(name) Java_ai_onyx_OnnxTensor_##name

JNIEXPORT void JNICALL VALUE(releaseValue)(JNIEnv*, jclass, jlong handle) {
  api->ReleaseValue(from_handle<OnyxValue>(handle));
}

JNIEXPORT jint JNICALL VALUE(valueType)(JNIEnv* env, jclass, jlong handle) {
  auto* value = from_handle<const OnyxValue>(handle);
  int has_value = 1;
  ONYX_JNI_CHECK(env, api->HasValue(value, &has_value), 0);
  if (!has_value) return ONNX_TYPE_OPTIONAL;  // an empty optional
  ONNXType type = ONNX_TYPE_UNKNOWN;
  ONYX_JNI_CHECK(env, api->GetValueType(value, &type), 0);
  return type;
}

JNIEXPORT jlong JNICALL VALUE(valueCount)(JNIEnv* env, jclass, jlong handle) {
  size_t count = 0;
  ONYX_JNI_CHECK(env, api->GetValueCount(from_handle<const OnyxValue>(handle), &count), 0);
  return static_cast<jlong>(count);
}

// A sequence's element, or a map's keys (0) or values (1): a new value that
// shares the memory of `handle`'s.
JNIEXPORT jlong JNICALL VALUE(valueAt)(JNIEnv* env, jclass, jlong handle, jint index) {
  OnyxAllocator* allocator = default_allocator(env);
  if (allocator == nullptr) return 0;
  OnyxValue* part = nullptr;
  ONYX_JNI_CHECK(env, api->GetValue(from_handle<const OnyxValue>(handle), index, allocator, &part), 0);
  return to_handle(part);
}

JNIEXPORT jobject JNICALL VALUE(typeInfo)(JNIEnv* env, jclass, jlong handle) {
  OnyxTypeInfo* type_info = nullptr;
  ONYX_JNI_CHECK(env, api->GetTypeInfo(from_handle<const OnyxValue>(handle), &type_info), nullptr);
  jobject info = describe_type(env, type_info);
  api->ReleaseTypeInfo(type_info);
  return info;
}

// A tensor over `buffer`'s memory from `byte_offset` (a direct buffer:
// Java checked), no copy. Java keeps the buffer reachable while the value
// lives.
JNIEXPORT jlong JNICALL TENSOR(createTensorOverBuffer)(JNIEnv* env, jclass, jobject buffer, jlong byte_offset,
                                                       jlong byte_length, jlongArray shape, jint element_type) {
  auto* base = static_cast<char*>(env->GetDirectBufferAddress(buffer));
  if (base == nullptr) {
    throw_onyx(env, ONYX_INVALID_ARGUMENT, "the buffer is not a direct buffer this JVM gives native code access to");
    return 0;
  }
  std::vector<int64_t> dims;
  if (!to_int64_vector(env, shape, &dims)) return 0;
  OnyxMemoryInfo* cpu = nullptr;
  ONYX_JNI_CHECK(env, api->CreateCpuMemoryInfo(OnyxDeviceAllocator, OnyxMemTypeDefault, &cpu), 0);
  OnyxValue* value = nullptr;
  OnyxStatus* status =
      api->CreateTensorWithDataAsOnyxValue(cpu, base + byte_offset, static_cast<size_t>(byte_length), dims.data(),
                                           dims.size(), static_cast<ONNXTensorElementDataType>(element_type), &value);
  api->ReleaseMemoryInfo(cpu);
  ONYX_JNI_CHECK(env, status, 0);
  return to_handle(value);
}

// A string tensor of `shape` holding `strings` (row-major), in onyx's memory.
JNIEXPORT jlong JNICALL TENSOR(createStringTensor)(JNIEnv* env, jclass, jlongArray shape, jobjectArray strings) {
  std::vector<int64_t> dims;
  std::vector<std::string> texts;
  if (!to_int64_vector(env, shape, &dims) || !to_utf8_array(env, strings, "string", &texts)) return 0;
  OnyxAllocator* allocator = default_allocator(env);
  if (allocator == nullptr) return 0;
  OnyxValue* value = nullptr;
  ONYX_JNI_CHECK(
      env,
      api->CreateTensorAsOnyxValue(allocator, dims.data(), dims.size(), ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, &value),
      0);
  std::vector<const char*> pointers = c_strings(texts);
  OnyxStatus* filled = api->FillStringTensor(value, pointers.data(), pointers.size());
  if (filled != nullptr) {
    api->ReleaseValue(value);
    throw_if_error(env, filled);
    return 0;
  }
  return to_handle(value);
}

JNIEXPORT jobjectArray JNICALL TENSOR(stringContent)(JNIEnv* env, jclass, jlong handle) {
  auto* value = from_handle<const OnyxValue>(handle);
  OnyxTensorTypeAndShapeInfo* info = nullptr;
  ONYX_JNI_CHECK(env, api->GetTensorTypeAndShape(value, &info), nullptr);
  size_t count = 0;
  OnyxStatus* counted = api->GetTensorShapeElementCount(info, &count);
  api->ReleaseTensorTypeAndShapeInfo(info);
  ONYX_JNI_CHECK(env, counted, nullptr);
  size_t total = 0;
  ONYX_JNI_CHECK(env, api->GetStringTensorDataLength(value, &total), nullptr);
  std::string bytes(total, '\0');
  std::vector<size_t> offsets(count);
  ONYX_JNI_CHECK(env, api->GetStringTensorContent(value, bytes.data(), total, offsets.data(), count), nullptr);
  std::vector<std::string> strings(count);
  for (size_t i = 0; i < count; ++i) {
    size_t end = i + 1 < count ? offsets[i + 1] : total;
    strings[i] = bytes.substr(offsets[i], end - offsets[i]);
  }
  return string_array(env, strings);
}

// A direct ByteBuffer over the tensor's own memory (`byte_length` bytes, as
// Java computed from its type and shape): valid while the value lives.
JNIEXPORT jobject JNICALL TENSOR(tensorMemory)(JNIEnv* env, jclass, jlong handle, jlong byte_length) {
  void* data = nullptr;
  ONYX_JNI_CHECK(env, api->GetTensorMutableData(from_handle<OnyxValue>(handle), &data), nullptr);
  if (data == nullptr && byte_length == 0) {
    static char empty;  // an empty tensor: NewDirectByteBuffer wants an address
    data = &empty;
  }
  return env->NewDirectByteBuffer(data, byte_length);
}

JNIEXPORT jobject JNICALL TENSOR(tensorInfo)(JNIEnv* env, jclass, jlong handle) {
  OnyxTensorTypeAndShapeInfo* info = nullptr;
  ONYX_JNI_CHECK(env, api->GetTensorTypeAndShape(from_handle<const OnyxValue>(handle), &info), nullptr);
  jobject result = describe_tensor(env, info);
  api->ReleaseTensorTypeAndShapeInfo(info);
  return result;
}

JNIEXPORT jlong JNICALL TENSOR(dataAddress)(JNIEnv* env, jclass, jlong handle) {
  void* data = nullptr;
  ONYX_JNI_CHECK(env, api->GetTensorMutableData(from_handle<OnyxValue>(handle), &data), 0);
  return to_handle(data);
}

// The address of a direct buffer's memory (tests compare it with dataAddress).
JNIEXPORT jlong JNICALL TENSOR(bufferAddress)(JNIEnv* env, jclass, jobject buffer) {
  return to_handle(env->GetDirectBufferAddress(buffer));
}

}  // extern "C"
