// What every file of the Java binding's native side shares: the C API's
// function table, turning an OnyxStatus into an ai.onyx.OnyxException, and
// strings between Java and UTF-8. Only the C API is included here: the
// binding sees onyx through include/onyx/onyx_c_api.h alone.
#pragma once

#include <jni.h>

#include <cstdint>
#include <string>
#include <vector>

#include "onyx/onyx_c_api.h"

namespace onyx_jni {

// The table of the library this binding was loaded against; null when that
// library is older than ONYX_API_VERSION (OnyxNative.initialize says so).
extern const OnyxApi* api;

// Classes and members looked up once in JNI_OnLoad, as global references.
struct JavaClasses {
  jclass onyx_exception;
  jmethodID onyx_exception_init;  // (int code, String message)
  jclass string;
  jmethodID string_get_bytes;  // getBytes(Charset)
  jmethodID string_init;       // String(byte[], Charset)
  jobject utf8;                // StandardCharsets.UTF_8
  jclass node_info;
  jmethodID node_info_init;  // (String, ValueInfo)
  jclass value_info;
  jclass tensor_info;
  jmethodID tensor_info_init;  // (int elementType, long[] shape, String[] dimensionNames)
  jclass sequence_info;
  jmethodID sequence_info_init;  // (ValueInfo element)
  jclass map_info;
  jmethodID map_info_init;  // (int keyType, ValueInfo value)
  jclass other_value_info;
  jmethodID other_value_info_init;  // (int onnxType)
};
extern JavaClasses classes;

// Throws an OnyxException with `code` and `message`.
void throw_onyx(JNIEnv* env, OnyxErrorCode code, const std::string& message);

// When `status` is an error: throws it as an OnyxException (its code and
// message), releases it and returns true. Returns false for NULL (success).
bool throw_if_error(JNIEnv* env, OnyxStatus* status);

// `expr` is a call of the table; on error the exception is pending and the
// native method returns `result` (Java ignores it).
#define ONYX_JNI_CHECK(env, expr, result)                         \
  do {                                                            \
    if (::onyx_jni::throw_if_error((env), (expr))) return result; \
  } while (0)

// A Java string as UTF-8 (standard UTF-8, not JNI's modified UTF-8, so that
// characters outside the BMP and NUL survive). False with an exception
// pending when Java threw (out of memory).
bool to_utf8(JNIEnv* env, jstring text, std::string* out);
// Each element of a String[] as UTF-8; a null element is an
// InvalidArgument naming `what`.
bool to_utf8_array(JNIEnv* env, jobjectArray texts, const char* what, std::vector<std::string>* out);
// Pointers into `strings` for the table's `const char* const*` parameters.
std::vector<const char*> c_strings(const std::vector<std::string>& strings);

// A Java string from UTF-8 bytes; null with an exception pending on failure.
jstring from_utf8(JNIEnv* env, const char* text, size_t length);
jstring from_utf8(JNIEnv* env, const char* text);
// A String[] from C strings; null with an exception pending on failure.
jobjectArray string_array(JNIEnv* env, const std::vector<std::string>& strings);

// The process's default allocator (never released).
OnyxAllocator* default_allocator(JNIEnv* env);

// A string the table allocated with `allocator`, as Java's, then freed.
jstring take_allocated_string(JNIEnv* env, OnyxAllocator* allocator, char* text);

// Handles travel through Java as longs.
template <typename T>
T* from_handle(jlong handle) {
  return reinterpret_cast<T*>(static_cast<intptr_t>(handle));
}
template <typename T>
jlong to_handle(T* pointer) {
  return static_cast<jlong>(reinterpret_cast<intptr_t>(pointer));
}

// A Java long[] as int64_t (shapes).
bool to_int64_vector(JNIEnv* env, jlongArray values, std::vector<int64_t>* out);
jlongArray long_array(JNIEnv* env, const std::vector<int64_t>& values);

// An ai.onyx.ValueInfo (TensorInfo, SequenceInfo, MapInfo or
// OtherValueInfo) for a type info; null with an exception pending on failure.
jobject describe_type(JNIEnv* env, const OnyxTypeInfo* type_info);
// A TensorInfo for a tensor's type and shape.
jobject describe_tensor(JNIEnv* env, const OnyxTensorTypeAndShapeInfo* info);

}  // namespace onyx_jni
