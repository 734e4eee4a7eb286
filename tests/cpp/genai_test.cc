// onyx::genai without a model: genai_config.json parsing, overlays and their
// errors, the int8 cache rewrite, and search on synthetic logits.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "genai/config.h"
#include "genai/model.h"
#include "genai/search.h"

namespace onyx::genai {
namespace {

const char* kConfig = R"({"model": {"type": "llama", "bos_token_id": 1, "eos_token_id": [2, 5], "pad_token_id": 0,
  "context_length": 128, "vocab_size": 32, "decoder": {"filename": "model.onnx", "head_size": 8, "hidden_size": 32,
  "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2,
  "session_options": {"intra_op_num_threads": 3, "provider_options": [{"cuda": {"device_id": "0"}}]}}},
  "search": {"max_length": 64, "top_k": 5, "past_present_share_buffer": true}})";

Json parse(const std::string& text) { return parse_json(text).value(); }

std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(GenaiConfig, ReadsOgFormat) {
  ModelConfig c = parse_model_config(parse(kConfig), "f");
  EXPECT_EQ(c.type, "llama");
  EXPECT_EQ(c.eos_token_ids, (std::vector<int32_t>{2, 5}));
  EXPECT_EQ(c.decoder.num_key_value_heads, 2);
  EXPECT_EQ(c.decoder.intra_op_num_threads, 3);
  ASSERT_EQ(c.decoder.providers.size(), 1u);
  EXPECT_EQ(c.decoder.providers[0].first, "cuda");
  EXPECT_EQ(c.decoder.providers[0].second.at("device_id"), "0");
  EXPECT_EQ(c.search.max_length, 64);
  EXPECT_EQ(c.search.top_k, 5);
  EXPECT_TRUE(c.past_present_share_buffer);
  EXPECT_EQ(layer_name(c.decoder.past_key_names, 7), "past_key_values.7.key");
}

TEST(GenaiConfig, OverlayMergesObjects) {
  Json base = parse(kConfig);
  merge_json(base, parse(R"({"search": {"top_k": 9}, "model": {"decoder": {"kv_cache_type": "int8"}}})"));
  ModelConfig c = parse_model_config(base, "f");
  EXPECT_EQ(c.search.top_k, 9);
  EXPECT_EQ(c.search.max_length, 64);  // untouched keys stay
  EXPECT_EQ(c.decoder.num_hidden_layers, 2);
  EXPECT_TRUE(c.decoder.int8_kv_cache);
}

TEST(GenaiConfig, ErrorsNameFileAndKey) {
  Json missing = parse(kConfig);
  Json decoder = missing.at("model").at("decoder");
  Json trimmed = Json::object();
  for (const auto& [k, v] : decoder.as_object()) {
    if (k != "num_hidden_layers") trimmed.set(k, v);
  }
  Json model = missing.at("model");
  model.set("decoder", trimmed);
  missing.set("model", model);
  EXPECT_EQ(error_of([&] { parse_model_config(missing, "f"); }),
            "genai_config.json: model.decoder.num_hidden_layers: the key is missing");
  Json wrong = parse(kConfig);
  merge_json(wrong, parse(R"({"model": {"vocab_size": "big"}})"));
  EXPECT_NE(error_of([&] {
              parse_model_config(wrong, "f");
            }).find("genai_config.json: model.vocab_size: expected an integer"),
            std::string::npos);
  Json cache = parse(kConfig);
  merge_json(cache, parse(R"({"model": {"decoder": {"kv_cache_type": "int4"}}})"));
  EXPECT_NE(error_of([&] { parse_model_config(cache, "f"); }).find("model.decoder.kv_cache_type"), std::string::npos);
  EXPECT_NE(error_of([] { Model("/nonexistent/genai"); }).find("does not exist"), std::string::npos);
  const auto empty = std::filesystem::temp_directory_path() / "onyx_genai_test_empty";
  std::filesystem::create_directories(empty);
  EXPECT_NE(error_of([&] { Model(empty.string()); }).find("has no genai_config.json"), std::string::npos);
  std::ofstream(empty / "genai_config.json") << kConfig;
  EXPECT_NE(error_of([&] { Model(empty.string()); }).find("model.decoder.filename: 'model.onnx' is not a file"),
            std::string::npos);
  std::filesystem::remove_all(empty);
}

TEST(GenaiInt8Cache, RewritesCacheTypesAndAttention) {
  model::ModelProto proto;
  proto.graph = std::make_shared<model::GraphProto>();
  DecoderConfig d = parse_model_config(parse(kConfig), "f").decoder;
  d.num_hidden_layers = 1;
  auto value = [](const std::string& name) {
    model::ValueInfoProto v;
    v.name = name;
    v.type.value_case = model::TypeProto::Case::kTensorType;
    v.type.elem_type = 1;
    v.type.has_shape = true;
    v.type.shape.dim.resize(4);
    v.type.shape.dim[3].dim_param = "head";
    return v;
  };
  proto.graph->input = {value("input_ids"), value("past_key_values.0.key"), value("past_key_values.0.value")};
  proto.graph->output = {value("logits"), value("present.0.key"), value("present.0.value")};
  model::NodeProto gqa;
  gqa.op_type = "GroupQueryAttention";
  proto.graph->node.push_back(gqa);
  rewrite_for_int8_kv_cache(proto, d);
  EXPECT_EQ(proto.graph->input[0].type.elem_type, 1);
  for (const auto* list : {&proto.graph->input, &proto.graph->output}) {
    for (size_t i = 1; i < 3; ++i) {
      EXPECT_EQ((*list)[i].type.elem_type, 3);
      EXPECT_EQ((*list)[i].type.shape.dim[3].dim_value, d.head_size + 4);
    }
  }
  ASSERT_EQ(proto.graph->node[0].attribute.size(), 2u);
  for (const auto& a : proto.graph->node[0].attribute) EXPECT_EQ(a.s, "PER_TOKEN");
  proto.graph->node.clear();
  proto.graph->input[1].type.elem_type = 1;
  EXPECT_NE(error_of([&] { rewrite_for_int8_kv_cache(proto, d); }).find("float32"), std::string::npos);
}

// Reference for the processors: transformers' definitions, written out plainly.
TEST(GenaiSearch, RepetitionPenaltyAndNgrams) {
  std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.5f};
  const std::vector<int32_t> seen = {0, 1, 1};
  apply_repetition_penalty(logits, seen, 2.0);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -4.0f, 1.0f, 0.5f}));
  std::vector<float> ngram(4, 0.0f);
  apply_no_repeat_ngram(ngram, std::vector<int32_t>{1, 2, 3, 1, 2}, 3);  // "1 2" was followed by 3
  EXPECT_TRUE(std::isinf(ngram[3]) && ngram[3] < 0);
  EXPECT_EQ(ngram[0], 0.0f);
}

TEST(GenaiSearch, GreedyTopKTopP) {
  const std::vector<float> logits = {0.1f, 3.0f, 2.9f, -1.0f, 0.0f};
  EXPECT_EQ(choose_greedy(logits), 1);
  std::mt19937 rng(1);
  std::vector<int> counts(5, 0);
  for (int i = 0; i < 2000; ++i) ++counts[static_cast<size_t>(choose_sampled(logits, 2, 1.0, 1.0, rng))];
  EXPECT_EQ(counts[0] + counts[3] + counts[4], 0);  // top_k 2 keeps tokens 1 and 2
  EXPECT_GT(counts[1], 800);
  EXPECT_GT(counts[2], 800);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(choose_sampled(logits, 0, 0.3, 1.0, rng), 1);  // top_p keeps only the first
  for (int i = 0; i < 200; ++i) EXPECT_EQ(choose_sampled(logits, 1, 1.0, 5.0, rng), 1);  // top_k 1 is greedy
  std::mt19937 a(42), b(42);
  for (int i = 0; i < 50; ++i)
    EXPECT_EQ(choose_sampled(logits, 0, 0.9, 0.7, a), choose_sampled(logits, 0, 0.9, 0.7, b));
}

TEST(GenaiSearch, BeamSearchKeepsBestHypotheses) {
  // vocab 3, eos 2; two beams. Step 1 from one prompt: token 0 (p .6) and 1 (p .3).
  BeamSearch beams(1, 2, 1.0, true, 2, {2}, 0);
  std::vector<std::vector<int32_t>> sequences = {{7}, {7}};
  auto row = [](double a, double b, double c) {
    return std::vector<float>{static_cast<float>(std::log(a)), static_cast<float>(std::log(b)),
                              static_cast<float>(std::log(c))};
  };
  std::vector<float> scores;
  for (const auto& r : {row(0.6, 0.3, 0.1), row(0.6, 0.3, 0.1)}) scores.insert(scores.end(), r.begin(), r.end());
  BeamSearch::Step step = beams.step(scores, 3, sequences, 10);
  EXPECT_EQ(step.next_tokens, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(step.source_rows, (std::vector<int32_t>{0, 0}));
  for (size_t r = 0; r < 2; ++r) sequences[r].push_back(step.next_tokens[r]);
  // Step 2: beam 0 ends (eos p .9), beam 1 continues with 0.
  scores.clear();
  for (const auto& r : {row(0.05, 0.05, 0.9), row(0.9, 0.05, 0.05)}) scores.insert(scores.end(), r.begin(), r.end());
  step = beams.step(scores, 3, sequences, 10);
  // "7 0 eos" (.54) becomes a hypothesis; the best running beam is "7 1 0" (.27), from row 1.
  EXPECT_EQ(step.source_rows[0], 1);
  EXPECT_EQ(step.next_tokens[0], 0);
  EXPECT_FALSE(beams.done());
  for (size_t r = 0; r < 2; ++r) {
    sequences[r] = sequences[static_cast<size_t>(step.source_rows[r])];
    sequences[r].push_back(step.next_tokens[r]);
  }
  const auto finals = beams.finalize(sequences);
  ASSERT_EQ(finals.size(), 2u);
  // The finished "7 0" (log .6*.9 over 2 tokens) beats every running beam.
  EXPECT_EQ(finals[0], (std::vector<int32_t>{7, 0}));
}

}  // namespace
}  // namespace onyx::genai
