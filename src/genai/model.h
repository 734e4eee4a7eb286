// The decoder model of a genai folder: its configuration, the one
// InferenceSession that runs it, and what the generator needs to know of the
// graph (attention kind, cache layout, optional inputs).
#pragma once

#include <memory>
#include <string>

#include "genai/config.h"
#include "model/onnx_proto.h"
#include "onyx/genai.h"
#include "onyx/session.h"

namespace onyx::genai {

// Rewrites `model` for onyx's 8-bit KV cache: every past/present cache
// input and output becomes int8 [batch, kv_heads, length, head_size + 4]
// (a row of head_size values followed by its float32 scale) and every
// GroupQueryAttention node quantizes per token (k_quant_type and
// v_quant_type "PER_TOKEN"). Errors name what does not match the config.
void rewrite_for_int8_kv_cache(model::ModelProto& model, const DecoderConfig& decoder);

// The graph input the generator feeds with each row's last token position
// (int64 [batch, 1]) when rewrite_for_last_token_logits applied.
inline constexpr const char* kLastTokenInput = "onyx_genai_last_token_index";

// Makes the lm_head read only the hidden state of each row's last token (at
// the position kLastTokenInput gives), so the logits output is [batch, 1,
// vocab]: a prompt of 512 tokens then runs the vocabulary projection once
// per row, not 512 times, and never holds 512 rows of logits. The generator
// reads nothing else. Returns false (the model untouched) when the logits
// do not come from a MatMul or MatMulNBits on a [batch, sequence, hidden]
// value.
bool rewrite_for_last_token_logits(model::ModelProto& model, const DecoderConfig& decoder);

}  // namespace onyx::genai

struct onyx::genai::Model::Impl {
  ModelConfig config;
  std::unique_ptr<InferenceSession> session;
  // The attention is GroupQueryAttention: per-row lengths come from the
  // attention mask's row sums (seqlens_k), so a row's tokens are packed to
  // the start of its cache; other attentions mask padding where it lies.
  bool group_query_attention = false;
  bool has_attention_mask = false;
  bool has_position_ids = false;
  bool last_token_logits = false;  // rewrite_for_last_token_logits applied: feed kLastTokenInput
  DataType cache_dtype = DataType::kFloat;
  int64_t cache_row = 0;  // the cache's last dimension: head_size, or head_size + 4 for int8
  int64_t max_length(int64_t requested) const;
};
