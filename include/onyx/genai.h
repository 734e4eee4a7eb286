// Text generation with decoder models exported for onnxruntime-genai, in
// C++, with the classes of onnxruntime-genai's API and of onyx.genai
// (Python): the same folders, the same behaviour.
//
//   onyx::genai::Model model("qwen-int4");            // genai_config.json
//   auto tokenizer = onyx::genai::Tokenizer::from_folder("qwen-int4");
//   onyx::genai::GeneratorParams params(model);
//   params.search.max_length = 256;
//   onyx::genai::Generator generator(model, params);
//   generator.append_tokens(tokenizer.encode("Hello"));
//   auto stream = tokenizer.create_stream();
//   while (!generator.is_done()) {
//     generator.generate_next_token();
//     std::cout << stream.decode(generator.get_next_tokens()[0]) << std::flush;
//   }
//
// The key/value cache is owned by the Generator: one buffer per layer sized
// to max_length, which the model reads as past and writes as present in
// place (docs/genai.md). Every error is an onyx::Error naming the file, key
// or argument that is wrong.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "onyx/genai_tokenizer.h"

namespace onyx::genai {

// FOLDER/genai_config.json (the format onnxruntime-genai's model builder
// writes), with overlays applied on top before the model is loaded.
class Config {
 public:
  explicit Config(const std::string& folder);
  Config(const Config&);
  Config& operator=(const Config&);
  ~Config();
  // Merges a JSON object into the configuration, as onnxruntime-genai's
  // Config.overlay: objects merge key by key, other values replace.
  // onyx's own keys: model.decoder.kv_cache_type "float" (default) or "int8"
  // (8-bit cache rows with a scale per row and head).
  void overlay(std::string_view json);
  // Providers named in model.decoder.session_options.provider_options.
  void clear_providers();
  void append_provider(const std::string& name);
  const std::string& folder() const;

  struct Impl;

 private:
  friend class Model;
  std::unique_ptr<Impl> impl_;
};

class Model {
 public:
  explicit Model(const std::string& folder);
  explicit Model(const Config& config);
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const std::string& folder() const;
  const std::string& type() const;  // model.type: "llama", "qwen2", "gpt2", ...
  int64_t vocab_size() const;
  int64_t context_length() const;
  // Bytes one generator's KV cache takes for `batch` sequences of max_length.
  int64_t kv_cache_bytes(int64_t batch, int64_t max_length) const;

  struct Impl;
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<Impl> impl_;
};

// onnxruntime-genai's search options; unset ones take genai_config.json's
// "search" values, then these defaults.
struct SearchOptions {
  int64_t max_length = 0;  // 0: the config's, else the model's context_length
  int64_t min_length = 0;
  int64_t batch_size = 1;
  bool do_sample = false;
  int64_t top_k = 50;
  double top_p = 1.0;
  double temperature = 1.0;
  double repetition_penalty = 1.0;
  int64_t num_beams = 1;
  int64_t num_return_sequences = 1;
  double length_penalty = 1.0;
  bool early_stopping = true;
  int64_t no_repeat_ngram_size = 0;
  int64_t random_seed = -1;  // -1: seeded from the clock
};

class GeneratorParams {
 public:
  explicit GeneratorParams(const Model& model);
  // By onnxruntime-genai's option names ("max_length", "top_p", "do_sample", ...);
  // an unknown name is an onyx::Error.
  void set_search_option(const std::string& name, double value);
  void set_search_option(const std::string& name, bool value);
  SearchOptions search;
};

class Generator {
 public:
  Generator(const Model& model, const GeneratorParams& params);
  ~Generator();
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;

  // Appends tokens to every sequence: `tokens` holds batch_size rows of
  // tokens.size() / batch_size each (rows of a batch of prompts padded with
  // the pad token id, on either side). Runs the model over them (prefill).
  void append_tokens(std::span<const int32_t> tokens);
  // Chooses one more token for each sequence (or beam).
  void generate_next_token();
  bool is_done() const;
  // The tokens chosen by the last generate_next_token, one per sequence.
  std::span<const int32_t> get_next_tokens() const;
  // Sequence `index` (prompt and generated tokens, without padding); with
  // beam search, the index-th best of the returned sequences.
  std::vector<int32_t> get_sequence(size_t index) const;
  int64_t sequence_count() const;
  // Cuts every sequence (and the cache) back to `length` tokens.
  void rewind_to(size_t length);
  // The logits of the last step, [sequences, vocab].
  std::span<const float> get_logits() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx::genai
