// Unit tests for the ai.onnx.ml kernels, the com.microsoft contrib kernels and
// the sequence/optional kernels, against reference loops of the documented formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace onyx::testing {
namespace {

const char* kMl = "ai.onnx.ml";
const char* kMs = "com.microsoft";

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

graph::Attribute attr_strings(const std::string& name, std::vector<std::string> v) {
  graph::Attribute a;
  a.name = name;
  a.type = graph::AttributeType::kStrings;
  a.strings = std::move(v);
  return a;
}

TEST(MlKernels, ZipMapStringAndIntLabels) {
  auto x = random_floats(6, 1);
  auto run = run_kernel("ZipMap", 1, {Tensor::from_vector(x, {2, 3})}, {attr_strings("classlabels_strings", {"a", "b", "c"})}, 1, kMl);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  ASSERT_TRUE(run.outputs[0].is_sequence());
  const auto& maps = run.outputs[0].items();
  ASSERT_EQ(maps.size(), 2u);
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_TRUE(maps[r].is_map());
    const Map& m = maps[r].map_data();
    ASSERT_EQ(m.keys.size(), 3);
    EXPECT_EQ(m.keys.data<std::string>()[1], "b");
    for (int c = 0; c < 3; ++c) EXPECT_EQ(m.values.data<float>()[c], x[r * 3 + static_cast<size_t>(c)]);
  }
  run = run_kernel("ZipMap", 1, {Tensor::from_vector(x, {3, 2})}, {attr_ints("classlabels_int64s", {7, 9})}, 1, kMl);
  ASSERT_TRUE(run.status.is_ok());
  ASSERT_EQ(run.outputs[0].items().size(), 3u);
  EXPECT_EQ(run.outputs[0].items()[2].map_data().keys.data<int64_t>()[1], 9);
  EXPECT_EQ(run.outputs[0].items()[2].map_data().values.data<float>()[1], x[5]);
  run = run_kernel("ZipMap", 1, {Tensor::from_vector(x, {3, 2})}, {attr_ints("classlabels_int64s", {7, 9, 11})}, 1, kMl);
  EXPECT_FALSE(run.status.is_ok());
}

TEST(MlKernels, LinearClassifierSoftmaxMatchesFormula) {
  const int64_t n = 4, f = 3, c = 3;
  auto x = random_floats(static_cast<size_t>(n * f), 2);
  auto w = random_floats(static_cast<size_t>(c * f), 3);
  std::vector<float> b{0.1f, -0.2f, 0.3f};
  auto run = run_kernel("LinearClassifier", 1, {Tensor::from_vector(x, {n, f})},
                        {attr_floats("coefficients", w), attr_floats("intercepts", b), attr_ints("classlabels_ints", {4, 5, 6}),
                         attr_string("post_transform", "SOFTMAX")},
                        2, kMl);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (int64_t r = 0; r < n; ++r) {
    std::vector<double> s(3);
    int best = 0;
    double total = 0;
    for (int k = 0; k < 3; ++k) {
      s[k] = b[k];
      for (int64_t j = 0; j < f; ++j) s[k] += x[r * f + j] * w[k * f + j];
      if (s[k] > s[best]) best = k;
    }
    for (double v : s) total += std::exp(v);
    EXPECT_EQ(run.outputs[0].tensor().data<int64_t>()[r], 4 + best);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(run.outputs[1].tensor().data<float>()[r * 3 + k], std::exp(s[k]) / total, 1e-5);
  }
}

TEST(MlKernels, ScalerNormalizerBinarizer) {
  auto x = random_floats(6, 4);
  auto run = run_kernel("Scaler", 1, {Tensor::from_vector(x, {2, 3})},
                        {attr_floats("offset", {1, 2, 3}), attr_floats("scale", {0.5f, 2, 4})}, 1, kMl);
  ASSERT_TRUE(run.status.is_ok());
  const float off[3] = {1, 2, 3}, sc[3] = {0.5f, 2, 4};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(run.outputs[0].tensor().data<float>()[i], (x[i] - off[i % 3]) * sc[i % 3]);
  run = run_kernel("Normalizer", 1, {Tensor::from_vector(x, {2, 3})}, {attr_string("norm", "L2")}, 1, kMl);
  ASSERT_TRUE(run.status.is_ok());
  for (int r = 0; r < 2; ++r) {
    double norm = 0;
    for (int c = 0; c < 3; ++c) norm += x[r * 3 + c] * x[r * 3 + c];
    for (int c = 0; c < 3; ++c) EXPECT_NEAR(run.outputs[0].tensor().data<float>()[r * 3 + c], x[r * 3 + c] / std::sqrt(norm), 1e-6);
  }
  run = run_kernel("Binarizer", 1, {Tensor::from_vector(x, {6})}, {attr_float("threshold", 0.5f)}, 1, kMl);
  ASSERT_TRUE(run.status.is_ok());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(run.outputs[0].tensor().data<float>()[i], x[i] > 0.5f ? 1.0f : 0.0f);
}

TEST(MlKernels, LabelEncoderAndCategoryMapper) {
  auto x = Tensor::from_vector<std::string>({"b", "zz", "a"}, {3});
  auto run = run_kernel("LabelEncoder", 2, {x},
                        {attr_strings("keys_strings", {"a", "b"}), attr_ints("values_int64s", {10, 20}), attr_int("default_int64", -5)}, 1, kMl);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const std::vector<int64_t> expect{20, -5, 10};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(run.outputs[0].tensor().data<int64_t>()[i], expect[i]);
  run = run_kernel("LabelEncoder", 1, {x}, {attr_strings("classes_strings", {"a", "b"})}, 1, kMl);
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().data<int64_t>()[0], 1);
  EXPECT_EQ(run.outputs[0].tensor().data<int64_t>()[1], -1);
  run = run_kernel("CategoryMapper", 1, {Tensor::from_vector<int64_t>({2, 9}, {2})},
                   {attr_strings("cats_strings", {"x", "y"}), attr_ints("cats_int64s", {1, 2})}, 1, kMl);
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().data<std::string>()[0], "y");
  EXPECT_EQ(run.outputs[0].tensor().data<std::string>()[1], "_Unused");
  // Wrong input type names the node.
  run = run_kernel("LabelEncoder", 2, {Tensor::from_vector<float>({1}, {1})},
                   {attr_strings("keys_strings", {"a"}), attr_ints("values_int64s", {1})}, 1, kMl);
  ASSERT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("test node"), std::string::npos);
}

TEST(MlKernels, ArrayFeatureExtractorBadIndex) {
  auto run = run_kernel("ArrayFeatureExtractor", 1, {Tensor::from_vector<float>({1, 2, 3}, {1, 3}), Tensor::from_vector<int64_t>({3}, {1})},
                        {}, 1, kMl);
  EXPECT_FALSE(run.status.is_ok());
}

TEST(ContribKernels, GeluFamilyMatchesFormulas) {
  auto x = random_floats(12, 5);
  auto bias = random_floats(4, 6);
  auto t = Tensor::from_vector(x, {3, 4});
  auto gelu = [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); };
  auto run = run_kernel("Gelu", 1, {t}, {}, 1, kMs);
  ASSERT_TRUE(run.status.is_ok());
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(run.outputs[0].tensor().data<float>()[i], gelu(x[i]), 1e-5);
  run = run_kernel("BiasGelu", 1, {t, Tensor::from_vector(bias, {4})}, {}, 1, kMs);
  ASSERT_TRUE(run.status.is_ok());
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(run.outputs[0].tensor().data<float>()[i], gelu(x[i] + bias[i % 4]), 1e-5);
  run = run_kernel("FastGelu", 1, {t}, {}, 1, kMs);
  ASSERT_TRUE(run.status.is_ok());
  for (int i = 0; i < 12; ++i) {
    const double v = x[i];
    EXPECT_NEAR(run.outputs[0].tensor().data<float>()[i], 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))), 1e-5);
  }
  run = run_kernel("QuickGelu", 1, {t}, {attr_float("alpha", 1.702f)}, 1, kMs);
  ASSERT_TRUE(run.status.is_ok());
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(run.outputs[0].tensor().data<float>()[i], x[i] / (1 + std::exp(-1.702 * x[i])), 1e-5);
}

TEST(ContribKernels, SkipLayerNormalizationMatchesFormula) {
  const int rows = 3, cols = 8;
  auto x = random_floats(rows * cols, 7), skip = random_floats(rows * cols, 8);
  auto gamma = random_floats(cols, 9), beta = random_floats(cols, 10);
  auto run = run_kernel("SkipLayerNormalization", 1,
                        {Tensor::from_vector(x, {1, rows, cols}), Tensor::from_vector(skip, {1, rows, cols}),
                         Tensor::from_vector(gamma, {cols}), Tensor::from_vector(beta, {cols})},
                        {attr_float("epsilon", 1e-5f)}, 1, kMs);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (int r = 0; r < rows; ++r) {
    double mean = 0, var = 0;
    for (int c = 0; c < cols; ++c) mean += x[r * cols + c] + skip[r * cols + c];
    mean /= cols;
    for (int c = 0; c < cols; ++c) var += std::pow(x[r * cols + c] + skip[r * cols + c] - mean, 2);
    var /= cols;
    for (int c = 0; c < cols; ++c) {
      const double ref = (x[r * cols + c] + skip[r * cols + c] - mean) / std::sqrt(var + 1e-5) * gamma[c] + beta[c];
      EXPECT_NEAR(run.outputs[0].tensor().data<float>()[r * cols + c], ref, 1e-4);
    }
  }
}

TEST(ContribKernels, FusedMatMulBroadcastTranspose) {
  auto a = random_floats(2 * 3 * 4, 11), b = random_floats(5 * 4, 12);
  // A [2,4,3] read transposed -> [2,3,4]; B [5,4] read transposed -> [4,5].
  auto run = run_kernel("FusedMatMul", 1, {Tensor::from_vector(a, {2, 4, 3}), Tensor::from_vector(b, {5, 4})},
                        {attr_float("alpha", 0.5f), attr_int("transA", 1), attr_int("transB", 1)}, 1, kMs);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  ASSERT_EQ(run.outputs[0].tensor().shape(), (Shape{2, 3, 5}));
  for (int bt = 0; bt < 2; ++bt)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 5; ++j) {
        double ref = 0;
        for (int k = 0; k < 4; ++k) ref += a[bt * 12 + k * 3 + i] * b[j * 4 + k];
        EXPECT_NEAR(run.outputs[0].tensor().data<float>()[(bt * 3 + i) * 5 + j], 0.5 * ref, 1e-5);
      }
}

TEST(ContribKernels, AttentionSingleHeadMatchesFormula) {
  const int64_t s = 3, h = 4;
  auto x = random_floats(static_cast<size_t>(s * h), 13), w = random_floats(static_cast<size_t>(h * 3 * h), 14);
  auto run = run_kernel("Attention", 1, {Tensor::from_vector(x, {1, s, h}), Tensor::from_vector(w, {h, 3 * h})},
                        {attr_int("num_heads", 1), attr_int("unidirectional", 1)}, 1, kMs);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  std::vector<double> qkv(static_cast<size_t>(s * 3 * h), 0);
  for (int64_t i = 0; i < s; ++i)
    for (int64_t c = 0; c < 3 * h; ++c)
      for (int64_t p = 0; p < h; ++p) qkv[i * 3 * h + c] += x[i * h + p] * w[p * 3 * h + c];
  for (int64_t i = 0; i < s; ++i) {
    std::vector<double> p(static_cast<size_t>(i + 1));
    double total = 0;
    for (int64_t j = 0; j <= i; ++j) {
      double d = 0;
      for (int64_t k = 0; k < h; ++k) d += qkv[i * 3 * h + k] * qkv[j * 3 * h + h + k];
      p[j] = std::exp(d / 2.0);  // 1 / sqrt(head_size 4)
      total += p[j];
    }
    for (int64_t k = 0; k < h; ++k) {
      double ref = 0;
      for (int64_t j = 0; j <= i; ++j) ref += p[j] / total * qkv[j * 3 * h + 2 * h + k];
      EXPECT_NEAR(run.outputs[0].tensor().data<float>()[i * h + k], ref, 1e-4);
    }
  }
}

TEST(SequenceKernels, ConstructInsertAtEraseConcat) {
  auto a = Tensor::from_vector<float>({1, 2}, {1, 2}), b = Tensor::from_vector<float>({3, 4}, {1, 2});
  auto run = run_kernel("SequenceConstruct", 11, {a, b});
  ASSERT_TRUE(run.status.is_ok());
  Value seq = run.outputs[0];
  run = run_kernel("SequenceInsert", 11, {seq, Tensor::from_vector<float>({5, 6}, {1, 2}), Tensor::scalar<int64_t>(0)});
  ASSERT_TRUE(run.status.is_ok());
  seq = run.outputs[0];
  ASSERT_EQ(seq.items().size(), 3u);
  run = run_kernel("SequenceAt", 11, {seq, Tensor::scalar<int64_t>(-1)});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().data<float>()[0], 3.0f);
  run = run_kernel("SequenceAt", 11, {seq, Tensor::scalar<int64_t>(3)});
  EXPECT_FALSE(run.status.is_ok());
  run = run_kernel("ConcatFromSequence", 11, {seq}, {attr_int("axis", 0)});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{3, 2}));
  EXPECT_EQ(run.outputs[0].tensor().data<float>()[0], 5.0f);
  run = run_kernel("ConcatFromSequence", 11, {seq}, {attr_int("axis", -1), attr_int("new_axis", 1)});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().shape(), (Shape{1, 2, 3}));
  run = run_kernel("SequenceErase", 11, {seq});
  ASSERT_TRUE(run.status.is_ok());
  run = run_kernel("SequenceLength", 11, {run.outputs[0]});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_EQ(run.outputs[0].tensor().data<int64_t>()[0], 2);
  run = run_kernel("SplitToSequence", 11, {Tensor::from_vector<float>({1, 2, 3, 4, 5}, {5}), Tensor::scalar<int64_t>(2)});
  ASSERT_TRUE(run.status.is_ok());
  ASSERT_EQ(run.outputs[0].items().size(), 3u);
  EXPECT_EQ(run.outputs[0].items()[2].tensor().shape(), (Shape{1}));
}

TEST(OptionalKernels, HasAndGetElement) {
  auto t = Tensor::from_vector<float>({1}, {1});
  auto run = run_kernel("Optional", 15, {t});
  ASSERT_TRUE(run.status.is_ok());
  Value opt = run.outputs[0];
  EXPECT_TRUE(opt.is_optional());
  run = run_kernel("OptionalHasElement", 18, {opt});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_TRUE(run.outputs[0].tensor().data<bool>()[0]);
  run = run_kernel("OptionalGetElement", 18, {opt});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_FALSE(run.outputs[0].is_optional());
  run = run_kernel("OptionalHasElement", 18, {Value::none(ValueType::tensor(DataType::kFloat))});
  ASSERT_TRUE(run.status.is_ok());
  EXPECT_FALSE(run.outputs[0].tensor().data<bool>()[0]);
  run = run_kernel("OptionalGetElement", 18, {Value::none(ValueType::tensor(DataType::kFloat))});
  EXPECT_FALSE(run.status.is_ok());
}

}  // namespace
}  // namespace onyx::testing
