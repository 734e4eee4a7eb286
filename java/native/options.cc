// Native side of OnyxEnvironment, OnyxSession.SessionOptions and
// OnyxSession.RunOptions: each method is one call of the C API's table.
#include <string>
#include <vector>

#include "jni_util.h"

// The declarations javac -h wrote from the Java classes (build/java/jni_headers).
#include "ai_onyx_OnyxEnvironment.h"
#include "ai_onyx_OnyxSession_RunOptions.h"
#include "ai_onyx_OnyxSession_SessionOptions.h"

using namespace onyx_jni;

namespace {

// Calls `setter(options, key, value)` with both strings as UTF-8.
template <typename Handle, typename Setter>
void set_pair(JNIEnv* env, Handle* options, jstring key, jstring value, Setter setter) {
  std::string k, v;
  if (!to_utf8(env, key, &k) || !to_utf8(env, value, &v)) return;
  throw_if_error(env, setter(options, k.c_str(), v.c_str()));
}

template <typename Handle, typename Setter>
void set_string(JNIEnv* env, Handle* options, jstring value, Setter setter) {
  std::string v;
  if (!to_utf8(env, value, &v)) return;
  throw_if_error(env, setter(options, v.c_str()));
}

}  // namespace

extern "C" {

// ---- OnyxEnvironment

JNIEXPORT jlong JNICALL Java_ai_onyx_OnyxEnvironment_createEnv(JNIEnv* env, jclass, jint level, jstring name) {
  std::string id;
  if (!to_utf8(env, name, &id)) return 0;
  OnyxEnv* handle = nullptr;
  ONYX_JNI_CHECK(env, api->CreateEnv(static_cast<OnyxLoggingLevel>(level), id.c_str(), &handle), 0);
  return to_handle(handle);
}

// ---- OnyxSession.SessionOptions

#define SESSION_OPTIONS(name) Java_ai_onyx_OnyxSession_00024SessionOptions_##name

JNIEXPORT jlong JNICALL SESSION_OPTIONS(createOptions)(JNIEnv* env, jclass) {
  OnyxSessionOptions* options = nullptr;
  ONYX_JNI_CHECK(env, api->CreateSessionOptions(&options), 0);
  return to_handle(options);
}

JNIEXPORT void JNICALL SESSION_OPTIONS(releaseOptions)(JNIEnv*, jclass, jlong handle) {
  api->ReleaseSessionOptions(from_handle<OnyxSessionOptions>(handle));
}

JNIEXPORT void JNICALL SESSION_OPTIONS(setIntraOpNumThreads)(JNIEnv* env, jclass, jlong handle, jint threads) {
  throw_if_error(env, api->SetIntraOpNumThreads(from_handle<OnyxSessionOptions>(handle), threads));
}

JNIEXPORT void JNICALL SESSION_OPTIONS(setInterOpNumThreads)(JNIEnv* env, jclass, jlong handle, jint threads) {
  throw_if_error(env, api->SetInterOpNumThreads(from_handle<OnyxSessionOptions>(handle), threads));
}

JNIEXPORT void JNICALL SESSION_OPTIONS(setOptimizationLevel)(JNIEnv* env, jclass, jlong handle, jint level) {
  throw_if_error(env, api->SetSessionGraphOptimizationLevel(from_handle<OnyxSessionOptions>(handle),
                                                            static_cast<GraphOptimizationLevel>(level)));
}

JNIEXPORT void JNICALL SESSION_OPTIONS(setExecutionMode)(JNIEnv* env, jclass, jlong handle, jint mode) {
  throw_if_error(
      env, api->SetSessionExecutionMode(from_handle<OnyxSessionOptions>(handle), static_cast<ExecutionMode>(mode)));
}

JNIEXPORT void JNICALL SESSION_OPTIONS(setOptimizedModelFilePath)(JNIEnv* env, jclass, jlong handle, jstring path) {
  set_string(env, from_handle<OnyxSessionOptions>(handle), path, api->SetOptimizedModelFilePath);
}

JNIEXPORT void JNICALL SESSION_OPTIONS(enableProfiling)(JNIEnv* env, jclass, jlong handle, jstring prefix) {
  set_string(env, from_handle<OnyxSessionOptions>(handle), prefix, api->EnableProfiling);
}

JNIEXPORT void JNICALL SESSION_OPTIONS(disableProfiling)(JNIEnv* env, jclass, jlong handle) {
  throw_if_error(env, api->DisableProfiling(from_handle<OnyxSessionOptions>(handle)));
}

JNIEXPORT void JNICALL SESSION_OPTIONS(setMemoryPatternOptimization)(JNIEnv* env, jclass, jlong handle, jboolean on) {
  auto* options = from_handle<OnyxSessionOptions>(handle);
  throw_if_error(env, on ? api->EnableMemPattern(options) : api->DisableMemPattern(options));
}

JNIEXPORT void JNICALL SESSION_OPTIONS(setCPUArenaAllocator)(JNIEnv* env, jclass, jlong handle, jboolean on) {
  auto* options = from_handle<OnyxSessionOptions>(handle);
  throw_if_error(env, on ? api->EnableCpuMemArena(options) : api->DisableCpuMemArena(options));
}

JNIEXPORT void JNICALL SESSION_OPTIONS(setLoggerId)(JNIEnv* env, jclass, jlong handle, jstring id) {
  set_string(env, from_handle<OnyxSessionOptions>(handle), id, api->SetSessionLogId);
}

JNIEXPORT void JNICALL SESSION_OPTIONS(setSessionLogLevel)(JNIEnv* env, jclass, jlong handle, jint level) {
  throw_if_error(env, api->SetSessionLogSeverityLevel(from_handle<OnyxSessionOptions>(handle), level));
}

JNIEXPORT void JNICALL SESSION_OPTIONS(addConfigEntry)(JNIEnv* env, jclass, jlong handle, jstring key, jstring value) {
  set_pair(env, from_handle<OnyxSessionOptions>(handle), key, value, api->AddSessionConfigEntry);
}

JNIEXPORT void JNICALL SESSION_OPTIONS(addFreeDimensionOverrideByName)(JNIEnv* env, jclass, jlong handle, jstring name,
                                                                       jlong value) {
  std::string n;
  if (!to_utf8(env, name, &n)) return;
  throw_if_error(env, api->AddFreeDimensionOverrideByName(from_handle<OnyxSessionOptions>(handle), n.c_str(), value));
}

JNIEXPORT void JNICALL SESSION_OPTIONS(addFreeDimensionOverride)(JNIEnv* env, jclass, jlong handle, jstring denotation,
                                                                 jlong value) {
  std::string d;
  if (!to_utf8(env, denotation, &d)) return;
  throw_if_error(env, api->AddFreeDimensionOverride(from_handle<OnyxSessionOptions>(handle), d.c_str(), value));
}

JNIEXPORT void JNICALL SESSION_OPTIONS(addInitializer)(JNIEnv* env, jclass, jlong handle, jstring name, jlong value) {
  std::string n;
  if (!to_utf8(env, name, &n)) return;
  throw_if_error(
      env, api->AddInitializer(from_handle<OnyxSessionOptions>(handle), n.c_str(), from_handle<OnyxValue>(value)));
}

JNIEXPORT void JNICALL SESSION_OPTIONS(addExecutionProvider)(JNIEnv* env, jclass, jlong handle, jstring name,
                                                             jobjectArray keys, jobjectArray values) {
  std::string provider;
  std::vector<std::string> k, v;
  if (!to_utf8(env, name, &provider) || !to_utf8_array(env, keys, "provider option key", &k) ||
      !to_utf8_array(env, values, "provider option value", &v))
    return;
  std::vector<const char*> key_pointers = c_strings(k), value_pointers = c_strings(v);
  throw_if_error(env,
                 api->SessionOptionsAppendExecutionProvider(from_handle<OnyxSessionOptions>(handle), provider.c_str(),
                                                            key_pointers.data(), value_pointers.data(), k.size()));
}

JNIEXPORT void JNICALL SESSION_OPTIONS(registerCustomOpLibrary)(JNIEnv* env, jclass, jlong handle, jstring path) {
  set_string(env, from_handle<OnyxSessionOptions>(handle), path, api->RegisterCustomOpsLibrary_V2);
}

JNIEXPORT void JNICALL SESSION_OPTIONS(registerCustomOpsUsingFunction)(JNIEnv* env, jclass, jlong handle,
                                                                       jstring function) {
  set_string(env, from_handle<OnyxSessionOptions>(handle), function, api->RegisterCustomOpsUsingFunction);
}

// ---- OnyxSession.RunOptions

#define RUN_OPTIONS(name) Java_ai_onyx_OnyxSession_00024RunOptions_##name

JNIEXPORT jlong JNICALL RUN_OPTIONS(createRunOptions)(JNIEnv* env, jclass) {
  OnyxRunOptions* options = nullptr;
  ONYX_JNI_CHECK(env, api->CreateRunOptions(&options), 0);
  return to_handle(options);
}

JNIEXPORT void JNICALL RUN_OPTIONS(releaseRunOptions)(JNIEnv*, jclass, jlong handle) {
  api->ReleaseRunOptions(from_handle<OnyxRunOptions>(handle));
}

JNIEXPORT void JNICALL RUN_OPTIONS(setLogLevel)(JNIEnv* env, jclass, jlong handle, jint level) {
  throw_if_error(env, api->RunOptionsSetRunLogSeverityLevel(from_handle<OnyxRunOptions>(handle), level));
}

JNIEXPORT jint JNICALL RUN_OPTIONS(getLogLevel)(JNIEnv* env, jclass, jlong handle) {
  int level = 0;
  ONYX_JNI_CHECK(env, api->RunOptionsGetRunLogSeverityLevel(from_handle<OnyxRunOptions>(handle), &level), 0);
  return level;
}

JNIEXPORT void JNICALL RUN_OPTIONS(setRunTag)(JNIEnv* env, jclass, jlong handle, jstring tag) {
  set_string(env, from_handle<OnyxRunOptions>(handle), tag, api->RunOptionsSetRunTag);
}

JNIEXPORT jstring JNICALL RUN_OPTIONS(getRunTag)(JNIEnv* env, jclass, jlong handle) {
  const char* tag = nullptr;
  ONYX_JNI_CHECK(env, api->RunOptionsGetRunTag(from_handle<OnyxRunOptions>(handle), &tag), nullptr);
  return from_utf8(env, tag);
}

JNIEXPORT void JNICALL RUN_OPTIONS(setTerminate)(JNIEnv* env, jclass, jlong handle, jboolean terminate) {
  auto* options = from_handle<OnyxRunOptions>(handle);
  throw_if_error(env, terminate ? api->RunOptionsSetTerminate(options) : api->RunOptionsUnsetTerminate(options));
}

JNIEXPORT void JNICALL RUN_OPTIONS(addRunConfigEntry)(JNIEnv* env, jclass, jlong handle, jstring key, jstring value) {
  set_pair(env, from_handle<OnyxRunOptions>(handle), key, value, api->AddRunConfigEntry);
}

}  // extern "C"
