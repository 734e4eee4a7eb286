/* The C API from a C program (C11, no C++): every group of functions of the
   table, errors included, and the cross-language check's output.

     onyx_capi_test MODEL_DIR [CUSTOM_OP_LIBRARY CUSTOM_OP_MODEL]

   MODEL_DIR holds tiny_cnn.onnx (the repository's models/). With a custom
   operator library (examples/custom_op_library) and a model using it, those
   are checked too. Prints "ok: ..." per check and, last, the outputs the
   cross-language test compares (tests/python/test_c_api.py), as
   "output NAME: v0 v1 ..." lines with 9 significant digits. Exits 1 on the
   first failure, naming it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onyx/onyx_c_api.h"

static const OnyxApi* api;

static void fail(const char* what, OnyxStatus* status) {
  fprintf(stderr, "FAILED: %s: %s\n", what, status != NULL ? api->GetErrorMessage(status) : "(no status)");
  exit(1);
}
#define CHECK(expr)                  \
  do {                               \
    OnyxStatus* s_ = (expr);         \
    if (s_ != NULL) fail(#expr, s_); \
  } while (0)
#define EXPECT(cond)                                              \
  do {                                                            \
    if (!(cond)) {                                                \
      fprintf(stderr, "FAILED: %s (line %d)\n", #cond, __LINE__); \
      exit(1);                                                    \
    }                                                             \
  } while (0)

/* The status `expr` returns must be an error of `code` whose message holds `text`. */
static void expect_error(OnyxStatus* status, OnyxErrorCode code, const char* text, const char* what) {
  if (status == NULL) {
    fprintf(stderr, "FAILED: %s succeeded; an error was expected\n", what);
    exit(1);
  }
  if (api->GetErrorCode(status) != code || strstr(api->GetErrorMessage(status), text) == NULL) {
    fprintf(stderr, "FAILED: %s: error %d '%s'; expected %d containing '%s'\n", what, (int)api->GetErrorCode(status),
            api->GetErrorMessage(status), (int)code, text);
    exit(1);
  }
  printf("ok: %s -> %s\n", what, api->GetErrorMessage(status));
  api->ReleaseStatus(status);
}

/* The input every language feeds tiny_cnn: exact in any floating point. */
static void fill_image(float* image, size_t count) {
  for (size_t i = 0; i < count; ++i) image[i] = (float)((int)((i * 7) % 101) - 50) / 64.0f;
}

static void print_output(const char* name, const float* data, size_t count) {
  printf("output %s:", name);
  for (size_t i = 0; i < count; ++i) printf(" %.9g", data[i]);
  printf("\n");
}

static OnyxSessionOptions* single_thread_options(void) {
  OnyxSessionOptions* options = NULL;
  CHECK(api->CreateSessionOptions(&options));
  CHECK(api->SetIntraOpNumThreads(options, 1));
  return options;
}

static void check_versions(void) {
  const OnyxApiBase* base = OnyxGetApiBase();
  EXPECT(base->GetApi(ONYX_API_VERSION) == api);
  EXPECT(base->GetApi(ONYX_API_VERSION + 1) == NULL);
  EXPECT(base->GetApi(0) == NULL);
  EXPECT(strlen(base->GetVersionString()) > 0);
  EXPECT(strstr(api->GetBuildInfoString(), "onyx") != NULL);
  char** providers = NULL;
  int count = 0;
  CHECK(api->GetAvailableProviders(&providers, &count));
  int has_cpu = 0;
  for (int i = 0; i < count; ++i) has_cpu |= strcmp(providers[i], "CPUExecutionProvider") == 0;
  EXPECT(has_cpu);
  CHECK(api->ReleaseAvailableProviders(providers, count));
  printf("ok: versions, build info, %d providers\n", count);
}

static void check_tiny_cnn(const char* model_dir, float* probabilities, size_t* probability_count) {
  char path[4096];
  snprintf(path, sizeof path, "%s/tiny_cnn.onnx", model_dir);
  OnyxEnv* env = NULL;
  CHECK(api->CreateEnv(ONYX_LOGGING_LEVEL_WARNING, "capi_test", &env));
  OnyxSessionOptions* options = single_thread_options();
  CHECK(api->SetSessionGraphOptimizationLevel(options, ONYX_ENABLE_ALL));
  CHECK(api->AddSessionConfigEntry(options, "session.use_env_allocators", "0"));
  OnyxSession* session = NULL;
  CHECK(api->CreateSession(env, path, options, &session));

  OnyxAllocator* allocator = NULL;
  CHECK(api->GetAllocatorWithDefaultOptions(&allocator));
  size_t inputs = 0, outputs = 0;
  CHECK(api->SessionGetInputCount(session, &inputs));
  CHECK(api->SessionGetOutputCount(session, &outputs));
  EXPECT(inputs == 1 && outputs == 1);
  char* input_name = NULL;
  char* output_name = NULL;
  CHECK(api->SessionGetInputName(session, 0, allocator, &input_name));
  CHECK(api->SessionGetOutputName(session, 0, allocator, &output_name));
  EXPECT(strcmp(input_name, "image") == 0);

  OnyxTypeInfo* type_info = NULL;
  CHECK(api->SessionGetInputTypeInfo(session, 0, &type_info));
  ONNXType onnx_type;
  CHECK(api->GetOnnxTypeFromTypeInfo(type_info, &onnx_type));
  EXPECT(onnx_type == ONNX_TYPE_TENSOR);
  const OnyxTensorTypeAndShapeInfo* tensor_info = NULL;
  CHECK(api->CastTypeInfoToTensorInfo(type_info, &tensor_info));
  ONNXTensorElementDataType element;
  size_t rank = 0;
  CHECK(api->GetTensorElementType(tensor_info, &element));
  CHECK(api->GetDimensionsCount(tensor_info, &rank));
  EXPECT(element == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT && rank == 4);
  int64_t dims[4];
  const char* symbols[4];
  CHECK(api->GetDimensions(tensor_info, dims, 4));
  CHECK(api->GetSymbolicDimensions(tensor_info, symbols, 4));
  EXPECT(dims[0] == -1 && strcmp(symbols[0], "batch") == 0 && dims[1] == 3 && dims[2] == 32 && dims[3] == 32);
  api->ReleaseTypeInfo(type_info);

  /* The input over this program's memory, no copy. */
  enum { kCount = 3 * 32 * 32 };
  static float image[kCount];
  fill_image(image, kCount);
  const int64_t shape[4] = {1, 3, 32, 32};
  OnyxMemoryInfo* cpu = NULL;
  CHECK(api->CreateCpuMemoryInfo(OnyxArenaAllocator, OnyxMemTypeDefault, &cpu));
  OnyxValue* input = NULL;
  CHECK(api->CreateTensorWithDataAsOnyxValue(cpu, image, sizeof image, shape, 4, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
                                             &input));
  void* input_data = NULL;
  CHECK(api->GetTensorMutableData(input, &input_data));
  EXPECT(input_data == (void*)image);

  OnyxRunOptions* run_options = NULL;
  CHECK(api->CreateRunOptions(&run_options));
  CHECK(api->RunOptionsSetRunTag(run_options, "capi"));
  const char* tag = NULL;
  CHECK(api->RunOptionsGetRunTag(run_options, &tag));
  EXPECT(strcmp(tag, "capi") == 0);
  const char* input_names[] = {input_name};
  const char* output_names[] = {output_name};
  OnyxValue* output = NULL;
  CHECK(api->Run(session, run_options, input_names, (const OnyxValue* const*)&input, 1, output_names, 1, &output));
  OnyxTensorTypeAndShapeInfo* out_info = NULL;
  CHECK(api->GetTensorTypeAndShape(output, &out_info));
  size_t out_count = 0;
  CHECK(api->GetTensorShapeElementCount(out_info, &out_count));
  api->ReleaseTensorTypeAndShapeInfo(out_info);
  float* out_data = NULL;
  CHECK(api->GetTensorMutableData(output, (void**)&out_data));
  double sum = 0;
  for (size_t i = 0; i < out_count; ++i) sum += out_data[i];
  EXPECT(out_count == 10 && fabs(sum - 1.0) < 1e-5); /* softmax probabilities */
  memcpy(probabilities, out_data, out_count * sizeof(float));
  *probability_count = out_count;
  printf("ok: tiny_cnn runs, %zu probabilities summing to %.6f\n", out_count, sum);

  /* A pre-allocated output is written in place. */
  OnyxValue* preallocated = NULL;
  const int64_t out_shape[2] = {1, 10};
  CHECK(api->CreateTensorAsOnyxValue(allocator, out_shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &preallocated));
  CHECK(api->Run(session, NULL, input_names, (const OnyxValue* const*)&input, 1, output_names, 1, &preallocated));
  float* pre_data = NULL;
  CHECK(api->GetTensorMutableData(preallocated, (void**)&pre_data));
  EXPECT(memcmp(pre_data, out_data, 10 * sizeof(float)) == 0);
  api->ReleaseValue(preallocated);
  printf("ok: a pre-allocated output is filled\n");

  /* I/O binding with the output left in a caller's tensor. */
  OnyxIoBinding* binding = NULL;
  CHECK(api->CreateIoBinding(session, &binding));
  CHECK(api->BindInput(binding, input_name, input));
  static float bound[10];
  OnyxValue* bound_value = NULL;
  CHECK(api->CreateTensorWithDataAsOnyxValue(cpu, bound, sizeof bound, out_shape, 2,
                                             ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &bound_value));
  CHECK(api->BindOutput(binding, output_name, bound_value));
  CHECK(api->RunWithBinding(session, run_options, binding));
  EXPECT(memcmp(bound, out_data, sizeof bound) == 0);
  OnyxValue** bound_outputs = NULL;
  size_t bound_count = 0;
  CHECK(api->GetBoundOutputValues(binding, allocator, &bound_outputs, &bound_count));
  EXPECT(bound_count == 1);
  api->ReleaseValue(bound_outputs[0]);
  CHECK(api->AllocatorFree(allocator, bound_outputs));
  char* names_buffer = NULL;
  size_t* lengths = NULL;
  size_t names_count = 0;
  CHECK(api->GetBoundOutputNames(binding, allocator, &names_buffer, &lengths, &names_count));
  EXPECT(names_count == 1 && lengths[0] == strlen(output_name) && strncmp(names_buffer, output_name, lengths[0]) == 0);
  CHECK(api->AllocatorFree(allocator, names_buffer));
  CHECK(api->AllocatorFree(allocator, lengths));
  api->ReleaseIoBinding(binding);
  api->ReleaseValue(bound_value);
  printf("ok: I/O binding into a caller's buffer\n");

  /* Errors: a missing input, a wrong shape, an unknown output, a short buffer. */
  expect_error(api->Run(session, NULL, NULL, NULL, 0, output_names, 1, &output), ONYX_INVALID_ARGUMENT, "image",
               "Run without its input");
  const int64_t bad_shape[4] = {1, 3, 16, 16};
  OnyxValue* bad = NULL;
  CHECK(api->CreateTensorWithDataAsOnyxValue(cpu, image, sizeof image, bad_shape, 4,
                                             ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &bad));
  OnyxValue* none = NULL;
  OnyxStatus* wrong = api->Run(session, NULL, input_names, (const OnyxValue* const*)&bad, 1, output_names, 1, &none);
  EXPECT(wrong != NULL && none == NULL);
  printf("ok: a wrong input shape -> %s\n", api->GetErrorMessage(wrong));
  api->ReleaseStatus(wrong);
  api->ReleaseValue(bad);
  const char* unknown[] = {"no_such_output"};
  expect_error(api->Run(session, NULL, input_names, (const OnyxValue* const*)&input, 1, unknown, 1, &none),
               ONYX_INVALID_ARGUMENT, "no_such_output", "Run with an unknown output");
  expect_error(
      api->CreateTensorWithDataAsOnyxValue(cpu, image, 16, shape, 4, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &bad),
      ONYX_INVALID_ARGUMENT, "needs", "a tensor over too small a buffer");

  /* Terminate: a run with the flag set stops with an error. */
  CHECK(api->RunOptionsSetTerminate(run_options));
  OnyxStatus* stopped =
      api->Run(session, run_options, input_names, (const OnyxValue* const*)&input, 1, output_names, 1, &none);
  EXPECT(stopped != NULL && strstr(api->GetErrorMessage(stopped), "terminated") != NULL);
  api->ReleaseStatus(stopped);
  CHECK(api->RunOptionsUnsetTerminate(run_options));
  printf("ok: RunOptionsSetTerminate stops a run\n");

  /* A session's allocator: memory for the session's device, released before it. */
  OnyxAllocator* session_allocator = NULL;
  CHECK(api->CreateAllocator(session, cpu, &session_allocator));
  void* block = NULL;
  CHECK(api->AllocatorAlloc(session_allocator, 1000, &block));
  memset(block, 1, 1000);
  const OnyxMemoryInfo* allocator_info = NULL;
  CHECK(api->AllocatorGetInfo(session_allocator, &allocator_info));
  int same = -1;
  CHECK(api->CompareMemoryInfo(allocator_info, cpu, &same));
  EXPECT(same == 0);
  CHECK(api->AllocatorFree(session_allocator, block));
  api->ReleaseAllocator(session_allocator);
  api->ReleaseAllocator(allocator); /* the default one: ignored */
  printf("ok: a session's allocator\n");

  /* Metadata. */
  OnyxModelMetadata* metadata = NULL;
  CHECK(api->SessionGetModelMetadata(session, &metadata));
  char* producer = NULL;
  CHECK(api->ModelMetadataGetProducerName(metadata, allocator, &producer));
  int64_t version = -1;
  CHECK(api->ModelMetadataGetVersion(metadata, &version));
  char** keys = NULL;
  int64_t key_count = -1;
  CHECK(api->ModelMetadataGetCustomMetadataMapKeys(metadata, allocator, &keys, &key_count));
  for (int64_t i = 0; i < key_count; ++i) CHECK(api->AllocatorFree(allocator, keys[i]));
  CHECK(api->AllocatorFree(allocator, keys));
  printf("ok: metadata: producer '%s', version %lld, %lld custom keys\n", producer, (long long)version,
         (long long)key_count);
  CHECK(api->AllocatorFree(allocator, producer));
  api->ReleaseModelMetadata(metadata);

  api->ReleaseValue(output);
  api->ReleaseValue(input);
  api->ReleaseRunOptions(run_options);
  api->ReleaseMemoryInfo(cpu);
  CHECK(api->AllocatorFree(allocator, input_name));
  CHECK(api->AllocatorFree(allocator, output_name));
  api->ReleaseSession(session);
  api->ReleaseSessionOptions(options);
  api->ReleaseEnv(env);
}

static void check_values(void) {
  OnyxAllocator* allocator = NULL;
  CHECK(api->GetAllocatorWithDefaultOptions(&allocator));
  /* Strings. */
  const int64_t shape[1] = {3};
  OnyxValue* strings = NULL;
  CHECK(api->CreateTensorAsOnyxValue(allocator, shape, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING, &strings));
  const char* words[] = {"onyx", "", "runs"};
  CHECK(api->FillStringTensor(strings, words, 3));
  size_t total = 0;
  CHECK(api->GetStringTensorDataLength(strings, &total));
  EXPECT(total == 8);
  char content[8];
  size_t offsets[3];
  CHECK(api->GetStringTensorContent(strings, content, sizeof content, offsets, 3));
  EXPECT(offsets[0] == 0 && offsets[1] == 4 && offsets[2] == 4 && memcmp(content, "onyxruns", 8) == 0);
  size_t length = 0;
  CHECK(api->GetStringTensorElementLength(strings, 2, &length));
  char element[4];
  CHECK(api->GetStringTensorElement(strings, sizeof element, 2, element));
  EXPECT(length == 4 && memcmp(element, "runs", 4) == 0);
  printf("ok: string tensors\n");

  /* A sequence of two tensors, and a map. */
  float a[2] = {1, 2};
  float b[3] = {3, 4, 5};
  OnyxMemoryInfo* cpu = NULL;
  CHECK(api->CreateCpuMemoryInfo(OnyxDeviceAllocator, OnyxMemTypeDefault, &cpu));
  const int64_t two[1] = {2}, three[1] = {3};
  OnyxValue* items[2] = {NULL, NULL};
  CHECK(api->CreateTensorWithDataAsOnyxValue(cpu, a, sizeof a, two, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &items[0]));
  CHECK(
      api->CreateTensorWithDataAsOnyxValue(cpu, b, sizeof b, three, 1, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &items[1]));
  OnyxValue* sequence = NULL;
  CHECK(api->CreateValue((const OnyxValue* const*)items, 2, ONNX_TYPE_SEQUENCE, &sequence));
  ONNXType type;
  size_t count = 0;
  CHECK(api->GetValueType(sequence, &type));
  CHECK(api->GetValueCount(sequence, &count));
  EXPECT(type == ONNX_TYPE_SEQUENCE && count == 2);
  OnyxValue* second = NULL;
  CHECK(api->GetValue(sequence, 1, allocator, &second));
  float* second_data = NULL;
  CHECK(api->GetTensorMutableData(second, (void**)&second_data));
  EXPECT(second_data == b);
  expect_error(api->GetValue(sequence, 2, allocator, &second), ONYX_INVALID_ARGUMENT, "out of range",
               "GetValue past a sequence's end");
  api->ReleaseValue(second);
  api->ReleaseValue(sequence);

  int64_t key_data[2] = {10, 20};
  OnyxValue* keys = NULL;
  CHECK(api->CreateTensorWithDataAsOnyxValue(cpu, key_data, sizeof key_data, two, 1,
                                             ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64, &keys));
  OnyxValue* pair[2] = {keys, items[0]};
  OnyxValue* map = NULL;
  CHECK(api->CreateValue((const OnyxValue* const*)pair, 2, ONNX_TYPE_MAP, &map));
  OnyxTypeInfo* map_type = NULL;
  CHECK(api->GetTypeInfo(map, &map_type));
  const OnyxMapTypeInfo* map_info = NULL;
  CHECK(api->CastTypeInfoToMapTypeInfo(map_type, &map_info));
  ONNXTensorElementDataType key_type;
  CHECK(api->GetMapKeyType(map_info, &key_type));
  EXPECT(key_type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  api->ReleaseTypeInfo(map_type);
  OnyxValue* map_values = NULL;
  CHECK(api->GetValue(map, 1, allocator, &map_values));
  api->ReleaseValue(map_values);
  api->ReleaseValue(map);
  api->ReleaseValue(keys);
  api->ReleaseValue(items[0]);
  api->ReleaseValue(items[1]);
  api->ReleaseValue(strings);
  api->ReleaseMemoryInfo(cpu);
  printf("ok: sequences and maps\n");
}

/* ---- a custom op defined in this program: Twice(X) = 2 X, float ---- */

static OnyxStatus* ONYX_API_CALL twice_create(const OnyxCustomOp* op, const OnyxApi* a, const OnyxKernelInfo* info,
                                              void** kernel) {
  (void)op;
  (void)a;
  (void)info;
  *kernel = NULL;
  return NULL;
}
static OnyxStatus* ONYX_API_CALL twice_compute(void* kernel, OnyxKernelContext* context) {
  (void)kernel;
  const OnyxValue* x = NULL;
  OnyxStatus* s = api->KernelContext_GetInput(context, 0, &x);
  if (s != NULL) return s;
  OnyxTensorTypeAndShapeInfo* info = NULL;
  if ((s = api->GetTensorTypeAndShape(x, &info)) != NULL) return s;
  size_t rank = 0, count = 0;
  api->GetDimensionsCount(info, &rank);
  api->GetTensorShapeElementCount(info, &count);
  int64_t dims[8];
  api->GetDimensions(info, dims, rank < 8 ? rank : 8);
  api->ReleaseTensorTypeAndShapeInfo(info);
  OnyxValue* y = NULL;
  if ((s = api->KernelContext_GetOutput(context, 0, dims, rank, &y)) != NULL) return s;
  float *in = NULL, *out = NULL;
  api->GetTensorMutableData((OnyxValue*)x, (void**)&in);
  api->GetTensorMutableData(y, (void**)&out);
  for (size_t i = 0; i < count; ++i) out[i] = 2 * in[i];
  return NULL;
}
static const char* ONYX_API_CALL twice_name(const OnyxCustomOp* op) {
  (void)op;
  return "Twice";
}
static size_t ONYX_API_CALL one(const OnyxCustomOp* op) {
  (void)op;
  return 1;
}
static ONNXTensorElementDataType ONYX_API_CALL float_type(const OnyxCustomOp* op, size_t i) {
  (void)op;
  (void)i;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}
static void ONYX_API_CALL no_destroy(void* kernel) { (void)kernel; }

/* Twice(x) in domain "test.capi", written as ONNX protobuf bytes by hand is
   long; the model comes from the Python test instead when given. Here the op
   is registered and a model is built through the custom-op model path. */
static void check_custom_ops(const char* library, const char* model) {
  /* In-process domain: registering works and a bad op is refused clearly. */
  static OnyxCustomOp twice;
  memset(&twice, 0, sizeof twice);
  twice.version = ONYX_API_VERSION;
  twice.GetName = twice_name;
  twice.GetInputType = float_type;
  twice.GetInputTypeCount = one;
  twice.GetOutputType = float_type;
  twice.GetOutputTypeCount = one;
  twice.CreateKernelV2 = twice_create;
  twice.KernelComputeV2 = twice_compute;
  twice.KernelDestroy = no_destroy;
  OnyxCustomOpDomain* domain = NULL;
  CHECK(api->CreateCustomOpDomain("test.capi", &domain));
  CHECK(api->CustomOpDomain_Add(domain, &twice));
  OnyxSessionOptions* options = single_thread_options();
  CHECK(api->AddCustomOpDomain(options, domain));
  static OnyxCustomOp nameless;
  memset(&nameless, 0, sizeof nameless);
  nameless.version = ONYX_API_VERSION;
  OnyxCustomOpDomain* bad_domain = NULL;
  CHECK(api->CreateCustomOpDomain("test.bad", &bad_domain));
  CHECK(api->CustomOpDomain_Add(bad_domain, &nameless));
  expect_error(api->AddCustomOpDomain(options, bad_domain), ONYX_INVALID_ARGUMENT, "lacks GetName",
               "a custom op without its functions");
  api->ReleaseCustomOpDomain(bad_domain);
  api->ReleaseCustomOpDomain(domain);

  expect_error(api->RegisterCustomOpsLibrary_V2(options, "/no/such/library.so"), ONYX_NO_SUCHFILE, "cannot load",
               "a missing custom op library");
  if (library == NULL) {
    api->ReleaseSessionOptions(options);
    return;
  }
  CHECK(api->RegisterCustomOpsLibrary_V2(options, library));
  OnyxSession* session = NULL;
  CHECK(api->CreateSession(NULL, model, options, &session));
  /* The model: Y = Twice(ScaledTanh(X, scale=2)), Z = CheckPositive(X); X float [2, 3]. */
  float x[6] = {0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f};
  const int64_t shape[2] = {2, 3};
  OnyxMemoryInfo* cpu = NULL;
  CHECK(api->CreateCpuMemoryInfo(OnyxArenaAllocator, OnyxMemTypeDefault, &cpu));
  OnyxValue* input = NULL;
  CHECK(api->CreateTensorWithDataAsOnyxValue(cpu, x, sizeof x, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &input));
  const char* input_names[] = {"X"};
  const char* output_names[] = {"Y", "Z"};
  OnyxValue* outputs[2] = {NULL, NULL};
  CHECK(api->Run(session, NULL, input_names, (const OnyxValue* const*)&input, 1, output_names, 2, outputs));
  float* y = NULL;
  CHECK(api->GetTensorMutableData(outputs[0], (void**)&y));
  for (int i = 0; i < 6; ++i) EXPECT(fabsf(y[i] - 2.0f * 2.0f * tanhf(x[i])) < 1e-6f);
  print_output("Y", y, 6);
  api->ReleaseValue(outputs[0]);
  api->ReleaseValue(outputs[1]);
  printf("ok: the custom op library and an in-process custom op run in one model\n");

  /* A custom op's error names the node. */
  x[4] = -1.0f;
  outputs[0] = outputs[1] = NULL;
  expect_error(api->Run(session, NULL, input_names, (const OnyxValue* const*)&input, 1, output_names, 2, outputs),
               ONYX_FAIL, "CheckPositive 'positive_check': the custom operator failed: element 4 is -1, not positive",
               "a custom op that fails");
  api->ReleaseValue(input);
  api->ReleaseMemoryInfo(cpu);
  api->ReleaseSession(session);
  api->ReleaseSessionOptions(options);
}

/* A run stopped from another thread. */
static void check_errors(void) {
  OnyxSession* session = NULL;
  expect_error(api->CreateSession(NULL, "/no/such/model.onnx", NULL, &session), ONYX_NO_SUCHFILE, "no model file",
               "a missing model file");
  const char garbage[] = "this is not an onnx model";
  OnyxStatus* status = api->CreateSessionFromArray(NULL, garbage, sizeof garbage, NULL, &session);
  EXPECT(status != NULL && session == NULL && api->GetErrorCode(status) == ONYX_INVALID_PROTOBUF);
  printf("ok: a malformed model -> %s\n", api->GetErrorMessage(status));
  api->ReleaseStatus(status);
  OnyxSessionOptions* options = NULL;
  CHECK(api->CreateSessionOptions(&options));
  expect_error(api->SetIntraOpNumThreads(options, -1), ONYX_INVALID_ARGUMENT, "intra_op_num_threads",
               "a negative thread count");
  CHECK(api->SessionOptionsAppendExecutionProvider(options, "NoSuchExecutionProvider", NULL, NULL, 0));
  status = api->CreateSessionFromArray(NULL, garbage, sizeof garbage, options, &session);
  EXPECT(status != NULL);
  api->ReleaseStatus(status);
  api->ReleaseSessionOptions(options);
  OnyxStatus* made = api->CreateStatus(ONYX_EP_FAIL, "made here");
  EXPECT(api->GetErrorCode(made) == ONYX_EP_FAIL && strcmp(api->GetErrorMessage(made), "made here") == 0);
  api->ReleaseStatus(made);
  api->ReleaseStatus(NULL);
  api->ReleaseValue(NULL);
  api->ReleaseSession(NULL);
  printf("ok: errors\n");
}

/* Values and memory outside any session: an empty optional, an empty
   sequence, the host's shared allocator, copies between tensors. */
static void check_values_outside_sessions(void) {
  OnyxValue* none = NULL;
  CHECK(api->CreateNoneValue(NULL, &none));
  int has_value = 1;
  CHECK(api->HasValue(none, &has_value));
  EXPECT(has_value == 0);
  api->ReleaseValue(none);

  OnyxValue* sequence = NULL;
  CHECK(api->CreateEmptySequence(NULL, &sequence));
  size_t items = 99;
  CHECK(api->GetValueCount(sequence, &items));
  EXPECT(items == 0);
  api->ReleaseValue(sequence);

  OnyxMemoryInfo* cpu = NULL;
  CHECK(api->CreateCpuMemoryInfo(OnyxArenaAllocator, OnyxMemTypeDefault, &cpu));
  OnyxAllocator* shared = NULL;
  CHECK(api->GetSharedAllocator(NULL, cpu, &shared));
  EXPECT(shared != NULL);
  const int64_t shape[] = {2, 3};
  OnyxValue* to = NULL;
  CHECK(api->CreateTensorAsOnyxValue(shared, shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &to));
  float numbers[6] = {1, 2, 3, 4, 5, 6};
  OnyxValue* from = NULL;
  CHECK(api->CreateTensorWithDataAsOnyxValue(cpu, numbers, sizeof numbers, shape, 2,
                                             ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &from));
  const OnyxValue* src = from;
  CHECK(api->CopyTensors(NULL, &src, &to, NULL, 1));
  float* copied = NULL;
  CHECK(api->GetTensorMutableData(to, (void**)&copied));
  EXPECT(copied != numbers && memcmp(copied, numbers, sizeof numbers) == 0);
  const int64_t other_shape[] = {3, 2};
  OnyxValue* other = NULL;
  CHECK(api->CreateTensorAsOnyxValue(shared, other_shape, 2, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &other));
  expect_error(api->CopyTensors(NULL, &src, &other, NULL, 1), ONYX_INVALID_ARGUMENT, "cannot copy",
               "CopyTensors between shapes [2,3] and [3,2]");
  api->ReleaseValue(other);
  api->ReleaseValue(from);
  api->ReleaseValue(to);
  api->ReleaseAllocator(shared); /* ignored: the shared allocator is the library's */
  api->ReleaseMemoryInfo(cpu);
  printf("ok: values and memory outside sessions\n");
}

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) {
    fprintf(stderr, "usage: %s MODEL_DIR [CUSTOM_OP_LIBRARY CUSTOM_OP_MODEL]\n", argv[0]);
    return 2;
  }
  api = OnyxGetApi(ONYX_API_VERSION);
  if (api == NULL) {
    fprintf(stderr, "FAILED: this library does not serve C API version %d\n", ONYX_API_VERSION);
    return 1;
  }
  check_versions();
  float probabilities[16];
  size_t count = 0;
  check_tiny_cnn(argv[1], probabilities, &count);
  check_values();
  check_values_outside_sessions();
  check_errors();
  check_custom_ops(argc == 4 ? argv[2] : NULL, argc == 4 ? argv[3] : NULL);
  print_output("probabilities", probabilities, count);
  printf("all C API checks passed\n");
  return 0;
}
