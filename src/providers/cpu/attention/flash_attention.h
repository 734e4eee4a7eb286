// The float core of com.microsoft GroupQueryAttention: causal (or not)
// attention of groups of query heads over one key/value head each, read in
// place from a KV cache of float rows or of int8 rows with a scale per row.
// Short queries (decoding) go key step by key step with an online softmax,
// the keys of a row cut into pieces for the threads when rows are fewer than
// threads (flash-decoding); long ones (prompts) go block by block on the SGEMM
// with an online softmax, so the score matrix is never held whole (flash
// attention: Dao et al., 2022). The scores output goes row by row.
#pragma once

#include <cstdint>
#include <vector>

#include "common/thread_pool.h"

namespace onyx::cpu::attention {

// The instruction set of the vector loops. kAuto is the widest the CPU has,
// unless the environment variable ONYX_ATTENTION_ISA (portable, avx2, avx512)
// forces one; the others exist to test and benchmark each.
enum class AttentionIsa { kAuto, kPortable, kAvx2, kAvx512 };
const char* attention_isa_name(AttentionIsa isa);
// The ISAs this CPU can run, kPortable first.
std::vector<AttentionIsa> available_attention_isas();

// kAuto: split keys for short queries, blocks for long ones, rows when the
// scores are wanted as an output (which every path falls back to). The others
// force one, for tests and benchmarks.
enum class AttentionPath { kAuto, kRows, kBlocks, kSplitKeys };

// onyx's PER_TOKEN int8 KV cache row: `head` int8 values (symmetric,
// round-to-nearest, scale = max|x| / 127) followed by the row's float32
// scale in its last 4 bytes (little-endian, as memcpy writes it).
constexpr int64_t kInt8RowExtraBytes = 4;
void quantize_row_int8(const float* x, int64_t head, int8_t* row);
void dequantize_row_int8(const int8_t* row, int64_t head, float* x);

// A [batch, kv_heads, capacity, head] cache: float rows, or int8 rows of
// head + 4 bytes. Exactly one of f32 and i8 is set.
struct KvCache {
  const float* f32 = nullptr;
  const int8_t* i8 = nullptr;
  int64_t capacity = 0;
};

struct GroupedAttention {
  int64_t batch = 0, seq = 0, heads = 0, kv_heads = 0, head = 0;
  const float* q = nullptr;  // [batch, heads, seq, head], already rotated
  KvCache k, v;
  // Per batch: query i sits at cache row past[b] + i; key_rows[b] rows are
  // valid (what a non-causal query sees).
  const int64_t* past = nullptr;
  const int64_t* key_rows = nullptr;
  bool causal = true;
  int64_t local_window = -1;  // > 0: each query sees only its last local_window keys
  float scale = 1.0f;
  float softcap = 0.0f;  // > 0: scores become softcap * tanh(score / softcap)
  // Added to the scores: element (b, n, i, j) at
  // bias[b * bias_batch_stride + n * bias_head_stride + i * bias_row_stride + j].
  const float* bias = nullptr;
  int64_t bias_batch_stride = 0, bias_head_stride = 0, bias_row_stride = 0;
  // One more logit in the softmax's denominator only: head_sink[n], or 0 for
  // smooth_softmax without sinks.
  bool smooth_softmax = false;
  const float* head_sink = nullptr;
  // When set, [batch, heads, seq, qk_row] receives the scaled scores before
  // softcap and bias (qk_kind 1) or the probabilities (qk_kind 2) of the keys
  // each query sees; other entries are left alone.
  float* qk = nullptr;
  int qk_kind = 0;
  int64_t qk_row = 0;
  float* out = nullptr;  // [batch, seq, heads, head]
};

// key_pieces > 0 forces how many pieces the split-keys path cuts each query
// row's keys into (tests); 0 chooses from the threads and the work.
void run_grouped_attention(const GroupedAttention& p, ThreadPool* pool, AttentionIsa isa = AttentionIsa::kAuto,
                           AttentionPath path = AttentionPath::kAuto, int64_t key_pieces = 0);

}  // namespace onyx::cpu::attention
