// Native side of OnyxSession: creation, metadata and Run through the C API.
#include <string>
#include <vector>

#include "jni_util.h"

// The declarations javac -h wrote from the Java classes (build/java/jni_headers).
#include "ai_onyx_OnyxSession.h"

using namespace onyx_jni;

namespace {

using NameGetter = OnyxStatus* (*)(const OnyxSession*, size_t, OnyxAllocator*, char**) noexcept;
using TypeGetter = OnyxStatus* (*)(const OnyxSession*, size_t, OnyxTypeInfo**) noexcept;

// NodeInfo[] for a session's inputs, outputs or overridable initializers.
jobjectArray node_infos(JNIEnv* env, const OnyxSession* session, size_t count, NameGetter get_name,
                        TypeGetter get_type) {
  OnyxAllocator* allocator = default_allocator(env);
  if (allocator == nullptr) return nullptr;
  jobjectArray result = env->NewObjectArray(static_cast<jsize>(count), classes.node_info, nullptr);
  if (result == nullptr) return nullptr;
  for (size_t i = 0; i < count; ++i) {
    char* raw_name = nullptr;
    ONYX_JNI_CHECK(env, get_name(session, i, allocator, &raw_name), nullptr);
    jstring name = take_allocated_string(env, allocator, raw_name);
    if (name == nullptr) return nullptr;
    OnyxTypeInfo* type_info = nullptr;
    ONYX_JNI_CHECK(env, get_type(session, i, &type_info), nullptr);
    jobject info = describe_type(env, type_info);
    api->ReleaseTypeInfo(type_info);
    if (info == nullptr) return nullptr;
    jobject node = env->NewObject(classes.node_info, classes.node_info_init, name, info);
    if (node == nullptr) return nullptr;
    env->SetObjectArrayElement(result, static_cast<jsize>(i), node);
    env->DeleteLocalRef(node);
    env->DeleteLocalRef(info);
    env->DeleteLocalRef(name);
  }
  return result;
}

}  // namespace

extern "C" {

#define SESSION(name) Java_ai_onyx_OnyxSession_##name

JNIEXPORT jlong JNICALL SESSION(createSession)(JNIEnv* env, jclass, jlong env_handle, jstring path,
                                               jlong options_handle) {
  std::string model_path;
  if (!to_utf8(env, path, &model_path)) return 0;
  OnyxSession* session = nullptr;
  ONYX_JNI_CHECK(env,
                 api->CreateSession(from_handle<OnyxEnv>(env_handle), model_path.c_str(),
                                    from_handle<OnyxSessionOptions>(options_handle), &session),
                 0);
  return to_handle(session);
}

// The model's bytes are read while the session is made; the session keeps
// none of them (the C API copies what it keeps), so Java's array is released
// right after.
JNIEXPORT jlong JNICALL SESSION(createSessionFromArray)(JNIEnv* env, jclass, jlong env_handle, jbyteArray model,
                                                        jlong options_handle) {
  jsize length = env->GetArrayLength(model);
  jbyte* bytes = env->GetByteArrayElements(model, nullptr);
  if (bytes == nullptr) return 0;
  OnyxSession* session = nullptr;
  OnyxStatus* status = api->CreateSessionFromArray(from_handle<OnyxEnv>(env_handle), bytes, static_cast<size_t>(length),
                                                   from_handle<OnyxSessionOptions>(options_handle), &session);
  env->ReleaseByteArrayElements(model, bytes, JNI_ABORT);
  ONYX_JNI_CHECK(env, status, 0);
  return to_handle(session);
}

JNIEXPORT void JNICALL SESSION(releaseSession)(JNIEnv*, jclass, jlong handle) {
  api->ReleaseSession(from_handle<OnyxSession>(handle));
}

JNIEXPORT jobjectArray JNICALL SESSION(inputInfo)(JNIEnv* env, jclass, jlong handle) {
  auto* session = from_handle<OnyxSession>(handle);
  size_t count = 0;
  ONYX_JNI_CHECK(env, api->SessionGetInputCount(session, &count), nullptr);
  return node_infos(env, session, count, api->SessionGetInputName, api->SessionGetInputTypeInfo);
}

JNIEXPORT jobjectArray JNICALL SESSION(outputInfo)(JNIEnv* env, jclass, jlong handle) {
  auto* session = from_handle<OnyxSession>(handle);
  size_t count = 0;
  ONYX_JNI_CHECK(env, api->SessionGetOutputCount(session, &count), nullptr);
  return node_infos(env, session, count, api->SessionGetOutputName, api->SessionGetOutputTypeInfo);
}

JNIEXPORT jobjectArray JNICALL SESSION(overridableInitializerInfo)(JNIEnv* env, jclass, jlong handle) {
  auto* session = from_handle<OnyxSession>(handle);
  size_t count = 0;
  ONYX_JNI_CHECK(env, api->SessionGetOverridableInitializerCount(session, &count), nullptr);
  return node_infos(env, session, count, api->SessionGetOverridableInitializerName,
                    api->SessionGetOverridableInitializerTypeInfo);
}

// Runs the session; returns the handles of new values, one per output
// name, that Java then owns.
JNIEXPORT jlongArray JNICALL SESSION(run)(JNIEnv* env, jclass, jlong handle, jlong run_options_handle,
                                          jobjectArray input_names, jlongArray input_handles,
                                          jobjectArray output_names) {
  std::vector<std::string> inputs, outputs;
  std::vector<int64_t> input_values;
  if (!to_utf8_array(env, input_names, "input name", &inputs) ||
      !to_utf8_array(env, output_names, "output name", &outputs) || !to_int64_vector(env, input_handles, &input_values))
    return nullptr;
  std::vector<const OnyxValue*> feeds;
  feeds.reserve(input_values.size());
  for (int64_t value : input_values) feeds.push_back(from_handle<const OnyxValue>(value));
  std::vector<const char*> input_pointers = c_strings(inputs), output_pointers = c_strings(outputs);
  std::vector<OnyxValue*> results(outputs.size(), nullptr);
  ONYX_JNI_CHECK(env,
                 api->Run(from_handle<OnyxSession>(handle), from_handle<const OnyxRunOptions>(run_options_handle),
                          input_pointers.data(), feeds.data(), feeds.size(), output_pointers.data(),
                          output_pointers.size(), results.data()),
                 nullptr);
  std::vector<int64_t> result_handles;
  for (OnyxValue* value : results) result_handles.push_back(to_handle(value));
  jlongArray array = long_array(env, result_handles);
  if (array == nullptr) {
    for (OnyxValue* value : results) api->ReleaseValue(value);
  }
  return array;
}

// {producer, graph name, domain, description, graph description, version
// (Long), custom keys (String[]), custom values (String[])}.
JNIEXPORT jobjectArray JNICALL SESSION(metadata)(JNIEnv* env, jclass, jlong handle) {
  OnyxAllocator* allocator = default_allocator(env);
  if (allocator == nullptr) return nullptr;
  OnyxModelMetadata* metadata = nullptr;
  ONYX_JNI_CHECK(env, api->SessionGetModelMetadata(from_handle<OnyxSession>(handle), &metadata), nullptr);
  jclass object_class = env->FindClass("java/lang/Object");
  jobjectArray result = object_class ? env->NewObjectArray(8, object_class, nullptr) : nullptr;
  auto fail = [&]() -> jobjectArray {
    api->ReleaseModelMetadata(metadata);
    return nullptr;
  };
  if (result == nullptr) return fail();
  using StringGetter = OnyxStatus* (*)(const OnyxModelMetadata*, OnyxAllocator*, char**) noexcept;
  const StringGetter getters[] = {api->ModelMetadataGetProducerName, api->ModelMetadataGetGraphName,
                                  api->ModelMetadataGetDomain, api->ModelMetadataGetDescription,
                                  api->ModelMetadataGetGraphDescription};
  for (int i = 0; i < 5; ++i) {
    char* text = nullptr;
    if (throw_if_error(env, getters[i](metadata, allocator, &text))) return fail();
    jstring value = take_allocated_string(env, allocator, text);
    if (value == nullptr) return fail();
    env->SetObjectArrayElement(result, i, value);
    env->DeleteLocalRef(value);
  }
  int64_t version = 0;
  if (throw_if_error(env, api->ModelMetadataGetVersion(metadata, &version))) return fail();
  jclass long_class = env->FindClass("java/lang/Long");
  jmethodID value_of = long_class ? env->GetStaticMethodID(long_class, "valueOf", "(J)Ljava/lang/Long;") : nullptr;
  jobject boxed = value_of ? env->CallStaticObjectMethod(long_class, value_of, (jlong)version) : nullptr;
  if (env->ExceptionCheck() || boxed == nullptr) return fail();
  env->SetObjectArrayElement(result, 5, boxed);
  char** keys = nullptr;
  int64_t key_count = 0;
  if (throw_if_error(env, api->ModelMetadataGetCustomMetadataMapKeys(metadata, allocator, &keys, &key_count)))
    return fail();
  std::vector<std::string> key_strings, value_strings;
  bool ok = true;
  for (int64_t i = 0; i < key_count; ++i) {
    char* value = nullptr;
    if (ok && throw_if_error(env, api->ModelMetadataLookupCustomMetadataMap(metadata, allocator, keys[i], &value))) {
      ok = false;
    } else if (ok) {
      key_strings.emplace_back(keys[i]);
      value_strings.emplace_back(value != nullptr ? value : "");
      if (value != nullptr) api->ReleaseStatus(api->AllocatorFree(allocator, value));
    }
    api->ReleaseStatus(api->AllocatorFree(allocator, keys[i]));
  }
  if (keys != nullptr) api->ReleaseStatus(api->AllocatorFree(allocator, keys));
  api->ReleaseModelMetadata(metadata);
  if (!ok) return nullptr;
  jobjectArray key_array = string_array(env, key_strings);
  jobjectArray value_array = key_array ? string_array(env, value_strings) : nullptr;
  if (value_array == nullptr) return nullptr;
  env->SetObjectArrayElement(result, 6, key_array);
  env->SetObjectArrayElement(result, 7, value_array);
  return result;
}

JNIEXPORT jstring JNICALL SESSION(endProfiling)(JNIEnv* env, jclass, jlong handle) {
  OnyxAllocator* allocator = default_allocator(env);
  if (allocator == nullptr) return nullptr;
  char* file = nullptr;
  ONYX_JNI_CHECK(env, api->SessionEndProfiling(from_handle<OnyxSession>(handle), allocator, &file), nullptr);
  return take_allocated_string(env, allocator, file);
}

JNIEXPORT jlong JNICALL SESSION(profilingStartTimeNs)(JNIEnv* env, jclass, jlong handle) {
  uint64_t start = 0;
  ONYX_JNI_CHECK(env, api->SessionGetProfilingStartTimeNs(from_handle<OnyxSession>(handle), &start), 0);
  return static_cast<jlong>(start);
}

JNIEXPORT jobjectArray JNICALL SESSION(providers)(JNIEnv* env, jclass, jlong handle) {
  char** names = nullptr;
  int count = 0;
  ONYX_JNI_CHECK(env, api->SessionGetProviders(from_handle<OnyxSession>(handle), &names, &count), nullptr);
  std::vector<std::string> providers(names, names + count);
  api->ReleaseStatus(api->ReleaseAvailableProviders(names, count));
  return string_array(env, providers);
}

}  // extern "C"
