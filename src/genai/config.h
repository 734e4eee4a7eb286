// genai_config.json (onnxruntime-genai's format) read into plain structs:
// every value the generator uses, checked once, with errors that name the
// file and the key ("genai_config.json: model.decoder.num_hidden_layers:
// expected an integer, found a string").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/json.h"
#include "onyx/genai.h"

namespace onyx::genai {

struct DecoderConfig {
  std::string filename;
  int intra_op_num_threads = 0;
  int inter_op_num_threads = 0;
  std::string log_id;
  // (provider, options) in the order listed under session_options.provider_options.
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> providers;
  int64_t head_size = 0;
  int64_t hidden_size = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t num_hidden_layers = 0;
  std::string input_ids = "input_ids";
  std::string attention_mask = "attention_mask";
  std::string position_ids = "position_ids";
  std::string past_key_names = "past_key_values.%d.key";
  std::string past_value_names = "past_key_values.%d.value";
  std::string logits = "logits";
  std::string present_key_names = "present.%d.key";
  std::string present_value_names = "present.%d.value";
  bool int8_kv_cache = false;  // onyx's model.decoder.kv_cache_type "int8"
};

struct ModelConfig {
  std::string folder;
  std::string type;
  int32_t bos_token_id = -1;
  std::vector<int32_t> eos_token_ids;
  int32_t pad_token_id = 0;
  int64_t context_length = 0;
  int64_t vocab_size = 0;
  DecoderConfig decoder;
  SearchOptions search;  // max_length 0 stays 0 here: resolved against context_length
  bool past_present_share_buffer = false;
};

// "past_key_values.%d.key" with %d replaced by `layer`.
std::string layer_name(const std::string& pattern, int64_t layer);

// Merges `overlay` into `base`: objects key by key, other values replace.
void merge_json(Json& base, const Json& overlay);

// Checks and reads the document of FOLDER/genai_config.json.
ModelConfig parse_model_config(const Json& document, const std::string& folder);

// Reads FOLDER/genai_config.json as JSON (errors name the folder or the file).
Json read_config_file(const std::string& folder);

}  // namespace onyx::genai

struct onyx::genai::Config::Impl {
  std::string folder;
  Json document;
};
