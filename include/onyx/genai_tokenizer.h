// Text to token ids and back, from a Hugging Face tokenizer.json: the
// tokenizer of onyx::genai (include/onyx/genai.h) and of `onyx generate`.
//
//   auto tok = onyx::genai::Tokenizer::from_folder("qwen-int4");
//   std::vector<int32_t> ids = tok.encode("Hello world");
//   std::string text = tok.decode(ids);
//
// It reads the folder's tokenizer.json (and tokenizer_config.json, where
// present, for add_bos_token / add_eos_token and the special tokens) and
// gives the ids and text that the `tokenizers` Python package gives for the
// same file. Supported: BPE models, byte-level (GPT-2, Qwen2, Llama 3) and
// sentencepiece-style with Metaspace or a "▁" Replace and byte fallback
// (Llama 2, Mistral); added and special tokens; the normalizers,
// pre-tokenizers, post-processors and decoders those files use. A file
// using anything else is an onyx::Error naming the component.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onyx::genai {

class TokenizerStream;

class Tokenizer {
 public:
  // FOLDER/tokenizer.json (+ FOLDER/tokenizer_config.json when present).
  // Errors (onyx::Error) name the file and what is wrong with it.
  static Tokenizer from_folder(const std::string& folder);
  // A tokenizer.json given as text (tests); config_json may be empty.
  static Tokenizer from_json(std::string_view tokenizer_json, std::string_view config_json = {});

  Tokenizer(const Tokenizer&);
  Tokenizer& operator=(const Tokenizer&);
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  // As tokenizers' Tokenizer.encode(text, add_special_tokens=True).ids.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // As tokenizers' Tokenizer.decode(ids, skip_special_tokens=...). Ids outside
  // the vocabulary are an onyx::Error naming the id.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = true) const;
  // The id of a token string (vocabulary or added token); -1 when absent.
  int32_t token_to_id(std::string_view token) const;
  // The token string of an id; empty when out of range.
  std::string id_to_token(int32_t id) const;
  int64_t vocab_size() const;  // vocabulary plus added tokens
  // Ids of bos/eos/pad from tokenizer_config.json or the special tokens; -1 when unknown.
  int32_t bos_token_id() const;
  int32_t eos_token_id() const;
  int32_t pad_token_id() const;

  // A decoder for tokens that arrive one at a time (generation): each call
  // returns the text those tokens complete, so concatenating the returns
  // equals decode() of all of them (a UTF-8 character split over tokens
  // comes out whole, once its last byte has arrived).
  TokenizerStream create_stream() const;

  struct Impl;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl);
  std::shared_ptr<const Impl> impl_;
  friend class TokenizerStream;
};

class TokenizerStream {
 public:
  std::string decode(int32_t id);
  // Forgets the tokens seen so far (a new turn of a chat).
  void reset();

 private:
  friend class Tokenizer;
  explicit TokenizerStream(std::shared_ptr<const Tokenizer::Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Tokenizer::Impl> impl_;
  std::vector<int32_t> ids_;
  size_t emitted_bytes_ = 0;  // bytes of decode(ids_) already returned
};

}  // namespace onyx::genai
