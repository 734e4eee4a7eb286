// The KV cache in place: outputs written into the tensors an IoBinding binds
// them to, GroupQueryAttention appending to a cache bound as both past and
// present, the grouped-attention core (each ISA, row and block paths, float
// and int8 caches) against a plain double-precision reference written here,
// and the int8 cache's errors. The comparison with onnxruntime itself is
// tests/python/test_gqa_cache.py.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernel_test_util.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "providers/cpu/attention/flash_attention.h"

namespace onyx {
namespace {

using namespace cpu::attention;
using testing::attr_int;
using testing::attr_string;
using testing::int_attr;
using testing::ModelBuilder;
using testing::random_floats;
using testing::run_kernel;
using testing::string_attr;

// ------------------------------------------------------------ IoBinding

TEST(IoBindingInPlace, KernelWritesTheBoundTensor) {
  const int64_t n = 1 << 20;  // 4 MB: the arena would show such a buffer
  ModelBuilder b(17);
  b.input("x", {n}).output("y", {n});
  b.node("Neg", {"x"}, {"y"});
  auto session = InferenceSession::from_bytes(b.bytes());
  const Tensor x = Tensor::from_vector<float>(random_floats(static_cast<size_t>(n), 1), {n});

  // Unbound, the output comes from the session's arena...
  IoBinding allocated;
  allocated.bind_input("x", Value(x));
  allocated.bind_output("y");
  session->run_with_binding(allocated);
  const int64_t unbound_peak = session->memory_profile().peak_bytes;
  ASSERT_GE(unbound_peak, n * 4);

  // ...bound to a tensor of the caller's, Neg writes it directly: the same
  // buffer comes back and the session never held one of its own.
  auto fresh = InferenceSession::from_bytes(b.bytes());
  Tensor destination(DataType::kFloat, {n});
  IoBinding bound;
  bound.bind_input("x", Value(x));
  bound.bind_output("y", destination);
  fresh->run_with_binding(bound);
  EXPECT_EQ(bound.outputs()[0].tensor().raw_data(), destination.raw_data());
  EXPECT_LT(fresh->memory_profile().peak_bytes, n * 4);
  for (int64_t i = 0; i < n; i += 4097) ASSERT_EQ(destination.data<float>()[i], -x.data<float>()[i]) << i;
}

TEST(IoBindingInPlace, OutputsMadeElsewhereAreCopied) {
  // Reshape hands back its input's buffer: the bound tensor gets a copy.
  ModelBuilder b(17);
  b.input("x", {2, 3}).output("y", {3, 2});
  b.int64_initializer("shape", {2}, {3, 2});
  b.node("Reshape", {"x", "shape"}, {"y"});
  auto session = InferenceSession::from_bytes(b.bytes());
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor destination(DataType::kFloat, {3, 2});
  IoBinding binding;
  binding.bind_input("x", Value(x));
  binding.bind_output("y", destination);
  session->run_with_binding(binding);
  EXPECT_EQ(binding.outputs()[0].tensor().raw_data(), destination.raw_data());
  EXPECT_NE(destination.raw_data(), x.raw_data());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(destination.data<float>()[i], x.data<float>()[i]);

  // A tensor of another shape is not handed to the kernel; the mismatch is
  // reported after the run, naming the output.
  Tensor wrong(DataType::kFloat, {6});
  IoBinding mismatched;
  mismatched.bind_input("x", Value(x));
  mismatched.bind_output("y", wrong);
  try {
    session->run_with_binding(mismatched);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("output 'y'"), std::string::npos) << e.what();
  }
}

// ------------------------------------------- GroupQueryAttention in place

// One GroupQueryAttention node: query, key, value, past_key, past_value,
// seqlens_k, total_sequence_length in; output, present_key, present_value out.
std::string gqa_model(int64_t heads, int64_t kv_heads, const std::string& quant, int32_t cache_type) {
  ModelBuilder b(17);
  b.proto().opset_import.push_back({"com.microsoft", 1});
  b.input("query", {-1, -1, -1}).input("key", {-1, -1, -1}).input("value", {-1, -1, -1});
  b.input("past_key", {-1, -1, -1, -1}, cache_type).input("past_value", {-1, -1, -1, -1}, cache_type);
  b.input("seqlens_k", {-1}, 6).input("total_sequence_length", {}, 6);
  b.output("output").output("present_key", {}, cache_type).output("present_value", {}, cache_type);
  b.node("GroupQueryAttention",
         {"query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length"},
         {"output", "present_key", "present_value"}, "gqa", "com.microsoft");
  auto& node = b.proto().graph->node.back();
  node.attribute.push_back(int_attr("num_heads", heads));
  node.attribute.push_back(int_attr("kv_num_heads", kv_heads));
  if (!quant.empty()) {
    node.attribute.push_back(string_attr("k_quant_type", quant));
    node.attribute.push_back(string_attr("v_quant_type", quant));
  }
  return b.bytes();
}

TEST(GqaInPlace, SharedBufferAppendsOnlyTheNewRows) {
  for (const bool int8 : {false, true}) {
    SCOPED_TRACE(int8 ? "int8 cache" : "float cache");
    const int64_t B = 2, N = 4, KV = 2, H = 16, L = 12, row = int8 ? H + 4 : H;
    const std::vector<int32_t> seqlens{5, 3};  // batch 0 has 5 cached rows, batch 1 has 3
    auto session = InferenceSession::from_bytes(gqa_model(N, KV, int8 ? "PER_TOKEN" : "", int8 ? 3 : 1));
    const DataType cache_type = int8 ? DataType::kInt8 : DataType::kFloat;
    // A cache whose rows past the valid ones hold a sentinel that a copy
    // (which zeroes them) would not keep.
    Tensor cache_k(cache_type, {B, KV, L, row}), cache_v(cache_type, {B, KV, L, row});
    const auto fill = [&](Tensor& t, uint32_t seed) {
      const std::vector<float> values = random_floats(static_cast<size_t>(B * KV * L * H), seed);
      for (int64_t r = 0; r < B * KV * L; ++r) {
        if (int8)
          quantize_row_int8(values.data() + r * H, H, t.data<int8_t>() + r * row);
        else
          std::memcpy(t.data<float>() + r * H, values.data() + r * H, H * sizeof(float));
      }
    };
    fill(cache_k, 3);
    fill(cache_v, 4);
    const Tensor before_k = cache_k.clone(), before_v = cache_v.clone();
    const Tensor q = Tensor::from_vector<float>(random_floats(B * N * H, 5), {B, 1, N * H});
    const Tensor k = Tensor::from_vector<float>(random_floats(B * KV * H, 6), {B, 1, KV * H});
    const Tensor v = Tensor::from_vector<float>(random_floats(B * KV * H, 7), {B, 1, KV * H});
    const Tensor lens = Tensor::from_vector<int32_t>(seqlens, {B});
    const Tensor total = Tensor::scalar<int32_t>(6);
    const Feeds feeds{{"query", Value(q)},
                      {"key", Value(k)},
                      {"value", Value(v)},
                      {"past_key", Value(before_k)},
                      {"past_value", Value(before_v)},
                      {"seqlens_k", Value(lens)},
                      {"total_sequence_length", Value(total)}};
    // The reference: a plain run, present in fresh buffers.
    const std::vector<Value> want = session->run({}, feeds);

    IoBinding binding;
    for (const auto& [name, value] : feeds) binding.bind_input(name, value);
    binding.bind_input("past_key", Value(cache_k));
    binding.bind_input("past_value", Value(cache_v));
    binding.bind_output("output");
    binding.bind_output("present_key", cache_k);
    binding.bind_output("present_value", cache_v);
    session->run_with_binding(binding);
    const Tensor& out = binding.outputs()[0].tensor();
    for (int64_t i = 0; i < out.size(); ++i) ASSERT_EQ(out.data<float>()[i], want[0].tensor().data<float>()[i]) << i;
    for (const auto& [cache, before, present] :
         {std::tuple{&cache_k, &before_k, &want[1].tensor()}, std::tuple{&cache_v, &before_v, &want[2].tensor()}}) {
      const auto* got = static_cast<const char*>(cache->raw_data());
      const auto* old = static_cast<const char*>(before->raw_data());
      const auto* made = static_cast<const char*>(present->raw_data());
      const size_t row_bytes = static_cast<size_t>(row) * dtype_size(cache_type);
      for (int64_t b = 0; b < B; ++b) {
        for (int64_t n = 0; n < KV; ++n) {
          for (int64_t r = 0; r < L; ++r) {
            const size_t at = static_cast<size_t>((b * KV + n) * L + r) * row_bytes;
            // The new row is the one a plain run makes; every other row is untouched.
            const char* expect = r == seqlens[static_cast<size_t>(b)] ? made + at : old + at;
            ASSERT_EQ(std::memcmp(got + at, expect, row_bytes), 0) << "batch " << b << " head " << n << " row " << r;
          }
        }
      }
    }
  }
}

// --------------------------------------------------- the attention core

// A plain double-precision reference of GroupedAttention's contract.
std::vector<float> reference(const GroupedAttention& p) {
  std::vector<float> out(static_cast<size_t>(p.batch * p.seq * p.heads * p.head));
  const int64_t group = p.heads / p.kv_heads;
  auto cache_value = [&](const KvCache& c, int64_t b, int64_t n, int64_t j, int64_t e) -> double {
    const int64_t r = (b * p.kv_heads + n) * c.capacity + j;
    if (c.f32) return c.f32[r * p.head + e];
    float row[512];
    dequantize_row_int8(c.i8 + r * (p.head + 4), p.head, row);
    return row[e];
  };
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t h = 0; h < p.heads; ++h) {
      for (int64_t i = 0; i < p.seq; ++i) {
        const int64_t last = p.causal ? std::min(p.past[b] + i + 1, p.k.capacity) : p.key_rows[b];
        const int64_t first = p.local_window > 0 ? std::max<int64_t>(last - p.local_window, 0) : 0;
        std::vector<double> s;
        for (int64_t j = first; j < last; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < p.head; ++e)
            dot += p.q[((b * p.heads + h) * p.seq + i) * p.head + e] * cache_value(p.k, b, h / group, j, e);
          double x = dot * p.scale;
          if (p.softcap > 0) x = p.softcap * std::tanh(x / p.softcap);
          if (p.bias) x += p.bias[b * p.bias_batch_stride + h * p.bias_head_stride + i * p.bias_row_stride + j];
          s.push_back(x);
        }
        const bool extra = p.smooth_softmax || p.head_sink;
        const double sink = p.head_sink ? p.head_sink[h] : 0.0;
        double peak = extra ? sink : -1e300;
        for (double x : s) peak = std::max(peak, x);
        double sum = extra ? std::exp(sink - peak) : 0.0;
        for (double& x : s) sum += (x = std::exp(x - peak));
        for (int64_t e = 0; e < p.head; ++e) {
          double o = 0;
          for (int64_t j = first; j < last; ++j)
            o += s[static_cast<size_t>(j - first)] / sum * cache_value(p.v, b, h / group, j, e);
          out[static_cast<size_t>(((b * p.seq + i) * p.heads + h) * p.head + e)] = static_cast<float>(o);
        }
      }
    }
  }
  return out;
}

struct CoreCase {
  int64_t batch, seq, heads, kv_heads, head, capacity;
  std::vector<int64_t> past;
  int64_t window;
  float softcap;
  bool bias, sink, int8;
};

TEST(GroupedAttentionCore, EveryIsaAndPathMatchesTheReference) {
  const std::vector<CoreCase> cases = {
      {1, 1, 14, 2, 64, 300, {299}, -1, 0, false, false, false},        // decode, GQA group 7
      {2, 1, 4, 2, 24, 40, {10, 37}, -1, 0, false, false, false},       // batch with different lengths, odd head
      {2, 3, 4, 1, 16, 40, {10, 20}, 7, 0, false, false, false},        // local window
      {1, 150, 6, 2, 32, 170, {20}, -1, 0, false, false, false},        // a prompt after a cached prefix
      {1, 70, 4, 4, 20, 70, {0}, 33, 30.0f, true, true, false},         // window, softcap, bias, sinks
      {2, 1, 14, 2, 64, 200, {199, 50}, -1, 0, false, false, true},     // int8 decode
      {1, 90, 4, 2, 64, 100, {10}, -1, 0, false, true, true},           // int8 prompt
      {1, 1, 14, 2, 64, 2100, {2052}, -1, 0, false, false, false},      // long decode, pieces of many steps
      {1, 1, 14, 2, 64, 2100, {1500}, -1, 0, false, false, true},       // long int8 decode
      {1, 1, 14, 1, 64, 700, {600}, -1, 0, false, true, false},         // one kv head: units < threads, sinks
      {3, 1, 6, 1, 40, 300, {290, 5, 131}, -1, 0, false, false, true},  // 3 units on 2 threads, head 40, int8
      {1, 2, 8, 2, 72, 600, {500}, 100, 20.0f, true, false, false},     // window, softcap, bias, head 72
  };
  for (const CoreCase& c : cases) {
    SCOPED_TRACE("seq " + std::to_string(c.seq) + " heads " + std::to_string(c.heads) + "/" +
                 std::to_string(c.kv_heads) + " head " + std::to_string(c.head) + (c.int8 ? " int8" : ""));
    const int64_t cache_rows = c.batch * c.kv_heads * c.capacity;
    std::vector<float> q = random_floats(static_cast<size_t>(c.batch * c.heads * c.seq * c.head), 11, -2, 2);
    std::vector<float> kf = random_floats(static_cast<size_t>(cache_rows * c.head), 12, -2, 2);
    std::vector<float> vf = random_floats(static_cast<size_t>(cache_rows * c.head), 13);
    std::vector<int8_t> k8(static_cast<size_t>(cache_rows * (c.head + 4))), v8(k8.size());
    for (int64_t r = 0; r < cache_rows; ++r) {
      quantize_row_int8(kf.data() + r * c.head, c.head, k8.data() + r * (c.head + 4));
      quantize_row_int8(vf.data() + r * c.head, c.head, v8.data() + r * (c.head + 4));
    }
    std::vector<int64_t> key_rows;
    for (int64_t past : c.past) key_rows.push_back(past + c.seq);
    const std::vector<float> bias = random_floats(static_cast<size_t>(c.heads * c.seq * c.capacity), 14);
    const std::vector<float> sink = random_floats(static_cast<size_t>(c.heads), 15);
    GroupedAttention p;
    p.batch = c.batch, p.seq = c.seq, p.heads = c.heads, p.kv_heads = c.kv_heads, p.head = c.head;
    p.q = q.data();
    p.k = c.int8 ? KvCache{nullptr, k8.data(), c.capacity} : KvCache{kf.data(), nullptr, c.capacity};
    p.v = c.int8 ? KvCache{nullptr, v8.data(), c.capacity} : KvCache{vf.data(), nullptr, c.capacity};
    p.past = c.past.data();
    p.key_rows = key_rows.data();
    p.local_window = c.window;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.head));
    p.softcap = c.softcap;
    if (c.bias) {
      p.bias = bias.data();
      p.bias_head_stride = c.seq * c.capacity;
      p.bias_row_stride = c.capacity;
    }
    if (c.sink) p.head_sink = sink.data();
    const std::vector<float> want = reference(p);
    ThreadPool pool(2);
    // Split keys: chosen pieces on 1 (no pool) and 2 threads, then forced
    // cuts, 3 and 5 leaving pieces that are not a multiple of a step.
    struct Run {
      AttentionPath path;
      ThreadPool* pool;
      int64_t pieces;
      const char* name;
    };
    const std::vector<Run> runs = {{AttentionPath::kRows, &pool, 0, "rows"},
                                   {AttentionPath::kBlocks, &pool, 0, "blocks"},
                                   {AttentionPath::kSplitKeys, nullptr, 0, "split keys, 1 thread"},
                                   {AttentionPath::kSplitKeys, &pool, 0, "split keys, 2 threads"},
                                   {AttentionPath::kSplitKeys, nullptr, 3, "split keys, 3 pieces, 1 thread"},
                                   {AttentionPath::kSplitKeys, &pool, 2, "split keys, 2 pieces, 2 threads"},
                                   {AttentionPath::kSplitKeys, &pool, 5, "split keys, 5 pieces, 2 threads"}};
    for (AttentionIsa isa : available_attention_isas()) {
      for (const Run& run : runs) {
        SCOPED_TRACE(std::string(attention_isa_name(isa)) + " " + run.name);
        std::vector<float> out(want.size(), std::numeric_limits<float>::quiet_NaN());
        p.out = out.data();
        run_grouped_attention(p, run.pool, isa, run.path, run.pieces);
        for (size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], 2e-5) << i;
      }
    }
  }
}

TEST(GroupedAttentionCore, Int8RowsRoundTripWithinHalfAStep) {
  const std::vector<float> x = random_floats(100, 21, -3, 3);
  std::vector<int8_t> row(104);
  quantize_row_int8(x.data(), 100, row.data());
  float scale = 0;
  std::memcpy(&scale, row.data() + 100, 4);
  float amax = 0;
  for (float v : x) amax = std::max(amax, std::fabs(v));
  EXPECT_FLOAT_EQ(scale, amax / 127.0f);
  std::vector<float> back(100);
  dequantize_row_int8(row.data(), 100, back.data());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(std::fabs(back[i] - x[i]), scale * 0.5f + 1e-6f) << i;
}

// ------------------------------------------------------- int8 cache errors

TEST(GqaInt8Cache, WrongCacheShapesAndTypesAreNamed) {
  const int64_t B = 1, N = 2, KV = 1, H = 8;
  auto floats = [](int64_t n, Shape shape) {
    return Value(Tensor::from_vector<float>(random_floats(static_cast<size_t>(n), 1), std::move(shape)));
  };
  const std::vector<graph::Attribute> attrs = {attr_int("num_heads", N), attr_int("kv_num_heads", KV),
                                               attr_string("k_quant_type", "PER_TOKEN"),
                                               attr_string("v_quant_type", "PER_TOKEN")};
  auto run = [&](Value past) {
    return run_kernel("GroupQueryAttention", 1,
                      {floats(N * H, {B, 1, N * H}), floats(KV * H, {B, 1, KV * H}), floats(KV * H, {B, 1, KV * H}),
                       past, past, Value(Tensor::from_vector<int32_t>({3}, {B})), Value(Tensor::scalar<int32_t>(4))},
                      attrs, 3, "com.microsoft");
  };
  // A head-wide int8 cache lacks the scale bytes.
  auto narrow = run(Value(Tensor(DataType::kInt8, {B, KV, 4, H})));
  ASSERT_FALSE(narrow.status.is_ok());
  EXPECT_NE(narrow.status.message().find("12]"), std::string::npos) << narrow.status.message();
  EXPECT_NE(narrow.status.message().find("+ 4 bytes"), std::string::npos) << narrow.status.message();
  // A float cache is refused by type.
  auto typed = run(floats(B * KV * 4 * (H + 4), {B, KV, 4, H + 4}));
  ASSERT_FALSE(typed.status.is_ok());
  EXPECT_NE(typed.status.message().find("expected int8"), std::string::npos) << typed.status.message();
  // A right one works.
  Tensor cache(DataType::kInt8, {B, KV, 4, H + 4});
  std::memset(cache.raw_data(), 0, cache.bytes());
  auto good = run(Value(cache));
  ASSERT_TRUE(good.status.is_ok()) << good.status.message();
  EXPECT_EQ(good.outputs[1].tensor().dtype(), DataType::kInt8);
  EXPECT_EQ(good.outputs[1].tensor().shape(), (Shape{B, KV, 4, H + 4}));
  // Only PER_TOKEN is onyx's; onnxruntime's other kinds are refused by name.
  auto other = run_kernel("GroupQueryAttention", 1, {},
                          {attr_int("num_heads", N), attr_int("kv_num_heads", KV),
                           attr_string("k_quant_type", "PER_CHANNEL"), attr_string("v_quant_type", "PER_CHANNEL")},
                          3, "com.microsoft");
  ASSERT_FALSE(other.status.is_ok());
  EXPECT_NE(other.status.message().find("PER_CHANNEL"), std::string::npos) << other.status.message();
}

}  // namespace
}  // namespace onyx
