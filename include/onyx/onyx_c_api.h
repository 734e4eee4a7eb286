/* onyx's C API: one versioned table of functions over opaque handles.

   Porting a program written for onnxruntime's C API is a rename: every
   function, type and constant carries onnxruntime's name with `Ort` turned
   into `Onyx` and `ORT_` into `ONYX_` (OrtGetApiBase -> OnyxGetApiBase,
   ORT_API_VERSION -> ONYX_API_VERSION, CreateTensorWithDataAsOrtValue ->
   CreateTensorWithDataAsOnyxValue). Types onnxruntime names without `Ort`
   (ONNXTensorElementDataType, ONNXType, GraphOptimizationLevel,
   ExecutionMode) keep their names, with their constants' `ORT_` prefix
   renamed.

   Rules that hold for every function of the table:
   - It returns NULL on success, or an OnyxStatus* (an error code and a
     message) that the caller owns and frees with ReleaseStatus. Functions
     that cannot fail return their result directly (GetErrorMessage ...).
   - No C++ exception ever crosses it, and no C++ type appears in it.
   - Objects made by CreateX are owned by the caller and freed with ReleaseX
     (ReleaseX(NULL) does nothing). Out-parameters are written only on
     success.
   - Strings returned through an OnyxAllocator* parameter are allocated
     with that allocator and freed by the caller with AllocatorFree (or the
     allocator's Free). `const char*` results without an allocator stay
     owned by the object they came from and live as long as it.
   - Handles may be used from several threads where onnxruntime allows it:
     OnyxSession's Run is thread-safe; options objects are not.

   Versioning: OnyxGetApiBase()->GetApi(ONYX_API_VERSION) returns the table
   as this header declares it. The table only ever grows at its end, so a
   library built from a newer header serves a caller compiled against an
   older one; asking a library for a version newer than its own returns
   NULL. */
#ifndef ONYX_C_API_H_
#define ONYX_C_API_H_

#include <stddef.h>
#include <stdint.h>

/* ONYX_ABI_TEST_NEXT is defined only by the ABI test (tests/abi/): it
   stands for the next version of this header, with one function appended
   to the table. Never define it in a program of your own. */
#ifdef ONYX_ABI_TEST_NEXT
#define ONYX_API_VERSION 2
#else
#define ONYX_API_VERSION 1
#endif

#ifdef __cplusplus
extern "C" {
#define ONYX_NO_EXCEPTION noexcept
#else
#define ONYX_NO_EXCEPTION
#endif

#if defined(_WIN32)
#define ONYX_API_CALL __stdcall
#define ONYX_EXPORT __declspec(dllexport)
#else
#define ONYX_API_CALL
#define ONYX_EXPORT __attribute__((visibility("default")))
#endif

/* ---- Enumerations --------------------------------------------------------- */

/* Element types, numbered as ONNX's TensorProto.DataType. */
typedef enum ONNXTensorElementDataType {
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED = 0,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT = 1,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8 = 2,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8 = 3,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16 = 4,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16 = 5,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32 = 6,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 = 7,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING = 8,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL = 9,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16 = 10,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE = 11,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32 = 12,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64 = 13,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX64 = 14,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_COMPLEX128 = 15,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16 = 16,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FN = 17,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E4M3FNUZ = 18,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2 = 19,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E5M2FNUZ = 20,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT4 = 21,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT4 = 22,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT4E2M1 = 23,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT8E8M0 = 24,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT2 = 25,
  ONNX_TENSOR_ELEMENT_DATA_TYPE_INT2 = 26
} ONNXTensorElementDataType;

typedef enum ONNXType {
  ONNX_TYPE_UNKNOWN = 0,
  ONNX_TYPE_TENSOR = 1,
  ONNX_TYPE_SEQUENCE = 2,
  ONNX_TYPE_MAP = 3,
  ONNX_TYPE_OPAQUE = 4,
  ONNX_TYPE_SPARSETENSOR = 5,
  ONNX_TYPE_OPTIONAL = 6
} ONNXType;

typedef enum OnyxErrorCode {
  ONYX_OK = 0,
  ONYX_FAIL = 1,
  ONYX_INVALID_ARGUMENT = 2,
  ONYX_NO_SUCHFILE = 3,
  ONYX_NO_MODEL = 4,
  ONYX_ENGINE_ERROR = 5,
  ONYX_RUNTIME_EXCEPTION = 6,
  ONYX_INVALID_PROTOBUF = 7,
  ONYX_MODEL_LOADED = 8,
  ONYX_NOT_IMPLEMENTED = 9,
  ONYX_INVALID_GRAPH = 10,
  ONYX_EP_FAIL = 11
} OnyxErrorCode;

typedef enum OnyxLoggingLevel {
  ONYX_LOGGING_LEVEL_VERBOSE = 0,
  ONYX_LOGGING_LEVEL_INFO = 1,
  ONYX_LOGGING_LEVEL_WARNING = 2,
  ONYX_LOGGING_LEVEL_ERROR = 3,
  ONYX_LOGGING_LEVEL_FATAL = 4
} OnyxLoggingLevel;

typedef enum GraphOptimizationLevel {
  ONYX_DISABLE_ALL = 0,
  ONYX_ENABLE_BASIC = 1,
  ONYX_ENABLE_EXTENDED = 2,
  ONYX_ENABLE_LAYOUT = 3,
  ONYX_ENABLE_ALL = 99
} GraphOptimizationLevel;

typedef enum ExecutionMode { ONYX_SEQUENTIAL = 0, ONYX_PARALLEL = 1 } ExecutionMode;

typedef enum OnyxAllocatorType {
  OnyxInvalidAllocator = -1,
  OnyxDeviceAllocator = 0,
  OnyxArenaAllocator = 1
} OnyxAllocatorType;

/* Where a value lives relative to its device: the device's own memory
   (Default) or host memory the device reads or writes (CPU*). */
typedef enum OnyxMemType {
  OnyxMemTypeCPUInput = -2,
  OnyxMemTypeCPUOutput = -1,
  OnyxMemTypeCPU = OnyxMemTypeCPUOutput,
  OnyxMemTypeDefault = 0
} OnyxMemType;

typedef enum OnyxCustomOpInputOutputCharacteristic {
  INPUT_OUTPUT_REQUIRED = 0,
  INPUT_OUTPUT_OPTIONAL,
  INPUT_OUTPUT_VARIADIC
} OnyxCustomOpInputOutputCharacteristic;

/* ---- Opaque handles -------------------------------------------------------- */

typedef struct OnyxStatus OnyxStatus;
typedef struct OnyxEnv OnyxEnv;
typedef struct OnyxSessionOptions OnyxSessionOptions;
typedef struct OnyxSession OnyxSession;
typedef struct OnyxRunOptions OnyxRunOptions;
typedef struct OnyxValue OnyxValue;
typedef struct OnyxMemoryInfo OnyxMemoryInfo;
typedef struct OnyxIoBinding OnyxIoBinding;
typedef struct OnyxTypeInfo OnyxTypeInfo;
typedef struct OnyxTensorTypeAndShapeInfo OnyxTensorTypeAndShapeInfo;
typedef struct OnyxSequenceTypeInfo OnyxSequenceTypeInfo;
typedef struct OnyxMapTypeInfo OnyxMapTypeInfo;
typedef struct OnyxOptionalTypeInfo OnyxOptionalTypeInfo;
/* A device's queue of work. onyx's copies through the C API are
   synchronous: wherever one is taken, pass NULL. */
typedef struct OnyxSyncStream OnyxSyncStream;
typedef struct OnyxModelMetadata OnyxModelMetadata;
typedef struct OnyxCustomOpDomain OnyxCustomOpDomain;
typedef struct OnyxKernelInfo OnyxKernelInfo;
typedef struct OnyxKernelContext OnyxKernelContext;
typedef struct OnyxShapeInferContext OnyxShapeInferContext;

typedef OnyxStatus* OnyxStatusPtr;

/* An allocator: onyx's own (GetAllocatorWithDefaultOptions, CreateAllocator)
   or one the caller implements. Alloc returns memory aligned to 64 bytes
   or NULL; Free takes what Alloc returned (or NULL); Info describes the
   memory. */
typedef struct OnyxAllocator {
  uint32_t version; /* ONYX_API_VERSION of the code that filled it */
  void*(ONYX_API_CALL* Alloc)(struct OnyxAllocator* self, size_t size);
  void(ONYX_API_CALL* Free)(struct OnyxAllocator* self, void* p);
  const struct OnyxMemoryInfo*(ONYX_API_CALL* Info)(const struct OnyxAllocator* self);
} OnyxAllocator;

struct OnyxApi;
typedef struct OnyxApi OnyxApi;

/* The entry point: the only exported function a caller needs. */
typedef struct OnyxApiBase {
  /* The table for `version` (ONYX_API_VERSION of the caller's header), or
     NULL when this library is older than that. Never freed. */
  const OnyxApi*(ONYX_API_CALL* GetApi)(uint32_t version)ONYX_NO_EXCEPTION;
  /* "0.1.0": the library's version; static. */
  const char*(ONYX_API_CALL* GetVersionString)(void)ONYX_NO_EXCEPTION;
} OnyxApiBase;

ONYX_EXPORT const OnyxApiBase* ONYX_API_CALL OnyxGetApiBase(void) ONYX_NO_EXCEPTION;
/* Shorthand for OnyxGetApiBase()->GetApi(version). */
ONYX_EXPORT const OnyxApi* ONYX_API_CALL OnyxGetApi(uint32_t version) ONYX_NO_EXCEPTION;

/* ---- Custom operators ------------------------------------------------------

   A user's operator, registered for a domain: CreateCustomOpDomain,
   CustomOpDomain_Add (the domain keeps the pointer: the OnyxCustomOp must
   outlive every session that uses it), AddCustomOpDomain on the session
   options. Or from a shared library that exports

       OnyxStatus* ONYX_API_CALL RegisterCustomOps(OnyxSessionOptions* options,
                                                   const OnyxApiBase* api);

   loaded with RegisterCustomOpsLibrary_V2 (Python:
   SessionOptions.register_custom_ops_library).

   `version` is the ONYX_API_VERSION the op was compiled with; members after
   those of that version are not read. Every member of version 1 must be
   set except those marked optional (NULL). The op runs on the CPU: a
   GetExecutionProviderType other than NULL or "CPUExecutionProvider" is an
   error when the domain is added.

   The kernel: CreateKernelV2 (or CreateKernel) makes one per node when a
   session is created; KernelComputeV2 (or KernelCompute) runs it, from
   several threads at once when runs overlap; KernelDestroy frees it with
   the session. An error status from CreateKernelV2 or KernelComputeV2 fails
   the session creation or the run with the node named; the status is
   released by onyx. */
typedef struct OnyxCustomOp {
  uint32_t version;
  void*(ONYX_API_CALL* CreateKernel)(const struct OnyxCustomOp* op, const OnyxApi* api, const OnyxKernelInfo* info);
  const char*(ONYX_API_CALL* GetName)(const struct OnyxCustomOp* op);
  const char*(ONYX_API_CALL* GetExecutionProviderType)(const struct OnyxCustomOp* op); /* optional */
  /* ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED: any element type. */
  ONNXTensorElementDataType(ONYX_API_CALL* GetInputType)(const struct OnyxCustomOp* op, size_t index);
  size_t(ONYX_API_CALL* GetInputTypeCount)(const struct OnyxCustomOp* op);
  ONNXTensorElementDataType(ONYX_API_CALL* GetOutputType)(const struct OnyxCustomOp* op, size_t index);
  size_t(ONYX_API_CALL* GetOutputTypeCount)(const struct OnyxCustomOp* op);
  void(ONYX_API_CALL* KernelCompute)(void* op_kernel, OnyxKernelContext* context);
  void(ONYX_API_CALL* KernelDestroy)(void* op_kernel);
  /* optional: every input and output required when NULL */
  OnyxCustomOpInputOutputCharacteristic(ONYX_API_CALL* GetInputCharacteristic)(const struct OnyxCustomOp* op,
                                                                                size_t index);
  OnyxCustomOpInputOutputCharacteristic(ONYX_API_CALL* GetOutputCharacteristic)(const struct OnyxCustomOp* op,
                                                                                 size_t index);
  /* optional: OnyxMemTypeDefault for every input when NULL */
  OnyxMemType(ONYX_API_CALL* GetInputMemoryType)(const struct OnyxCustomOp* op, size_t index);
  /* optional (variadic last input/output): minimum count, and whether all
     variadic values share one element type (1) or not (0) */
  int(ONYX_API_CALL* GetVariadicInputMinArity)(const struct OnyxCustomOp* op);
  int(ONYX_API_CALL* GetVariadicInputHomogeneity)(const struct OnyxCustomOp* op);
  int(ONYX_API_CALL* GetVariadicOutputMinArity)(const struct OnyxCustomOp* op);
  int(ONYX_API_CALL* GetVariadicOutputHomogeneity)(const struct OnyxCustomOp* op);
  /* optional: preferred over CreateKernel / KernelCompute when set */
  OnyxStatusPtr(ONYX_API_CALL* CreateKernelV2)(const struct OnyxCustomOp* op, const OnyxApi* api,
                                               const OnyxKernelInfo* info, void** kernel);
  OnyxStatusPtr(ONYX_API_CALL* KernelComputeV2)(void* op_kernel, OnyxKernelContext* context);
  /* optional: output types and shapes from the inputs' (shape inference at
     session creation); without it outputs have GetOutputType's element
     type and an unknown shape */
  OnyxStatusPtr(ONYX_API_CALL* InferOutputShapeFn)(const struct OnyxCustomOp* op, OnyxShapeInferContext* context);
  /* optional: the opset versions of the domain the op exists in
     (inclusive); 1 and unbounded when NULL */
  int(ONYX_API_CALL* GetStartVersion)(const struct OnyxCustomOp* op);
  int(ONYX_API_CALL* GetEndVersion)(const struct OnyxCustomOp* op);
} OnyxCustomOp;

/* ---- The table --------------------------------------------------------------

   ONYX_API_STATUS(Name, args): a member `OnyxStatus* Name(args)`. */
#define ONYX_API_STATUS(NAME, ...) OnyxStatusPtr(ONYX_API_CALL* NAME)(__VA_ARGS__)ONYX_NO_EXCEPTION
#define ONYX_API_VOID(NAME, ...) void(ONYX_API_CALL* NAME)(__VA_ARGS__)ONYX_NO_EXCEPTION

struct OnyxApi {
  /* -- Status. CreateStatus copies `msg`. */
  OnyxStatus*(ONYX_API_CALL* CreateStatus)(OnyxErrorCode code, const char* msg)ONYX_NO_EXCEPTION;
  OnyxErrorCode(ONYX_API_CALL* GetErrorCode)(const OnyxStatus* status)ONYX_NO_EXCEPTION;
  /* Owned by the status. */
  const char*(ONYX_API_CALL* GetErrorMessage)(const OnyxStatus* status)ONYX_NO_EXCEPTION;
  ONYX_API_VOID(ReleaseStatus, OnyxStatus* status);

  /* -- Environment: logging level and id for the process's sessions. */
  ONYX_API_STATUS(CreateEnv, OnyxLoggingLevel log_severity_level, const char* logid, OnyxEnv** out);
  ONYX_API_VOID(ReleaseEnv, OnyxEnv* env);

  /* -- Session options */
  ONYX_API_STATUS(CreateSessionOptions, OnyxSessionOptions** out);
  ONYX_API_STATUS(CloneSessionOptions, const OnyxSessionOptions* in, OnyxSessionOptions** out);
  ONYX_API_STATUS(SetIntraOpNumThreads, OnyxSessionOptions* options, int intra_op_num_threads);
  ONYX_API_STATUS(SetInterOpNumThreads, OnyxSessionOptions* options, int inter_op_num_threads);
  ONYX_API_STATUS(SetSessionGraphOptimizationLevel, OnyxSessionOptions* options, GraphOptimizationLevel level);
  ONYX_API_STATUS(SetSessionExecutionMode, OnyxSessionOptions* options, ExecutionMode mode);
  ONYX_API_STATUS(SetOptimizedModelFilePath, OnyxSessionOptions* options, const char* path);
  ONYX_API_STATUS(EnableProfiling, OnyxSessionOptions* options, const char* profile_file_prefix);
  ONYX_API_STATUS(DisableProfiling, OnyxSessionOptions* options);
  ONYX_API_STATUS(EnableMemPattern, OnyxSessionOptions* options);
  ONYX_API_STATUS(DisableMemPattern, OnyxSessionOptions* options);
  ONYX_API_STATUS(EnableCpuMemArena, OnyxSessionOptions* options);
  ONYX_API_STATUS(DisableCpuMemArena, OnyxSessionOptions* options);
  ONYX_API_STATUS(SetSessionLogId, OnyxSessionOptions* options, const char* logid);
  ONYX_API_STATUS(SetSessionLogSeverityLevel, OnyxSessionOptions* options, int level);
  /* "optimization.disable_specified_optimizers": a comma-separated list of
     graph passes the session skips, by name (as in onnxruntime). */
  ONYX_API_STATUS(AddSessionConfigEntry, OnyxSessionOptions* options, const char* key, const char* value);
  ONYX_API_STATUS(AddFreeDimensionOverrideByName, OnyxSessionOptions* options, const char* dim_name,
                  int64_t dim_value);
  ONYX_API_STATUS(AddFreeDimensionOverride, OnyxSessionOptions* options, const char* dim_denotation,
                  int64_t dim_value);
  /* The session shares `value`'s buffer: it must stay valid while sessions
     made with these options live (the options keep a reference). */
  ONYX_API_STATUS(AddInitializer, OnyxSessionOptions* options, const char* name, const OnyxValue* value);
  /* Providers in the order added; the CPU provider is always the last
     fallback. Options as (keys[i], values[i]). */
  ONYX_API_STATUS(SessionOptionsAppendExecutionProvider, OnyxSessionOptions* options, const char* provider_name,
                  const char* const* provider_options_keys, const char* const* provider_options_values,
                  size_t num_keys);
  /* The options keep a reference to the domain. */
  ONYX_API_STATUS(AddCustomOpDomain, OnyxSessionOptions* options, OnyxCustomOpDomain* custom_op_domain);
  /* Loads the shared library at `library_path` (dlopen) and calls its
     RegisterCustomOps. The library stays loaded for the rest of the
     process. */
  ONYX_API_STATUS(RegisterCustomOpsLibrary_V2, OnyxSessionOptions* options, const char* library_path);
  /* Calls `registration_func_name` (a RegisterCustomOps-shaped function)
     found among the symbols already loaded in the process. */
  ONYX_API_STATUS(RegisterCustomOpsUsingFunction, OnyxSessionOptions* options, const char* registration_func_name);
  ONYX_API_VOID(ReleaseSessionOptions, OnyxSessionOptions* options);

  /* -- Custom op domains ("" is ai.onnx; any other name is a new domain). */
  ONYX_API_STATUS(CreateCustomOpDomain, const char* domain, OnyxCustomOpDomain** out);
  /* The domain keeps `op` (not a copy): it must outlive the sessions. */
  ONYX_API_STATUS(CustomOpDomain_Add, OnyxCustomOpDomain* custom_op_domain, const OnyxCustomOp* op);
  ONYX_API_VOID(ReleaseCustomOpDomain, OnyxCustomOpDomain* domain);

  /* -- Sessions. `env` may be NULL. */
  ONYX_API_STATUS(CreateSession, const OnyxEnv* env, const char* model_path, const OnyxSessionOptions* options,
                  OnyxSession** out);
  ONYX_API_STATUS(CreateSessionFromArray, const OnyxEnv* env, const void* model_data, size_t model_data_length,
                  const OnyxSessionOptions* options, OnyxSession** out);
  /* Runs the model. output_names[i] gives outputs[i]: a NULL entry receives a
     new value the caller releases; a non-NULL entry (a tensor of the right
     type and shape) is written in place. run_options may be NULL. Thread-safe. */
  ONYX_API_STATUS(Run, OnyxSession* session, const OnyxRunOptions* run_options, const char* const* input_names,
                  const OnyxValue* const* inputs, size_t input_len, const char* const* output_names,
                  size_t output_names_len, OnyxValue** outputs);
  ONYX_API_STATUS(SessionGetInputCount, const OnyxSession* session, size_t* out);
  ONYX_API_STATUS(SessionGetOutputCount, const OnyxSession* session, size_t* out);
  ONYX_API_STATUS(SessionGetOverridableInitializerCount, const OnyxSession* session, size_t* out);
  /* Names allocated with `allocator`; free with AllocatorFree. */
  ONYX_API_STATUS(SessionGetInputName, const OnyxSession* session, size_t index, OnyxAllocator* allocator,
                  char** value);
  ONYX_API_STATUS(SessionGetOutputName, const OnyxSession* session, size_t index, OnyxAllocator* allocator,
                  char** value);
  ONYX_API_STATUS(SessionGetOverridableInitializerName, const OnyxSession* session, size_t index,
                  OnyxAllocator* allocator, char** value);
  /* Caller releases with ReleaseTypeInfo. */
  ONYX_API_STATUS(SessionGetInputTypeInfo, const OnyxSession* session, size_t index, OnyxTypeInfo** type_info);
  ONYX_API_STATUS(SessionGetOutputTypeInfo, const OnyxSession* session, size_t index, OnyxTypeInfo** type_info);
  ONYX_API_STATUS(SessionGetOverridableInitializerTypeInfo, const OnyxSession* session, size_t index,
                  OnyxTypeInfo** type_info);
  ONYX_API_STATUS(SessionGetModelMetadata, const OnyxSession* session, OnyxModelMetadata** out);
  /* The profile's file name, allocated with `allocator`. */
  ONYX_API_STATUS(SessionEndProfiling, OnyxSession* session, OnyxAllocator* allocator, char** out);
  ONYX_API_STATUS(SessionGetProfilingStartTimeNs, const OnyxSession* session, uint64_t* out);
  ONYX_API_VOID(ReleaseSession, OnyxSession* session);

  /* -- Run options. SetTerminate may be called from another thread while a
     run is in flight: the run stops between nodes with an error. */
  ONYX_API_STATUS(CreateRunOptions, OnyxRunOptions** out);
  ONYX_API_STATUS(RunOptionsSetRunLogSeverityLevel, OnyxRunOptions* options, int level);
  ONYX_API_STATUS(RunOptionsGetRunLogSeverityLevel, const OnyxRunOptions* options, int* level);
  ONYX_API_STATUS(RunOptionsSetRunTag, OnyxRunOptions* options, const char* run_tag);
  /* Owned by the options. */
  ONYX_API_STATUS(RunOptionsGetRunTag, const OnyxRunOptions* options, const char** run_tag);
  ONYX_API_STATUS(RunOptionsSetTerminate, OnyxRunOptions* options);
  ONYX_API_STATUS(RunOptionsUnsetTerminate, OnyxRunOptions* options);
  ONYX_API_STATUS(AddRunConfigEntry, OnyxRunOptions* options, const char* key, const char* value);
  ONYX_API_VOID(ReleaseRunOptions, OnyxRunOptions* options);

  /* -- Memory info. `name`: "Cpu", "Test", "OpenVINO", "Cuda"... */
  ONYX_API_STATUS(CreateCpuMemoryInfo, OnyxAllocatorType type, OnyxMemType mem_type, OnyxMemoryInfo** out);
  ONYX_API_STATUS(CreateMemoryInfo, const char* name, OnyxAllocatorType type, int id, OnyxMemType mem_type,
                  OnyxMemoryInfo** out);
  /* Owned by the info. */
  ONYX_API_STATUS(MemoryInfoGetName, const OnyxMemoryInfo* info, const char** out);
  ONYX_API_STATUS(MemoryInfoGetId, const OnyxMemoryInfo* info, int* out);
  ONYX_API_STATUS(MemoryInfoGetMemType, const OnyxMemoryInfo* info, OnyxMemType* out);
  ONYX_API_STATUS(MemoryInfoGetType, const OnyxMemoryInfo* info, OnyxAllocatorType* out);
  /* *out = 0 when both describe the same memory, -1 otherwise. */
  ONYX_API_STATUS(CompareMemoryInfo, const OnyxMemoryInfo* info1, const OnyxMemoryInfo* info2, int* out);
  ONYX_API_VOID(ReleaseMemoryInfo, OnyxMemoryInfo* info);

  /* -- Allocators. The default one is the process's host allocator: never
     released. CreateAllocator gives a session's allocator for a memory
     (its device's), released with ReleaseAllocator. */
  ONYX_API_STATUS(GetAllocatorWithDefaultOptions, OnyxAllocator** out);
  ONYX_API_STATUS(CreateAllocator, const OnyxSession* session, const OnyxMemoryInfo* mem_info,
                  OnyxAllocator** out);
  ONYX_API_STATUS(AllocatorAlloc, OnyxAllocator* allocator, size_t size, void** out);
  ONYX_API_STATUS(AllocatorFree, OnyxAllocator* allocator, void* p);
  ONYX_API_STATUS(AllocatorGetInfo, const OnyxAllocator* allocator, const OnyxMemoryInfo** out);
  ONYX_API_VOID(ReleaseAllocator, OnyxAllocator* allocator);

  /* -- Values */
  /* A new tensor in `allocator`'s memory (zeroed; strings empty). */
  ONYX_API_STATUS(CreateTensorAsOnyxValue, OnyxAllocator* allocator, const int64_t* shape, size_t shape_len,
                  ONNXTensorElementDataType type, OnyxValue** out);
  /* A tensor over the caller's memory, no copy: `p_data` (p_data_len
     bytes, at least the shape's size) must outlive the value and every value
     a run returns that shares it. Not for strings. */
  ONYX_API_STATUS(CreateTensorWithDataAsOnyxValue, const OnyxMemoryInfo* info, void* p_data, size_t p_data_len,
                  const int64_t* shape, size_t shape_len, ONNXTensorElementDataType type, OnyxValue** out);
  ONYX_API_STATUS(IsTensor, const OnyxValue* value, int* out);
  /* 0 for an empty optional. */
  ONYX_API_STATUS(HasValue, const OnyxValue* value, int* out);
  /* The tensor's elements (host memory, or the device's pointer). For a
     string tensor, onyx's own string objects: read and write its elements
     with the string functions below instead. */
  ONYX_API_STATUS(GetTensorMutableData, OnyxValue* value, void** out);
  ONYX_API_STATUS(GetTensorMemoryInfo, const OnyxValue* value, const OnyxMemoryInfo** mem_info);
  /* Strings: s[i] (NUL-terminated) into a string tensor of s_len elements. */
  ONYX_API_STATUS(FillStringTensor, OnyxValue* value, const char* const* s, size_t s_len);
  ONYX_API_STATUS(FillStringTensorElement, OnyxValue* value, const char* s, size_t index);
  /* Total bytes of all strings (no terminators). */
  ONYX_API_STATUS(GetStringTensorDataLength, const OnyxValue* value, size_t* len);
  /* All strings back to back into s (s_len bytes), offsets[i] where string
     i starts (offsets_len = element count). */
  ONYX_API_STATUS(GetStringTensorContent, const OnyxValue* value, void* s, size_t s_len, size_t* offsets,
                  size_t offsets_len);
  ONYX_API_STATUS(GetStringTensorElementLength, const OnyxValue* value, size_t index, size_t* out);
  ONYX_API_STATUS(GetStringTensorElement, const OnyxValue* value, size_t s_len, size_t index, void* s);
  ONYX_API_STATUS(GetValueType, const OnyxValue* value, ONNXType* out);
  /* Caller releases. */
  ONYX_API_STATUS(GetTypeInfo, const OnyxValue* value, OnyxTypeInfo** out);
  ONYX_API_STATUS(GetTensorTypeAndShape, const OnyxValue* value, OnyxTensorTypeAndShapeInfo** out);
  /* Sequences: element count; maps: 2 (keys, values). */
  ONYX_API_STATUS(GetValueCount, const OnyxValue* value, size_t* out);
  /* Element `index` of a sequence, or a map's keys (0) or values (1), as a
     new value the caller releases (sharing the memory). */
  ONYX_API_STATUS(GetValue, const OnyxValue* value, int index, OnyxAllocator* allocator, OnyxValue** out);
  /* A sequence of `num_values` values (ONNX_TYPE_SEQUENCE) or a map from a
     1-D keys tensor and a 1-D values tensor (ONNX_TYPE_MAP). The new value
     shares the inputs' memory; the inputs stay the caller's. */
  ONYX_API_STATUS(CreateValue, const OnyxValue* const* in, size_t num_values, ONNXType value_type,
                  OnyxValue** out);
  ONYX_API_VOID(ReleaseValue, OnyxValue* value);

  /* -- Type information */
  ONYX_API_STATUS(GetOnnxTypeFromTypeInfo, const OnyxTypeInfo* type_info, ONNXType* out);
  /* Owned by the type info; NULL when it is not a tensor. */
  ONYX_API_STATUS(CastTypeInfoToTensorInfo, const OnyxTypeInfo* type_info, const OnyxTensorTypeAndShapeInfo** out);
  ONYX_API_STATUS(CastTypeInfoToSequenceTypeInfo, const OnyxTypeInfo* type_info,
                  const OnyxSequenceTypeInfo** out);
  ONYX_API_STATUS(CastTypeInfoToMapTypeInfo, const OnyxTypeInfo* type_info, const OnyxMapTypeInfo** out);
  /* Caller releases. */
  ONYX_API_STATUS(GetSequenceElementType, const OnyxSequenceTypeInfo* sequence_type_info,
                  OnyxTypeInfo** type_info);
  ONYX_API_STATUS(GetMapKeyType, const OnyxMapTypeInfo* map_type_info, ONNXTensorElementDataType* out);
  ONYX_API_STATUS(GetMapValueType, const OnyxMapTypeInfo* map_type_info, OnyxTypeInfo** type_info);
  /* Owned by the type info. */
  ONYX_API_STATUS(GetDenotationFromTypeInfo, const OnyxTypeInfo* type_info, const char** denotation,
                  size_t* len);
  ONYX_API_VOID(ReleaseTypeInfo, OnyxTypeInfo* type_info);
  ONYX_API_STATUS(CreateTensorTypeAndShapeInfo, OnyxTensorTypeAndShapeInfo** out);
  ONYX_API_STATUS(SetTensorElementType, OnyxTensorTypeAndShapeInfo* info, ONNXTensorElementDataType type);
  /* -1 for a dimension of unknown size. */
  ONYX_API_STATUS(SetDimensions, OnyxTensorTypeAndShapeInfo* info, const int64_t* dim_values, size_t dim_count);
  ONYX_API_STATUS(GetTensorElementType, const OnyxTensorTypeAndShapeInfo* info, ONNXTensorElementDataType* out);
  ONYX_API_STATUS(GetDimensionsCount, const OnyxTensorTypeAndShapeInfo* info, size_t* out);
  ONYX_API_STATUS(GetDimensions, const OnyxTensorTypeAndShapeInfo* info, int64_t* dim_values,
                  size_t dim_values_length);
  /* Symbols of the dimensions ("" where none); owned by the info. */
  ONYX_API_STATUS(GetSymbolicDimensions, const OnyxTensorTypeAndShapeInfo* info, const char* dim_params[],
                  size_t dim_params_length);
  /* Product of the dimensions; -1 when one is unknown. */
  ONYX_API_STATUS(GetTensorShapeElementCount, const OnyxTensorTypeAndShapeInfo* info, size_t* out);
  ONYX_API_VOID(ReleaseTensorTypeAndShapeInfo, OnyxTensorTypeAndShapeInfo* info);

  /* -- Model metadata. Strings allocated with `allocator`. */
  ONYX_API_STATUS(ModelMetadataGetProducerName, const OnyxModelMetadata* model_metadata, OnyxAllocator* allocator,
                  char** value);
  ONYX_API_STATUS(ModelMetadataGetGraphName, const OnyxModelMetadata* model_metadata, OnyxAllocator* allocator,
                  char** value);
  ONYX_API_STATUS(ModelMetadataGetDomain, const OnyxModelMetadata* model_metadata, OnyxAllocator* allocator,
                  char** value);
  ONYX_API_STATUS(ModelMetadataGetDescription, const OnyxModelMetadata* model_metadata, OnyxAllocator* allocator,
                  char** value);
  ONYX_API_STATUS(ModelMetadataGetGraphDescription, const OnyxModelMetadata* model_metadata,
                  OnyxAllocator* allocator, char** value);
  ONYX_API_STATUS(ModelMetadataGetVersion, const OnyxModelMetadata* model_metadata, int64_t* value);
  /* *value = NULL when the key is absent. */
  ONYX_API_STATUS(ModelMetadataLookupCustomMetadataMap, const OnyxModelMetadata* model_metadata,
                  OnyxAllocator* allocator, const char* key, char** value);
  /* *keys: an array of num_keys strings, the array and each string allocated
     with `allocator`; NULL when there are none. */
  ONYX_API_STATUS(ModelMetadataGetCustomMetadataMapKeys, const OnyxModelMetadata* model_metadata,
                  OnyxAllocator* allocator, char*** keys, int64_t* num_keys);
  ONYX_API_VOID(ReleaseModelMetadata, OnyxModelMetadata* model_metadata);

  /* -- I/O binding: inputs bound in their memory, outputs left on a device
     or written into the caller's values. */
  ONYX_API_STATUS(CreateIoBinding, OnyxSession* session, OnyxIoBinding** out);
  ONYX_API_STATUS(BindInput, OnyxIoBinding* binding_ptr, const char* name, const OnyxValue* val_ptr);
  ONYX_API_STATUS(BindOutput, OnyxIoBinding* binding_ptr, const char* name, const OnyxValue* val_ptr);
  ONYX_API_STATUS(BindOutputToDevice, OnyxIoBinding* binding_ptr, const char* name,
                  const OnyxMemoryInfo* mem_info_ptr);
  /* Names back to back in *buffer (allocated with `allocator`), their
     lengths in *lengths (same allocator), *count of them. */
  ONYX_API_STATUS(GetBoundOutputNames, const OnyxIoBinding* binding_ptr, OnyxAllocator* allocator, char** buffer,
                  size_t** lengths, size_t* count);
  /* *output: an array (allocated with `allocator`) of *output_count new
     values the caller releases. */
  ONYX_API_STATUS(GetBoundOutputValues, const OnyxIoBinding* binding_ptr, OnyxAllocator* allocator,
                  OnyxValue*** output, size_t* output_count);
  ONYX_API_VOID(ClearBoundInputs, OnyxIoBinding* binding_ptr);
  ONYX_API_VOID(ClearBoundOutputs, OnyxIoBinding* binding_ptr);
  ONYX_API_STATUS(RunWithBinding, OnyxSession* session, const OnyxRunOptions* run_options,
                  const OnyxIoBinding* binding_ptr);
  ONYX_API_VOID(ReleaseIoBinding, OnyxIoBinding* binding_ptr);

  /* -- Inside a custom op's kernel */
  ONYX_API_STATUS(KernelInfoGetAttribute_float, const OnyxKernelInfo* info, const char* name, float* out);
  ONYX_API_STATUS(KernelInfoGetAttribute_int64, const OnyxKernelInfo* info, const char* name, int64_t* out);
  /* With out == NULL, *size receives the bytes needed (with the NUL); with a
     buffer too small, an error and *size the bytes needed. */
  ONYX_API_STATUS(KernelInfoGetAttribute_string, const OnyxKernelInfo* info, const char* name, char* out,
                  size_t* size);
  /* With out == NULL, *size receives the element count. */
  ONYX_API_STATUS(KernelInfoGetAttributeArray_float, const OnyxKernelInfo* info, const char* name, float* out,
                  size_t* size);
  ONYX_API_STATUS(KernelInfoGetAttributeArray_int64, const OnyxKernelInfo* info, const char* name, int64_t* out,
                  size_t* size);
  ONYX_API_STATUS(KernelInfo_GetInputCount, const OnyxKernelInfo* info, size_t* out);
  ONYX_API_STATUS(KernelInfo_GetOutputCount, const OnyxKernelInfo* info, size_t* out);
  /* Same buffer convention as KernelInfoGetAttribute_string. */
  ONYX_API_STATUS(KernelInfo_GetNodeName, const OnyxKernelInfo* info, char* out, size_t* size);
  ONYX_API_STATUS(KernelContext_GetInputCount, const OnyxKernelContext* context, size_t* out);
  ONYX_API_STATUS(KernelContext_GetOutputCount, const OnyxKernelContext* context, size_t* out);
  /* Owned by the context, valid during the compute call; NULL for an
     omitted optional input. */
  ONYX_API_STATUS(KernelContext_GetInput, const OnyxKernelContext* context, size_t index, const OnyxValue** out);
  /* Allocates output `index` with that shape (the element type is the
     op's GetOutputType, or the node's inferred type when that is
     UNDEFINED); owned by the context. */
  ONYX_API_STATUS(KernelContext_GetOutput, OnyxKernelContext* context, size_t index, const int64_t* dim_values,
                  size_t dim_count, OnyxValue** out);
  ONYX_API_STATUS(ShapeInferContext_GetInputCount, const OnyxShapeInferContext* context, size_t* out);
  /* Caller releases; unknown dimensions are -1. */
  ONYX_API_STATUS(ShapeInferContext_GetInputTypeShape, const OnyxShapeInferContext* context, size_t index,
                  OnyxTensorTypeAndShapeInfo** info);
  ONYX_API_STATUS(ShapeInferContext_SetOutputTypeShape, const OnyxShapeInferContext* context, size_t index,
                  const OnyxTensorTypeAndShapeInfo* info);

  /* -- Providers and build. *out: an array of *provider_length names, freed
     with ReleaseAvailableProviders. */
  ONYX_API_STATUS(GetAvailableProviders, char*** out, int* provider_length);
  ONYX_API_STATUS(ReleaseAvailableProviders, char** ptr, int providers_length);
  /* Static. */
  const char*(ONYX_API_CALL* GetBuildInfoString)(void)ONYX_NO_EXCEPTION;
  /* Session::get_providers: *out as GetAvailableProviders. */
  ONYX_API_STATUS(SessionGetProviders, const OnyxSession* session, char*** out, int* provider_length);

  /* -- Optional types (onnxruntime's names). *out of the cast is NULL when
     type_info is not ONNX_TYPE_OPTIONAL, and is owned by type_info; the
     contained type is a new type info the caller releases. */
  ONYX_API_STATUS(CastTypeInfoToOptionalTypeInfo, const OnyxTypeInfo* type_info, const OnyxOptionalTypeInfo** out);
  ONYX_API_STATUS(GetOptionalContainedTypeInfo, const OnyxOptionalTypeInfo* optional_type_info, OnyxTypeInfo** out);

  /* -- Values onnxruntime's C API cannot make (onyx's own).
     CreateNoneValue: an optional value holding nothing (HasValue gives 0),
     of the contained type `type_info` (NULL: not known); it feeds an
     optional input left empty. CreateEmptySequence: a sequence of no
     values whose elements are `element_type` (NULL: not known; CreateValue
     needs a value to know the type). The caller releases *out with ReleaseValue. */
  ONYX_API_STATUS(CreateNoneValue, const OnyxTypeInfo* type_info, OnyxValue** out);
  ONYX_API_STATUS(CreateEmptySequence, const OnyxTypeInfo* element_type, OnyxValue** out);

  /* -- Memory outside any session (onnxruntime's names).
     CopyTensors: copies each src_tensors[i] into dst_tensors[i] (same
     element type and shape), between host and device memory in any
     direction; env may be NULL, stream must be NULL (the copy is done when
     the call returns). GetSharedAllocator: the process's allocator of the
     memory mem_info names (a device's, the host's for "Cpu"), owned by the
     library and valid until the process ends (ReleaseAllocator ignores
     it); *out is NULL when no provider of this build serves that memory.
     Tensors made with it (CreateTensorAsOnyxValue) outlive any session. */
  ONYX_API_STATUS(CopyTensors, const OnyxEnv* env, const OnyxValue* const* src_tensors, OnyxValue* const* dst_tensors,
                  OnyxSyncStream* stream, size_t num_tensors);
  ONYX_API_STATUS(GetSharedAllocator, OnyxEnv* env, const OnyxMemoryInfo* mem_info, OnyxAllocator** out);

  /* -- The options a session's provider runs with (the ones it was given,
     and where the provider reports them, its defaults). *keys and *values
     are arrays of *num_keys NUL-terminated strings; the arrays and each
     string are allocated with `allocator` and freed by the caller. A
     provider the session does not use is an error. onyx's own. */
  ONYX_API_STATUS(SessionGetProviderOptions, const OnyxSession* session, const char* provider_name,
                  OnyxAllocator* allocator, char*** keys, char*** values, size_t* num_keys);

  /* -- Host memory the session's runs have held: the peak and current bytes
     in use of its CPU memory arena (intermediate values and outputs not yet
     released; weights not counted); -1 each without an arena. onyx's own. */
  ONYX_API_STATUS(SessionGetMemoryProfile, const OnyxSession* session, int64_t* peak_bytes, int64_t* in_use_bytes);

  /* Members after this line were added after version 1 (none yet). */
#ifdef ONYX_ABI_TEST_NEXT
  /* The ABI test's version 2: one function appended, as a real version 2
     would append its own. Returns "appended in version 2"; static. */
  const char*(ONYX_API_CALL* AbiTestAppended)(void)ONYX_NO_EXCEPTION;
#endif
};

#ifdef __cplusplus
}
#endif

#endif /* ONYX_C_API_H_ */
