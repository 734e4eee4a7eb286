/* onyx's generation C API: onnxruntime-genai's C API (ort_genai_c.h) with
   `Oga` renamed `OnyxGenai` (OgaCreateModel -> OnyxGenaiCreateModel,
   OgaGenerator_AppendTokens -> OnyxGenaiGenerator_AppendTokens), over the
   C++ classes of include/onyx/genai.h. The language bindings (Python's
   onyx.genai) go through it.

   Rules, as onnxruntime-genai's:
   - Functions that can fail return NULL on success, or an OnyxGenaiResult*
     the caller frees with OnyxGenaiDestroyResult; its message names what
     is wrong. No C++ exception crosses this API.
   - OnyxGenaiCreateX makes an object the caller frees with
     OnyxGenaiDestroyX (NULL does nothing). Out-parameters are written only
     on success.
   - Strings returned as `const char**` by Decode are owned by the caller
     (OnyxGenaiDestroyString); those of a TokenizerStream are owned by the
     stream and valid until its next call. */
#ifndef ONYX_GENAI_C_H_
#define ONYX_GENAI_C_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#define ONYX_GENAI_NOEXCEPT noexcept
#else
#define ONYX_GENAI_NOEXCEPT
#endif

#define ONYX_GENAI_EXPORT __attribute__((visibility("default")))
#define ONYX_GENAI_API(ret) ONYX_GENAI_EXPORT ret
#define ONYX_GENAI_RESULT ONYX_GENAI_EXPORT OnyxGenaiResult*

typedef struct OnyxGenaiResult OnyxGenaiResult;
typedef struct OnyxGenaiConfig OnyxGenaiConfig;
typedef struct OnyxGenaiModel OnyxGenaiModel;
typedef struct OnyxGenaiTokenizer OnyxGenaiTokenizer;
typedef struct OnyxGenaiTokenizerStream OnyxGenaiTokenizerStream;
typedef struct OnyxGenaiSequences OnyxGenaiSequences;
typedef struct OnyxGenaiGeneratorParams OnyxGenaiGeneratorParams;
typedef struct OnyxGenaiGenerator OnyxGenaiGenerator;

/* ---- Results and strings ---------------------------------------------------- */
ONYX_GENAI_API(const char*) OnyxGenaiResultGetError(const OnyxGenaiResult* result) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_API(void) OnyxGenaiDestroyResult(OnyxGenaiResult* result) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_API(void) OnyxGenaiDestroyString(const char* string) ONYX_GENAI_NOEXCEPT;

/* ---- Sequences: a list of token-id arrays (what Encode fills) ------------- */
ONYX_GENAI_RESULT OnyxGenaiCreateSequences(OnyxGenaiSequences** out) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_API(void) OnyxGenaiDestroySequences(OnyxGenaiSequences* sequences) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_API(size_t) OnyxGenaiSequencesCount(const OnyxGenaiSequences* sequences) ONYX_GENAI_NOEXCEPT;
/* 0 and NULL for an index out of range. */
ONYX_GENAI_API(size_t) OnyxGenaiSequencesGetSequenceCount(const OnyxGenaiSequences* sequences, size_t index) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_API(const int32_t*) OnyxGenaiSequencesGetSequenceData(const OnyxGenaiSequences* sequences, size_t index) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_RESULT OnyxGenaiAppendTokenSequence(const int32_t* tokens, size_t count, OnyxGenaiSequences* sequences) ONYX_GENAI_NOEXCEPT;

/* ---- Tokenizer (include/onyx/genai_tokenizer.h) ---------------------------- */
/* The tokenizer of a model's folder. */
ONYX_GENAI_RESULT OnyxGenaiCreateTokenizer(const OnyxGenaiModel* model, OnyxGenaiTokenizer** out) ONYX_GENAI_NOEXCEPT;
/* The tokenizer of any folder holding tokenizer.json (onyx's own). */
ONYX_GENAI_RESULT OnyxGenaiCreateTokenizerFromFolder(const char* folder, OnyxGenaiTokenizer** out) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_API(void) OnyxGenaiDestroyTokenizer(OnyxGenaiTokenizer* tokenizer) ONYX_GENAI_NOEXCEPT;
/* Appends the ids of `text` (special tokens added as the tokenizer's
   post-processor says) to `sequences` as one more sequence. */
ONYX_GENAI_RESULT OnyxGenaiTokenizerEncode(const OnyxGenaiTokenizer* tokenizer, const char* text, OnyxGenaiSequences* sequences) ONYX_GENAI_NOEXCEPT;
/* Special tokens skipped; *out is freed with OnyxGenaiDestroyString. */
ONYX_GENAI_RESULT OnyxGenaiTokenizerDecode(const OnyxGenaiTokenizer* tokenizer, const int32_t* tokens, size_t count, const char** out) ONYX_GENAI_NOEXCEPT;
/* -1 when the token is not in the vocabulary. */
ONYX_GENAI_RESULT OnyxGenaiTokenizerToTokenId(const OnyxGenaiTokenizer* tokenizer, const char* token, int32_t* out) ONYX_GENAI_NOEXCEPT;
/* bos, eos and pad ids (-1 where unknown). */
ONYX_GENAI_RESULT OnyxGenaiTokenizerGetSpecialIds(const OnyxGenaiTokenizer* tokenizer, int32_t* bos, int32_t* eos, int32_t* pad) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_RESULT OnyxGenaiCreateTokenizerStream(const OnyxGenaiTokenizer* tokenizer, OnyxGenaiTokenizerStream** out) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_API(void) OnyxGenaiDestroyTokenizerStream(OnyxGenaiTokenizerStream* stream) ONYX_GENAI_NOEXCEPT;
/* The text `token` completes; *out is owned by the stream, valid until its next call. */
ONYX_GENAI_RESULT OnyxGenaiTokenizerStreamDecode(OnyxGenaiTokenizerStream* stream, int32_t token, const char** out) ONYX_GENAI_NOEXCEPT;

/* ---- Config and model (include/onyx/genai.h) ------------------------------- */
ONYX_GENAI_RESULT OnyxGenaiCreateConfig(const char* folder, OnyxGenaiConfig** out) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_API(void) OnyxGenaiDestroyConfig(OnyxGenaiConfig* config) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_RESULT OnyxGenaiConfigOverlay(OnyxGenaiConfig* config, const char* json) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_RESULT OnyxGenaiConfigClearProviders(OnyxGenaiConfig* config) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_RESULT OnyxGenaiConfigAppendProvider(OnyxGenaiConfig* config, const char* provider) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_RESULT OnyxGenaiCreateModel(const char* folder, OnyxGenaiModel** out) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_RESULT OnyxGenaiCreateModelFromConfig(const OnyxGenaiConfig* config, OnyxGenaiModel** out) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_API(void) OnyxGenaiDestroyModel(OnyxGenaiModel* model) ONYX_GENAI_NOEXCEPT;
/* model.type of genai_config.json; owned by the model. */
ONYX_GENAI_API(const char*) OnyxGenaiModelGetType(const OnyxGenaiModel* model) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_RESULT OnyxGenaiModelGetKvCacheBytes(const OnyxGenaiModel* model, int64_t batch, int64_t max_length, int64_t* out) ONYX_GENAI_NOEXCEPT;

/* ---- Generator params -------------------------------------------------------- */
ONYX_GENAI_RESULT OnyxGenaiCreateGeneratorParams(const OnyxGenaiModel* model, OnyxGenaiGeneratorParams** out) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_API(void) OnyxGenaiDestroyGeneratorParams(OnyxGenaiGeneratorParams* params) ONYX_GENAI_NOEXCEPT;
/* By onnxruntime-genai's names: max_length, min_length, batch_size, top_k,
   top_p, temperature, repetition_penalty, num_beams, num_return_sequences,
   length_penalty, no_repeat_ngram_size, random_seed (numbers); do_sample,
   early_stopping (bools). An unknown name is an error. */
ONYX_GENAI_RESULT OnyxGenaiGeneratorParamsSetSearchNumber(OnyxGenaiGeneratorParams* params, const char* name, double value) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_RESULT OnyxGenaiGeneratorParamsSetSearchBool(OnyxGenaiGeneratorParams* params, const char* name, int value) ONYX_GENAI_NOEXCEPT;

/* ---- Generator ------------------------------------------------------------------ */
ONYX_GENAI_RESULT OnyxGenaiCreateGenerator(const OnyxGenaiModel* model, const OnyxGenaiGeneratorParams* params, OnyxGenaiGenerator** out) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_API(void) OnyxGenaiDestroyGenerator(OnyxGenaiGenerator* generator) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_API(int) OnyxGenaiGenerator_IsDone(const OnyxGenaiGenerator* generator) ONYX_GENAI_NOEXCEPT;
/* `count` tokens: batch_size rows of count / batch_size (padded with the pad id). */
ONYX_GENAI_RESULT OnyxGenaiGenerator_AppendTokens(OnyxGenaiGenerator* generator, const int32_t* tokens, size_t count) ONYX_GENAI_NOEXCEPT;
/* One sequence per row of `sequences` (of any lengths; padded inside). */
ONYX_GENAI_RESULT OnyxGenaiGenerator_AppendTokenSequences(OnyxGenaiGenerator* generator, const OnyxGenaiSequences* sequences) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_RESULT OnyxGenaiGenerator_GenerateNextToken(OnyxGenaiGenerator* generator) ONYX_GENAI_NOEXCEPT;
/* *out (one token per sequence) is owned by the generator, valid until its next call. */
ONYX_GENAI_RESULT OnyxGenaiGenerator_GetNextTokens(const OnyxGenaiGenerator* generator, const int32_t** out, size_t* count) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_RESULT OnyxGenaiGenerator_RewindTo(OnyxGenaiGenerator* generator, size_t new_length) ONYX_GENAI_NOEXCEPT;
ONYX_GENAI_API(size_t) OnyxGenaiGenerator_GetSequenceCount(const OnyxGenaiGenerator* generator, size_t index) ONYX_GENAI_NOEXCEPT;
/* Owned by the generator, valid until its next call; NULL for an index out of range. */
ONYX_GENAI_API(const int32_t*) OnyxGenaiGenerator_GetSequenceData(const OnyxGenaiGenerator* generator, size_t index) ONYX_GENAI_NOEXCEPT;
/* Logits of the last step: *count = sequences * vocab floats, owned by the generator. */
ONYX_GENAI_RESULT OnyxGenaiGenerator_GetLogits(const OnyxGenaiGenerator* generator, const float** out, size_t* count) ONYX_GENAI_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* ONYX_GENAI_C_H_ */
