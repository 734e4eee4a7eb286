// The C++ API (include/onyx/onyx_cxx_api.h) from a C++ program that links
// nothing of libonyx but the C API's entry point: every class of the
// wrapper, errors as Onyx::Exception, a custom op written with CustomOpBase,
// and the cross-language check's output.
//
//   onyx_cxx_api_test MODEL_DIR [CUSTOM_OP_LIBRARY CUSTOM_OP_MODEL]
//
// MODEL_DIR holds tiny_cnn.onnx (the repository's models/). With the example
// custom operator library (examples/custom_op_library) and a model using it
// and Twice (domain test.capi, registered here), those run too. Prints
// "ok: ..." per check and, last, "output NAME: v0 v1 ..." lines with 9
// significant digits (tests/python/test_cxx_api.py compares them with
// Python's). Exits 1 on the first failure, naming it.
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "onyx/onyx_cxx_api.h"

namespace {

#define EXPECT(cond)                                                   \
  do {                                                                 \
    if (!(cond)) {                                                     \
      std::fprintf(stderr, "FAILED: %s (line %d)\n", #cond, __LINE__); \
      std::exit(1);                                                    \
    }                                                                  \
  } while (0)

// `body` must throw an Onyx::Exception of `code` whose message holds `text`.
template <typename F>
void expect_error(F&& body, OnyxErrorCode code, const char* text, const char* what) {
  try {
    body();
  } catch (const Onyx::Exception& e) {
    if (e.GetOnyxErrorCode() != code || std::strstr(e.what(), text) == nullptr) {
      std::fprintf(stderr, "FAILED: %s: error %d '%s'; expected %d containing '%s'\n", what, e.GetOnyxErrorCode(),
                   e.what(), code, text);
      std::exit(1);
    }
    std::printf("ok: %s -> %s\n", what, e.what());
    return;
  }
  std::fprintf(stderr, "FAILED: %s succeeded; an Onyx::Exception was expected\n", what);
  std::exit(1);
}

// `body` must throw an Onyx::Exception of `code` whose message holds every
// one of `texts`.
template <typename F>
void expect_failure(F&& body, OnyxErrorCode code, std::initializer_list<const char*> texts, const char* what) {
  try {
    body();
  } catch (const Onyx::Exception& e) {
    for (const char* text : texts) {
      if (e.GetOnyxErrorCode() != code || std::strstr(e.what(), text) == nullptr) {
        std::fprintf(stderr, "FAILED: %s: error %d '%s'; expected %d containing '%s'\n", what, e.GetOnyxErrorCode(),
                     e.what(), code, text);
        std::exit(1);
      }
    }
    std::printf("ok: %s -> %s\n", what, e.what());
    return;
  }
  std::fprintf(stderr, "FAILED: %s succeeded; an Onyx::Exception was expected\n", what);
  std::exit(1);
}

void print_output(const char* name, const float* data, size_t count) {
  std::printf("output %s:", name);
  for (size_t i = 0; i < count; ++i) std::printf(" %.9g", data[i]);
  std::printf("\n");
}

// The input every language feeds tiny_cnn (tests/python/bindings_util.py):
// exact in any floating point.
std::vector<float> tiny_cnn_image() {
  std::vector<float> image(3 * 32 * 32);
  for (size_t i = 0; i < image.size(); ++i) image[i] = static_cast<float>(static_cast<int>((i * 7) % 101) - 50) / 64.0f;
  return image;
}

Onyx::SessionOptions single_thread_options() {
  Onyx::SessionOptions options;
  options.SetIntraOpNumThreads(1);
  return options;
}

// Owning wrappers are move-only and hold exactly their handle.
static_assert(!std::is_copy_constructible_v<Onyx::Session> && std::is_nothrow_move_constructible_v<Onyx::Session>);
static_assert(!std::is_copy_constructible_v<Onyx::Value> && std::is_nothrow_move_assignable_v<Onyx::Value>);
static_assert(!std::is_copy_constructible_v<Onyx::SessionOptions> && !std::is_copy_assignable_v<Onyx::Env>);
static_assert(std::is_copy_constructible_v<Onyx::ConstValue>, "views copy");

void check_versions() {
  EXPECT(!Onyx::GetVersionString().empty());
  EXPECT(Onyx::GetBuildInfoString().find("onyx") != std::string::npos);
  EXPECT(&Onyx::GetApi() == OnyxGetApiBase()->GetApi(ONYX_API_VERSION));
  const std::vector<std::string> providers = Onyx::GetAvailableProviders();
  bool has_cpu = false;
  for (const std::string& p : providers) has_cpu |= p == "CPUExecutionProvider";
  EXPECT(has_cpu);
  std::printf("ok: version %s, %zu providers\n", Onyx::GetVersionString().c_str(), providers.size());
}

// Runs tiny_cnn every way the wrapper offers; returns its probabilities.
std::vector<float> check_tiny_cnn(const std::string& model_dir) {
  const std::string path = model_dir + "/tiny_cnn.onnx";
  Onyx::Env env(ONYX_LOGGING_LEVEL_WARNING, "cxx_api_test");
  Onyx::SessionOptions options = single_thread_options();
  options.SetGraphOptimizationLevel(ONYX_ENABLE_ALL).SetExecutionMode(ONYX_SEQUENTIAL).SetLogId("cxx");
  options.AddConfigEntry("session.use_env_allocators", "0").EnableMemPattern().EnableCpuMemArena();
  Onyx::Session session(env, path.c_str(), options);

  EXPECT(session.GetInputCount() == 1 && session.GetOutputCount() == 1);
  EXPECT(session.GetOverridableInitializerCount() == session.GetOverridableInitializerNames().size());
  Onyx::AllocatorWithDefaultOptions allocator;
  Onyx::AllocatedStringPtr input_name = session.GetInputNameAllocated(0, allocator);
  Onyx::AllocatedStringPtr output_name = session.GetOutputNameAllocated(0, allocator);
  EXPECT(std::string(input_name.get()) == "image");
  EXPECT(session.GetInputNames() == std::vector<std::string>{"image"});
  EXPECT(session.GetOutputNames() == std::vector<std::string>{output_name.get()});
  const std::vector<std::string> session_providers = session.GetProviders();
  EXPECT(!session_providers.empty() && session_providers.back() == "CPUExecutionProvider");

  // Type information: a float tensor [batch, 3, 32, 32].
  Onyx::TypeInfo type_info = session.GetInputTypeInfo(0);
  EXPECT(type_info.GetONNXType() == ONNX_TYPE_TENSOR);
  Onyx::ConstTensorTypeAndShapeInfo tensor_info = type_info.GetTensorTypeAndShapeInfo();
  EXPECT(tensor_info.GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  EXPECT((tensor_info.GetShape() == std::vector<int64_t>{-1, 3, 32, 32}));
  EXPECT(std::string(tensor_info.GetSymbolicDimensions()[0]) == "batch");
  expect_error([&] { type_info.GetMapTypeInfo(); }, ONYX_INVALID_ARGUMENT, "not a map", "a tensor type as a map");
  Onyx::TypeInfo output_type = session.GetOutputTypeInfo(0);
  EXPECT((output_type.GetTensorTypeAndShapeInfo().GetShape() == std::vector<int64_t>{-1, 10}));

  // The input over this program's memory, no copy.
  std::vector<float> image = tiny_cnn_image();
  const int64_t shape[] = {1, 3, 32, 32};
  Onyx::MemoryInfo cpu = Onyx::MemoryInfo::CreateCpu(OnyxArenaAllocator, OnyxMemTypeDefault);
  EXPECT(cpu.GetAllocatorName() == "Cpu" && cpu.GetDeviceId() == 0 && cpu.GetMemoryType() == OnyxMemTypeDefault);
  EXPECT(cpu.GetAllocatorType() == OnyxArenaAllocator);
  Onyx::Value input = Onyx::Value::CreateTensor<float>(cpu, image.data(), image.size(), shape, 4);
  EXPECT(input.IsTensor() && input.HasValue());
  EXPECT(input.GetTensorMutableData<float>() == image.data());
  EXPECT(input.GetTensorMemoryInfo() == cpu);
  EXPECT(input.GetTensorTypeAndShapeInfo().GetElementCount() == image.size());

  Onyx::RunOptions run_options;
  run_options.SetRunTag("cxx").SetRunLogSeverityLevel(ONYX_LOGGING_LEVEL_WARNING);
  EXPECT(std::string(run_options.GetRunTag()) == "cxx");
  EXPECT(run_options.GetRunLogSeverityLevel() == ONYX_LOGGING_LEVEL_WARNING);
  const char* input_names[] = {input_name.get()};
  const char* output_names[] = {output_name.get()};
  std::vector<Onyx::Value> outputs = session.Run(run_options, input_names, &input, 1, output_names, 1);
  EXPECT(outputs.size() == 1 && outputs[0].IsTensor());
  Onyx::TensorTypeAndShapeInfo out_info = outputs[0].GetTensorTypeAndShapeInfo();
  EXPECT((out_info.GetShape() == std::vector<int64_t>{1, 10}));
  const float* out = outputs[0].GetTensorData<float>();
  std::vector<float> probabilities(out, out + out_info.GetElementCount());
  double sum = 0;
  for (float p : probabilities) sum += p;
  EXPECT(probabilities.size() == 10 && std::fabs(sum - 1.0) < 1e-5);  // softmax
  std::printf("ok: tiny_cnn runs, %zu probabilities summing to %.6f\n", probabilities.size(), sum);

  // A null RunOptions, and an output tensor written in place.
  const int64_t out_shape[] = {1, 10};
  Onyx::Value preallocated = Onyx::Value::CreateTensor<float>(allocator, out_shape, 2);
  session.Run(Onyx::RunOptions{nullptr}, input_names, &input, 1, output_names, &preallocated, 1);
  EXPECT(std::memcmp(preallocated.GetTensorData<float>(), out, 10 * sizeof(float)) == 0);
  std::printf("ok: a pre-allocated output is filled\n");

  // The same model from memory, with the batch fixed by an override.
  std::ifstream file(path, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  Onyx::SessionOptions fixed = options.Clone();
  fixed.AddFreeDimensionOverrideByName("batch", 1);
  Onyx::Session from_memory(Onyx::Env{nullptr}, bytes.data(), bytes.size(), fixed);
  EXPECT(
      (from_memory.GetInputTypeInfo(0).GetTensorTypeAndShapeInfo().GetShape() == std::vector<int64_t>{1, 3, 32, 32}));
  std::vector<Onyx::Value> again = from_memory.Run(run_options, input_names, &input, 1, output_names, 1);
  EXPECT(std::memcmp(again[0].GetTensorData<float>(), out, 10 * sizeof(float)) == 0);
  std::printf("ok: a session from memory with a free dimension override\n");

  // I/O binding: the output into this program's buffer, then to the CPU device.
  Onyx::IoBinding binding(session);
  binding.BindInput(input_name.get(), input);
  std::vector<float> bound(10);
  Onyx::Value bound_value = Onyx::Value::CreateTensor<float>(cpu, bound.data(), bound.size(), out_shape, 2);
  binding.BindOutput(output_name.get(), bound_value);
  session.Run(run_options, binding);
  EXPECT(std::memcmp(bound.data(), out, 10 * sizeof(float)) == 0);
  EXPECT(binding.GetOutputNames() == std::vector<std::string>{output_name.get()});
  std::vector<Onyx::Value> bound_outputs = binding.GetOutputValues();
  EXPECT(bound_outputs.size() == 1 && bound_outputs[0].GetTensorData<float>() == bound.data());
  binding.ClearBoundOutputs();
  binding.BindOutput(output_name.get(), cpu);
  session.Run(run_options, binding);
  bound_outputs = binding.GetOutputValues(allocator);
  EXPECT(std::memcmp(bound_outputs[0].GetTensorData<float>(), out, 10 * sizeof(float)) == 0);
  binding.ClearBoundInputs();
  expect_error([&] { session.Run(run_options, binding); }, ONYX_INVALID_ARGUMENT, "image",
               "a binding without its input");
  std::printf("ok: I/O binding into a caller's buffer and to a device\n");

  // A session's allocator.
  Onyx::Allocator session_allocator(session, cpu);
  EXPECT(session_allocator.GetInfo() == cpu);
  {
    Onyx::MemoryAllocation block = session_allocator.GetAllocation(256);
    EXPECT(block.get() != nullptr && block.size() == 256);
    std::memset(block.get(), 0x5a, block.size());
    void* raw = allocator.Alloc(64);
    EXPECT(raw != nullptr && reinterpret_cast<uintptr_t>(raw) % 64 == 0);
    allocator.Free(raw);
  }
  std::printf("ok: allocators\n");

  // Errors: a missing input, a wrong shape, an unknown output, a short buffer.
  expect_error([&] { session.Run(run_options, nullptr, nullptr, 0, output_names, 1); }, ONYX_INVALID_ARGUMENT, "image",
               "Run without its input");
  std::vector<float> small(3 * 16 * 16);
  const int64_t bad_shape[] = {1, 3, 16, 16};
  Onyx::Value bad = Onyx::Value::CreateTensor<float>(cpu, small.data(), small.size(), bad_shape, 4);
  try {
    session.Run(run_options, input_names, &bad, 1, output_names, 1);
    EXPECT(!"a wrong input shape ran");
  } catch (const Onyx::Exception& e) {
    EXPECT(e.GetOnyxErrorCode() != ONYX_OK);
    std::printf("ok: a wrong input shape -> %s\n", e.what());
  }
  const char* unknown[] = {"no_such_output"};
  expect_error([&] { session.Run(run_options, input_names, &input, 1, unknown, 1); }, ONYX_INVALID_ARGUMENT,
               "no_such_output", "Run with an unknown output");
  expect_error([&] { Onyx::Value::CreateTensor<float>(cpu, image.data(), 4, shape, 4); }, ONYX_INVALID_ARGUMENT,
               "needs", "a tensor over too small a buffer");

  // Terminate: a run with the flag set stops with an error.
  run_options.SetTerminate();
  try {
    session.Run(run_options, input_names, &input, 1, output_names, 1);
    EXPECT(!"a terminated run ran");
  } catch (const Onyx::Exception& e) {
    EXPECT(std::strstr(e.what(), "terminated") != nullptr);
  }
  run_options.UnsetTerminate();
  session.Run(run_options, input_names, &input, 1, output_names, 1);
  std::printf("ok: RunOptions::SetTerminate stops a run\n");

  // Metadata.
  Onyx::ModelMetadata metadata = session.GetModelMetadata();
  Onyx::AllocatedStringPtr producer = metadata.GetProducerNameAllocated(allocator);
  const std::vector<Onyx::AllocatedStringPtr> keys = metadata.GetCustomMetadataMapKeysAllocated(allocator);
  for (const Onyx::AllocatedStringPtr& key : keys) {
    EXPECT(metadata.LookupCustomMetadataMapAllocated(key.get(), allocator) != nullptr);
  }
  EXPECT(metadata.LookupCustomMetadataMapAllocated("no such key", allocator) == nullptr);
  EXPECT(metadata.GetGraphNameAllocated(allocator) != nullptr && metadata.GetDomainAllocated(allocator) != nullptr);
  EXPECT(metadata.GetDescriptionAllocated(allocator) != nullptr);
  EXPECT(metadata.GetGraphDescriptionAllocated(allocator) != nullptr);
  std::printf("ok: metadata: producer '%s', version %lld, %zu custom keys\n", producer.get(),
              static_cast<long long>(metadata.GetVersion()), keys.size());

  // Profiling into a folder of its own.
  const std::filesystem::path folder = std::filesystem::temp_directory_path() / "onyx_cxx_api_test_profile";
  std::filesystem::create_directories(folder);
  Onyx::SessionOptions profiled = single_thread_options();
  profiled.EnableProfiling((folder / "run").string().c_str());
  Onyx::Session profiled_session(env, path.c_str(), profiled);
  profiled_session.Run(run_options, input_names, &input, 1, output_names, 1);
  EXPECT(profiled_session.GetProfilingStartTimeNs() > 0);
  Onyx::AllocatedStringPtr profile = profiled_session.EndProfilingAllocated(allocator);
  EXPECT(std::filesystem::exists(profile.get()));
  std::filesystem::remove_all(folder);
  std::printf("ok: profiling\n");

  // Moves hand the handle over; the moved-from wrapper is empty and safe.
  Onyx::Session moved = std::move(session);
  EXPECT(static_cast<OnyxSession*>(session) == nullptr && moved.GetInputCount() == 1);
  Onyx::Value taken = std::move(outputs[0]);
  EXPECT(static_cast<OnyxValue*>(outputs[0]) == nullptr);
  OnyxValue* released = taken.release();
  Onyx::Value adopted(released);
  EXPECT(adopted.GetTensorData<float>() == out);
  std::printf("ok: moves and release\n");
  return probabilities;
}

void check_values() {
  Onyx::AllocatorWithDefaultOptions allocator;
  // Strings.
  const int64_t shape[] = {3};
  Onyx::Value strings = Onyx::Value::CreateTensor<std::string>(allocator, shape, 1);
  const char* words[] = {"onyx", "", "runs"};
  strings.FillStringTensor(words, 3);
  EXPECT(strings.GetStringTensorDataLength() == 8);
  char content[8];
  size_t offsets[3];
  strings.GetStringTensorContent(content, sizeof content, offsets, 3);
  EXPECT(offsets[0] == 0 && offsets[1] == 4 && offsets[2] == 4 && std::memcmp(content, "onyxruns", 8) == 0);
  strings.FillStringTensorElement("fast", 1);
  EXPECT(strings.GetStringTensorElement(1) == "fast" && strings.GetStringTensorElementLength(2) == 4);
  EXPECT(strings.GetTensorTypeAndShapeInfo().GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING);
  std::printf("ok: string tensors\n");

  // A sequence of two tensors.
  Onyx::MemoryInfo cpu = Onyx::MemoryInfo::CreateCpu(OnyxDeviceAllocator, OnyxMemTypeDefault);
  float a[2] = {1, 2};
  float b[3] = {3, 4, 5};
  const int64_t two[] = {2}, three[] = {3};
  std::vector<Onyx::Value> items;
  items.push_back(Onyx::Value::CreateTensor<float>(cpu, a, 2, two, 1));
  items.push_back(Onyx::Value::CreateTensor<float>(cpu, b, 3, three, 1));
  Onyx::Value sequence = Onyx::Value::CreateSequence(items);
  EXPECT(!sequence.IsTensor() && sequence.GetCount() == 2);
  Onyx::Value second = sequence.GetValue(1, allocator);
  EXPECT(second.GetTensorData<float>() == b);
  Onyx::TypeInfo sequence_type = sequence.GetTypeInfo();
  EXPECT(sequence_type.GetONNXType() == ONNX_TYPE_SEQUENCE);
  Onyx::TypeInfo element_type = sequence_type.GetSequenceTypeInfo().GetSequenceElementType();
  EXPECT(element_type.GetTensorTypeAndShapeInfo().GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  expect_error([&] { sequence.GetValue(2, allocator); }, ONYX_INVALID_ARGUMENT, "out of range",
               "GetValue past a sequence's end");

  // A map int64 -> float.
  int64_t key_data[2] = {10, 20};
  Onyx::Value keys = Onyx::Value::CreateTensor<int64_t>(cpu, key_data, 2, two, 1);
  Onyx::Value map = Onyx::Value::CreateMap(keys, items[0]);
  EXPECT(map.GetCount() == 2);
  Onyx::TypeInfo map_type = map.GetTypeInfo();
  EXPECT(map_type.GetONNXType() == ONNX_TYPE_MAP);
  Onyx::ConstMapTypeInfo map_info = map_type.GetMapTypeInfo();
  EXPECT(map_info.GetMapKeyType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64);
  EXPECT(map_info.GetMapValueType().GetTensorTypeAndShapeInfo().GetElementType() ==
         ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT);
  EXPECT(map.GetValue(0, allocator).GetTensorData<int64_t>() == key_data);
  EXPECT(map.GetValue(1, allocator).GetTensorData<float>() == a);
  std::printf("ok: sequences and maps\n");

  // A type and shape of one's own.
  Onyx::TensorTypeAndShapeInfo info(ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE, {2, -1, 4});
  EXPECT(info.GetElementType() == ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE && info.GetDimensionsCount() == 3);
  EXPECT((info.GetConst().GetShape() == std::vector<int64_t>{2, -1, 4}));
  std::printf("ok: TensorTypeAndShapeInfo\n");
}

void check_errors() {
  expect_error([] { Onyx::Session(Onyx::Env{nullptr}, "/no/such/model.onnx", Onyx::SessionOptions{nullptr}); },
               ONYX_NO_SUCHFILE, "no model file", "a missing model file");
  const char garbage[] = "this is not an onnx model";
  try {
    Onyx::Session session(Onyx::Env{nullptr}, garbage, sizeof garbage, Onyx::SessionOptions{nullptr});
    EXPECT(!"a malformed model loaded");
  } catch (const Onyx::Exception& e) {
    std::printf("ok: a malformed model -> %s\n", e.what());
  }
  Onyx::SessionOptions options;
  expect_error([&] { options.SetIntraOpNumThreads(-1); }, ONYX_INVALID_ARGUMENT, "intra_op_num_threads",
               "a negative thread count");
  expect_error([&] { Onyx::MemoryInfo("NoSuchMemory", OnyxDeviceAllocator, 0, OnyxMemTypeDefault); },
               ONYX_INVALID_ARGUMENT, "NoSuchMemory", "an unknown memory name");

  // Status: made from an exception and back; errors keep their code.
  Onyx::Status ok(nullptr);
  EXPECT(ok.IsOK() && ok.GetErrorCode() == ONYX_OK && ok.GetErrorMessage().empty());
  Onyx::Status status(Onyx::Exception("made here", ONYX_EP_FAIL));
  EXPECT(!status.IsOK() && status.GetErrorCode() == ONYX_EP_FAIL && status.GetErrorMessage() == "made here");
  expect_error([&] { Onyx::ThrowOnError(status); }, ONYX_EP_FAIL, "made here", "Status to an exception");
  Onyx::Status from_std{std::runtime_error("plain")};
  EXPECT(from_std.GetErrorCode() == ONYX_FAIL && from_std.GetErrorMessage() == "plain");
  expect_error([] { Onyx::ThrowOnError(Onyx::GetApi().CreateStatus(ONYX_NOT_IMPLEMENTED, "from C")); },
               ONYX_NOT_IMPLEMENTED, "from C", "a C status thrown");
  std::printf("ok: errors\n");
}

// ---- Twice(X) = 2 X (float), domain test.capi, written with CustomOpBase ----

struct TwiceOp;

struct TwiceKernel {
  TwiceKernel(const TwiceOp& op, const OnyxKernelInfo* info);
  void Compute(OnyxKernelContext* context);

  const TwiceOp& op;
  std::string node;
};

struct TwiceOp : Onyx::CustomOpBase<TwiceOp, TwiceKernel> {
  void* CreateKernel(const OnyxApi&, const OnyxKernelInfo* info) const {
    if (fail_create) throw std::runtime_error("Twice refuses to be created");
    return new TwiceKernel(*this, info);
  }
  const char* GetName() const { return "Twice"; }
  size_t GetInputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetInputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
  size_t GetOutputTypeCount() const { return 1; }
  ONNXTensorElementDataType GetOutputType(size_t) const { return ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT; }
  // The output has the input's shape.
  static Onyx::Status InferOutputShape(Onyx::ShapeInferContext& context) {
    ++shape_inferences;
    return context.SetOutputShape(0, context.GetInputShape(0), context.GetInputType(0));
  }

  bool fail_create = false;
  mutable std::atomic<int> fail_compute{0};  // 1: an Onyx::Exception, 2: a std::exception
  static inline std::atomic<int> shape_inferences{0};
};

TwiceKernel::TwiceKernel(const TwiceOp& twice, const OnyxKernelInfo* info)
    : op(twice), node(Onyx::ConstKernelInfo(info).GetNodeName()) {
  Onyx::ConstKernelInfo kernel_info(info);
  EXPECT(kernel_info.GetInputCount() == 1 && kernel_info.GetOutputCount() == 1);
}

void TwiceKernel::Compute(OnyxKernelContext* raw_context) {
  if (op.fail_compute == 1) throw Onyx::Exception("Twice was told to fail", ONYX_INVALID_ARGUMENT);
  if (op.fail_compute == 2) throw std::runtime_error("Twice threw a std::runtime_error");
  Onyx::KernelContext context(raw_context);
  EXPECT(context.GetInputCount() == 1 && context.GetOutputCount() == 1);
  Onyx::ConstValue x = context.GetInput(0);
  const std::vector<int64_t> shape = x.GetTensorTypeAndShapeInfo().GetShape();
  Onyx::UnownedValue y = context.GetOutput(0, shape);
  const float* in = x.GetTensorData<float>();
  float* out = y.GetTensorMutableData<float>();
  const size_t count = y.GetTensorTypeAndShapeInfo().GetElementCount();
  for (size_t i = 0; i < count; ++i) out[i] = 2 * in[i];
}

TwiceOp twice_op;  // outlives every session

}  // namespace

// Found by name in the process (RegisterCustomOpsUsingFunction): registers
// Twice through the options it is handed, as a custom op library would.
extern "C" OnyxStatus* ONYX_API_CALL RegisterCxxTestOps(OnyxSessionOptions* options, const OnyxApiBase* api_base) {
  try {
    EXPECT(api_base->GetApi(ONYX_API_VERSION) == &Onyx::GetApi());
    static Onyx::CustomOpDomain domain("test.capi");
    static bool added = false;
    if (!added) domain.Add(&twice_op);
    added = true;
    Onyx::UnownedSessionOptions(options).Add(domain);
    return nullptr;
  } catch (const Onyx::Exception& e) {
    return Onyx::Status(e).release();
  }
}

namespace {

void check_custom_ops(const char* library, const char* model) {
  expect_error([] { Onyx::SessionOptions().RegisterCustomOpsLibrary("/no/such/library.so"); }, ONYX_NO_SUCHFILE,
               "cannot load", "a missing custom op library");
  expect_error([] { Onyx::SessionOptions().RegisterCustomOpsUsingFunction("NoSuchRegistrationFunction"); },
               ONYX_INVALID_ARGUMENT, "NoSuchRegistrationFunction", "a missing registration function");
  if (library == nullptr) return;

  // Twice from this process, the example library's ops from the library.
  Onyx::SessionOptions options = single_thread_options();
  options.RegisterCustomOpsUsingFunction("RegisterCxxTestOps").RegisterCustomOpsLibrary(library);
  Onyx::Session session(Onyx::Env{nullptr}, model, options);
  EXPECT(twice_op.shape_inferences > 0);
  EXPECT((session.GetOutputTypeInfo(0).GetTensorTypeAndShapeInfo().GetShape() == std::vector<int64_t>{2, 3}));

  // Y = Twice(ScaledTanh(X, scale=2)), Z = CheckPositive(X); X float [2, 3].
  float x[6] = {0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f};
  const int64_t shape[] = {2, 3};
  Onyx::MemoryInfo cpu = Onyx::MemoryInfo::CreateCpu(OnyxArenaAllocator, OnyxMemTypeDefault);
  Onyx::Value input = Onyx::Value::CreateTensor<float>(cpu, x, 6, shape, 2);
  const char* input_names[] = {"X"};
  const char* output_names[] = {"Y", "Z"};
  Onyx::RunOptions run_options;
  std::vector<Onyx::Value> outputs = session.Run(run_options, input_names, &input, 1, output_names, 2);
  const float* y = outputs[0].GetTensorData<float>();
  for (int i = 0; i < 6; ++i) EXPECT(std::fabs(y[i] - 2.0f * 2.0f * std::tanh(x[i])) < 1e-6f);
  EXPECT(std::memcmp(outputs[1].GetTensorData<float>(), x, sizeof x) == 0);
  std::vector<float> y_values(y, y + 6);
  std::printf("ok: the custom op library and a CustomOpBase op run in one model\n");

  // What a C++ kernel throws comes back as an error naming its node; a
  // kernel's failure fails the run with ONYX_FAIL, as in onnxruntime.
  auto run = [&] { session.Run(run_options, input_names, &input, 1, output_names, 2); };
  twice_op.fail_compute = 1;
  expect_failure(run, ONYX_FAIL, {"Twice 'twice'", "Twice was told to fail"}, "a kernel throwing Onyx::Exception");
  twice_op.fail_compute = 2;
  expect_failure(run, ONYX_FAIL, {"Twice 'twice'", "Twice threw a std::runtime_error"},
                 "a kernel throwing std::runtime_error");
  twice_op.fail_compute = 0;
  run();  // and it runs again

  // A custom op from the library failing names its node.
  x[4] = -1.0f;
  expect_failure(run, ONYX_FAIL, {"CheckPositive 'positive_check'", "element 4 is -1, not positive"},
                 "a C custom op that fails");
  x[4] = 2.5f;

  // A kernel that cannot be created fails the session, naming the node.
  twice_op.fail_create = true;
  expect_failure([&] { Onyx::Session(Onyx::Env{nullptr}, model, options); }, ONYX_INVALID_ARGUMENT,
                 {"Twice 'twice'", "Twice refuses to be created"}, "a kernel constructor that throws");
  twice_op.fail_create = false;

  print_output("Y", y_values.data(), y_values.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) {
    std::fprintf(stderr, "usage: %s MODEL_DIR [CUSTOM_OP_LIBRARY CUSTOM_OP_MODEL]\n", argv[0]);
    return 2;
  }
  try {
    check_versions();
    const std::vector<float> probabilities = check_tiny_cnn(argv[1]);
    check_values();
    check_errors();
    check_custom_ops(argc == 4 ? argv[2] : nullptr, argc == 4 ? argv[3] : nullptr);
    print_output("probabilities", probabilities.data(), probabilities.size());
  } catch (const Onyx::Exception& e) {
    std::fprintf(stderr, "FAILED: an unexpected Onyx::Exception (code %d): %s\n", e.GetOnyxErrorCode(), e.what());
    return 1;
  }
  std::printf("all C++ API checks passed\n");
  return 0;
}
