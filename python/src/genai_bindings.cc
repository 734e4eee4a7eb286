// The `_onyx.genai` submodule: onyx's generation C API
// (include/onyx/onyx_genai_c.h) as Python classes. The onnxruntime-genai
// shaped package on top is python/onyx/genai/.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "onyx/onyx_genai_c.h"

namespace nb = nanobind;

namespace {

// Raises the result's message as a RuntimeError (and frees it); nothing for NULL.
void check(OnyxGenaiResult* result) {
  if (result == nullptr) return;
  std::string message = OnyxGenaiResultGetError(result);
  OnyxGenaiDestroyResult(result);
  throw std::runtime_error(message);
}

template <typename T, void (*Destroy)(T*)>
struct Handle {
  T* pointer = nullptr;
  Handle() = default;
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { Destroy(pointer); }
};

struct Config : Handle<OnyxGenaiConfig, OnyxGenaiDestroyConfig> {
  explicit Config(const std::string& folder) { check(OnyxGenaiCreateConfig(folder.c_str(), &pointer)); }
};

struct Model : Handle<OnyxGenaiModel, OnyxGenaiDestroyModel> {
  explicit Model(const std::string& folder) { check(OnyxGenaiCreateModel(folder.c_str(), &pointer)); }
  explicit Model(const Config& config) { check(OnyxGenaiCreateModelFromConfig(config.pointer, &pointer)); }
};

struct GeneratorParams : Handle<OnyxGenaiGeneratorParams, OnyxGenaiDestroyGeneratorParams> {
  explicit GeneratorParams(const Model& model) { check(OnyxGenaiCreateGeneratorParams(model.pointer, &pointer)); }
};

struct Generator : Handle<OnyxGenaiGenerator, OnyxGenaiDestroyGenerator> {
  Generator(const Model& model, const GeneratorParams& params) {
    check(OnyxGenaiCreateGenerator(model.pointer, params.pointer, &pointer));
  }
};

using Int32Array = nb::ndarray<const int32_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

template <typename T>
nb::ndarray<nb::numpy, T> to_numpy(const T* data, size_t count, std::vector<size_t> shape) {
  T* copy = new T[count];
  std::copy(data, data + count, copy);
  nb::capsule owner(copy, [](void* p) noexcept { delete[] static_cast<T*>(p); });
  return nb::ndarray<nb::numpy, T>(copy, shape.size(), shape.data(), owner);
}

}  // namespace

void register_genai(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("genai", "onyx's generation C API (onyx.genai wraps it)");
  nb::class_<Config>(m, "Config")
      .def(nb::init<const std::string&>(), nb::arg("folder"))
      .def("overlay",
           [](Config& c, const std::string& json) { check(OnyxGenaiConfigOverlay(c.pointer, json.c_str())); })
      .def("clear_providers", [](Config& c) { check(OnyxGenaiConfigClearProviders(c.pointer)); })
      .def("append_provider",
           [](Config& c, const std::string& name) { check(OnyxGenaiConfigAppendProvider(c.pointer, name.c_str())); });
  nb::class_<Model>(m, "Model")
      .def(nb::init<const std::string&>(), nb::arg("folder"))
      .def(nb::init<const Config&>(), nb::arg("config"))
      .def_prop_ro("type", [](const Model& model) { return std::string(OnyxGenaiModelGetType(model.pointer)); })
      .def(
          "kv_cache_bytes",
          [](const Model& model, int64_t batch, int64_t max_length) {
            int64_t bytes = 0;
            check(OnyxGenaiModelGetKvCacheBytes(model.pointer, batch, max_length, &bytes));
            return bytes;
          },
          nb::arg("batch") = 1, nb::arg("max_length") = 0);
  nb::class_<GeneratorParams>(m, "GeneratorParams")
      .def(nb::init<const Model&>(), nb::arg("model"))
      .def("set_number",
           [](GeneratorParams& p, const std::string& name, double value) {
             check(OnyxGenaiGeneratorParamsSetSearchNumber(p.pointer, name.c_str(), value));
           })
      .def("set_bool", [](GeneratorParams& p, const std::string& name, bool value) {
        check(OnyxGenaiGeneratorParamsSetSearchBool(p.pointer, name.c_str(), value ? 1 : 0));
      });
  nb::class_<Generator>(m, "Generator")
      .def(nb::init<const Model&, const GeneratorParams&>(), nb::arg("model"), nb::arg("params"))
      .def("is_done", [](const Generator& g) { return OnyxGenaiGenerator_IsDone(g.pointer) != 0; })
      .def("append_tokens",
           [](Generator& g, Int32Array tokens) {
             check(OnyxGenaiGenerator_AppendTokens(g.pointer, tokens.data(), tokens.shape(0)));
           })
      .def("generate_next_token", [](Generator& g) { check(OnyxGenaiGenerator_GenerateNextToken(g.pointer)); })
      .def("get_next_tokens",
           [](const Generator& g) {
             const int32_t* data = nullptr;
             size_t count = 0;
             check(OnyxGenaiGenerator_GetNextTokens(g.pointer, &data, &count));
             return to_numpy<int32_t>(data, count, {count});
           })
      .def("rewind_to", [](Generator& g, size_t length) { check(OnyxGenaiGenerator_RewindTo(g.pointer, length)); })
      .def("get_sequence",
           [](const Generator& g, size_t index) {
             const int32_t* data = OnyxGenaiGenerator_GetSequenceData(g.pointer, index);
             if (data == nullptr)
               throw std::out_of_range("Generator.get_sequence: index " + std::to_string(index) + " is out of range");
             const size_t count = OnyxGenaiGenerator_GetSequenceCount(g.pointer, index);
             return to_numpy<int32_t>(data, count, {count});
           })
      .def("get_logits", [](const Generator& g) {
        const float* data = nullptr;
        size_t count = 0;
        check(OnyxGenaiGenerator_GetLogits(g.pointer, &data, &count));
        return to_numpy<float>(data, count, {count});
      });
}
