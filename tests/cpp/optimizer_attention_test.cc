// Attention fusion tests: hand-built BERT and GPT-2 attention blocks become
// com.microsoft Attention / MultiHeadAttention and compute what they did on
// random inputs; near misses (a wrong perm, a shared intermediate, a scale
// that is not a scalar, a Reshape that moves the batch) are left alone.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "graph/to_proto.h"
#include "model/reader.h"
#include "model/writer.h"
#include "model_builder.h"
#include "onyx/session.h"
#include "optimizer_test_util.h"

namespace onyx::testing {
namespace {

using optimizer::OptimizerOptions;

constexpr int64_t kBatch = 2, kSeq = 5, kHidden = 16, kHeads = 2, kHeadSize = 8;

int count_domain_op(const graph::Graph& g, const std::string& domain, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.domain == domain && node.op_type == op ? 1 : 0;
  return n;
}
const graph::Node* find_op(const graph::Graph& g, const std::string& op) {
  for (const auto& node : g.nodes) {
    if (node.op_type == op) return &node;
  }
  return nullptr;
}

struct Optimized {
  std::unique_ptr<graph::Graph> before;
  std::unique_ptr<graph::Graph> after;
};

// Optimizes a copy (verifying after every pass) and expects both copies to
// compute the same outputs on `inputs`.
Optimized optimize_and_compare(ModelBuilder& b, const std::vector<Value>& inputs, double tolerance = 1e-4,
                               GraphOptimizationLevel level = GraphOptimizationLevel::kEnableAll) {
  Optimized r;
  auto before = load_graph(b.proto());
  auto after = load_graph(b.proto());
  EXPECT_TRUE(before.is_ok()) << before.status().message();
  if (!before.is_ok() || !after.is_ok()) return r;
  r.before = std::move(before).value();
  r.after = std::move(after).value();
  OptimizerOptions options;
  options.level = level;
  options.verify_after_each_pass = true;
  auto stats = optimize_for_cpu(*r.after, options);
  EXPECT_TRUE(stats.is_ok()) << stats.status().message();
  if (!stats.is_ok()) return r;
  auto expected = run_graph(*r.before, inputs);
  auto got = run_graph(*r.after, inputs);
  EXPECT_TRUE(expected.is_ok()) << expected.status().message();
  EXPECT_TRUE(got.is_ok()) << got.status().message();
  if (!expected.is_ok() || !got.is_ok()) return r;
  EXPECT_EQ(expected->size(), got->size());
  for (size_t i = 0; i < expected->size() && i < got->size(); ++i) {
    EXPECT_LE(max_relative_error((*got)[i].tensor(), (*expected)[i].tensor()), tolerance) << "output " << i;
  }
  return r;
}

Tensor mask_tensor() {
  Tensor m(DataType::kInt64, {kBatch, kSeq});
  for (int64_t i = 0; i < m.size(); ++i) m.data<int64_t>()[i] = 1;
  m.data<int64_t>()[kSeq - 1] = 0;  // batch 0: last key padded
  m.data<int64_t>()[2 * kSeq - 2] = 0;
  m.data<int64_t>()[2 * kSeq - 1] = 0;
  return m;
}

enum class Mask { kNone, kRaw, kAdditiveShared, kAdditivePerHead };

struct BertOptions {
  Mask mask = Mask::kRaw;
  std::vector<int64_t> k_perm = {0, 2, 3, 1};
  bool computed_shapes = false;  // Reshape targets from Shape/Gather/Concat
  bool scale_per_head = false;   // Div by a [heads, 1, 1] tensor: no fusion
  bool scores_also_output = false;
  float mask_one = 1.0f;  // the 1 in (1 - mask) * -10000
  std::vector<int64_t> head_shape = {0, 0, kHeads, kHeadSize};
};

// The BERT self-attention block as PyTorch exports it, on x [B, S, hidden].
ModelBuilder bert_attention(const BertOptions& o) {
  ModelBuilder b(13);
  b.input("x", {o.computed_shapes ? -1 : kBatch, kSeq, kHidden}).output("y");
  if (o.mask == Mask::kRaw) b.input("attention_mask", {kBatch, kSeq}, 7);
  if (o.mask == Mask::kAdditiveShared) b.input("mask", {kBatch, 1, kSeq, kSeq});
  if (o.mask == Mask::kAdditivePerHead) b.input("mask", {kBatch, kHeads, kSeq, kSeq});
  int64_initializer(b, "head_shape", {4}, o.head_shape);
  int64_initializer(b, "merged_shape", {3}, {0, 0, kHidden});
  if (o.computed_shapes) {
    int64_initializer(b, "zero", {}, {0});
    int64_initializer(b, "one", {}, {1});
    int64_initializer(b, "axis0", {1}, {0});
    int64_initializer(b, "heads_dims", {2}, {kHeads, kHeadSize});
    int64_initializer(b, "hidden_dim", {1}, {kHidden});
    b.node("Shape", {"x"}, {"x_shape"});
    b.node("Gather", {"x_shape", "zero"}, {"batch"}).node("Gather", {"x_shape", "one"}, {"seq"});
    b.node("Unsqueeze", {"batch", "axis0"}, {"batch1"}).node("Unsqueeze", {"seq", "axis0"}, {"seq1"});
    b.node("Concat", {"batch1", "seq1", "heads_dims"}, {"computed_head_shape"});
    attrs(b, {int_attr("axis", 0)});
    b.node("Concat", {"batch1", "seq1", "hidden_dim"}, {"computed_merged_shape"});
    attrs(b, {int_attr("axis", 0)});
  }
  const std::string head_shape = o.computed_shapes ? "computed_head_shape" : "head_shape";
  const std::string merged_shape = o.computed_shapes ? "computed_merged_shape" : "merged_shape";
  uint32_t seed = 10;
  for (const char* p : {"q", "k", "v"}) {
    const std::string s = p;
    b.initializer("w" + s, {kHidden, kHidden}, random_values(kHidden * kHidden, seed++));
    b.initializer("b" + s, {kHidden}, random_values(kHidden, seed++));
    b.node("MatMul", {"x", "w" + s}, {s + "_mm"}).node("Add", {"b" + s, s + "_mm"}, {s + "_proj"});
    b.node("Reshape", {s + "_proj", head_shape}, {s + "_heads"});
    b.node("Transpose", {s + "_heads"}, {s + "_t"});
    attrs(b, {ints_attr("perm", s == "k" ? o.k_perm : std::vector<int64_t>{0, 2, 1, 3})});
  }
  b.node("MatMul", {"q_t", "k_t"}, {"scores"});
  if (o.scale_per_head) {
    b.initializer("scale", {kHeads, 1, 1}, {2.0f, 3.0f});
  } else {
    b.initializer("scale", {}, {std::sqrt(static_cast<float>(kHeadSize))});
  }
  b.node("Div", {"scores", "scale"}, {"scaled"});
  std::string logits = "scaled";
  if (o.mask == Mask::kRaw) {
    int64_initializer(b, "axis1", {1}, {1});
    int64_initializer(b, "axis2", {1}, {2});
    b.initializer("mask_one", {}, {o.mask_one}).initializer("mask_value", {}, {-10000.0f});
    b.node("Unsqueeze", {"attention_mask", "axis1"}, {"m1"}).node("Unsqueeze", {"m1", "axis2"}, {"m2"});
    b.node("Cast", {"m2"}, {"mf"});
    attrs(b, {int_attr("to", 1)});
    b.node("Sub", {"mask_one", "mf"}, {"inverted"}).node("Mul", {"inverted", "mask_value"}, {"additive"});
    b.node("Add", {"scaled", "additive"}, {"masked"});
    logits = "masked";
  } else if (o.mask != Mask::kNone) {
    b.node("Add", {"scaled", "mask"}, {"masked"});
    logits = "masked";
  }
  b.node("Softmax", {logits}, {"probs"});
  attrs(b, {int_attr("axis", -1)});
  b.node("MatMul", {"probs", "v_t"}, {"context"});
  b.node("Transpose", {"context"}, {"context_t"});
  attrs(b, {ints_attr("perm", {0, 2, 1, 3})});
  b.node("Reshape", {"context_t", merged_shape}, {"y"});
  if (o.scores_also_output) b.output("scores");
  return b;
}

std::vector<Value> bert_inputs(const BertOptions& o, uint32_t seed = 50) {
  std::vector<Value> inputs = {Value(random_tensor({kBatch, kSeq, kHidden}, seed))};
  if (o.mask == Mask::kRaw) inputs.emplace_back(mask_tensor());
  if (o.mask == Mask::kAdditiveShared) inputs.emplace_back(random_tensor({kBatch, 1, kSeq, kSeq}, seed + 1));
  if (o.mask == Mask::kAdditivePerHead) inputs.emplace_back(random_tensor({kBatch, kHeads, kSeq, kSeq}, seed + 1));
  return inputs;
}

TEST(OptimizerAttentionFusion, FusesBertAttentionWithRawMask) {
  BertOptions o;
  ModelBuilder b = bert_attention(o);
  auto r = optimize_and_compare(b, bert_inputs(o));
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "Attention"), 1);
  EXPECT_EQ(count_ops(*r.after, "Softmax"), 0);
  EXPECT_EQ(count_ops(*r.after, "Transpose"), 0);
  // The attention_mask is cast to int32 once and used as mask_index.
  const graph::Node* attention = find_op(*r.after, "Attention");
  ASSERT_NE(attention, nullptr);
  ASSERT_GE(attention->inputs.size(), 4u);
  EXPECT_EQ(r.after->values[static_cast<size_t>(attention->inputs[3])].info.type.elem_type, DataType::kInt32);
  EXPECT_EQ(attention->attribute("num_heads")->i, kHeads);
  EXPECT_EQ(attention->attribute("scale"), nullptr);  // 1/sqrt(head_size) is the default
  // Q, K, V weights packed into one [hidden, 3 * hidden] constant.
  EXPECT_EQ(r.after->initializers.at(attention->inputs[1]).shape(), (Shape{kHidden, 3 * kHidden}));
  EXPECT_LE(r.after->nodes.size(), 2u);  // Attention and the mask's Cast
}

TEST(OptimizerAttentionFusion, FusesComputedReshapeTargetsAndNoMask) {
  BertOptions o;
  o.mask = Mask::kNone;
  o.computed_shapes = true;
  ModelBuilder b = bert_attention(o);
  auto r = optimize_and_compare(b, bert_inputs(o));
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "Attention"), 1);
  EXPECT_EQ(r.after->nodes.size(), 1u);  // the shape computations went too
}

TEST(OptimizerAttentionFusion, AdditiveMasks) {
  {
    // One mask for all heads ([B, 1, S, S], what transformers exports build
    // from attention_mask): one Attention with the mask as attention_bias
    // broadcast over heads, no separate projection or Split.
    BertOptions o;
    o.mask = Mask::kAdditiveShared;
    ModelBuilder b = bert_attention(o);
    auto r = optimize_and_compare(b, bert_inputs(o));
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "Attention"), 1);
    EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "MultiHeadAttention"), 0);
    EXPECT_EQ(count_ops(*r.after, "Split"), 0);
    EXPECT_EQ(count_ops(*r.after, "Softmax"), 0);
  }
  {
    BertOptions o;
    o.mask = Mask::kAdditivePerHead;
    ModelBuilder b = bert_attention(o);
    auto r = optimize_and_compare(b, bert_inputs(o));
    ASSERT_TRUE(r.after);
    EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "Attention"), 1);
  }
}

TEST(OptimizerAttentionFusion, LeavesNearMisses) {
  auto check_unfused = [](const BertOptions& o, const char* what) {
    ModelBuilder b = bert_attention(o);
    auto r = optimize_and_compare(b, bert_inputs(o));
    ASSERT_TRUE(r.after) << what;
    EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "Attention"), 0) << what;
    EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "MultiHeadAttention"), 0) << what;
    EXPECT_EQ(count_ops(*r.after, "Softmax"), 1) << what;
  };
  {
    BertOptions o;
    o.scale_per_head = true;
    check_unfused(o, "scale per head");
  }
  {
    BertOptions o;
    o.scores_also_output = true;
    check_unfused(o, "scores read elsewhere");
  }
  {
    // Heads split as [S, B, ...]: the batch moves, Attention cannot say it.
    BertOptions o;
    o.head_shape = {kSeq, kBatch, kHeads, kHeadSize};
    o.mask = Mask::kNone;
    check_unfused(o, "reshape moves the batch");
  }
  {
    // (2 - mask) * -10000 is not a key mask; as a [B, 1, 1, S] bias it is
    // broadcast along queries, which attention_bias cannot be.
    BertOptions o;
    o.mask_one = 2.0f;
    check_unfused(o, "mask is not 1 - mask");
  }
}

TEST(OptimizerAttentionFusion, LeavesUntransposedKeys) {
  // Q·K (no transpose of K) with head_size == sequence length so the graph is valid.
  ModelBuilder b(13);
  const int64_t seq = kHeadSize;
  b.input("x", {kBatch, seq, kHidden}).output("y");
  int64_initializer(b, "head_shape", {4}, {0, 0, kHeads, kHeadSize});
  int64_initializer(b, "merged_shape", {3}, {0, 0, kHidden});
  uint32_t seed = 70;
  for (const char* p : {"q", "k", "v"}) {
    const std::string s = p;
    b.initializer("w" + s, {kHidden, kHidden}, random_values(kHidden * kHidden, seed++));
    b.node("MatMul", {"x", "w" + s}, {s + "_proj"});
    b.node("Reshape", {s + "_proj", "head_shape"}, {s + "_heads"});
    b.node("Transpose", {s + "_heads"}, {s + "_t"});
    attrs(b, {ints_attr("perm", {0, 2, 1, 3})});
  }
  b.node("MatMul", {"q_t", "k_t"}, {"scores"}).node("Softmax", {"scores"}, {"probs"});
  attrs(b, {int_attr("axis", -1)});
  b.node("MatMul", {"probs", "v_t"}, {"context"}).node("Transpose", {"context"}, {"context_t"});
  attrs(b, {ints_attr("perm", {0, 2, 1, 3})});
  b.node("Reshape", {"context_t", "merged_shape"}, {"y"});
  auto r = optimize_and_compare(b, {random_tensor({kBatch, seq, kHidden}, 80)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "Attention"), 0);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "MultiHeadAttention"), 0);
}

// GPT-2 as exported: Conv1D as Reshape-Gemm-Reshape, one packed c_attn split
// in three, a causal Where over a slice of a constant lower-triangular buffer.
// seq: the query length (1 for a decode step); decode_mask: a [B, 1, seq,
// past + seq] additive mask input, as transformers exports build it once.
ModelBuilder gpt2_attention(bool with_past, int64_t seq = kSeq, bool decode_mask = false) {
  ModelBuilder b(13);
  b.input("x", {kBatch, seq, kHidden}).output("y");
  if (with_past)
    b.input("past_key", {kBatch, kHeads, 3, kHeadSize}).input("past_value", {kBatch, kHeads, 3, kHeadSize});
  int64_initializer(b, "flat_shape", {2}, {-1, kHidden});
  int64_initializer(b, "qkv_shape", {3}, {kBatch, seq, 3 * kHidden});
  int64_initializer(b, "split", {3}, {kHidden, kHidden, kHidden});
  int64_initializer(b, "head_shape", {4}, {kBatch, seq, kHeads, kHeadSize});
  int64_initializer(b, "merged_shape", {3}, {kBatch, seq, kHidden});
  b.initializer("c_attn_w", {kHidden, 3 * kHidden}, random_values(kHidden * 3 * kHidden, 90));
  b.initializer("c_attn_b", {3 * kHidden}, random_values(3 * kHidden, 91));
  b.node("Reshape", {"x", "flat_shape"}, {"x_flat"}).node("Gemm", {"x_flat", "c_attn_w", "c_attn_b"}, {"qkv_flat"});
  b.node("Reshape", {"qkv_flat", "qkv_shape"}, {"qkv"}).node("Split", {"qkv", "split"}, {"q", "k", "v"});
  attrs(b, {int_attr("axis", 2)});
  for (const char* p : {"q", "k", "v"}) {
    const std::string s = p;
    b.node("Reshape", {s, "head_shape"}, {s + "_heads"}).node("Transpose", {s + "_heads"}, {s + "_t"});
    attrs(b, {ints_attr("perm", {0, 2, 1, 3})});
  }
  std::string key = "k_t", value = "v_t";
  if (with_past) {
    b.output("present_key").output("present_value");
    b.node("Concat", {"past_key", "k_t"}, {"present_key"});
    attrs(b, {int_attr("axis", -2)});
    b.node("Concat", {"past_value", "v_t"}, {"present_value"});
    attrs(b, {int_attr("axis", -2)});
    key = "present_key";
    value = "present_value";
  }
  b.node("Transpose", {key}, {"k_tt"});
  attrs(b, {ints_attr("perm", {0, 1, 3, 2})});
  b.node("MatMul", {"q_t", "k_tt"}, {"scores"});
  b.initializer("scale", {}, {1.0f / std::sqrt(static_cast<float>(kHeadSize)) * 1.5f});  // not the default
  b.node("Mul", {"scores", "scale"}, {"scaled"});
  std::string logits = "scaled";
  if (decode_mask) {
    b.input("mask", {kBatch, 1, seq, (with_past ? 3 : 0) + seq});
    b.node("Add", {"scaled", "mask"}, {"masked"});
    logits = "masked";
  }
  if (!with_past && !decode_mask) {
    // Lower-triangular buffer [1, 1, 8, 8] sliced to [S, S].
    std::vector<float> tril(64);
    for (int r = 0; r < 8; ++r) {
      for (int c = 0; c < 8; ++c) tril[static_cast<size_t>(r * 8 + c)] = c <= r ? 1.0f : 0.0f;
    }
    b.initializer("bias_buffer", {1, 1, 8, 8}, tril);
    int64_initializer(b, "starts", {2}, {0, 0});
    int64_initializer(b, "ends", {2}, {kSeq, kSeq});
    int64_initializer(b, "axes", {2}, {2, 3});
    b.initializer("masked_bias", {}, {-10000.0f});
    b.node("Cast", {"bias_buffer"}, {"bias_bool"});
    attrs(b, {int_attr("to", 9)});
    b.node("Slice", {"bias_bool", "starts", "ends", "axes"}, {"causal"});
    b.node("Where", {"causal", "scaled", "masked_bias"}, {"causal_scores"});
    logits = "causal_scores";
  }
  b.node("Softmax", {logits}, {"probs"});
  attrs(b, {int_attr("axis", -1)});
  b.node("MatMul", {"probs", value}, {"context"}).node("Transpose", {"context"}, {"context_t"});
  attrs(b, {ints_attr("perm", {0, 2, 1, 3})});
  b.node("Reshape", {"context_t", "merged_shape"}, {"y"});
  return b;
}

TEST(OptimizerAttentionFusion, FusesGpt2CausalAttention) {
  ModelBuilder b = gpt2_attention(false);
  auto r = optimize_and_compare(b, {random_tensor({kBatch, kSeq, kHidden}, 92)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "Attention"), 1);
  EXPECT_EQ(r.after->nodes.size(), 1u);
  const graph::Node* attention = find_op(*r.after, "Attention");
  ASSERT_NE(attention, nullptr);
  ASSERT_NE(attention->attribute("unidirectional"), nullptr);
  EXPECT_EQ(attention->attribute("unidirectional")->i, 1);
  ASSERT_NE(attention->attribute("scale"), nullptr);
  EXPECT_NEAR(attention->attribute("scale")->f, 1.5f / std::sqrt(static_cast<float>(kHeadSize)), 1e-6);
}

TEST(OptimizerAttentionFusion, FusesGpt2PastIntoMultiHeadAttention) {
  ModelBuilder b = gpt2_attention(true);
  auto r = optimize_and_compare(
      b, {random_tensor({kBatch, kSeq, kHidden}, 93), random_tensor({kBatch, kHeads, 3, kHeadSize}, 94),
          random_tensor({kBatch, kHeads, 3, kHeadSize}, 95)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "MultiHeadAttention"), 1);
  const graph::Node* mha = find_op(*r.after, "MultiHeadAttention");
  ASSERT_NE(mha, nullptr);
  EXPECT_EQ(mha->outputs.size(), 3u);  // output, present_key, present_value
  EXPECT_EQ(count_ops(*r.after, "Concat"), 0);
}

TEST(OptimizerAttentionFusion, FusesDecodeStepWithSharedMask) {
  // One query against past + 1 keys, the mask [B, 1, 1, past + 1]: its
  // query dim of 1 is the query length, not a broadcast.
  ModelBuilder b = gpt2_attention(true, 1, true);
  auto r = optimize_and_compare(
      b, {random_tensor({kBatch, 1, kHidden}, 96), random_tensor({kBatch, kHeads, 3, kHeadSize}, 97),
          random_tensor({kBatch, kHeads, 3, kHeadSize}, 98), random_tensor({kBatch, 1, 1, 4}, 99)});
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_domain_op(*r.after, "com.microsoft", "MultiHeadAttention"), 1);
  EXPECT_EQ(count_ops(*r.after, "Softmax"), 0);
  EXPECT_EQ(count_ops(*r.after, "Concat"), 0);
}

TEST(OptimizerAttentionFusion, ReshapedGemmBecomesMatMul) {
  ModelBuilder b(13);
  b.input("x", {kBatch, kSeq, kHidden}).output("y");
  int64_initializer(b, "flat_shape", {2}, {-1, kHidden});
  int64_initializer(b, "out_shape", {3}, {kBatch, kSeq, 4});
  b.initializer("w", {4, kHidden}, random_values(4 * kHidden, 96)).initializer("c", {4}, random_values(4, 97));
  b.node("Reshape", {"x", "flat_shape"}, {"flat"}).node("Gemm", {"flat", "w", "c"}, {"g"});
  attrs(b, {int_attr("transB", 1)});
  b.node("Reshape", {"g", "out_shape"}, {"y"});
  // At the extended level, where the other fusions look for MatMul + Add (the
  // CPU's last pass turns a layer no fusion took back into a Gemm).
  auto r = optimize_and_compare(b, {random_tensor({kBatch, kSeq, kHidden}, 98)}, 1e-4,
                                GraphOptimizationLevel::kEnableExtended);
  ASSERT_TRUE(r.after);
  EXPECT_EQ(count_ops(*r.after, "Gemm"), 0);
  EXPECT_EQ(count_ops(*r.after, "Reshape"), 0);
  EXPECT_EQ(count_ops(*r.after, "MatMul"), 1);
  // Unflattened with the dims swapped: the rows do not map back, no rewrite.
  ModelBuilder swapped(13);
  swapped.input("x", {kBatch, kSeq, kHidden}).output("y");
  int64_initializer(swapped, "flat_shape", {2}, {-1, kHidden});
  int64_initializer(swapped, "out_shape", {3}, {kSeq, kBatch, 4});
  swapped.initializer("w", {kHidden, 4}, random_values(4 * kHidden, 96)).initializer("c", {4}, random_values(4, 97));
  swapped.node("Reshape", {"x", "flat_shape"}, {"flat"}).node("Gemm", {"flat", "w", "c"}, {"g"});
  swapped.node("Reshape", {"g", "out_shape"}, {"y"});
  auto s = optimize_and_compare(swapped, {random_tensor({kBatch, kSeq, kHidden}, 99)});
  ASSERT_TRUE(s.after);
  EXPECT_EQ(count_ops(*s.after, "Gemm"), 1);
}

// The fused model saves (com.microsoft imported) and a session runs it.
TEST(OptimizerAttentionFusion, SavedModelRunsInASession) {
  BertOptions o;
  ModelBuilder b = bert_attention(o);
  const std::string path = ::testing::TempDir() + "/attention_optimized.onnx";
  SessionOptions save;
  save.optimized_model_filepath = path;
  auto optimized = InferenceSession::from_bytes(b.bytes(), save);
  SessionOptions plain;
  plain.graph_optimization_level = GraphOptimizationLevel::kDisableAll;
  auto reloaded = InferenceSession::from_file(path, plain);
  auto reference = InferenceSession::from_bytes(b.bytes(), plain);
  auto inputs = bert_inputs(o, 120);
  Feeds feeds = {{"x", inputs[0]}, {"attention_mask", inputs[1]}};
  auto got = reloaded->run({}, feeds);
  auto want = reference->run({}, feeds);
  EXPECT_LE(max_relative_error(got[0].tensor(), want[0].tensor()), 1e-4);
  auto saved = model::read_model_file(path);
  ASSERT_TRUE(saved.is_ok());
  int attention = 0;
  for (const auto& n : saved->graph->node) attention += n.op_type == "Attention" && n.domain == "com.microsoft";
  EXPECT_EQ(attention, 1);
}

// ---- real models ---------------------------------------------------------------

void check_model(const std::string& path, int min_attention) {
  std::ifstream probe(path);
  if (!probe) GTEST_SKIP() << path << " is not available";
  auto model = model::read_model_file(path);
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  auto before = load_graph(*model);
  auto after = load_graph(*model);
  ASSERT_TRUE(before.is_ok() && after.is_ok());
  OptimizerOptions options;
  options.verify_after_each_pass = true;
  auto stats = optimize_for_cpu(**after, options);
  ASSERT_TRUE(stats.is_ok()) << stats.status().message();
  EXPECT_GE(count_domain_op(**after, "com.microsoft", "Attention") +
                count_domain_op(**after, "com.microsoft", "MultiHeadAttention"),
            min_attention);
  EXPECT_EQ(count_ops(**after, "Softmax"), 0);
  std::vector<Value> inputs;
  for (int32_t id : (*before)->inputs) {
    const graph::ValueEntry& v = (*before)->values[static_cast<size_t>(id)];
    if (v.is_initializer) continue;
    Shape s;
    for (const auto& d : v.info.shape) s.push_back(d.is_known() ? d.value : 2);
    Tensor t(v.info.type.elem_type, s);
    for (int64_t i = 0; i < t.size(); ++i) {
      int64_t value = (i * 7) % 5;
      if (v.name.find("mask") != std::string::npos) value = i % 7 == 6 ? 0 : 1;
      if (v.name.find("type") != std::string::npos) value = 0;
      if (t.dtype() == DataType::kInt64) t.data<int64_t>()[i] = value;
      if (t.dtype() == DataType::kInt32) t.data<int32_t>()[i] = static_cast<int32_t>(value);
    }
    inputs.emplace_back(t);
  }
  auto want = run_graph(**before, inputs);
  auto got = run_graph(**after, inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().message();
  ASSERT_TRUE(got.is_ok()) << got.status().message();
  for (size_t i = 0; i < want->size(); ++i) {
    EXPECT_LE(max_relative_error((*got)[i].tensor(), (*want)[i].tensor()), 1e-4) << "output " << i;
  }
}

TEST(OptimizerAttentionModels, BertToyKeepsItsAttention) {
  check_model(ONYX_SHARED_DIR "/models/bert_toy_optimized.onnx", 1);
}
TEST(OptimizerAttentionModels, TFBertForQuestionAnswering) {
  check_model(ONYX_SHARED_DIR "/models/TFBertForQuestionAnswering.onnx", 24);
}

}  // namespace
}  // namespace onyx::testing
