// The results, sequences, tokenizer and tokenizer-stream functions of
// onyx_genai_c.h, over onyx::genai::Tokenizer.
#include <cstring>

#include "capi/genai_tokenizer_c.h"

using onyx::capi::genai_guard;
using onyx::capi::genai_result;

extern "C" {

const char* OnyxGenaiResultGetError(const OnyxGenaiResult* result) noexcept {
  return result == nullptr ? "" : result->message.c_str();
}

void OnyxGenaiDestroyResult(OnyxGenaiResult* result) noexcept {
  if (result != nullptr && result->message != "out of memory") delete result;
}

void OnyxGenaiDestroyString(const char* string) noexcept { delete[] string; }

OnyxGenaiResult* OnyxGenaiCreateSequences(OnyxGenaiSequences** out) noexcept {
  if (out == nullptr) return genai_result("OnyxGenaiCreateSequences: out is NULL");
  return genai_guard([&] { *out = new OnyxGenaiSequences(); });
}

void OnyxGenaiDestroySequences(OnyxGenaiSequences* sequences) noexcept { delete sequences; }

size_t OnyxGenaiSequencesCount(const OnyxGenaiSequences* sequences) noexcept {
  return sequences == nullptr ? 0 : sequences->sequences.size();
}

size_t OnyxGenaiSequencesGetSequenceCount(const OnyxGenaiSequences* sequences, size_t index) noexcept {
  if (sequences == nullptr || index >= sequences->sequences.size()) return 0;
  return sequences->sequences[index].size();
}

const int32_t* OnyxGenaiSequencesGetSequenceData(const OnyxGenaiSequences* sequences, size_t index) noexcept {
  if (sequences == nullptr || index >= sequences->sequences.size()) return nullptr;
  return sequences->sequences[index].data();
}

OnyxGenaiResult* OnyxGenaiAppendTokenSequence(const int32_t* tokens, size_t count,
                                              OnyxGenaiSequences* sequences) noexcept {
  if (sequences == nullptr) return genai_result("OnyxGenaiAppendTokenSequence: sequences is NULL");
  if (tokens == nullptr && count != 0) return genai_result("OnyxGenaiAppendTokenSequence: tokens is NULL");
  return genai_guard([&] { sequences->sequences.emplace_back(tokens, tokens + count); });
}

OnyxGenaiResult* OnyxGenaiCreateTokenizerFromFolder(const char* folder, OnyxGenaiTokenizer** out) noexcept {
  if (folder == nullptr || out == nullptr) {
    return genai_result("OnyxGenaiCreateTokenizerFromFolder: folder and out must not be NULL");
  }
  return genai_guard([&] { *out = new OnyxGenaiTokenizer{onyx::genai::Tokenizer::from_folder(folder)}; });
}

void OnyxGenaiDestroyTokenizer(OnyxGenaiTokenizer* tokenizer) noexcept { delete tokenizer; }

OnyxGenaiResult* OnyxGenaiTokenizerEncode(const OnyxGenaiTokenizer* tokenizer, const char* text,
                                          OnyxGenaiSequences* sequences) noexcept {
  if (tokenizer == nullptr || text == nullptr || sequences == nullptr) {
    return genai_result("OnyxGenaiTokenizerEncode: tokenizer, text and sequences must not be NULL");
  }
  return genai_guard([&] { sequences->sequences.push_back(tokenizer->tokenizer.encode(text)); });
}

OnyxGenaiResult* OnyxGenaiTokenizerDecode(const OnyxGenaiTokenizer* tokenizer, const int32_t* tokens, size_t count,
                                          const char** out) noexcept {
  if (tokenizer == nullptr || out == nullptr || (tokens == nullptr && count != 0)) {
    return genai_result("OnyxGenaiTokenizerDecode: tokenizer, tokens and out must not be NULL");
  }
  return genai_guard([&] {
    const std::string text = tokenizer->tokenizer.decode(std::span<const int32_t>(tokens, count));
    char* copy = new char[text.size() + 1];
    std::memcpy(copy, text.c_str(), text.size() + 1);
    *out = copy;
  });
}

OnyxGenaiResult* OnyxGenaiTokenizerToTokenId(const OnyxGenaiTokenizer* tokenizer, const char* token,
                                             int32_t* out) noexcept {
  if (tokenizer == nullptr || token == nullptr || out == nullptr) {
    return genai_result("OnyxGenaiTokenizerToTokenId: tokenizer, token and out must not be NULL");
  }
  return genai_guard([&] { *out = tokenizer->tokenizer.token_to_id(token); });
}

OnyxGenaiResult* OnyxGenaiTokenizerGetSpecialIds(const OnyxGenaiTokenizer* tokenizer, int32_t* bos, int32_t* eos,
                                                 int32_t* pad) noexcept {
  if (tokenizer == nullptr) return genai_result("OnyxGenaiTokenizerGetSpecialIds: tokenizer is NULL");
  if (bos != nullptr) *bos = tokenizer->tokenizer.bos_token_id();
  if (eos != nullptr) *eos = tokenizer->tokenizer.eos_token_id();
  if (pad != nullptr) *pad = tokenizer->tokenizer.pad_token_id();
  return nullptr;
}

OnyxGenaiResult* OnyxGenaiCreateTokenizerStream(const OnyxGenaiTokenizer* tokenizer,
                                                OnyxGenaiTokenizerStream** out) noexcept {
  if (tokenizer == nullptr || out == nullptr) {
    return genai_result("OnyxGenaiCreateTokenizerStream: tokenizer and out must not be NULL");
  }
  return genai_guard([&] { *out = new OnyxGenaiTokenizerStream{tokenizer->tokenizer.create_stream(), {}}; });
}

void OnyxGenaiDestroyTokenizerStream(OnyxGenaiTokenizerStream* stream) noexcept { delete stream; }

OnyxGenaiResult* OnyxGenaiTokenizerStreamDecode(OnyxGenaiTokenizerStream* stream, int32_t token,
                                                const char** out) noexcept {
  if (stream == nullptr || out == nullptr) {
    return genai_result("OnyxGenaiTokenizerStreamDecode: stream and out must not be NULL");
  }
  return genai_guard([&] {
    stream->last = stream->stream.decode(token);
    *out = stream->last.c_str();
  });
}

}  // extern "C"
