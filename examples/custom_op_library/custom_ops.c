/* An example library of custom operators for onyx, written against the C API
   alone (include/onyx/onyx_c_api.h): it does not link to onyx, and gets the
   function table from the OnyxApiBase its RegisterCustomOps is given.

   Domain "ai.onyx.example", opset 1:
   - ScaledTanh(X) -> Y = scale * tanh(X), for float and double tensors;
     attribute `scale` (float, default 1). Its output has X's type and shape
     (shape inference).
   - CheckPositive(X) -> Y = X for a float tensor whose elements are all > 0;
     otherwise the run fails with an error that names the first bad element.

   Load it from Python with SessionOptions.register_custom_ops_library(path),
   from C with RegisterCustomOpsLibrary_V2. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "onyx/onyx_c_api.h"

static const OnyxApi* g_api = NULL;

#define RETURN_IF_ERROR(expr)            \
  do {                                   \
    OnyxStatus* status_ = (expr);        \
    if (status_ != NULL) return status_; \
  } while (0)

/* ---- ScaledTanh ---- */

typedef struct ScaledTanhKernel {
  float scale;
} ScaledTanhKernel;

static OnyxStatus* ONYX_API_CALL scaled_tanh_create(const OnyxCustomOp* op, const OnyxApi* api,
                                                    const OnyxKernelInfo* info, void** kernel) {
  (void)op;
  ScaledTanhKernel* k = (ScaledTanhKernel*)malloc(sizeof(ScaledTanhKernel));
  if (k == NULL) return api->CreateStatus(ONYX_FAIL, "ScaledTanh: out of memory");
  k->scale = 1.0f;
  OnyxStatus* missing = api->KernelInfoGetAttribute_float(info, "scale", &k->scale);
  if (missing != NULL) api->ReleaseStatus(missing); /* the attribute is optional */
  *kernel = k;
  return NULL;
}

static OnyxStatus* ONYX_API_CALL scaled_tanh_compute(void* kernel, OnyxKernelContext* context) {
  const ScaledTanhKernel* k = (const ScaledTanhKernel*)kernel;
  const OnyxValue* input = NULL;
  RETURN_IF_ERROR(g_api->KernelContext_GetInput(context, 0, &input));
  OnyxTensorTypeAndShapeInfo* info = NULL;
  RETURN_IF_ERROR(g_api->GetTensorTypeAndShape(input, &info));
  size_t rank = 0, count = 0;
  ONNXTensorElementDataType type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  g_api->GetDimensionsCount(info, &rank);
  g_api->GetTensorShapeElementCount(info, &count);
  g_api->GetTensorElementType(info, &type);
  int64_t dims[16];
  if (rank > 16) {
    g_api->ReleaseTensorTypeAndShapeInfo(info);
    return g_api->CreateStatus(ONYX_INVALID_ARGUMENT, "ScaledTanh: rank above 16");
  }
  g_api->GetDimensions(info, dims, rank);
  g_api->ReleaseTensorTypeAndShapeInfo(info);
  OnyxValue* output = NULL;
  RETURN_IF_ERROR(g_api->KernelContext_GetOutput(context, 0, dims, rank, &output));
  void* in = NULL;
  void* out = NULL;
  RETURN_IF_ERROR(g_api->GetTensorMutableData((OnyxValue*)input, &in));
  RETURN_IF_ERROR(g_api->GetTensorMutableData(output, &out));
  if (type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
    for (size_t i = 0; i < count; ++i) ((float*)out)[i] = k->scale * tanhf(((const float*)in)[i]);
  } else {
    for (size_t i = 0; i < count; ++i) ((double*)out)[i] = (double)k->scale * tanh(((const double*)in)[i]);
  }
  return NULL;
}

static void ONYX_API_CALL destroy_kernel(void* kernel) { free(kernel); }

static OnyxStatus* ONYX_API_CALL same_as_input(const OnyxCustomOp* op, OnyxShapeInferContext* context) {
  (void)op;
  OnyxTensorTypeAndShapeInfo* info = NULL;
  RETURN_IF_ERROR(g_api->ShapeInferContext_GetInputTypeShape(context, 0, &info));
  OnyxStatus* status = g_api->ShapeInferContext_SetOutputTypeShape(context, 0, info);
  g_api->ReleaseTensorTypeAndShapeInfo(info);
  return status;
}

static const char* ONYX_API_CALL scaled_tanh_name(const OnyxCustomOp* op) {
  (void)op;
  return "ScaledTanh";
}
static size_t ONYX_API_CALL one(const OnyxCustomOp* op) {
  (void)op;
  return 1;
}
static ONNXTensorElementDataType ONYX_API_CALL float_type(const OnyxCustomOp* op, size_t index) {
  (void)op;
  (void)index;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT;
}
static ONNXTensorElementDataType ONYX_API_CALL double_type(const OnyxCustomOp* op, size_t index) {
  (void)op;
  (void)index;
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE;
}

/* ---- CheckPositive ---- */

static OnyxStatus* ONYX_API_CALL check_positive_create(const OnyxCustomOp* op, const OnyxApi* api,
                                                       const OnyxKernelInfo* info, void** kernel) {
  (void)op;
  (void)api;
  (void)info;
  *kernel = NULL;
  return NULL;
}

static OnyxStatus* ONYX_API_CALL check_positive_compute(void* kernel, OnyxKernelContext* context) {
  (void)kernel;
  const OnyxValue* input = NULL;
  RETURN_IF_ERROR(g_api->KernelContext_GetInput(context, 0, &input));
  OnyxTensorTypeAndShapeInfo* info = NULL;
  RETURN_IF_ERROR(g_api->GetTensorTypeAndShape(input, &info));
  size_t rank = 0, count = 0;
  g_api->GetDimensionsCount(info, &rank);
  g_api->GetTensorShapeElementCount(info, &count);
  int64_t dims[16];
  if (rank > 16) rank = 16;
  g_api->GetDimensions(info, dims, rank);
  g_api->ReleaseTensorTypeAndShapeInfo(info);
  void* in = NULL;
  RETURN_IF_ERROR(g_api->GetTensorMutableData((OnyxValue*)input, &in));
  const float* x = (const float*)in;
  for (size_t i = 0; i < count; ++i) {
    if (!(x[i] > 0.0f)) {
      char message[128];
      snprintf(message, sizeof message, "element %zu is %g, not positive", i, (double)x[i]);
      return g_api->CreateStatus(ONYX_INVALID_ARGUMENT, message);
    }
  }
  OnyxValue* output = NULL;
  RETURN_IF_ERROR(g_api->KernelContext_GetOutput(context, 0, dims, rank, &output));
  void* out = NULL;
  RETURN_IF_ERROR(g_api->GetTensorMutableData(output, &out));
  for (size_t i = 0; i < count; ++i) ((float*)out)[i] = x[i];
  return NULL;
}

static const char* ONYX_API_CALL check_positive_name(const OnyxCustomOp* op) {
  (void)op;
  return "CheckPositive";
}

static OnyxCustomOp make_op(const char*(ONYX_API_CALL* name)(const OnyxCustomOp*),
                            ONNXTensorElementDataType(ONYX_API_CALL* type)(const OnyxCustomOp*, size_t),
                            OnyxStatus*(ONYX_API_CALL* create)(const OnyxCustomOp*, const OnyxApi*,
                                                               const OnyxKernelInfo*, void**),
                            OnyxStatus*(ONYX_API_CALL* compute)(void*, OnyxKernelContext*)) {
  OnyxCustomOp op = {0};
  op.version = ONYX_API_VERSION;
  op.GetName = name;
  op.GetInputType = type;
  op.GetInputTypeCount = one;
  op.GetOutputType = type;
  op.GetOutputTypeCount = one;
  op.CreateKernelV2 = create;
  op.KernelComputeV2 = compute;
  op.KernelDestroy = destroy_kernel;
  op.InferOutputShapeFn = same_as_input;
  return op;
}

static OnyxCustomOp g_scaled_tanh_float;
static OnyxCustomOp g_scaled_tanh_double;
static OnyxCustomOp g_check_positive;

ONYX_EXPORT OnyxStatus* ONYX_API_CALL RegisterCustomOps(OnyxSessionOptions* options, const OnyxApiBase* api_base) {
  g_api = api_base->GetApi(ONYX_API_VERSION);
  if (g_api == NULL) return NULL; /* cannot even make a status: an older onyx */
  g_scaled_tanh_float = make_op(scaled_tanh_name, float_type, scaled_tanh_create, scaled_tanh_compute);
  g_scaled_tanh_double = make_op(scaled_tanh_name, double_type, scaled_tanh_create, scaled_tanh_compute);
  g_check_positive = make_op(check_positive_name, float_type, check_positive_create, check_positive_compute);
  OnyxCustomOpDomain* domain = NULL;
  RETURN_IF_ERROR(g_api->CreateCustomOpDomain("ai.onyx.example", &domain));
  OnyxStatus* status = g_api->CustomOpDomain_Add(domain, &g_scaled_tanh_float);
  if (status == NULL) status = g_api->CustomOpDomain_Add(domain, &g_scaled_tanh_double);
  if (status == NULL) status = g_api->CustomOpDomain_Add(domain, &g_check_positive);
  if (status == NULL) status = g_api->AddCustomOpDomain(options, domain);
  g_api->ReleaseCustomOpDomain(domain);
  return status;
}
