// What the generation C API's opaque handles (include/onyx/onyx_genai_c.h)
// are inside, shared by genai_c.cc (config, model, generator) and
// genai_tokenizer_c.cc (results, strings, sequences, tokenizer). Internal to
// src/capi.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "onyx/genai.h"
#include "onyx/onyx_genai_c.h"

struct OnyxGenaiResult {
  std::string message;
};

struct OnyxGenaiSequences {
  std::vector<std::vector<int32_t>> sequences;
};

struct OnyxGenaiConfig {
  onyx::genai::Config config;
};

struct OnyxGenaiModel {
  std::unique_ptr<onyx::genai::Model> model;
};

struct OnyxGenaiGeneratorParams {
  std::unique_ptr<onyx::genai::GeneratorParams> params;
};

struct OnyxGenaiGenerator {
  std::unique_ptr<onyx::genai::Generator> generator;
  std::vector<int32_t> sequence;  // what GetSequenceData last returned
  size_t sequence_index = SIZE_MAX;
  int32_t pad_token_id = 0;  // what AppendTokenSequences pads rows with
};

namespace onyx::genai::capi {

// Runs `body`; an exception becomes an OnyxGenaiResult with its message
// (NULL on success). No exception leaves the C API.
template <typename Body>
OnyxGenaiResult* guard(Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const std::bad_alloc&) {
    return new (std::nothrow) OnyxGenaiResult{"out of memory"};
  } catch (const std::exception& e) {
    return new (std::nothrow) OnyxGenaiResult{e.what()};
  } catch (...) {
    return new (std::nothrow) OnyxGenaiResult{"unknown error"};
  }
}

}  // namespace onyx::genai::capi
