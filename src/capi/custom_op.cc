// Users' operators (OnyxCustomOp) as CPU kernels: a custom op domain becomes
// a KernelRegistry the CPU provider puts over its own, with the ops' shape
// inference; and the libraries that register them (RegisterCustomOps).
#include <dlfcn.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "capi/handles.h"

// What a custom op's callbacks see of the node and the run.
struct OnyxKernelInfo {
  const onyx::KernelInfo* info;
};

struct OnyxKernelContext {
  onyx::KernelContext* context;
  const OnyxCustomOp* op;
  std::vector<onyx::DataType> output_types;  // the node's inferred output types (fallback)
  std::vector<std::unique_ptr<OnyxValue>> inputs;
  std::vector<std::unique_ptr<OnyxValue>> outputs;
};

struct OnyxShapeInferContext {
  const std::vector<const onyx::graph::TypeAndShape*>* inputs;
  std::vector<onyx::graph::TypeAndShape>* outputs;
};

namespace onyx::capi {
namespace {

using OpList = std::vector<const OnyxCustomOp*>;

std::string op_name(const OnyxCustomOp* op) {
  const char* name = op->GetName != nullptr ? op->GetName(op) : nullptr;
  return name != nullptr ? name : "";
}

OnyxCustomOpInputOutputCharacteristic input_kind(const OnyxCustomOp* op, size_t i) {
  return op->GetInputCharacteristic != nullptr ? op->GetInputCharacteristic(op, i) : INPUT_OUTPUT_REQUIRED;
}
OnyxCustomOpInputOutputCharacteristic output_kind(const OnyxCustomOp* op, size_t i) {
  return op->GetOutputCharacteristic != nullptr ? op->GetOutputCharacteristic(op, i) : INPUT_OUTPUT_REQUIRED;
}

// Whether `op`'s declared inputs take a node's inputs of these element
// types (kUndefined: omitted, or of a type not known): as many as it
// declares, or more when its last input is variadic.
bool accepts(const OnyxCustomOp* op, const std::vector<DataType>& types) {
  const size_t declared = op->GetInputTypeCount(op);
  const bool variadic = declared > 0 && input_kind(op, declared - 1) == INPUT_OUTPUT_VARIADIC;
  if (types.size() > declared && !variadic) return false;
  for (size_t i = 0; i < types.size(); ++i) {
    const ONNXTensorElementDataType want = op->GetInputType(op, std::min(i, declared - 1));
    if (want != ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED && types[i] != DataType::kUndefined &&
        types[i] != from_c(want)) {
      return false;
    }
  }
  return true;
}

// The first of the ops (typed variants of one name) that accepts `types`, or nullptr.
const OnyxCustomOp* select_variant(const OpList& ops, const std::vector<DataType>& types) {
  for (const OnyxCustomOp* op : ops) {
    if (accepts(op, types)) return op;
  }
  return nullptr;
}

// One node's kernel: the op's kernel object, destroyed with it.
class CustomKernel final : public Kernel {
 public:
  CustomKernel(const OnyxCustomOp* op, void* kernel, std::vector<DataType> output_types, std::string label)
      : op_(op), kernel_(kernel), output_types_(std::move(output_types)), label_(std::move(label)) {}
  ~CustomKernel() override {
    if (kernel_ != nullptr && op_->KernelDestroy != nullptr) op_->KernelDestroy(kernel_);
  }

  Status compute(KernelContext& ctx) const override {
    OnyxKernelContext context{&ctx, op_, output_types_, {}, {}};
    context.inputs.resize(ctx.input_count());
    context.outputs.resize(ctx.output_count());
    try {
      if (op_->KernelComputeV2 != nullptr) {
        OnyxStatus* status = op_->KernelComputeV2(kernel_, &context);
        if (status != nullptr) {
          const OnyxErrorCode code = status->code;
          return Status(code == ONYX_INVALID_ARGUMENT ? StatusCode::kInvalidArgument : StatusCode::kRuntimeError,
                        str_cat(label_, ": the custom operator failed: ", take_message(status)));
        }
      } else {
        op_->KernelCompute(kernel_, &context);
      }
    } catch (const std::exception& e) {
      return runtime_error(label_, ": the custom operator threw: ", e.what());
    } catch (...) {
      return runtime_error(label_, ": the custom operator threw an exception");
    }
    for (size_t i = 0; i < context.outputs.size(); ++i) {
      if (context.outputs[i] == nullptr && ctx.output_requested(i) && output_kind(op_, i) == INPUT_OUTPUT_REQUIRED) {
        return runtime_error(label_, ": the custom operator did not produce output ", i,
                             " (KernelContext_GetOutput was not called for it)");
      }
    }
    return Status::ok();
  }

 private:
  const OnyxCustomOp* op_;
  void* kernel_;
  std::vector<DataType> output_types_;
  std::string label_;
};

Result<std::unique_ptr<Kernel>> create_kernel(const OpList& ops, const KernelInfo& info) {
  const graph::Node& node = info.node();
  std::vector<DataType> types;
  for (int32_t id : node.inputs) {
    types.push_back(id == graph::kNoValue ? DataType::kUndefined
                                          : info.graph().values[static_cast<size_t>(id)].info.type.elem_type);
  }
  const OnyxCustomOp* op = select_variant(ops, types);
  if (op == nullptr) {
    std::string listed;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (i > 0) listed += ", ";
      listed += node.inputs[i] == graph::kNoValue
                    ? std::string("(omitted)")
                    : info.graph().values[static_cast<size_t>(node.inputs[i])].info.type.to_string();
    }
    return invalid_argument(info.label(), ": no custom operator '", node.op_type, "' registered for inputs (", listed,
                            ")");
  }
  // Required inputs must be there.
  const size_t declared = op->GetInputTypeCount(op);
  for (size_t i = 0; i < declared; ++i) {
    if (input_kind(op, i) == INPUT_OUTPUT_REQUIRED && !info.has_input(i)) {
      return invalid_argument(info.label(), ": input ", i, " of custom operator '", node.op_type, "' is required");
    }
  }
  std::vector<DataType> output_types;
  for (int32_t id : node.outputs) {
    output_types.push_back(id == graph::kNoValue ? DataType::kUndefined
                                                 : info.graph().values[static_cast<size_t>(id)].info.type.elem_type);
  }
  OnyxKernelInfo kernel_info{&info};
  void* kernel = nullptr;
  try {
    if (op->CreateKernelV2 != nullptr) {
      OnyxStatus* status = op->CreateKernelV2(op, api(), &kernel_info, &kernel);
      if (status != nullptr) {
        return invalid_argument(info.label(), ": the custom operator refused the node: ", take_message(status));
      }
    } else {
      kernel = op->CreateKernel(op, api(), &kernel_info);
    }
  } catch (const std::exception& e) {
    return invalid_argument(info.label(), ": the custom operator threw while creating its kernel: ", e.what());
  } catch (...) {
    return invalid_argument(info.label(), ": the custom operator threw while creating its kernel");
  }
  return std::unique_ptr<Kernel>(new CustomKernel(op, kernel, std::move(output_types), info.label()));
}

// Shape inference: the op's own function, or its declared output types.
Result<bool> infer(const OpList& ops, const graph::Node& node, const std::vector<const graph::TypeAndShape*>& inputs,
                   std::vector<graph::TypeAndShape>& outputs) {
  std::vector<DataType> types;
  for (const graph::TypeAndShape* input : inputs) types.push_back(input ? input->type.elem_type : DataType::kUndefined);
  // No variant for these types: the kernel's creation names the mismatch;
  // here the first variant's declared outputs are the best guess.
  const OnyxCustomOp* op = select_variant(ops, types);
  if (op == nullptr) op = ops.front();
  const size_t declared_outputs = op->GetOutputTypeCount(op);
  for (size_t i = 0; i < outputs.size() && declared_outputs > 0; ++i) {
    const ONNXTensorElementDataType type = op->GetOutputType(op, std::min(i, declared_outputs - 1));
    if (type != ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED) outputs[i].type = ValueType::tensor(from_c(type));
  }
  if (op->version >= 1 && op->InferOutputShapeFn != nullptr) {
    OnyxShapeInferContext context{&inputs, &outputs};
    OnyxStatus* status = nullptr;
    try {
      status = op->InferOutputShapeFn(op, &context);
    } catch (...) {
      return invalid_model("custom operator '", node.op_type, "' threw in its shape inference");
    }
    if (status != nullptr) {
      return invalid_model("custom operator '", node.op_type, "' '", node.name,
                           "': shape inference failed: ", take_message(status));
    }
  }
  return true;
}

const graph::Attribute* find_attribute(const OnyxKernelInfo* info, const char* name, graph::AttributeType type,
                                       OnyxStatus** error) {
  if (info == nullptr || name == nullptr) {
    *error = make_status(ONYX_INVALID_ARGUMENT, "info and name must not be NULL");
    return nullptr;
  }
  const graph::Attribute* attr = info->info->attr(name);
  if (attr == nullptr) {
    *error = make_status(ONYX_FAIL, info->info->label() + ": no attribute '" + name + "'");
    return nullptr;
  }
  if (attr->type != type) {
    *error = make_status(ONYX_INVALID_ARGUMENT, info->info->label() + ": attribute '" + name + "' has another type");
    return nullptr;
  }
  return attr;
}

template <typename T>
OnyxStatus* copy_array_out(const std::vector<T>& values, T* out, size_t* size) {
  if (size == nullptr) return make_status(ONYX_INVALID_ARGUMENT, "size must not be NULL");
  if (out == nullptr) {
    *size = values.size();
    return nullptr;
  }
  if (*size < values.size()) {
    *size = values.size();
    return make_status(ONYX_INVALID_ARGUMENT,
                       "the buffer is too small: " + std::to_string(values.size()) + " elements needed");
  }
  if (!values.empty()) std::memcpy(out, values.data(), values.size() * sizeof(T));
  *size = values.size();
  return nullptr;
}

OnyxStatus* copy_string(const std::string& s, char* out, size_t* size) {
  if (size == nullptr) return make_status(ONYX_INVALID_ARGUMENT, "size must not be NULL");
  const size_t needed = s.size() + 1;
  if (out == nullptr) {
    *size = needed;
    return nullptr;
  }
  if (*size < needed) {
    *size = needed;
    return make_status(ONYX_INVALID_ARGUMENT, "the buffer is too small: " + std::to_string(needed) + " bytes needed");
  }
  std::memcpy(out, s.c_str(), needed);
  *size = needed;
  return nullptr;
}

using RegisterFunction = OnyxStatus*(ONYX_API_CALL*)(OnyxSessionOptions*, const OnyxApiBase*);

OnyxStatus* call_registration(OnyxSessionOptions* options, RegisterFunction function, const std::string& what) {
  OnyxStatus* status = nullptr;
  try {
    status = function(options, OnyxGetApiBase());
  } catch (...) {
    return make_status(ONYX_FAIL, what + ": RegisterCustomOps threw an exception");
  }
  if (status != nullptr) {
    status->message = what + ": RegisterCustomOps failed: " + status->message;
    return status;
  }
  return nullptr;
}

}  // namespace

Result<std::shared_ptr<const KernelRegistry>> custom_op_registry(const OnyxCustomOpDomain& domain) {
  // Ops of one name (typed variants) share one definition.
  std::map<std::string, OpList> by_name;
  for (const OnyxCustomOp* op : domain.ops) {
    if (op->version < 1 || op->version > ONYX_API_VERSION) {
      return invalid_argument("custom operator in domain '", domain.domain, "' was built for C API version ",
                              op->version, "; this library serves 1 to ", ONYX_API_VERSION);
    }
    if (op->GetName == nullptr || op->GetInputTypeCount == nullptr || op->GetInputType == nullptr ||
        op->GetOutputTypeCount == nullptr || op->GetOutputType == nullptr ||
        (op->CreateKernel == nullptr && op->CreateKernelV2 == nullptr) ||
        (op->KernelCompute == nullptr && op->KernelComputeV2 == nullptr)) {
      return invalid_argument("custom operator in domain '", domain.domain,
                              "' lacks GetName, its input/output type functions, a CreateKernel or a KernelCompute");
    }
    const std::string name = op_name(op);
    if (name.empty()) return invalid_argument("custom operator in domain '", domain.domain, "' has no name");
    const char* provider = op->GetExecutionProviderType != nullptr ? op->GetExecutionProviderType(op) : nullptr;
    if (provider != nullptr && *provider != '\0' && std::string(provider) != "CPUExecutionProvider") {
      return not_implemented("custom operator '", name, "' is for ", provider,
                             ": onyx runs custom operators on CPUExecutionProvider only");
    }
    by_name[name].push_back(op);
  }
  auto registry = std::make_shared<KernelRegistry>();
  for (auto& [name, ops] : by_name) {
    KernelDef def;
    def.domain = domain.domain;
    def.op_type = name;
    const OnyxCustomOp* first = ops.front();
    def.since_version = first->GetStartVersion != nullptr ? first->GetStartVersion(first) : 1;
    def.last_version = first->GetEndVersion != nullptr ? first->GetEndVersion(first) : kLatestVersion;
    if (def.last_version <= 0) def.last_version = kLatestVersion;
    def.factory = [ops](const KernelInfo& info) { return create_kernel(ops, info); };
    def.infer = [ops](const graph::Node& node, const std::vector<const graph::TypeAndShape*>& inputs,
                      std::vector<graph::TypeAndShape>& outputs) { return infer(ops, node, inputs, outputs); };
    ONYX_RETURN_IF_ERROR(registry->add(std::move(def)));
  }
  return std::shared_ptr<const KernelRegistry>(std::move(registry));
}

OnyxStatus* ONYX_API_CALL KernelInfoGetAttribute_float(const OnyxKernelInfo* info, const char* name,
                                                       float* out) noexcept {
  OnyxStatus* error = nullptr;
  const graph::Attribute* attr = find_attribute(info, name, graph::AttributeType::kFloat, &error);
  if (attr == nullptr) return error;
  if (out == nullptr) return make_status(ONYX_INVALID_ARGUMENT, "out must not be NULL");
  *out = attr->f;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL KernelInfoGetAttribute_int64(const OnyxKernelInfo* info, const char* name,
                                                       int64_t* out) noexcept {
  OnyxStatus* error = nullptr;
  const graph::Attribute* attr = find_attribute(info, name, graph::AttributeType::kInt, &error);
  if (attr == nullptr) return error;
  if (out == nullptr) return make_status(ONYX_INVALID_ARGUMENT, "out must not be NULL");
  *out = attr->i;
  return nullptr;
}
OnyxStatus* ONYX_API_CALL KernelInfoGetAttribute_string(const OnyxKernelInfo* info, const char* name, char* out,
                                                        size_t* size) noexcept {
  OnyxStatus* error = nullptr;
  const graph::Attribute* attr = find_attribute(info, name, graph::AttributeType::kString, &error);
  if (attr == nullptr) return error;
  return copy_string(attr->s, out, size);
}
OnyxStatus* ONYX_API_CALL KernelInfoGetAttributeArray_float(const OnyxKernelInfo* info, const char* name, float* out,
                                                            size_t* size) noexcept {
  OnyxStatus* error = nullptr;
  const graph::Attribute* attr = find_attribute(info, name, graph::AttributeType::kFloats, &error);
  if (attr == nullptr) return error;
  return copy_array_out(attr->floats, out, size);
}
OnyxStatus* ONYX_API_CALL KernelInfoGetAttributeArray_int64(const OnyxKernelInfo* info, const char* name, int64_t* out,
                                                            size_t* size) noexcept {
  OnyxStatus* error = nullptr;
  const graph::Attribute* attr = find_attribute(info, name, graph::AttributeType::kInts, &error);
  if (attr == nullptr) return error;
  return copy_array_out(attr->ints, out, size);
}
OnyxStatus* ONYX_API_CALL KernelInfo_GetInputCount(const OnyxKernelInfo* info, size_t* out) noexcept {
  if (info == nullptr || out == nullptr) return make_status(ONYX_INVALID_ARGUMENT, "info and out must not be NULL");
  *out = info->info->input_count();
  return nullptr;
}
OnyxStatus* ONYX_API_CALL KernelInfo_GetOutputCount(const OnyxKernelInfo* info, size_t* out) noexcept {
  if (info == nullptr || out == nullptr) return make_status(ONYX_INVALID_ARGUMENT, "info and out must not be NULL");
  *out = info->info->output_count();
  return nullptr;
}
OnyxStatus* ONYX_API_CALL KernelInfo_GetNodeName(const OnyxKernelInfo* info, char* out, size_t* size) noexcept {
  if (info == nullptr) return make_status(ONYX_INVALID_ARGUMENT, "info must not be NULL");
  try {
    return copy_string(info->info->node().name, out, size);
  } catch (...) {
    return make_status(ONYX_FAIL, "out of memory");
  }
}

OnyxStatus* ONYX_API_CALL KernelContext_GetInputCount(const OnyxKernelContext* context, size_t* out) noexcept {
  if (context == nullptr || out == nullptr)
    return make_status(ONYX_INVALID_ARGUMENT, "context and out must not be NULL");
  *out = context->context->input_count();
  return nullptr;
}
OnyxStatus* ONYX_API_CALL KernelContext_GetOutputCount(const OnyxKernelContext* context, size_t* out) noexcept {
  if (context == nullptr || out == nullptr)
    return make_status(ONYX_INVALID_ARGUMENT, "context and out must not be NULL");
  *out = context->context->output_count();
  return nullptr;
}
OnyxStatus* ONYX_API_CALL KernelContext_GetInput(const OnyxKernelContext* context, size_t index,
                                                 const OnyxValue** out) noexcept {
  if (context == nullptr || out == nullptr)
    return make_status(ONYX_INVALID_ARGUMENT, "context and out must not be NULL");
  if (index >= context->inputs.size()) {
    return make_status(ONYX_INVALID_ARGUMENT, "input index " + std::to_string(index) +
                                                  " is out of range: the node has " +
                                                  std::to_string(context->inputs.size()));
  }
  try {
    const Value* value = context->context->input(index);
    if (value == nullptr) {
      *out = nullptr;
      return nullptr;
    }
    auto& slot = const_cast<OnyxKernelContext*>(context)->inputs[index];
    if (!slot) slot.reset(new OnyxValue{*value, nullptr});
    *out = slot.get();
    return nullptr;
  } catch (...) {
    return make_status(ONYX_FAIL, "out of memory");
  }
}
OnyxStatus* ONYX_API_CALL KernelContext_GetOutput(OnyxKernelContext* context, size_t index, const int64_t* dims,
                                                  size_t count, OnyxValue** out) noexcept {
  if (context == nullptr || out == nullptr)
    return make_status(ONYX_INVALID_ARGUMENT, "context and out must not be NULL");
  if (index >= context->outputs.size()) {
    return make_status(ONYX_INVALID_ARGUMENT, "output index " + std::to_string(index) +
                                                  " is out of range: the node has " +
                                                  std::to_string(context->outputs.size()));
  }
  if (count > 0 && dims == nullptr) return make_status(ONYX_INVALID_ARGUMENT, "dim_values must not be NULL");
  for (size_t i = 0; i < count; ++i) {
    if (dims[i] < 0)
      return make_status(ONYX_INVALID_ARGUMENT, "output dimension " + std::to_string(i) + " is negative");
  }
  try {
    const OnyxCustomOp* op = context->op;
    const size_t declared = op->GetOutputTypeCount(op);
    DataType type = declared > 0 ? from_c(op->GetOutputType(op, std::min(index, declared - 1))) : DataType::kUndefined;
    if (type == DataType::kUndefined && index < context->output_types.size()) type = context->output_types[index];
    if (type == DataType::kUndefined) {
      return make_status(ONYX_INVALID_ARGUMENT, "the element type of output " + std::to_string(index) +
                                                    " is unknown: the op declares none and inference found none");
    }
    Tensor& tensor = context->context->allocate_output(index, type, Shape(dims, dims + count));
    context->outputs[index].reset(new OnyxValue{Value(tensor), nullptr});
    *out = context->outputs[index].get();
    return nullptr;
  } catch (const Error& e) {
    return to_status(Status(e.code(), e.what()));
  } catch (...) {
    return make_status(ONYX_FAIL, "out of memory");
  }
}

OnyxStatus* ONYX_API_CALL ShapeInferContext_GetInputCount(const OnyxShapeInferContext* context, size_t* out) noexcept {
  if (context == nullptr || out == nullptr)
    return make_status(ONYX_INVALID_ARGUMENT, "context and out must not be NULL");
  *out = context->inputs->size();
  return nullptr;
}
OnyxStatus* ONYX_API_CALL ShapeInferContext_GetInputTypeShape(const OnyxShapeInferContext* context, size_t index,
                                                              OnyxTensorTypeAndShapeInfo** info) noexcept {
  if (context == nullptr || info == nullptr)
    return make_status(ONYX_INVALID_ARGUMENT, "context and info must not be NULL");
  if (index >= context->inputs->size()) {
    return make_status(ONYX_INVALID_ARGUMENT, "input index " + std::to_string(index) + " is out of range");
  }
  try {
    auto* out = new OnyxTensorTypeAndShapeInfo();
    const graph::TypeAndShape* input = (*context->inputs)[index];
    if (input != nullptr) {
      out->type = to_c(input->type.elem_type);
      out->has_shape = input->has_shape;
      for (const graph::Dim& d : input->shape) {
        out->dims.push_back(d.is_known() ? d.value : -1);
        out->symbols.push_back(d.symbol);
      }
    } else {
      out->has_shape = false;
    }
    *info = out;
    return nullptr;
  } catch (...) {
    return make_status(ONYX_FAIL, "out of memory");
  }
}
OnyxStatus* ONYX_API_CALL ShapeInferContext_SetOutputTypeShape(const OnyxShapeInferContext* context, size_t index,
                                                               const OnyxTensorTypeAndShapeInfo* info) noexcept {
  if (context == nullptr || info == nullptr)
    return make_status(ONYX_INVALID_ARGUMENT, "context and info must not be NULL");
  if (index >= context->outputs->size()) {
    return make_status(ONYX_INVALID_ARGUMENT, "output index " + std::to_string(index) + " is out of range");
  }
  try {
    graph::TypeAndShape& out = (*context->outputs)[index];
    if (info->type != ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED) out.type = ValueType::tensor(from_c(info->type));
    out.has_shape = info->has_shape;
    out.shape.clear();
    for (size_t i = 0; i < info->dims.size(); ++i) {
      const std::string symbol = i < info->symbols.size() ? info->symbols[i] : std::string();
      out.shape.push_back(info->dims[i] >= 0 ? graph::Dim::known(info->dims[i])
                                             : (symbol.empty() ? graph::Dim{} : graph::Dim::symbolic(symbol)));
    }
    return nullptr;
  } catch (...) {
    return make_status(ONYX_FAIL, "out of memory");
  }
}

OnyxStatus* ONYX_API_CALL RegisterCustomOpsLibrary_V2(OnyxSessionOptions* options, const char* path) noexcept {
  if (options == nullptr || path == nullptr)
    return make_status(ONYX_INVALID_ARGUMENT, "options and path must not be NULL");
  try {
    // Kept loaded for the rest of the process: its ops may be in use by any
    // session made from these options.
    void* library = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      const char* why = ::dlerror();
      return make_status(ONYX_NO_SUCHFILE, std::string("cannot load the custom operator library '") + path +
                                               "': " + (why != nullptr ? why : "unknown error"));
    }
    auto function = reinterpret_cast<RegisterFunction>(::dlsym(library, "RegisterCustomOps"));
    if (function == nullptr) {
      return make_status(ONYX_INVALID_ARGUMENT,
                         std::string("the library '") + path + "' exports no RegisterCustomOps function");
    }
    return call_registration(options, function, std::string("custom operator library '") + path + "'");
  } catch (...) {
    return make_status(ONYX_FAIL, "out of memory");
  }
}

OnyxStatus* ONYX_API_CALL RegisterCustomOpsUsingFunction(OnyxSessionOptions* options, const char* name) noexcept {
  if (options == nullptr || name == nullptr) {
    return make_status(ONYX_INVALID_ARGUMENT, "options and registration_func_name must not be NULL");
  }
  try {
    auto function = reinterpret_cast<RegisterFunction>(::dlsym(RTLD_DEFAULT, name));
    if (function == nullptr) {
      return make_status(ONYX_INVALID_ARGUMENT, std::string("no function '") + name + "' is loaded in this process");
    }
    return call_registration(options, function, std::string("registration function '") + name + "'");
  } catch (...) {
    return make_status(ONYX_FAIL, "out of memory");
  }
}

}  // namespace onyx::capi

namespace onyx {

void register_custom_ops_library(SessionOptions& options, const std::string& path) {
  OnyxSessionOptions scratch;
  OnyxStatus* status = capi::RegisterCustomOpsLibrary_V2(&scratch, path.c_str());
  if (status != nullptr) {
    const StatusCode code = status->code == ONYX_INVALID_ARGUMENT || status->code == ONYX_NO_SUCHFILE
                                ? StatusCode::kInvalidArgument
                                : StatusCode::kRuntimeError;
    throw Error(Status(code, capi::take_message(status)));
  }
  for (auto& registry : scratch.options.custom_op_registries) options.custom_op_registries.push_back(registry);
}

}  // namespace onyx
