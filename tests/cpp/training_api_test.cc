// The C++ training API (include/onyx/training.h): its JSON reader and
// writer, the checkpoint file, and Module / Optimizer / LinearLRScheduler on
// a small model built here. tests/python/test_training_cxx.py checks the
// same classes against Python's on artifacts from generate_artifacts.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>

#include "model_builder.h"
#include "onyx/session.h"
#include "onyx/training.h"
#include "common/json.h"

namespace onyx {
namespace {

using training::CheckpointState;
using onyx::Json;
using onyx::parse_json;
using onyx::to_json;

std::string temp_path(const std::string& name) {
  return (std::filesystem::path(::testing::TempDir()) / ("onyx_training_api_" + name)).string();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string write_text(const std::string& name, const std::string& bytes) {
  const std::string path = temp_path(name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(TrainingApiJson, RoundTripsInPythonsFormat) {
  // What Python's json.dumps writes for the same document.
  const std::string text =
      "{\"a\": [1, -2, 0.5, 1e-05, 1e+16, 100.0, true, false, null], "
      "\"b\": {\"s\": \"q\\\"\\\\\\n\\t\\u00e9\\ud83d\\ude00\\u007f\"}, \"c\": []}";
  Result<Json> parsed = parse_json(text);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  const Json& doc = parsed.value();
  EXPECT_EQ(doc.at("a").as_array()[1].as_int(), -2);
  EXPECT_EQ(doc.at("a").as_array()[3].as_double(), 1e-05);
  EXPECT_EQ(doc.at("b").at("s").as_string(), "q\"\\\n\t\xc3\xa9\xf0\x9f\x98\x80\x7f");
  Result<std::string> written = to_json(doc);
  ASSERT_TRUE(written.is_ok()) << written.status().message();
  EXPECT_EQ(written.value(), text);
  // Keys keep their order; set replaces in place.
  Json object = Json::object();
  object.set("z", 1);
  object.set("a", "x");
  object.set("z", 2.0);
  EXPECT_EQ(to_json(object).value(), "{\"z\": 2.0, \"a\": \"x\"}");
}

TEST(TrainingApiJson, WritesFloatsAsPythonsRepr) {
  const std::vector<std::pair<double, std::string>> cases = {
      {0.001, "0.001"}, {1e-4, "0.0001"},      {1e-5, "1e-05"},
      {0.1, "0.1"},     {100.0, "100.0"},      {1e15, "1000000000000000.0"},
      {1e16, "1e+16"},  {-1.5e-7, "-1.5e-07"}, {123456789012345678.0, "1.2345678901234568e+17"},
      {-0.0, "-0.0"},   {2.5, "2.5"},          {1.0 / 3, "0.3333333333333333"},
  };
  for (const auto& [value, expected] : cases) EXPECT_EQ(to_json(Json(value)).value(), expected);
  EXPECT_FALSE(to_json(Json(std::nan(""))).is_ok());
}

TEST(TrainingApiJson, MalformedInputNamesThePosition) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"a\": 1,}", "expected a string key at line 1, column 9 (byte 8)"},
      {"[1 2]", "expected ',' or ']' at line 1, column 4 (byte 3)"},
      {"{\"a\" 1}", "expected ':' after an object key at line 1, column 6"},
      {"\"abc", "unterminated string at line 1, column 5"},
      {"[01]", "leading zero"},
      {"NaN", "unexpected character 'N'"},
      {"{}\n x", "unexpected text after the document at line 2, column 2"},
      {"\"a\tb\"", "control character"},
      {"\"\\x\"", "unknown escape '\\x' at line 1, column 2"},
      {"\"\\ud800\"", "high surrogate"},
      {"{\"a\": 1, \"a\": 2}", "the key 'a' appears twice"},
      {"99999999999999999999", "outside the int64 range"},
      {"", "unexpected end of the text"},
      {std::string(300, '['), "nesting deeper"},
  };
  for (const auto& [text, message] : cases) {
    Result<Json> parsed = parse_json(text);
    ASSERT_FALSE(parsed.is_ok()) << text;
    EXPECT_NE(parsed.status().message().find(message), std::string::npos) << parsed.status().message();
  }
  EXPECT_NE(error_of([] { Json(1).as_string(); }).find("expected a string, found an integer"), std::string::npos);
}

CheckpointState sample_state() {
  CheckpointState state;
  state.add_parameter("w", Tensor::from_vector<float>({1.5f, -2.0f, 0.25f, 4.0f, 5.0f, 6.0f}, {2, 3}));
  state.add_parameter("steps", Tensor::from_vector<int64_t>({7}, {1}), false);
  state.add_parameter("b", Tensor::from_vector<double>({0.125}, {}));
  training::OptimizerState opt;
  opt.step = 3;
  opt.learning_rate = 0.001;
  opt.moment("w", "exp_avg") = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  opt.moment("w", "exp_avg_sq") = Tensor::from_vector<float>({6, 5, 4, 3, 2, 1}, {2, 3});
  state.set_optimizer_state(opt);
  state.set_property("epoch", int64_t{4});
  state.set_property("best", 0.5);
  state.set_property("note", std::string("caf\xc3\xa9 \"ok\""));
  return state;
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

template <typename T>
std::vector<T> values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.size());
}

TEST(TrainingApiCheckpoint, RoundTrips) {
  const std::string path = temp_path("roundtrip.ckpt");
  CheckpointState::save_checkpoint(sample_state(), path, true);
  CheckpointState loaded = CheckpointState::load_checkpoint(path);
  ASSERT_EQ(loaded.parameters().size(), 3u);
  EXPECT_EQ(loaded.parameters()[0].name, "w");
  EXPECT_EQ(loaded.parameter("w").data.shape(), (Shape{2, 3}));
  EXPECT_EQ(values<float>(loaded.parameter("w").data), (std::vector<float>{1.5f, -2.0f, 0.25f, 4.0f, 5.0f, 6.0f}));
  EXPECT_FALSE(loaded.parameter("steps").requires_grad);
  EXPECT_EQ(values<int64_t>(loaded.parameter("steps").data), std::vector<int64_t>{7});
  EXPECT_EQ(loaded.parameter("b").data.dtype(), DataType::kDouble);
  EXPECT_EQ(loaded.parameter("b").data.rank(), 0);
  EXPECT_EQ(loaded.optimizer_state().step, 3);
  EXPECT_EQ(loaded.optimizer_state().learning_rate, 0.001);
  EXPECT_EQ(values<float>(*loaded.optimizer_state().find("w", "exp_avg_sq")), (std::vector<float>{6, 5, 4, 3, 2, 1}));
  EXPECT_EQ(std::get<int64_t>(loaded.property("epoch")), 4);
  EXPECT_EQ(std::get<double>(loaded.property("best")), 0.5);
  EXPECT_EQ(std::get<std::string>(loaded.property("note")), "caf\xc3\xa9 \"ok\"");
  // Saved again, the same bytes: nothing is lost or reordered.
  const std::string again = temp_path("roundtrip2.ckpt");
  CheckpointState::save_checkpoint(loaded, again, true);
  EXPECT_EQ(file_bytes(again), file_bytes(path));
  // Without the optimizer state.
  CheckpointState::save_checkpoint(loaded, again, false);
  EXPECT_FALSE(CheckpointState::load_checkpoint(again).has_optimizer_state());
  // The data section starts 64-byte aligned.
  const std::string bytes = file_bytes(path);
  EXPECT_EQ(bytes.substr(0, 8), "ONYXCKPT");
  EXPECT_EQ(bytes.size() % 8, 0u);
}

TEST(TrainingApiCheckpoint, BadFilesGiveClearErrors) {
  const std::string good = temp_path("good.ckpt");
  CheckpointState::save_checkpoint(sample_state(), good, true);
  const std::string bytes = file_bytes(good);

  const std::string missing = temp_path("missing.ckpt");
  EXPECT_EQ(error_of([&] { CheckpointState::load_checkpoint(missing); }), "no checkpoint file at '" + missing + "'");
  const std::string magic = write_text("magic.ckpt", "NOTACKPT" + bytes.substr(8));
  EXPECT_EQ(error_of([&] { CheckpointState::load_checkpoint(magic); }),
            "'" + magic + "' is not an onyx checkpoint (no ONYXCKPT magic)");
  std::string v2 = bytes;
  v2[8] = 2;
  const std::string version = write_text("version.ckpt", v2);
  EXPECT_EQ(error_of([&] { CheckpointState::load_checkpoint(version); }),
            "'" + version + "' is an onyx checkpoint of format version 2; this onyx reads version 1");
  const std::string short_header = write_text("header.ckpt", bytes.substr(0, 40));
  EXPECT_EQ(error_of([&] { CheckpointState::load_checkpoint(short_header); }),
            "'" + short_header + "' is truncated (its header runs past the end of the file)");
  const std::string short_data = write_text("data.ckpt", bytes.substr(0, bytes.size() - 4));
  EXPECT_EQ(error_of([&] { CheckpointState::load_checkpoint(short_data); }),
            "'" + short_data + "' is truncated (a tensor runs past the end of the file)");
  const std::string tiny = write_text("tiny.ckpt", "ONYX");
  EXPECT_NE(error_of([&] { CheckpointState::load_checkpoint(tiny); }).find("no ONYXCKPT magic"), std::string::npos);
  // A header that is JSON but not a checkpoint's.
  std::string bad_json = bytes;
  const size_t at = bad_json.find("\"requires_grad\"");
  bad_json.replace(at, 15, "\"requires_grat\"");
  const std::string field = write_text("field.ckpt", bad_json);
  EXPECT_EQ(error_of([&] { CheckpointState::load_checkpoint(field); }),
            "'" + field + "' has a malformed header: the key 'requires_grad' is missing");
  std::string broken = bytes;
  broken[24] = '[';
  const std::string syntax = write_text("syntax.ckpt", broken);
  EXPECT_NE(error_of([&] { CheckpointState::load_checkpoint(syntax); }).find("malformed header: JSON: "),
            std::string::npos);
}

TEST(TrainingApiCheckpoint, StateChecksNamesAndShapes) {
  CheckpointState state = sample_state();
  EXPECT_EQ(error_of([&] { state.parameter("nope"); }), "the checkpoint has no parameter 'nope'");
  EXPECT_EQ(error_of([&] { state.property("nope"); }), "the checkpoint has no property 'nope'");
  EXPECT_NE(error_of([&] { state.set_parameter("w", Tensor::from_vector<float>({1}, {1})); }).find("float[2,3]"),
            std::string::npos);
  state.set_parameter("b", Tensor::scalar<double>(2.0));
  EXPECT_EQ(state.parameter("b").data.data<double>()[0], 2.0);
  EXPECT_FALSE(state.gradient("w").defined());
  state.erase_property("best");
  EXPECT_FALSE(state.has_property("best"));
}

// y = x @ w; loss = mean((y - t)^2), with the Gradient node onyx expands.
model::ModelProto linear_model(bool training, bool with_metadata = true) {
  testing::ModelBuilder b(17);
  b.input("x", {-1, 2}).input("t", {-1}).input("w", {2});
  b.node("MatMul", {"x", "w"}, {"y"}).node("Sub", {"y", "t"}, {"d"}).node("Mul", {"d", "d"}, {"sq"});
  b.node("ReduceMean", {"sq"}, {"loss"});
  b.proto().graph->node.back().attribute.push_back(testing::int_attr("keepdims", 0));
  b.output("loss").output("y", {-1}, 1, true);
  std::string gradients = "{}";
  if (training) {
    b.node("Gradient", {"w"}, {"w_grad"}, "Gradient", "ai.onnx.preview.training").output("w_grad", {2});
    model::AttributeProto xs;
    xs.name = "xs";
    xs.type = model::AttributeProto::STRINGS;
    xs.strings = {"w"};
    b.proto().graph->node.back().attribute = {xs, testing::string_attr("y", "loss")};
    b.proto().opset_import.push_back({"ai.onnx.preview.training", 1});
    gradients = "{\"w\": \"w_grad\"}";
  }
  b.proto().graph->name = training ? "linear_training" : "linear_eval";
  if (with_metadata) {
    b.proto().metadata_props.push_back(
        {"onyx.training",
         "{\"kind\": \"training\", \"loss\": \"loss\", \"target\": \"t\", \"user_outputs\": "
         "[\"loss\", \"y\"], \"parameters\": [\"w\"], \"state\": [], \"gradients\": " +
             gradients + ", \"state_updates\": {}}"});
  }
  return b.proto();
}

// SGD: w - learning_rate * w_grad.
model::ModelProto sgd_model() {
  testing::ModelBuilder b(17);
  b.input("learning_rate", {}).input("step", {}, 7).input("w", {2}).input("w_grad", {2});
  b.node("Mul", {"learning_rate", "w_grad"}, {"w.delta"}).node("Sub", {"w", "w.delta"}, {"w.updated"});
  b.output("w.updated", {2});
  b.proto().metadata_props.push_back({"onyx.training",
                                      "{\"kind\": \"optimizer\", \"parameters\": [\"w\"], \"states\": [], "
                                      "\"default_learning_rate\": 0.001}"});
  return b.proto();
}

std::string save_model(const std::string& name, const model::ModelProto& proto) {
  return write_text(name, model::serialize_model(proto));
}

class TrainingApiModule : public ::testing::Test {
 protected:
  void SetUp() override {
    train_ = save_model("train.onnx", linear_model(true));
    eval_ = save_model("eval.onnx", linear_model(false));
    optimizer_ = save_model("sgd.onnx", sgd_model());
    state_.add_parameter("w", Tensor::from_vector<float>({0.5f, -0.25f}, {2}));
  }
  std::vector<Value> batch() const {
    return {Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2}), Tensor::from_vector<float>({1, 0, 2}, {3})};
  }
  std::string train_, eval_, optimizer_;
  CheckpointState state_;
};

TEST_F(TrainingApiModule, AccumulatesGradientsAndSteps) {
  training::Module module(train_, state_, eval_);
  EXPECT_EQ(module.input_names(), (std::vector<std::string>{"x", "t"}));
  EXPECT_EQ(module.output_names(), (std::vector<std::string>{"loss", "y"}));
  EXPECT_EQ(module.parameters_size(), 2);
  std::vector<Value> out = module(batch());
  ASSERT_EQ(out.size(), 2u);
  // y = [0, 0.5, 1], d = [-1, 0.5, -1]: loss 0.75, gradient 2/3 x^T d = [-3, -4].
  EXPECT_FLOAT_EQ(out[0].tensor().data<float>()[0], 0.75f);
  std::vector<float> grad = values<float>(state_.gradient("w"));
  EXPECT_NEAR(grad[0], -3.0f, 1e-6);
  EXPECT_NEAR(grad[1], -4.0f, 1e-6);
  module(batch());  // accumulates
  EXPECT_NEAR(values<float>(state_.gradient("w"))[1], -8.0f, 1e-5);
  module.lazy_reset_grad();
  EXPECT_FALSE(state_.gradient("w").defined());
  module(batch());
  EXPECT_NEAR(values<float>(state_.gradient("w"))[1], -4.0f, 1e-6);

  training::Optimizer optimizer(optimizer_, module);
  EXPECT_EQ(optimizer.learning_rate(), 0.001);
  training::LinearLRScheduler scheduler(optimizer, 2, 4, 0.1);
  EXPECT_EQ(optimizer.learning_rate(), 0.0);
  scheduler.step();
  EXPECT_EQ(optimizer.learning_rate(), 0.05);
  optimizer.step();
  EXPECT_EQ(optimizer.step_count(), 1);
  EXPECT_NEAR(values<float>(state_.parameter("w").data)[0], 0.65f, 1e-6);
  EXPECT_NEAR(values<float>(state_.parameter("w").data)[1], -0.05f, 1e-6);
  for (double expected : {0.1, 0.05, 0.0, 0.0}) {
    scheduler.step();
    EXPECT_DOUBLE_EQ(optimizer.learning_rate(), expected);
  }
  module.lazy_reset_grad();
  EXPECT_NE(error_of([&] { optimizer.step(); }).find("no gradient for 'w'"), std::string::npos);
}

TEST_F(TrainingApiModule, ExportsTheForwardModel) {
  training::Module module(train_, state_, eval_);
  module.eval();
  std::vector<Value> out = module(batch());
  const std::string exported = temp_path("exported.onnx");
  module.export_model_for_inferencing(exported, {"y"});
  auto session = InferenceSession::from_file(exported);
  ASSERT_EQ(session->inputs().size(), 1u);
  EXPECT_EQ(session->inputs()[0].name, "x");
  EXPECT_EQ(session->metadata().graph_name, "linear");
  EXPECT_EQ(session->metadata().custom_metadata_map.count("onyx.training"), 0u);
  std::vector<Value> y = session->run({}, {{"x", batch()[0]}});
  EXPECT_EQ(values<float>(y[0].tensor()), values<float>(out[1].tensor()));
  EXPECT_NE(error_of([&] { module.export_model_for_inferencing(exported, {"loss"}); }).find("is the loss"),
            std::string::npos);
  EXPECT_NE(error_of([&] { module.export_model_for_inferencing(exported, {"d"}); }).find("the loss target 't'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { module.export_model_for_inferencing(exported, {"zz"}); }).find("'zz' is not a value"),
            std::string::npos);
}

TEST_F(TrainingApiModule, ErrorsNameTheFileAndTheProblem) {
  const std::string missing = temp_path("missing.onnx");
  EXPECT_EQ(error_of([&] { training::Module(missing, state_); }),
            "Module train model: no model file at '" + missing + "'");
  const std::string plain = save_model("plain.onnx", linear_model(false, false));
  EXPECT_EQ(error_of([&] { training::Module(plain, state_); }),
            "'" + plain +
                "' is not a training model written by onyx.training.artifacts.generate_artifacts (no "
                "'onyx.training' metadata)");
  training::Module module(train_, state_);
  EXPECT_EQ(error_of([&] { module({batch()[0]}); }), "Module takes 2 inputs (x, t) for '" + train_ + "', got 1");
  EXPECT_NE(error_of([&] { module.eval(); }).find("no eval model"), std::string::npos);
  CheckpointState empty;
  EXPECT_NE(error_of([&] { training::Module(train_, empty); }).find("the checkpoint has no parameter 'w'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { training::Optimizer(plain, module); }).find("is not a optimizer model"), std::string::npos);
}

}  // namespace
}  // namespace onyx
