// The generation C API (include/onyx/onyx_genai_c.h) over onyx::genai's
// Config, Model, GeneratorParams and Generator. Results, strings, sequences
// and the tokenizer are genai_tokenizer_c.cc's.
#include <cstring>

#include "capi/genai_handles.h"
#include "genai/model.h"

using onyx::capi::genai_guard;

namespace {

OnyxGenaiResult* null_argument(const char* function, const char* name) {
  return onyx::capi::genai_result(std::string(function) + ": argument " + name + " is NULL");
}

}  // namespace

#define ONYX_GENAI_REQUIRE(pointer) \
  if ((pointer) == nullptr) return null_argument(__func__, #pointer)

extern "C" {

OnyxGenaiResult* OnyxGenaiCreateTokenizer(const OnyxGenaiModel* model, OnyxGenaiTokenizer** out) noexcept {
  ONYX_GENAI_REQUIRE(model);
  ONYX_GENAI_REQUIRE(out);
  return OnyxGenaiCreateTokenizerFromFolder(model->model->folder().c_str(), out);
}

OnyxGenaiResult* OnyxGenaiCreateConfig(const char* folder, OnyxGenaiConfig** out) noexcept {
  ONYX_GENAI_REQUIRE(folder);
  ONYX_GENAI_REQUIRE(out);
  return genai_guard([&] { *out = new OnyxGenaiConfig{onyx::genai::Config(folder)}; });
}
void OnyxGenaiDestroyConfig(OnyxGenaiConfig* config) noexcept { delete config; }
OnyxGenaiResult* OnyxGenaiConfigOverlay(OnyxGenaiConfig* config, const char* json) noexcept {
  ONYX_GENAI_REQUIRE(config);
  ONYX_GENAI_REQUIRE(json);
  return genai_guard([&] { config->config.overlay(json); });
}
OnyxGenaiResult* OnyxGenaiConfigClearProviders(OnyxGenaiConfig* config) noexcept {
  ONYX_GENAI_REQUIRE(config);
  return genai_guard([&] { config->config.clear_providers(); });
}
OnyxGenaiResult* OnyxGenaiConfigAppendProvider(OnyxGenaiConfig* config, const char* provider) noexcept {
  ONYX_GENAI_REQUIRE(config);
  ONYX_GENAI_REQUIRE(provider);
  return genai_guard([&] { config->config.append_provider(provider); });
}

OnyxGenaiResult* OnyxGenaiCreateModel(const char* folder, OnyxGenaiModel** out) noexcept {
  ONYX_GENAI_REQUIRE(folder);
  ONYX_GENAI_REQUIRE(out);
  return genai_guard([&] { *out = new OnyxGenaiModel{std::make_unique<onyx::genai::Model>(std::string(folder))}; });
}
OnyxGenaiResult* OnyxGenaiCreateModelFromConfig(const OnyxGenaiConfig* config, OnyxGenaiModel** out) noexcept {
  ONYX_GENAI_REQUIRE(config);
  ONYX_GENAI_REQUIRE(out);
  return genai_guard([&] { *out = new OnyxGenaiModel{std::make_unique<onyx::genai::Model>(config->config)}; });
}
void OnyxGenaiDestroyModel(OnyxGenaiModel* model) noexcept { delete model; }
const char* OnyxGenaiModelGetType(const OnyxGenaiModel* model) noexcept {
  return model ? model->model->type().c_str() : "";
}
OnyxGenaiResult* OnyxGenaiModelGetKvCacheBytes(const OnyxGenaiModel* model, int64_t batch, int64_t max_length,
                                               int64_t* out) noexcept {
  ONYX_GENAI_REQUIRE(model);
  ONYX_GENAI_REQUIRE(out);
  return genai_guard([&] { *out = model->model->kv_cache_bytes(batch, max_length); });
}

OnyxGenaiResult* OnyxGenaiCreateGeneratorParams(const OnyxGenaiModel* model, OnyxGenaiGeneratorParams** out) noexcept {
  ONYX_GENAI_REQUIRE(model);
  ONYX_GENAI_REQUIRE(out);
  return genai_guard(
      [&] { *out = new OnyxGenaiGeneratorParams{std::make_unique<onyx::genai::GeneratorParams>(*model->model)}; });
}
void OnyxGenaiDestroyGeneratorParams(OnyxGenaiGeneratorParams* params) noexcept { delete params; }
OnyxGenaiResult* OnyxGenaiGeneratorParamsSetSearchNumber(OnyxGenaiGeneratorParams* params, const char* name,
                                                         double value) noexcept {
  ONYX_GENAI_REQUIRE(params);
  ONYX_GENAI_REQUIRE(name);
  return genai_guard([&] { params->params->set_search_option(name, value); });
}
OnyxGenaiResult* OnyxGenaiGeneratorParamsSetSearchBool(OnyxGenaiGeneratorParams* params, const char* name,
                                                       int value) noexcept {
  ONYX_GENAI_REQUIRE(params);
  ONYX_GENAI_REQUIRE(name);
  return genai_guard([&] { params->params->set_search_option(name, value != 0); });
}

OnyxGenaiResult* OnyxGenaiCreateGenerator(const OnyxGenaiModel* model, const OnyxGenaiGeneratorParams* params,
                                          OnyxGenaiGenerator** out) noexcept {
  ONYX_GENAI_REQUIRE(model);
  ONYX_GENAI_REQUIRE(params);
  ONYX_GENAI_REQUIRE(out);
  return genai_guard([&] {
    auto generator = std::make_unique<OnyxGenaiGenerator>();
    generator->generator = std::make_unique<onyx::genai::Generator>(*model->model, *params->params);
    generator->pad_token_id = model->model->impl().config.pad_token_id;
    *out = generator.release();
  });
}
void OnyxGenaiDestroyGenerator(OnyxGenaiGenerator* generator) noexcept { delete generator; }
int OnyxGenaiGenerator_IsDone(const OnyxGenaiGenerator* generator) noexcept {
  return generator ? generator->generator->is_done() : 1;
}

OnyxGenaiResult* OnyxGenaiGenerator_AppendTokens(OnyxGenaiGenerator* generator, const int32_t* tokens,
                                                 size_t count) noexcept {
  ONYX_GENAI_REQUIRE(generator);
  if (count > 0) ONYX_GENAI_REQUIRE(tokens);
  return genai_guard([&] {
    generator->generator->append_tokens(std::span<const int32_t>(tokens, count));
    generator->sequence_index = SIZE_MAX;
  });
}

OnyxGenaiResult* OnyxGenaiGenerator_AppendTokenSequences(OnyxGenaiGenerator* generator,
                                                         const OnyxGenaiSequences* sequences) noexcept {
  ONYX_GENAI_REQUIRE(generator);
  ONYX_GENAI_REQUIRE(sequences);
  return genai_guard([&] {
    // Rows of different lengths padded on the right with the pad id; the
    // generator takes padding off again.
    size_t width = 0;
    for (const auto& s : sequences->sequences) width = std::max(width, s.size());
    const int32_t pad = generator->pad_token_id;
    std::vector<int32_t> tokens(sequences->sequences.size() * width, pad);
    for (size_t i = 0; i < sequences->sequences.size(); ++i) {
      std::copy(sequences->sequences[i].begin(), sequences->sequences[i].end(),
                tokens.begin() + static_cast<std::ptrdiff_t>(i * width));
    }
    generator->generator->append_tokens(tokens);
    generator->sequence_index = SIZE_MAX;
  });
}

OnyxGenaiResult* OnyxGenaiGenerator_GenerateNextToken(OnyxGenaiGenerator* generator) noexcept {
  ONYX_GENAI_REQUIRE(generator);
  return genai_guard([&] {
    generator->generator->generate_next_token();
    generator->sequence_index = SIZE_MAX;
  });
}

OnyxGenaiResult* OnyxGenaiGenerator_GetNextTokens(const OnyxGenaiGenerator* generator, const int32_t** out,
                                                  size_t* count) noexcept {
  ONYX_GENAI_REQUIRE(generator);
  ONYX_GENAI_REQUIRE(out);
  ONYX_GENAI_REQUIRE(count);
  return genai_guard([&] {
    std::span<const int32_t> tokens = generator->generator->get_next_tokens();
    *out = tokens.data();
    *count = tokens.size();
  });
}

OnyxGenaiResult* OnyxGenaiGenerator_RewindTo(OnyxGenaiGenerator* generator, size_t new_length) noexcept {
  ONYX_GENAI_REQUIRE(generator);
  return genai_guard([&] {
    generator->generator->rewind_to(new_length);
    generator->sequence_index = SIZE_MAX;
  });
}

size_t OnyxGenaiGenerator_GetSequenceCount(const OnyxGenaiGenerator* generator, size_t index) noexcept {
  if (generator == nullptr || static_cast<int64_t>(index) >= generator->generator->sequence_count()) return 0;
  try {
    return generator->generator->get_sequence(index).size();
  } catch (...) {
    return 0;
  }
}

const int32_t* OnyxGenaiGenerator_GetSequenceData(const OnyxGenaiGenerator* generator, size_t index) noexcept {
  if (generator == nullptr || static_cast<int64_t>(index) >= generator->generator->sequence_count()) return nullptr;
  try {
    // The C API hands out a pointer it keeps: the generator's last asked-for sequence.
    auto* self = const_cast<OnyxGenaiGenerator*>(generator);
    self->sequence = self->generator->get_sequence(index);
    self->sequence_index = index;
    return self->sequence.data();
  } catch (...) {
    return nullptr;
  }
}

OnyxGenaiResult* OnyxGenaiGenerator_GetLogits(const OnyxGenaiGenerator* generator, const float** out,
                                              size_t* count) noexcept {
  ONYX_GENAI_REQUIRE(generator);
  ONYX_GENAI_REQUIRE(out);
  ONYX_GENAI_REQUIRE(count);
  return genai_guard([&] {
    std::span<const float> logits = generator->generator->get_logits();
    *out = logits.data();
    *count = logits.size();
  });
}

}  // extern "C"
