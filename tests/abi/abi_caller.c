/* The ABI check's caller (tests/python/test_abi.py): built twice from this
   file, against today's header (onyx_abi_caller, C API version 1) and
   against the next one (onyx_abi_caller_next: ONYX_ABI_TEST_NEXT, version 2,
   one function appended to the table), and run against either library by
   LD_LIBRARY_PATH.

     onyx_abi_caller MODEL_DIR

   Prints the library it runs on, whether that library serves the next
   version, and tiny_cnn's output (one thread, the input every language
   feeds) as "output probabilities: ..." for the test to compare with
   Python's. Exits 3 when the library does not serve the version this
   program was compiled for (GetApi returned NULL), 1 on any other failure. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "onyx/onyx_c_api.h"

static const OnyxApi* api;

static void check(OnyxStatus* status, const char* what) {
  if (status == NULL) return;
  fprintf(stderr, "FAILED: %s: %s\n", what, api->GetErrorMessage(status));
  exit(1);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
    return 2;
  }
  const OnyxApiBase* base = OnyxGetApiBase();
  /* The table lives in the library's data: its file is the library in use. */
  Dl_info where;
  if (dladdr((const void*)base, &where) != 0 && where.dli_fname != NULL) printf("library: %s\n", where.dli_fname);
  printf("header version: %d\n", ONYX_API_VERSION);
  api = base->GetApi(ONYX_API_VERSION);
  if (api == NULL) {
    printf("GetApi(%d) is NULL: the library is older than this program's header\n", ONYX_API_VERSION);
    return 3;
  }
  printf("serves version %d: %s\n", ONYX_API_VERSION + 1, base->GetApi(ONYX_API_VERSION + 1) != NULL ? "yes" : "no");
#ifdef ONYX_ABI_TEST_NEXT
  printf("appended function: %s\n", api->AbiTestAppended());
#endif

  char path[4096];
  snprintf(path, sizeof path, "%s/tiny_cnn.onnx", argv[1]);
  OnyxSessionOptions* options = NULL;
  check(api->CreateSessionOptions(&options), "CreateSessionOptions");
  check(api->SetIntraOpNumThreads(options, 1), "SetIntraOpNumThreads");
  OnyxSession* session = NULL;
  check(api->CreateSession(NULL, path, options, &session), "CreateSession");

  enum { kCount = 3 * 32 * 32 };
  static float image[kCount];
  for (size_t i = 0; i < kCount; ++i) image[i] = (float)((int)((i * 7) % 101) - 50) / 64.0f;
  const int64_t shape[4] = {1, 3, 32, 32};
  OnyxMemoryInfo* cpu = NULL;
  check(api->CreateCpuMemoryInfo(OnyxArenaAllocator, OnyxMemTypeDefault, &cpu), "CreateCpuMemoryInfo");
  OnyxValue* input = NULL;
  check(api->CreateTensorWithDataAsOnyxValue(cpu, image, sizeof image, shape, 4, ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT,
                                             &input),
        "CreateTensorWithDataAsOnyxValue");
  const char* input_names[] = {"image"};
  const char* output_names[] = {"probabilities"};
  OnyxValue* output = NULL;
  check(api->Run(session, NULL, input_names, (const OnyxValue* const*)&input, 1, output_names, 1, &output), "Run");
  OnyxTensorTypeAndShapeInfo* info = NULL;
  check(api->GetTensorTypeAndShape(output, &info), "GetTensorTypeAndShape");
  size_t count = 0;
  check(api->GetTensorShapeElementCount(info, &count), "GetTensorShapeElementCount");
  api->ReleaseTensorTypeAndShapeInfo(info);
  float* data = NULL;
  check(api->GetTensorMutableData(output, (void**)&data), "GetTensorMutableData");
  printf("output probabilities:");
  for (size_t i = 0; i < count; ++i) printf(" %.9g", data[i]);
  printf("\n");

  api->ReleaseValue(output);
  api->ReleaseValue(input);
  api->ReleaseMemoryInfo(cpu);
  api->ReleaseSession(session);
  api->ReleaseSessionOptions(options);
  printf("abi caller passed\n");
  return 0;
}
