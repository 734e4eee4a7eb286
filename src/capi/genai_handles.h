// What the generation C API's opaque handles (include/onyx/onyx_genai_c.h)
// for the config, model and generator are inside (genai_c.cc); results,
// sequences and the tokenizer's are in genai_tokenizer_c.h. Internal to
// src/capi.
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "capi/genai_tokenizer_c.h"
#include "onyx/genai.h"
#include "onyx/onyx_genai_c.h"

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
