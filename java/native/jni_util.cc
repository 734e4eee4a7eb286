// The Java binding's shared native pieces: loading (JNI_OnLoad caches the
// classes the binding makes from C), errors, strings and type descriptions.
#include "jni_util.h"

#include <cstring>

// The declarations javac -h wrote from the Java classes (build/java/jni_headers).
#include "ai_onyx_OnyxNative.h"

namespace onyx_jni {

const OnyxApi* api = nullptr;
JavaClasses classes{};

namespace {

jclass global_class(JNIEnv* env, const char* name) {
  jclass local = env->FindClass(name);
  if (local == nullptr) return nullptr;
  auto global = static_cast<jclass>(env->NewGlobalRef(local));
  env->DeleteLocalRef(local);
  return global;
}

bool cache_classes(JNIEnv* env) {
  JavaClasses& c = classes;
  if (!(c.onyx_exception = global_class(env, "ai/onyx/OnyxException"))) return false;
  if (!(c.onyx_exception_init = env->GetMethodID(c.onyx_exception, "<init>", "(ILjava/lang/String;)V"))) return false;
  if (!(c.string = global_class(env, "java/lang/String"))) return false;
  if (!(c.string_get_bytes = env->GetMethodID(c.string, "getBytes", "(Ljava/nio/charset/Charset;)[B"))) return false;
  if (!(c.string_init = env->GetMethodID(c.string, "<init>", "([BLjava/nio/charset/Charset;)V"))) return false;
  jclass charsets = env->FindClass("java/nio/charset/StandardCharsets");
  if (charsets == nullptr) return false;
  jfieldID utf8_field = env->GetStaticFieldID(charsets, "UTF_8", "Ljava/nio/charset/Charset;");
  if (utf8_field == nullptr) return false;
  jobject utf8 = env->GetStaticObjectField(charsets, utf8_field);
  c.utf8 = env->NewGlobalRef(utf8);
  env->DeleteLocalRef(utf8);
  env->DeleteLocalRef(charsets);
  if (!(c.value_info = global_class(env, "ai/onyx/ValueInfo"))) return false;
  if (!(c.node_info = global_class(env, "ai/onyx/NodeInfo"))) return false;
  if (!(c.node_info_init = env->GetMethodID(c.node_info, "<init>", "(Ljava/lang/String;Lai/onyx/ValueInfo;)V")))
    return false;
  if (!(c.tensor_info = global_class(env, "ai/onyx/TensorInfo"))) return false;
  if (!(c.tensor_info_init = env->GetMethodID(c.tensor_info, "<init>", "(I[J[Ljava/lang/String;)V"))) return false;
  if (!(c.sequence_info = global_class(env, "ai/onyx/SequenceInfo"))) return false;
  if (!(c.sequence_info_init = env->GetMethodID(c.sequence_info, "<init>", "(Lai/onyx/ValueInfo;)V"))) return false;
  if (!(c.map_info = global_class(env, "ai/onyx/MapInfo"))) return false;
  if (!(c.map_info_init = env->GetMethodID(c.map_info, "<init>", "(ILai/onyx/ValueInfo;)V"))) return false;
  if (!(c.other_value_info = global_class(env, "ai/onyx/OtherValueInfo"))) return false;
  if (!(c.other_value_info_init = env->GetMethodID(c.other_value_info, "<init>", "(I)V"))) return false;
  return true;
}

}  // namespace

void throw_onyx(JNIEnv* env, OnyxErrorCode code, const std::string& message) {
  jstring text = from_utf8(env, message.data(), message.size());
  if (text == nullptr) return;  // an OutOfMemoryError is pending instead
  auto exception =
      static_cast<jthrowable>(env->NewObject(classes.onyx_exception, classes.onyx_exception_init, (jint)code, text));
  if (exception != nullptr) env->Throw(exception);
}

bool throw_if_error(JNIEnv* env, OnyxStatus* status) {
  if (status == nullptr) return false;
  OnyxErrorCode code = api->GetErrorCode(status);
  std::string message = api->GetErrorMessage(status);
  api->ReleaseStatus(status);
  throw_onyx(env, code, message);
  return true;
}

bool to_utf8(JNIEnv* env, jstring text, std::string* out) {
  auto bytes = static_cast<jbyteArray>(env->CallObjectMethod(text, classes.string_get_bytes, classes.utf8));
  if (env->ExceptionCheck() || bytes == nullptr) return false;
  jsize length = env->GetArrayLength(bytes);
  out->resize(static_cast<size_t>(length));
  env->GetByteArrayRegion(bytes, 0, length, reinterpret_cast<jbyte*>(out->data()));
  env->DeleteLocalRef(bytes);
  return true;
}

bool to_utf8_array(JNIEnv* env, jobjectArray texts, const char* what, std::vector<std::string>* out) {
  jsize count = texts != nullptr ? env->GetArrayLength(texts) : 0;
  out->resize(static_cast<size_t>(count));
  for (jsize i = 0; i < count; ++i) {
    auto text = static_cast<jstring>(env->GetObjectArrayElement(texts, i));
    if (text == nullptr) {
      throw_onyx(env, ONYX_INVALID_ARGUMENT, std::string(what) + " " + std::to_string(i) + " is null");
      return false;
    }
    bool ok = to_utf8(env, text, &(*out)[static_cast<size_t>(i)]);
    env->DeleteLocalRef(text);
    if (!ok) return false;
  }
  return true;
}

std::vector<const char*> c_strings(const std::vector<std::string>& strings) {
  std::vector<const char*> pointers;
  pointers.reserve(strings.size());
  for (const std::string& s : strings) pointers.push_back(s.c_str());
  return pointers;
}

jstring from_utf8(JNIEnv* env, const char* text, size_t length) {
  jbyteArray bytes = env->NewByteArray(static_cast<jsize>(length));
  if (bytes == nullptr) return nullptr;
  env->SetByteArrayRegion(bytes, 0, static_cast<jsize>(length), reinterpret_cast<const jbyte*>(text));
  auto result = static_cast<jstring>(env->NewObject(classes.string, classes.string_init, bytes, classes.utf8));
  env->DeleteLocalRef(bytes);
  return env->ExceptionCheck() ? nullptr : result;
}

jstring from_utf8(JNIEnv* env, const char* text) { return from_utf8(env, text, text ? std::strlen(text) : 0); }

jobjectArray string_array(JNIEnv* env, const std::vector<std::string>& strings) {
  jobjectArray array = env->NewObjectArray(static_cast<jsize>(strings.size()), classes.string, nullptr);
  if (array == nullptr) return nullptr;
  for (size_t i = 0; i < strings.size(); ++i) {
    jstring text = from_utf8(env, strings[i].data(), strings[i].size());
    if (text == nullptr) return nullptr;
    env->SetObjectArrayElement(array, static_cast<jsize>(i), text);
    env->DeleteLocalRef(text);
  }
  return array;
}

OnyxAllocator* default_allocator(JNIEnv* env) {
  OnyxAllocator* allocator = nullptr;
  if (throw_if_error(env, api->GetAllocatorWithDefaultOptions(&allocator))) return nullptr;
  return allocator;
}

jstring take_allocated_string(JNIEnv* env, OnyxAllocator* allocator, char* text) {
  jstring result = from_utf8(env, text);
  OnyxStatus* freed = api->AllocatorFree(allocator, text);
  if (freed != nullptr) api->ReleaseStatus(freed);  // the string is already Java's
  return result;
}

bool to_int64_vector(JNIEnv* env, jlongArray values, std::vector<int64_t>* out) {
  jsize count = values != nullptr ? env->GetArrayLength(values) : 0;
  out->resize(static_cast<size_t>(count));
  static_assert(sizeof(jlong) == sizeof(int64_t));
  if (count > 0) env->GetLongArrayRegion(values, 0, count, reinterpret_cast<jlong*>(out->data()));
  return !env->ExceptionCheck();
}

jlongArray long_array(JNIEnv* env, const std::vector<int64_t>& values) {
  jlongArray array = env->NewLongArray(static_cast<jsize>(values.size()));
  if (array == nullptr) return nullptr;
  env->SetLongArrayRegion(array, 0, static_cast<jsize>(values.size()), reinterpret_cast<const jlong*>(values.data()));
  return array;
}

jobject describe_tensor(JNIEnv* env, const OnyxTensorTypeAndShapeInfo* info) {
  ONNXTensorElementDataType element = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  size_t rank = 0;
  ONYX_JNI_CHECK(env, api->GetTensorElementType(info, &element), nullptr);
  ONYX_JNI_CHECK(env, api->GetDimensionsCount(info, &rank), nullptr);
  std::vector<int64_t> dims(rank);
  std::vector<const char*> symbols(rank, nullptr);
  ONYX_JNI_CHECK(env, api->GetDimensions(info, dims.data(), rank), nullptr);
  ONYX_JNI_CHECK(env, api->GetSymbolicDimensions(info, symbols.data(), rank), nullptr);
  std::vector<std::string> names(rank);
  for (size_t i = 0; i < rank; ++i) names[i] = symbols[i] != nullptr ? symbols[i] : "";
  jlongArray shape = long_array(env, dims);
  if (shape == nullptr) return nullptr;
  jobjectArray dimension_names = string_array(env, names);
  if (dimension_names == nullptr) return nullptr;
  jobject result = env->NewObject(classes.tensor_info, classes.tensor_info_init, (jint)element, shape, dimension_names);
  env->DeleteLocalRef(shape);
  env->DeleteLocalRef(dimension_names);
  return result;
}

jobject describe_type(JNIEnv* env, const OnyxTypeInfo* type_info) {
  ONNXType type = ONNX_TYPE_UNKNOWN;
  ONYX_JNI_CHECK(env, api->GetOnnxTypeFromTypeInfo(type_info, &type), nullptr);
  if (type == ONNX_TYPE_TENSOR || type == ONNX_TYPE_SPARSETENSOR) {
    const OnyxTensorTypeAndShapeInfo* tensor = nullptr;
    ONYX_JNI_CHECK(env, api->CastTypeInfoToTensorInfo(type_info, &tensor), nullptr);
    if (tensor != nullptr) return describe_tensor(env, tensor);
  } else if (type == ONNX_TYPE_SEQUENCE) {
    const OnyxSequenceTypeInfo* sequence = nullptr;
    ONYX_JNI_CHECK(env, api->CastTypeInfoToSequenceTypeInfo(type_info, &sequence), nullptr);
    OnyxTypeInfo* element_type = nullptr;
    ONYX_JNI_CHECK(env, api->GetSequenceElementType(sequence, &element_type), nullptr);
    jobject element = describe_type(env, element_type);
    api->ReleaseTypeInfo(element_type);
    if (element == nullptr) return nullptr;
    jobject result = env->NewObject(classes.sequence_info, classes.sequence_info_init, element);
    env->DeleteLocalRef(element);
    return result;
  } else if (type == ONNX_TYPE_MAP) {
    const OnyxMapTypeInfo* map = nullptr;
    ONYX_JNI_CHECK(env, api->CastTypeInfoToMapTypeInfo(type_info, &map), nullptr);
    ONNXTensorElementDataType key = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    ONYX_JNI_CHECK(env, api->GetMapKeyType(map, &key), nullptr);
    OnyxTypeInfo* value_type = nullptr;
    ONYX_JNI_CHECK(env, api->GetMapValueType(map, &value_type), nullptr);
    jobject value = describe_type(env, value_type);
    api->ReleaseTypeInfo(value_type);
    if (value == nullptr) return nullptr;
    jobject result = env->NewObject(classes.map_info, classes.map_info_init, (jint)key, value);
    env->DeleteLocalRef(value);
    return result;
  }
  return env->NewObject(classes.other_value_info, classes.other_value_info_init, (jint)type);
}

}  // namespace onyx_jni

using namespace onyx_jni;

extern "C" {

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void*) {
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
  if (!cache_classes(env)) return JNI_ERR;
  api = OnyxGetApi(ONYX_API_VERSION);  // null when libonyx is older: initialize() reports it
  return JNI_VERSION_1_8;
}

// OnyxNative.initialize(): the version of the library, or an exception when
// it does not serve the table this binding was compiled for.
JNIEXPORT jstring JNICALL Java_ai_onyx_OnyxNative_initialize(JNIEnv* env, jclass) {
  if (api == nullptr) {
    std::string message = "libonyx " + std::string(OnyxGetApiBase()->GetVersionString()) +
                          " does not serve C API version " + std::to_string(ONYX_API_VERSION) +
                          ", which this Java binding was built for";
    throw_onyx(env, ONYX_FAIL, message);
    return nullptr;
  }
  return from_utf8(env, OnyxGetApiBase()->GetVersionString());
}

JNIEXPORT jstring JNICALL Java_ai_onyx_OnyxNative_buildInfo(JNIEnv* env, jclass) {
  return from_utf8(env, api->GetBuildInfoString());
}

JNIEXPORT jobjectArray JNICALL Java_ai_onyx_OnyxNative_availableProviders(JNIEnv* env, jclass) {
  char** names = nullptr;
  int count = 0;
  ONYX_JNI_CHECK(env, api->GetAvailableProviders(&names, &count), nullptr);
  std::vector<std::string> providers(names, names + count);
  OnyxStatus* released = api->ReleaseAvailableProviders(names, count);
  if (released != nullptr) api->ReleaseStatus(released);
  return string_array(env, providers);
}

}  // extern "C"
