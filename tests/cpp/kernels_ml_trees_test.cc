// Unit tests for the ai.onnx.ml tree ensembles, SVMs and DictVectorizer:
// each kernel against a plain reference loop written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_util.h"

namespace onyx::testing {
namespace {

const char *kMl = "ai.onnx.ml";

graph::Attribute attr_strings(const std::string &name,
                              std::vector<std::string> v) {
  graph::Attribute a;
  a.name = name;
  a.type = graph::AttributeType::kStrings;
  a.strings = std::move(v);
  return a;
}

graph::Attribute attr_tensor(const std::string &name, Tensor t) {
  graph::Attribute a;
  a.name = name;
  a.type = graph::AttributeType::kTensor;
  a.t = std::move(t);
  return a;
}

float logistic(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// A random forest in the v1/v3 encoding, with a reference walker.
struct RandomForest {
  struct Node {
    int64_t tree = 0, id = 0, feature = 0, true_id = 0, false_id = 0,
            missing = 0;
    std::string mode = "LEAF";
    float value = 0;
  };
  struct Weight {
    int64_t tree, node, target;
    float value;
  };
  std::vector<Node> nodes;
  std::vector<Weight> weights;
  int64_t trees = 0;

  RandomForest(std::mt19937 &rng, int64_t tree_count, int64_t features,
               int64_t targets, bool positive_weights = false) {
    static const char *kModes[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE",
                                   "BRANCH_GT",  "BRANCH_EQ", "BRANCH_NEQ"};
    std::uniform_int_distribution<int> mode(0, 5), coin(0, 1);
    std::uniform_int_distribution<int64_t> feature(0, features - 1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    trees = tree_count;
    for (int64_t t = 0; t < tree_count; ++t) {
      int64_t next = 0;
      // Grows a tree depth-first; ids are assigned in visiting order.
      std::function<int64_t(int)> grow = [&](int depth) -> int64_t {
        const int64_t id = next++;
        const size_t at = nodes.size();
        nodes.push_back({t, id});
        if (depth == 0 || (depth < 3 && coin(rng) == 0 && coin(rng) == 0)) {
          for (int64_t target = 0; target < targets; ++target) {
            const float w = normal(rng);
            weights.push_back(
                {t, id, target, positive_weights ? std::fabs(w) : w});
          }
          return id;
        }
        Node n{t,
               id,
               feature(rng),
               0,
               0,
               coin(rng),
               kModes[mode(rng)],
               coin(rng) ? std::round(normal(rng)) : normal(rng)};
        n.true_id = grow(depth - 1);
        n.false_id = grow(depth - 1);
        nodes[at] = n;
        return id;
      };
      grow(3);
    }
  }

  std::vector<graph::Attribute> attributes(const std::string &prefix) const {
    std::vector<int64_t> tree, id, feature, true_id, false_id, missing, w_tree,
        w_node, w_target;
    std::vector<float> value, w_value;
    std::vector<std::string> mode;
    for (const auto &n : nodes) {
      tree.push_back(n.tree);
      id.push_back(n.id);
      feature.push_back(n.feature);
      true_id.push_back(n.true_id);
      false_id.push_back(n.false_id);
      missing.push_back(n.missing);
      mode.push_back(n.mode);
      value.push_back(n.value);
    }
    for (const auto &w : weights) {
      w_tree.push_back(w.tree);
      w_node.push_back(w.node);
      w_target.push_back(w.target);
      w_value.push_back(w.value);
    }
    return {attr_ints("nodes_treeids", tree),
            attr_ints("nodes_nodeids", id),
            attr_ints("nodes_featureids", feature),
            attr_ints("nodes_truenodeids", true_id),
            attr_ints("nodes_falsenodeids", false_id),
            attr_ints("nodes_missing_value_tracks_true", missing),
            attr_strings("nodes_modes", mode),
            attr_floats("nodes_values", value),
            attr_ints(prefix + "treeids", w_tree),
            attr_ints(prefix + "nodeids", w_node),
            attr_ints(prefix + "ids", w_target),
            attr_floats(prefix + "weights", w_value)};
  }

  const Node &find(int64_t tree, int64_t id) const {
    for (const auto &n : nodes) {
      if (n.tree == tree && n.id == id)
        return n;
    }
    ADD_FAILURE() << "no node " << id;
    return nodes[0];
  }

  // The leaf one row reaches in tree t.
  int64_t leaf(int64_t t, const float *x) const {
    const Node *n = &find(t, 0);
    while (n->mode != "LEAF") {
      const float v = x[n->feature], th = n->value;
      bool yes = n->mode == "BRANCH_LEQ"   ? v <= th
                 : n->mode == "BRANCH_LT"  ? v < th
                 : n->mode == "BRANCH_GTE" ? v >= th
                 : n->mode == "BRANCH_GT"  ? v > th
                 : n->mode == "BRANCH_EQ"  ? v == th
                                           : v != th;
      if (std::isnan(v) && n->missing)
        yes = true;
      n = &find(t, yes ? n->true_id : n->false_id);
    }
    return n->id;
  }

  // Per-target weights of every tree's leaf for one row.
  std::vector<std::vector<float>> leaf_weights(const float *x,
                                               int64_t targets) const {
    std::vector<std::vector<float>> out(static_cast<size_t>(targets));
    for (int64_t t = 0; t < trees; ++t) {
      const int64_t id = leaf(t, x);
      for (const auto &w : weights) {
        if (w.tree == t && w.node == id)
          out[static_cast<size_t>(w.target)].push_back(w.value);
      }
    }
    return out;
  }
};

Tensor random_input(std::mt19937 &rng, int64_t rows, int64_t features) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> pick(0, 9);
  std::vector<float> x(static_cast<size_t>(rows * features));
  for (auto &v : x) {
    const int p = pick(rng);
    v = p == 0 ? NAN : p == 1 ? std::round(normal(rng)) : normal(rng);
  }
  return Tensor::from_vector(x, {rows, features});
}

TEST(MlTrees, RegressorAggregatesMatchReference) {
  std::mt19937 rng(7);
  const int64_t rows = 64, features = 5, targets = 2;
  RandomForest forest(rng, 4, features, targets);
  const Tensor x = random_input(rng, rows, features);
  const std::vector<float> base{0.5f, -1.25f};
  for (const std::string agg : {"SUM", "AVERAGE", "MIN", "MAX"}) {
    auto attrs = forest.attributes("target_");
    attrs.push_back(attr_int("n_targets", targets));
    attrs.push_back(attr_string("aggregate_function", agg));
    attrs.push_back(attr_floats("base_values", base));
    const KernelRun run =
        run_kernel("TreeEnsembleRegressor", 3, {x}, attrs, 1, kMl);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    const Tensor &y = run.outputs[0].tensor();
    ASSERT_EQ(y.shape(), (Shape{rows, targets}));
    for (int64_t r = 0; r < rows; ++r) {
      const auto w =
          forest.leaf_weights(x.data<float>() + r * features, targets);
      for (int64_t t = 0; t < targets; ++t) {
        const auto &ws = w[static_cast<size_t>(t)];
        float expected = 0;
        if (agg == "MIN")
          expected = *std::min_element(ws.begin(), ws.end());
        else if (agg == "MAX")
          expected = *std::max_element(ws.begin(), ws.end());
        else
          for (float v : ws)
            expected += v;
        if (agg == "AVERAGE")
          expected /= static_cast<float>(forest.trees);
        expected += base[static_cast<size_t>(t)];
        EXPECT_NEAR(y.data<float>()[r * targets + t], expected, 1e-5)
            << agg << " row " << r << " target " << t;
      }
    }
  }
}

TEST(MlTrees, RegressorDoubleInputAndTensorAttributes) {
  std::mt19937 rng(11);
  const int64_t rows = 16, features = 3;
  RandomForest forest(rng, 3, features, 1);
  auto attrs = forest.attributes("target_");
  // v3: the thresholds as a double tensor replace nodes_values.
  std::vector<double> values;
  for (const auto &n : forest.nodes)
    values.push_back(n.value);
  attrs.erase(std::remove_if(attrs.begin(), attrs.end(),
                             [](const graph::Attribute &a) {
                               return a.name == "nodes_values";
                             }),
              attrs.end());
  attrs.push_back(attr_tensor(
      "nodes_values_as_tensor",
      Tensor::from_vector(values, {static_cast<int64_t>(values.size())})));
  const Tensor xf = random_input(rng, rows, features);
  std::vector<double> xd(xf.data<float>(), xf.data<float>() + xf.size());
  const KernelRun run =
      run_kernel("TreeEnsembleRegressor", 3,
                 {Tensor::from_vector(xd, {rows, features})}, attrs, 1, kMl);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (int64_t r = 0; r < rows; ++r) {
    float expected = 0;
    const auto leaf_sums =
        forest.leaf_weights(xf.data<float>() + r * features, 1);
    for (float v : leaf_sums[0])
      expected += v;
    EXPECT_NEAR(run.outputs[0].tensor().data<float>()[r], expected, 1e-5);
  }
}

TEST(MlTrees, MulticlassSoftmaxWithStringLabels) {
  std::mt19937 rng(3);
  const int64_t rows = 40, features = 4, classes = 3;
  RandomForest forest(rng, 5, features, classes);
  const Tensor x = random_input(rng, rows, features);
  const std::vector<float> base{0.1f, 0.2f, -0.3f};
  const std::vector<std::string> labels{"cat", "dog", "eel"};
  auto attrs = forest.attributes("class_");
  attrs.push_back(attr_strings("classlabels_strings", labels));
  attrs.push_back(attr_floats("base_values", base));
  attrs.push_back(attr_string("post_transform", "SOFTMAX"));
  const KernelRun run =
      run_kernel("TreeEnsembleClassifier", 3, {x}, attrs, 2, kMl);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (int64_t r = 0; r < rows; ++r) {
    const auto w = forest.leaf_weights(x.data<float>() + r * features, classes);
    std::vector<float> s(static_cast<size_t>(classes));
    for (size_t c = 0; c < s.size(); ++c) {
      s[c] = base[c];
      for (float v : w[c])
        s[c] += v;
    }
    const size_t best =
        static_cast<size_t>(std::max_element(s.begin(), s.end()) - s.begin());
    EXPECT_EQ(run.outputs[0].tensor().data<std::string>()[r], labels[best])
        << "row " << r;
    float total = 0;
    for (float v : s)
      total += std::exp(v - s[best]);
    for (size_t c = 0; c < s.size(); ++c) {
      EXPECT_NEAR(run.outputs[1]
                      .tensor()
                      .data<float>()[r * classes + static_cast<int64_t>(c)],
                  std::exp(s[c] - s[best]) / total, 1e-5);
    }
  }
}

// Gradient boosting's binary encoding: one score column for class id 0,
// a single base value and LOGISTIC; probabilities are [1 - p, p].
TEST(MlTrees, BinaryOneClassWeightLogistic) {
  std::mt19937 rng(5);
  const int64_t rows = 40, features = 4;
  RandomForest forest(rng, 3, features, 1);
  const Tensor x = random_input(rng, rows, features);
  auto attrs = forest.attributes("class_");
  attrs.push_back(attr_ints("classlabels_int64s", {10, 20}));
  attrs.push_back(attr_floats("base_values", {0.25f}));
  attrs.push_back(attr_string("post_transform", "LOGISTIC"));
  const KernelRun run =
      run_kernel("TreeEnsembleClassifier", 1, {x}, attrs, 2, kMl);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (int64_t r = 0; r < rows; ++r) {
    float s = 0.25f;
    const auto leaf_sums =
        forest.leaf_weights(x.data<float>() + r * features, 1);
    for (float v : leaf_sums[0])
      s += v;
    EXPECT_EQ(run.outputs[0].tensor().data<int64_t>()[r], s > 0 ? 20 : 10);
    EXPECT_NEAR(run.outputs[1].tensor().data<float>()[r * 2], logistic(-s),
                1e-5);
    EXPECT_NEAR(run.outputs[1].tensor().data<float>()[r * 2 + 1], logistic(s),
                1e-5);
  }
}

// Random forest's binary encoding: positive weights for class id 0 only,
// read as the probability of class 1; the label flips at 0.5.
TEST(MlTrees, BinaryPositiveWeightsComplement) {
  std::mt19937 rng(9);
  const int64_t rows = 40, features = 4;
  RandomForest forest(rng, 3, features, 1, /*positive_weights=*/true);
  for (auto &w : forest.weights)
    w.value /= 6.0f; // keep sums around 0.5
  const Tensor x = random_input(rng, rows, features);
  auto attrs = forest.attributes("class_");
  attrs.push_back(attr_ints("classlabels_int64s", {0, 1}));
  const KernelRun run =
      run_kernel("TreeEnsembleClassifier", 3, {x}, attrs, 2, kMl);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (int64_t r = 0; r < rows; ++r) {
    float s = 0;
    const auto leaf_sums =
        forest.leaf_weights(x.data<float>() + r * features, 1);
    for (float v : leaf_sums[0])
      s += v;
    EXPECT_EQ(run.outputs[0].tensor().data<int64_t>()[r], s > 0.5f ? 1 : 0);
    EXPECT_NEAR(run.outputs[1].tensor().data<float>()[r * 2], 1 - s, 1e-5);
    EXPECT_NEAR(run.outputs[1].tensor().data<float>()[r * 2 + 1], s, 1e-5);
  }
}

TEST(MlTrees, RejectsCyclesAndShortInputs) {
  // Node 1 points back to node 0: a malformed tree must be refused, not walked
  // forever.
  std::vector<graph::Attribute> attrs{
      attr_ints("nodes_treeids", {0, 0, 0}),
      attr_ints("nodes_nodeids", {0, 1, 2}),
      attr_ints("nodes_featureids", {0, 0, 0}),
      attr_strings("nodes_modes", {"BRANCH_LEQ", "BRANCH_LEQ", "LEAF"}),
      attr_floats("nodes_values", {0, 0, 0}),
      attr_ints("nodes_truenodeids", {1, 0, 0}),
      attr_ints("nodes_falsenodeids", {2, 2, 0}),
      attr_ints("target_treeids", {0}),
      attr_ints("target_nodeids", {2}),
      attr_ints("target_ids", {0}),
      attr_floats("target_weights", {1.0f})};
  const Tensor x = Tensor::from_vector(std::vector<float>{1, 2}, {1, 2});
  EXPECT_FALSE(run_kernel("TreeEnsembleRegressor", 1, {x}, attrs, 1, kMl)
                   .status.is_ok());
  attrs[5] = attr_ints("nodes_truenodeids", {1, 2, 0});
  attrs[2] = attr_ints("nodes_featureids", {0, 5, 0});
  const KernelRun run =
      run_kernel("TreeEnsembleRegressor", 1, {x}, attrs, 1, kMl);
  ASSERT_FALSE(run.status.is_ok());
  EXPECT_NE(run.status.message().find("feature"), std::string::npos)
      << run.status.message();
}

// v5: interior nodes and leaves apart, with a BRANCH_MEMBER node.
TEST(MlTrees, TreeEnsembleV5SetMembership) {
  // Tree: node0 x0 <= 0.5 ? node1 : leaf2; node1 x1 in {1, 3} ? leaf0 : leaf1.
  std::vector<graph::Attribute> attrs{
      attr_ints("nodes_featureids", {0, 1}),
      attr_tensor("nodes_modes",
                  Tensor::from_vector(std::vector<uint8_t>{0, 6}, {2})),
      attr_tensor("nodes_splits",
                  Tensor::from_vector(std::vector<float>{0.5f, 0.0f}, {2})),
      attr_ints("nodes_truenodeids", {1, 0}),
      attr_ints("nodes_trueleafs", {0, 1}),
      attr_ints("nodes_falsenodeids", {2, 1}),
      attr_ints("nodes_falseleafs", {1, 1}),
      attr_ints("nodes_missing_value_tracks_true", {1, 0}),
      attr_ints("tree_roots", {0}),
      attr_ints("leaf_targetids", {0, 0, 1}),
      attr_tensor("leaf_weights",
                  Tensor::from_vector(std::vector<float>{10, 20, 30}, {3})),
      attr_tensor("membership_values",
                  Tensor::from_vector(std::vector<float>{1, 3, NAN}, {3})),
      attr_int("n_targets", 2)};
  const std::vector<float> xs{0, 1, 0, 2, 0, 3, 1, 1, NAN, 3, 0, NAN};
  const KernelRun run = run_kernel(
      "TreeEnsemble", 5, {Tensor::from_vector(xs, {6, 2})}, attrs, 1, kMl);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (int64_t r = 0; r < 6; ++r) {
    const float x0 = xs[static_cast<size_t>(r * 2)],
                x1 = xs[static_cast<size_t>(r * 2 + 1)];
    float expected[2] = {0, 0};
    if (x0 <= 0.5f || std::isnan(x0)) {
      expected[0] = (x1 == 1 || x1 == 3) ? 10.0f : 20.0f;
    } else {
      expected[1] = 30.0f;
    }
    EXPECT_EQ(run.outputs[0].tensor().data<float>()[r * 2], expected[0])
        << "row " << r;
    EXPECT_EQ(run.outputs[0].tensor().data<float>()[r * 2 + 1], expected[1])
        << "row " << r;
  }
}

// RBF kernel value between two rows.
float rbf(const float *a, const float *b, int64_t n, float gamma) {
  float s = 0;
  for (int64_t i = 0; i < n; ++i)
    s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::exp(-gamma * s);
}

TEST(MlSvm, ClassifierOneVsOneVotesAndDecisionValues) {
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int64_t classes = 3, features = 3, rows = 20;
  const std::vector<int64_t> per_class{2, 3, 2};
  const int64_t vectors = 7;
  std::vector<float> sv(static_cast<size_t>(vectors * features)),
      coef(static_cast<size_t>((classes - 1) * vectors)), rho(3);
  for (auto &v : sv)
    v = normal(rng);
  for (auto &v : coef)
    v = normal(rng);
  for (auto &v : rho)
    v = normal(rng);
  const float gamma = 0.3f;
  std::vector<graph::Attribute> attrs{
      attr_string("kernel_type", "RBF"),
      attr_floats("kernel_params", {gamma, 0.0f, 3.0f}),
      attr_ints("vectors_per_class", per_class),
      attr_floats("support_vectors", sv),
      attr_floats("coefficients", coef),
      attr_floats("rho", rho),
      attr_ints("classlabels_ints", {4, 5, 6})};
  const Tensor x = random_input(rng, rows, features);
  std::vector<float> xv(x.data<float>(), x.data<float>() + x.size());
  for (auto &v : xv)
    if (std::isnan(v))
      v = 0.5f;
  const KernelRun run =
      run_kernel("SVMClassifier", 1,
                 {Tensor::from_vector(xv, {rows, features})}, attrs, 2, kMl);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  ASSERT_EQ(run.outputs[1].tensor().shape(), (Shape{rows, 3}));
  const std::vector<int64_t> start{0, 2, 5};
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<float> k(static_cast<size_t>(vectors));
    for (int64_t v = 0; v < vectors; ++v)
      k[static_cast<size_t>(v)] =
          rbf(&xv[static_cast<size_t>(r * features)],
              &sv[static_cast<size_t>(v * features)], features, gamma);
    std::vector<int> votes(3, 0);
    int pair = 0;
    for (int64_t i = 0; i < classes; ++i) {
      for (int64_t j = i + 1; j < classes; ++j, ++pair) {
        double d = rho[static_cast<size_t>(pair)];
        for (int64_t m = 0; m < per_class[static_cast<size_t>(i)]; ++m)
          d += coef[static_cast<size_t>((j - 1) * vectors +
                                        start[static_cast<size_t>(i)] + m)] *
               k[static_cast<size_t>(start[static_cast<size_t>(i)] + m)];
        for (int64_t m = 0; m < per_class[static_cast<size_t>(j)]; ++m)
          d += coef[static_cast<size_t>(i * vectors +
                                        start[static_cast<size_t>(j)] + m)] *
               k[static_cast<size_t>(start[static_cast<size_t>(j)] + m)];
        EXPECT_NEAR(run.outputs[1].tensor().data<float>()[r * 3 + pair], d,
                    1e-5);
        ++votes[d > 0 ? i : j];
      }
    }
    const int64_t best =
        std::max_element(votes.begin(), votes.end()) - votes.begin();
    EXPECT_EQ(run.outputs[0].tensor().data<int64_t>()[r], 4 + best)
        << "row " << r;
  }
}

// Two classes with Platt scaling: pairwise coupling of one pair gives the
// pair's own probability back.
TEST(MlSvm, BinaryPlattProbabilities) {
  const std::vector<float> sv{0, 0, 1, 1, 2, 0};
  std::vector<graph::Attribute> attrs{
      attr_string("kernel_type", "LINEAR"),
      attr_ints("vectors_per_class", {1, 2}),
      attr_floats("support_vectors", sv),
      attr_floats("coefficients", {0.5f, -0.25f, -0.25f}),
      attr_floats("rho", {0.1f}),
      attr_floats("prob_a", {-1.5f}),
      attr_floats("prob_b", {0.2f}),
      attr_strings("classlabels_strings", {"no", "yes"})};
  const std::vector<float> xs{0.5f, -1.0f, 2.0f, 1.0f, -3.0f, 0.25f};
  const KernelRun run = run_kernel(
      "SVMClassifier", 1, {Tensor::from_vector(xs, {3, 2})}, attrs, 2, kMl);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (int64_t r = 0; r < 3; ++r) {
    const float *x = &xs[static_cast<size_t>(r * 2)];
    double d = 0.1;
    d += 0.5 * (x[0] * sv[0] + x[1] * sv[1]) -
         0.25 * (x[0] * sv[2] + x[1] * sv[3]) -
         0.25 * (x[0] * sv[4] + x[1] * sv[5]);
    const float p0 = 1.0f - logistic(static_cast<float>(d) * -1.5f + 0.2f);
    EXPECT_NEAR(run.outputs[1].tensor().data<float>()[r * 2], p0, 2e-3);
    EXPECT_NEAR(run.outputs[1].tensor().data<float>()[r * 2 + 1], 1 - p0, 2e-3);
    EXPECT_EQ(run.outputs[0].tensor().data<std::string>()[r],
              d > 0 ? "no" : "yes");
  }
}

TEST(MlSvm, RegressorKernelsAndOneClass) {
  const std::vector<float> sv{0, 1, 1, 0, -1, -1};
  const std::vector<float> coef{0.5f, -1.0f, 2.0f};
  const std::vector<float> xs{0.5f, 0.5f, -2.0f, 1.0f, 3.0f, -1.0f, 0.0f, 0.0f};
  for (const int one_class : {0, 1}) {
    std::vector<graph::Attribute> attrs{
        attr_string("kernel_type", "POLY"),
        attr_floats("kernel_params", {0.5f, 1.0f, 3.0f}),
        attr_int("n_supports", 3),
        attr_floats("support_vectors", sv),
        attr_floats("coefficients", coef),
        attr_floats("rho", {-0.75f}),
        attr_int("one_class", one_class)};
    const KernelRun run = run_kernel(
        "SVMRegressor", 1, {Tensor::from_vector(xs, {4, 2})}, attrs, 1, kMl);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    ASSERT_EQ(run.outputs[0].tensor().shape(), (Shape{4, 1}));
    for (int64_t r = 0; r < 4; ++r) {
      double s = -0.75;
      for (int64_t v = 0; v < 3; ++v) {
        const double dot =
            xs[static_cast<size_t>(r * 2)] * sv[static_cast<size_t>(v * 2)] +
            xs[static_cast<size_t>(r * 2 + 1)] *
                sv[static_cast<size_t>(v * 2 + 1)];
        s += coef[static_cast<size_t>(v)] * std::pow(0.5 * dot + 1.0, 3);
      }
      const double expected = one_class ? (s > 0 ? 1.0 : -1.0) : s;
      EXPECT_NEAR(run.outputs[0].tensor().data<float>()[r], expected, 1e-4)
          << "row " << r;
    }
  }
  // Linear mode (no support vectors): a dot product with the coefficients.
  const KernelRun linear = run_kernel(
      "SVMRegressor", 1, {Tensor::from_vector(xs, {4, 2})},
      {attr_floats("coefficients", {2.0f, -1.0f}), attr_floats("rho", {0.5f})},
      1, kMl);
  ASSERT_TRUE(linear.status.is_ok()) << linear.status.message();
  for (int64_t r = 0; r < 4; ++r) {
    EXPECT_NEAR(linear.outputs[0].tensor().data<float>()[r],
                2 * xs[static_cast<size_t>(r * 2)] -
                    xs[static_cast<size_t>(r * 2 + 1)] + 0.5f,
                1e-6);
  }
  // A wrong feature count is an error, not a read past the row.
  EXPECT_FALSE(
      run_kernel("SVMRegressor", 1,
                 {Tensor::from_vector(std::vector<float>{1, 2, 3}, {1, 3})},
                 {attr_floats("coefficients", {2.0f, -1.0f}),
                  attr_floats("rho", {0.5f})},
                 1, kMl)
          .status.is_ok());
}

TEST(MlDictVectorizer, StringKeysToDenseRow) {
  Map m{Tensor::from_vector(std::vector<std::string>{"b", "zzz", "a"}, {3}),
        Tensor::from_vector(std::vector<float>{2.5f, 9.0f, -1.0f}, {3})};
  const KernelRun run =
      run_kernel("DictVectorizer", 1, {Value::map(m)},
                 {attr_strings("string_vocabulary", {"a", "b", "c"})}, 1, kMl);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  const Tensor &y = run.outputs[0].tensor();
  ASSERT_EQ(y.shape(), (Shape{1, 3}));
  EXPECT_EQ(y.data<float>()[0], -1.0f);
  EXPECT_EQ(y.data<float>()[1], 2.5f);
  EXPECT_EQ(y.data<float>()[2], 0.0f);
  // Keys of the wrong type are refused.
  Map ints{Tensor::from_vector(std::vector<int64_t>{1}, {1}),
           Tensor::from_vector(std::vector<float>{1.0f}, {1})};
  EXPECT_FALSE(run_kernel("DictVectorizer", 1, {Value::map(ints)},
                          {attr_strings("string_vocabulary", {"a"})}, 1, kMl)
                   .status.is_ok());
}

} // namespace
} // namespace onyx::testing
