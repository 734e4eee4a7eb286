// ai.onnx.ml tree ensembles: TreeEnsembleRegressor and TreeEnsembleClassifier
// (v1, v3) and the unified TreeEnsemble (v5), scored the way onnxruntime does.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "providers/cpu/ml/post_transform.h"
#include "providers/kernel.h"

namespace onyx::cpu {
namespace {

enum class NodeMode : uint8_t {
  kLeq,
  kLt,
  kGte,
  kGt,
  kEq,
  kNeq,
  kMember,
  kLeaf
};
enum class Aggregate { kAverage, kSum, kMin, kMax };

// All trees of a model flattened into one node array. T is the type the
// thresholds and the sums are kept in: float for float and integer inputs,
// double for double inputs (as onnxruntime does).
template <typename T> struct Forest {
  struct Node {
    T threshold = 0;
    int32_t feature = 0;
    NodeMode mode = NodeMode::kLeaf;
    bool missing_true = false;
    int32_t true_child = 0;  // node index; for a leaf, its first weight
    int32_t false_child = 0; // node index; for a leaf, its weight count
    int32_t set = -1;        // index into sets for BRANCH_MEMBER
  };
  struct Weight {
    int32_t target = 0;
    T value = 0;
  };
  std::vector<Node> nodes;
  std::vector<int32_t> roots;
  std::vector<Weight> weights;
  std::vector<std::vector<T>> sets; // sorted, NaN-free member values
  int64_t feature_count = 0; // 1 + the largest feature an interior node reads

  int32_t find_leaf(const T *x, int32_t index) const {
    for (;;) {
      const Node &node = nodes[static_cast<size_t>(index)];
      if (node.mode == NodeMode::kLeaf)
        return index;
      const T v = x[node.feature];
      bool go_true = false;
      switch (node.mode) {
      case NodeMode::kLeq:
        go_true = v <= node.threshold;
        break;
      case NodeMode::kLt:
        go_true = v < node.threshold;
        break;
      case NodeMode::kGte:
        go_true = v >= node.threshold;
        break;
      case NodeMode::kGt:
        go_true = v > node.threshold;
        break;
      case NodeMode::kEq:
        go_true = v == node.threshold;
        break;
      case NodeMode::kNeq:
        go_true = v != node.threshold;
        break;
      case NodeMode::kMember: {
        const std::vector<T> &set = sets[static_cast<size_t>(node.set)];
        go_true =
            !std::isnan(v) && std::binary_search(set.begin(), set.end(), v);
        break;
      }
      case NodeMode::kLeaf:
        break;
      }
      // A missing value (NaN) takes the true branch where the node says so;
      // otherwise it goes wherever its comparison sends it.
      if (!go_true && node.missing_true && std::isnan(v))
        go_true = true;
      index = go_true ? node.true_child : node.false_child;
    }
  }
};

// Builds Forest<double> by parts, checks it whole, and casts it to float.
struct ForestBuilder {
  Forest<double> forest;
  std::vector<std::vector<std::pair<int32_t, double>>> leaf_weights; // per node

  // Roots must exist, every child index must be in range, and no tree may
  // loop back on itself (a walk would never end).
  Status check(const std::string &label, int64_t targets) {
    const auto count = static_cast<int32_t>(forest.nodes.size());
    for (int32_t root : forest.roots) {
      if (root < 0 || root >= count)
        return invalid_model(label, ": tree root ", root,
                             " is not a node index (", count, " nodes)");
    }
    for (const auto &node : forest.nodes) {
      if (node.mode == NodeMode::kLeaf)
        continue;
      if (node.true_child < 0 || node.true_child >= count ||
          node.false_child < 0 || node.false_child >= count) {
        return invalid_model(label, ": a node points to child ",
                             node.true_child, "/", node.false_child,
                             ", outside the ", count, " nodes");
      }
      if (node.feature < 0)
        return invalid_model(label, ": a node reads feature ", node.feature,
                             ", expected >= 0");
      forest.feature_count =
          std::max<int64_t>(forest.feature_count, int64_t{node.feature} + 1);
    }
    // Depth-first from every root, colouring nodes on the current path.
    std::vector<uint8_t> state(static_cast<size_t>(count),
                               0); // 0 new, 1 on path, 2 done
    std::vector<std::pair<int32_t, int>> stack;
    for (int32_t root : forest.roots) {
      if (state[static_cast<size_t>(root)] == 2)
        continue;
      stack.push_back({root, 0});
      state[static_cast<size_t>(root)] = 1;
      while (!stack.empty()) {
        auto &[index, step] = stack.back();
        const auto &node = forest.nodes[static_cast<size_t>(index)];
        if (node.mode == NodeMode::kLeaf || step == 2) {
          state[static_cast<size_t>(index)] = 2;
          stack.pop_back();
          continue;
        }
        const int32_t child = step == 0 ? node.true_child : node.false_child;
        ++step;
        if (state[static_cast<size_t>(child)] == 1)
          return invalid_model(
              label, ": the trees contain a cycle through node ", child);
        if (state[static_cast<size_t>(child)] == 0) {
          state[static_cast<size_t>(child)] = 1;
          stack.push_back({child, 0});
        }
      }
    }
    // Lay the leaf weights out contiguously, leaf by leaf.
    forest.weights.clear();
    for (size_t i = 0; i < forest.nodes.size(); ++i) {
      auto &node = forest.nodes[i];
      if (node.mode != NodeMode::kLeaf)
        continue;
      node.true_child = static_cast<int32_t>(forest.weights.size());
      node.false_child = static_cast<int32_t>(leaf_weights[i].size());
      for (const auto &[target, value] : leaf_weights[i]) {
        if (target < 0 || target >= targets) {
          return invalid_model(label, ": a leaf weight is for target/class ",
                               target, ", expected [0, ", targets, ")");
        }
        forest.weights.push_back({target, value});
      }
    }
    return Status::ok();
  }
};

Forest<float> to_float(const Forest<double> &in) {
  Forest<float> out;
  out.nodes.reserve(in.nodes.size());
  for (const auto &n : in.nodes) {
    out.nodes.push_back({static_cast<float>(n.threshold), n.feature, n.mode,
                         n.missing_true, n.true_child, n.false_child, n.set});
  }
  out.roots = in.roots;
  out.weights.reserve(in.weights.size());
  for (const auto &w : in.weights)
    out.weights.push_back({w.target, static_cast<float>(w.value)});
  for (const auto &s : in.sets) {
    std::vector<float> f(s.begin(), s.end());
    std::sort(f.begin(), f.end());
    out.sets.push_back(std::move(f));
  }
  out.feature_count = in.feature_count;
  return out;
}

// Reads a float/double/float16 tensor attribute as doubles.
Result<std::vector<double>> tensor_attr_values(const KernelInfo &info,
                                               const std::string &name) {
  const Tensor *t = info.attr_tensor(name);
  std::vector<double> out;
  if (t == nullptr)
    return out;
  out.resize(static_cast<size_t>(t->size()));
  switch (t->dtype()) {
  case DataType::kFloat:
    std::copy(t->data<float>(), t->data<float>() + t->size(), out.begin());
    break;
  case DataType::kDouble:
    std::copy(t->data<double>(), t->data<double>() + t->size(), out.begin());
    break;
  case DataType::kFloat16:
    for (int64_t i = 0; i < t->size(); ++i)
      out[static_cast<size_t>(i)] = static_cast<float>(t->data<Float16>()[i]);
    break;
  default:
    return invalid_model(info.label(), ": attribute ", name, " has type ",
                         dtype_name(t->dtype()),
                         ", expected float, double or float16");
  }
  return out;
}

// `name` as floats, or `name`_as_tensor as doubles when that is given.
Result<std::vector<double>> floats_or_tensor(const KernelInfo &info,
                                             const std::string &name) {
  if (info.has_attr(name + "_as_tensor"))
    return tensor_attr_values(info, name + "_as_tensor");
  const std::vector<float> f = info.attr_floats(name);
  return std::vector<double>(f.begin(), f.end());
}

Result<NodeMode> parse_mode(const std::string &label, const std::string &s) {
  if (s == "BRANCH_LEQ")
    return NodeMode::kLeq;
  if (s == "BRANCH_LT")
    return NodeMode::kLt;
  if (s == "BRANCH_GTE")
    return NodeMode::kGte;
  if (s == "BRANCH_GT")
    return NodeMode::kGt;
  if (s == "BRANCH_EQ")
    return NodeMode::kEq;
  if (s == "BRANCH_NEQ")
    return NodeMode::kNeq;
  if (s == "LEAF")
    return NodeMode::kLeaf;
  return invalid_model(label, ": nodes_modes has '", s,
                       "', expected BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, "
                       "BRANCH_GT, BRANCH_EQ, BRANCH_NEQ or LEAF");
}

void throw_if(const Status &s) {
  if (!s.is_ok())
    throw Error(s);
}

// The v1/v3 encoding: nodes addressed by (tree id, node id), leaf weights in
// parallel arrays prefixed `prefix` (target_ or class_).
Result<ForestBuilder> build_v3(const KernelInfo &info,
                               const std::string &prefix, int64_t targets,
                               int64_t *tree_count) {
  const std::string label = info.label();
  const auto tree_ids = info.attr_ints("nodes_treeids");
  const auto node_ids = info.attr_ints("nodes_nodeids");
  const auto features = info.attr_ints("nodes_featureids");
  const auto modes = info.attr_strings("nodes_modes");
  const auto true_ids = info.attr_ints("nodes_truenodeids");
  const auto false_ids = info.attr_ints("nodes_falsenodeids");
  const auto missing = info.attr_ints("nodes_missing_value_tracks_true");
  ONYX_ASSIGN_OR_RETURN(const std::vector<double> values,
                        floats_or_tensor(info, "nodes_values"));
  const size_t n = node_ids.size();
  if (n == 0)
    return invalid_model(
        label, ": nodes_nodeids is empty, expected at least one node");
  auto check_size = [&](size_t size, const char *name,
                        bool optional) -> Status {
    if (size == n || (optional && size == 0))
      return Status::ok();
    return invalid_model(label, ": attribute ", name, " has ", size,
                         " values, expected ", n, " (one per node)");
  };
  ONYX_RETURN_IF_ERROR(check_size(tree_ids.size(), "nodes_treeids", false));
  ONYX_RETURN_IF_ERROR(check_size(features.size(), "nodes_featureids", false));
  ONYX_RETURN_IF_ERROR(check_size(modes.size(), "nodes_modes", false));
  ONYX_RETURN_IF_ERROR(check_size(true_ids.size(), "nodes_truenodeids", false));
  ONYX_RETURN_IF_ERROR(
      check_size(false_ids.size(), "nodes_falsenodeids", false));
  ONYX_RETURN_IF_ERROR(
      check_size(missing.size(), "nodes_missing_value_tracks_true", true));
  ONYX_RETURN_IF_ERROR(check_size(values.size(), "nodes_values", true));
  if (n > static_cast<size_t>(INT32_MAX))
    return invalid_model(label, ": too many nodes (", n, ")");

  std::map<std::pair<int64_t, int64_t>, int32_t> index_of;
  for (size_t i = 0; i < n; ++i) {
    if (!index_of
             .emplace(std::make_pair(tree_ids[i], node_ids[i]),
                      static_cast<int32_t>(i))
             .second) {
      return invalid_model(label, ": node id ", node_ids[i],
                           " appears twice in tree ", tree_ids[i]);
    }
  }
  auto find = [&](int64_t tree, int64_t node, int32_t *out) -> Status {
    auto it = index_of.find({tree, node});
    if (it == index_of.end())
      return invalid_model(label, ": tree ", tree, " has no node ", node);
    *out = it->second;
    return Status::ok();
  };

  ForestBuilder b;
  b.forest.nodes.resize(n);
  b.leaf_weights.resize(n);
  std::vector<uint8_t> is_child(n, 0);
  for (size_t i = 0; i < n; ++i) {
    auto &node = b.forest.nodes[i];
    ONYX_ASSIGN_OR_RETURN(node.mode, parse_mode(label, modes[i]));
    node.threshold = values.empty() ? 0.0 : values[i];
    node.missing_true = !missing.empty() && missing[i] != 0;
    if (node.mode == NodeMode::kLeaf)
      continue;
    if (features[i] < 0 || features[i] > INT32_MAX)
      return invalid_model(label, ": node ", node_ids[i], " reads feature ",
                           features[i]);
    node.feature = static_cast<int32_t>(features[i]);
    ONYX_RETURN_IF_ERROR(find(tree_ids[i], true_ids[i], &node.true_child));
    ONYX_RETURN_IF_ERROR(find(tree_ids[i], false_ids[i], &node.false_child));
    is_child[static_cast<size_t>(node.true_child)] = 1;
    is_child[static_cast<size_t>(node.false_child)] = 1;
  }
  // One root per tree, in order of first appearance: the tree's first node
  // that no other node points to.
  std::map<int64_t, int32_t> root_of;
  std::vector<int64_t> tree_order;
  for (size_t i = 0; i < n; ++i) {
    if (root_of.find(tree_ids[i]) == root_of.end()) {
      root_of[tree_ids[i]] = -1;
      tree_order.push_back(tree_ids[i]);
    }
    if (!is_child[i] && root_of[tree_ids[i]] < 0)
      root_of[tree_ids[i]] = static_cast<int32_t>(i);
  }
  for (int64_t tree : tree_order) {
    if (root_of[tree] < 0)
      return invalid_model(label, ": tree ", tree,
                           " has no root (every node is some node's child)");
    b.forest.roots.push_back(root_of[tree]);
  }
  *tree_count = static_cast<int64_t>(tree_order.size());

  const auto w_trees = info.attr_ints(prefix + "treeids");
  const auto w_nodes = info.attr_ints(prefix + "nodeids");
  const auto w_ids = info.attr_ints(prefix + "ids");
  ONYX_ASSIGN_OR_RETURN(const std::vector<double> w_values,
                        floats_or_tensor(info, prefix + "weights"));
  const size_t w = w_values.size();
  if (w_trees.size() != w || w_nodes.size() != w || w_ids.size() != w) {
    return invalid_model(label, ": ", prefix,
                         "treeids/nodeids/ids/weights have ", w_trees.size(),
                         "/", w_nodes.size(), "/", w_ids.size(), "/", w,
                         " values, expected equal lengths");
  }
  for (size_t i = 0; i < w; ++i) {
    int32_t node = 0;
    ONYX_RETURN_IF_ERROR(find(w_trees[i], w_nodes[i], &node));
    if (w_ids[i] < 0 || w_ids[i] >= targets) {
      return invalid_model(label, ": ", prefix, "ids has ", w_ids[i],
                           ", expected [0, ", targets, ")");
    }
    b.leaf_weights[static_cast<size_t>(node)].push_back(
        {static_cast<int32_t>(w_ids[i]), w_values[i]});
  }
  ONYX_RETURN_IF_ERROR(b.check(label, targets));
  return b;
}

// X as a row-major block of T, with its row count and row length.
template <typename T>
Result<std::vector<T>> read_x(const KernelContext &ctx, bool allow_ints,
                              int64_t *rows, int64_t *cols) {
  const Tensor *x = ctx.input_tensor(0);
  if (x == nullptr || x->rank() == 0 || x->rank() > 2) {
    return invalid_argument(ctx.label(), ": input X is ",
                            x ? x->describe() : std::string("missing"),
                            ", expected [N, F] or [F]");
  }
  *rows = x->rank() == 2 ? x->dim(0) : 1;
  *cols = x->dim(x->rank() - 1);
  std::vector<T> out(static_cast<size_t>(x->size()));
  auto copy = [&](auto tag) {
    using S = decltype(tag);
    const S *p = x->data<S>();
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<T>(static_cast<float>(p[i]));
  };
  switch (x->dtype()) {
  case DataType::kFloat:
    copy(float{});
    break;
  case DataType::kDouble: {
    const double *p = x->data<double>();
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = static_cast<T>(p[i]);
    break;
  }
  case DataType::kFloat16:
    if (allow_ints)
      return invalid_argument(
          ctx.label(),
          ": input X has type float16, expected float, double, int64 or int32");
    copy(Float16{});
    break;
  case DataType::kInt64:
  case DataType::kInt32:
    if (!allow_ints)
      return invalid_argument(ctx.label(), ": input X has type ",
                              dtype_name(x->dtype()),
                              ", expected float, double or float16");
    if (x->dtype() == DataType::kInt64)
      copy(int64_t{});
    else
      copy(int32_t{});
    break;
  default:
    return invalid_argument(
        ctx.label(), ": input X has type ", dtype_name(x->dtype()),
        allow_ints ? ", expected float, double, int64 or int32"
                   : ", expected float, double or float16");
  }
  return out;
}

template <typename T>
Status check_features(const KernelContext &ctx, const Forest<T> &forest,
                      int64_t cols) {
  if (cols < forest.feature_count) {
    return invalid_argument(ctx.label(), ": input X has ", cols,
                            " features, but the trees read feature ",
                            forest.feature_count - 1);
  }
  return Status::ok();
}

// Sums (or takes the min/max of) the leaf weights one row reaches. With
// `empty_leaf_is_zero` (single-target regression) a leaf without weights
// counts as weight 0 for target 0, as onnxruntime scores it.
template <typename T>
void accumulate(const Forest<T> &forest, const T *x, Aggregate agg, T *score,
                uint8_t *has, bool empty_leaf_is_zero = false) {
  for (int32_t root : forest.roots) {
    const auto &leaf =
        forest.nodes[static_cast<size_t>(forest.find_leaf(x, root))];
    if (empty_leaf_is_zero && leaf.false_child == 0) {
      if (agg == Aggregate::kMin   ? (!has[0] || score[0] > T(0))
          : agg == Aggregate::kMax ? (!has[0] || score[0] < T(0))
                                   : false)
        score[0] = T(0);
      has[0] = 1;
      continue;
    }
    const auto *w = forest.weights.data() + leaf.true_child;
    for (int32_t k = 0; k < leaf.false_child; ++k, ++w) {
      T &s = score[w->target];
      uint8_t &h = has[w->target];
      switch (agg) {
      case Aggregate::kSum:
      case Aggregate::kAverage:
        s += w->value;
        break;
      case Aggregate::kMin:
        if (!h || w->value < s)
          s = w->value;
        break;
      case Aggregate::kMax:
        if (!h || w->value > s)
          s = w->value;
        break;
      }
      h = 1;
    }
  }
}

double tree_cost(size_t trees) {
  return 8.0 * static_cast<double>(trees) + 16.0;
}

// Regression scores: aggregate, add base values, post-transform. One target
// takes only PROBIT (onnxruntime ignores the other transforms there).
template <typename T, typename Out>
void regress(KernelContext &ctx, const Forest<T> &forest,
             const std::vector<T> &x, int64_t rows, int64_t cols,
             int64_t targets, Aggregate agg, const std::vector<T> &base,
             int64_t tree_count, ml::PostTransform post, Out *y) {
  const bool use_base = static_cast<int64_t>(base.size()) == targets;
  parallel_for(ctx.thread_pool(), rows, tree_cost(forest.roots.size()),
               [&](int64_t begin, int64_t end) {
                 std::vector<T> score(static_cast<size_t>(targets));
                 std::vector<uint8_t> has(static_cast<size_t>(targets));
                 std::vector<float> row(static_cast<size_t>(targets));
                 for (int64_t r = begin; r < end; ++r) {
                   std::fill(score.begin(), score.end(), T(0));
                   std::fill(has.begin(), has.end(), uint8_t(0));
                   accumulate(forest, x.data() + r * cols, agg, score.data(),
                              has.data(), targets == 1);
                   Out *out = y + r * targets;
                   for (int64_t t = 0; t < targets; ++t) {
                     // A target no leaf scored stays 0, without its base value
                     // (onnxruntime).
                     if (!has[static_cast<size_t>(t)])
                       continue;
                     T v = score[static_cast<size_t>(t)];
                     if (agg == Aggregate::kAverage)
                       v /= static_cast<T>(tree_count);
                     if (use_base)
                       v += base[static_cast<size_t>(t)];
                     score[static_cast<size_t>(t)] = v;
                   }
                   if (post == ml::PostTransform::kNone ||
                       (targets == 1 && post != ml::PostTransform::kProbit)) {
                     for (int64_t t = 0; t < targets; ++t)
                       out[t] = static_cast<Out>(score[static_cast<size_t>(t)]);
                     continue;
                   }
                   for (int64_t t = 0; t < targets; ++t)
                     row[static_cast<size_t>(t)] =
                         static_cast<float>(score[static_cast<size_t>(t)]);
                   ml::apply_post_transform(post, row.data(), targets);
                   for (int64_t t = 0; t < targets; ++t)
                     out[t] = static_cast<Out>(row[static_cast<size_t>(t)]);
                 }
               });
}

Result<Aggregate> parse_aggregate(const std::string &label,
                                  const std::string &s) {
  if (s == "SUM")
    return Aggregate::kSum;
  if (s == "AVERAGE")
    return Aggregate::kAverage;
  if (s == "MIN")
    return Aggregate::kMin;
  if (s == "MAX")
    return Aggregate::kMax;
  return invalid_model(label, ": attribute aggregate_function is '", s,
                       "', expected SUM, AVERAGE, MIN or MAX");
}

class TreeEnsembleRegressorKernel final : public Kernel {
public:
  explicit TreeEnsembleRegressorKernel(const KernelInfo &info) {
    targets_ = info.attr_int("n_targets", 1);
    if (targets_ <= 0 || targets_ > INT32_MAX)
      throw Error(invalid_model(info.label(), ": n_targets is ", targets_,
                                ", expected > 0"));
    auto agg = parse_aggregate(info.label(),
                               info.attr_string("aggregate_function", "SUM"));
    throw_if(agg.status());
    aggregate_ = agg.value();
    auto post = ml::parse_post_transform(
        info.label(), info.attr_string("post_transform", "NONE"));
    throw_if(post.status());
    post_ = post.value();
    auto base = floats_or_tensor(info, "base_values");
    throw_if(base.status());
    base_ = base.value();
    if (!base_.empty() && static_cast<int64_t>(base_.size()) != targets_) {
      throw Error(invalid_model(info.label(), ": base_values has ",
                                base_.size(),
                                " values, expected n_targets = ", targets_));
    }
    auto built = build_v3(info, "target_", targets_, &tree_count_);
    throw_if(built.status());
    forest_double_ = std::move(built.value().forest);
    forest_float_ = to_float(forest_double_);
    base_float_.assign(base_.begin(), base_.end());
  }

  Status compute(KernelContext &ctx) const override {
    const Tensor *x = ctx.input_tensor(0);
    int64_t rows = 0, cols = 0;
    if (x != nullptr && x->dtype() == DataType::kDouble) {
      ONYX_ASSIGN_OR_RETURN(std::vector<double> xs,
                            read_x<double>(ctx, true, &rows, &cols));
      ONYX_RETURN_IF_ERROR(check_features(ctx, forest_double_, cols));
      Tensor &y = ctx.allocate_output(0, DataType::kFloat, {rows, targets_});
      regress(ctx, forest_double_, xs, rows, cols, targets_, aggregate_, base_,
              tree_count_, post_, y.data<float>());
      return Status::ok();
    }
    ONYX_ASSIGN_OR_RETURN(std::vector<float> xs,
                          read_x<float>(ctx, true, &rows, &cols));
    ONYX_RETURN_IF_ERROR(check_features(ctx, forest_float_, cols));
    Tensor &y = ctx.allocate_output(0, DataType::kFloat, {rows, targets_});
    regress(ctx, forest_float_, xs, rows, cols, targets_, aggregate_,
            base_float_, tree_count_, post_, y.data<float>());
    return Status::ok();
  }

private:
  Forest<double> forest_double_;
  Forest<float> forest_float_;
  std::vector<double> base_;
  std::vector<float> base_float_;
  int64_t targets_ = 1;
  int64_t tree_count_ = 0;
  Aggregate aggregate_ = Aggregate::kSum;
  ml::PostTransform post_ = ml::PostTransform::kNone;
};

// How two-class scores are widened to two columns (onnxruntime's convention):
// weights all >= 0 give [1 - s, s]; mixed weights give [-s, s], or
// [logistic(-s), logistic(s)] under LOGISTIC.
enum class SecondClass { kNone, kComplement, kNegate };

class TreeEnsembleClassifierKernel final : public Kernel {
public:
  explicit TreeEnsembleClassifierKernel(const KernelInfo &info) {
    labels_int_ = info.attr_ints("classlabels_int64s");
    labels_str_ = info.attr_strings("classlabels_strings");
    if (labels_int_.empty() == labels_str_.empty()) {
      throw Error(
          invalid_model(info.label(), ": exactly one of classlabels_int64s and "
                                      "classlabels_strings is required"));
    }
    use_strings_ = !labels_str_.empty();
    classes_ = static_cast<int64_t>(use_strings_ ? labels_str_.size()
                                                 : labels_int_.size());
    if (classes_ > INT32_MAX)
      throw Error(invalid_model(info.label(), ": too many class labels"));
    auto post = ml::parse_post_transform(
        info.label(), info.attr_string("post_transform", "NONE"));
    throw_if(post.status());
    post_ = post.value();
    auto base = floats_or_tensor(info, "base_values");
    throw_if(base.status());
    base_ = base.value();
    if (static_cast<int64_t>(base_.size()) > classes_ &&
        !(classes_ <= 2 && base_.size() <= 2)) {
      throw Error(invalid_model(info.label(), ": base_values has ",
                                base_.size(), " values, expected at most ",
                                classes_));
    }
    auto built = build_v3(info, "class_", classes_, &tree_count_);
    throw_if(built.status());
    forest_double_ = std::move(built.value().forest);
    forest_float_ = to_float(forest_double_);
    base_float_.assign(base_.begin(), base_.end());
    // A two-class model whose weights all name one class scores that class
    // alone; the other column is derived from it.
    std::vector<uint8_t> seen(static_cast<size_t>(classes_), 0);
    int64_t distinct = 0;
    all_positive_ = true;
    for (const auto &w : forest_double_.weights) {
      if (!seen[static_cast<size_t>(w.target)])
        ++distinct;
      seen[static_cast<size_t>(w.target)] = 1;
      if (w.value < 0)
        all_positive_ = false;
    }
    binary_case_ = classes_ == 2 && distinct == 1;
  }

  Status compute(KernelContext &ctx) const override {
    const Tensor *x = ctx.input_tensor(0);
    if (x != nullptr && x->dtype() == DataType::kDouble)
      return run<double>(ctx, forest_double_, base_);
    return run<float>(ctx, forest_float_, base_float_);
  }

private:
  template <typename T>
  Status run(KernelContext &ctx, const Forest<T> &forest,
             const std::vector<T> &base) const {
    int64_t rows = 0, cols = 0;
    ONYX_ASSIGN_OR_RETURN(std::vector<T> xs,
                          read_x<T>(ctx, true, &rows, &cols));
    ONYX_RETURN_IF_ERROR(check_features(ctx, forest, cols));
    Tensor &labels = ctx.allocate_output(
        0, use_strings_ ? DataType::kString : DataType::kInt64, {rows});
    Tensor scratch;
    Tensor &z = ctx.output_count() > 1
                    ? ctx.allocate_output(1, DataType::kFloat, {rows, classes_})
                    : (scratch = Tensor(DataType::kFloat, {rows, classes_}));
    parallel_for(ctx.thread_pool(), rows, tree_cost(forest.roots.size()),
                 [&](int64_t begin, int64_t end) {
                   std::vector<T> score(static_cast<size_t>(classes_));
                   std::vector<uint8_t> has(static_cast<size_t>(classes_));
                   for (int64_t r = begin; r < end; ++r) {
                     std::fill(score.begin(), score.end(), T(0));
                     std::fill(has.begin(), has.end(), uint8_t(0));
                     accumulate(forest, xs.data() + r * cols, Aggregate::kSum,
                                score.data(), has.data());
                     const int64_t pick = finalize(
                         score, has, base, z.data<float>() + r * classes_);
                     if (use_strings_) {
                       labels.data<std::string>()[r] =
                           labels_str_[static_cast<size_t>(pick)];
                     } else {
                       labels.data<int64_t>()[r] =
                           labels_int_[static_cast<size_t>(pick)];
                     }
                   }
                 });
    return Status::ok();
  }

  // Adds base values, picks the class index and writes the row's scores.
  template <typename T>
  int64_t finalize(std::vector<T> &score, std::vector<uint8_t> &has,
                   const std::vector<T> &base, float *z) const {
    if (classes_ != 2) {
      for (size_t k = 0; k < base.size() && k < score.size(); ++k) {
        score[k] = has[k] ? score[k] + base[k] : base[k];
        has[k] = 1;
      }
      int64_t pick = -1;
      for (int64_t k = 0; k < classes_; ++k) {
        if (has[static_cast<size_t>(k)] &&
            (pick < 0 ||
             score[static_cast<size_t>(k)] > score[static_cast<size_t>(pick)]))
          pick = k;
      }
      // A class nothing scored reads 0 (onnxruntime's convention).
      for (int64_t k = 0; k < classes_; ++k)
        z[k] = has[static_cast<size_t>(k)]
                   ? static_cast<float>(score[static_cast<size_t>(k)])
                   : 0.0f;
      if (classes_ > 1)
        ml::apply_post_transform(post_, z, classes_);
      return pick < 0 ? 0 : pick;
    }
    // Two classes, following onnxruntime's rules (the spec leaves them open):
    // with two base values and a class-1 score, class 1 scores
    // base[1] + score[0] and class 0 its negation; with one or none, a row
    // without a class-1 score keeps one column and derives the other.
    int64_t kept = 2;
    SecondClass second = SecondClass::kNone;
    if (base.size() == 2) {
      if (has[1]) {
        score[1] = base[1] + score[0];
        score[0] = -score[1];
      } else {
        score[1] += base[1];
        score[0] += base[0];
      }
    } else if (base.size() == 1) {
      score[0] += base[0];
      if (!has[1])
        kept = 1;
    } else if (base.empty()) {
      second = SecondClass::kNegate;
      if (!has[1])
        kept = 1;
    }
    const T positive =
        (kept == 2 && has[1]) ? score[1] : (has[0] ? score[0] : T(0));
    int64_t pick = 0;
    if (binary_case_ && all_positive_) {
      pick = positive > T(0.5) ? 1 : 0;
      second = SecondClass::kComplement;
    } else {
      pick = positive > T(0) ? 1 : 0;
      if (binary_case_)
        second = SecondClass::kNegate;
    }
    if (kept == 2) {
      z[0] = has[0] ? static_cast<float>(score[0]) : 0.0f;
      z[1] = has[1] ? static_cast<float>(score[1]) : 0.0f;
      ml::apply_post_transform(post_, z, 2);
      return pick;
    }
    const float s = has[0] ? static_cast<float>(score[0]) : 0.0f;
    if (post_ == ml::PostTransform::kProbit) {
      z[0] = ml::probit(s);
      z[1] = 0.0f;
    } else if (second == SecondClass::kComplement) {
      z[0] = 1.0f - s;
      z[1] = s;
    } else if (second == SecondClass::kNegate) {
      const bool logistic = post_ == ml::PostTransform::kLogistic;
      z[0] = logistic ? ml::logistic(-s) : -s;
      z[1] = logistic ? ml::logistic(s) : s;
    } else {
      z[0] = s;
      z[1] = 0.0f;
    }
    return pick;
  }

  Forest<double> forest_double_;
  Forest<float> forest_float_;
  std::vector<double> base_;
  std::vector<float> base_float_;
  std::vector<int64_t> labels_int_;
  std::vector<std::string> labels_str_;
  bool use_strings_ = false;
  bool binary_case_ = false;
  bool all_positive_ = true;
  int64_t classes_ = 0;
  int64_t tree_count_ = 0;
  ml::PostTransform post_ = ml::PostTransform::kNone;
};

// ai.onnx.ml TreeEnsemble (v5): interior nodes and leaves in separate arrays,
// a child is a node or a leaf as nodes_trueleafs/nodes_falseleafs say, and
// BRANCH_MEMBER tests membership in a NaN-delimited set.
class TreeEnsembleKernel final : public Kernel {
public:
  explicit TreeEnsembleKernel(const KernelInfo &info) {
    const std::string label = info.label();
    targets_ = info.attr_int("n_targets", 1);
    if (targets_ <= 0 || targets_ > INT32_MAX)
      throw Error(
          invalid_model(label, ": n_targets is ", targets_, ", expected > 0"));
    const int64_t agg = info.attr_int("aggregate_function", 1);
    if (agg < 0 || agg > 3)
      throw Error(invalid_model(label, ": aggregate_function is ", agg,
                                ", expected 0..3 (AVERAGE, SUM, MIN, MAX)"));
    aggregate_ = static_cast<Aggregate>(agg);
    const int64_t post = info.attr_int("post_transform", 0);
    static constexpr ml::PostTransform kPost[] = {
        ml::PostTransform::kNone, ml::PostTransform::kSoftmax,
        ml::PostTransform::kLogistic, ml::PostTransform::kSoftmaxZero,
        ml::PostTransform::kProbit};
    if (post < 0 || post > 4)
      throw Error(invalid_model(label, ": post_transform is ", post,
                                ", expected 0..4"));
    post_ = kPost[post];

    const auto features = info.attr_ints("nodes_featureids");
    const auto true_ids = info.attr_ints("nodes_truenodeids");
    const auto false_ids = info.attr_ints("nodes_falsenodeids");
    const auto true_leafs = info.attr_ints("nodes_trueleafs");
    const auto false_leafs = info.attr_ints("nodes_falseleafs");
    const auto missing = info.attr_ints("nodes_missing_value_tracks_true");
    const auto roots = info.attr_ints("tree_roots");
    const auto leaf_targets = info.attr_ints("leaf_targetids");
    auto splits = tensor_attr_values(info, "nodes_splits");
    throw_if(splits.status());
    auto leaf_weights = tensor_attr_values(info, "leaf_weights");
    throw_if(leaf_weights.status());
    auto members = tensor_attr_values(info, "membership_values");
    throw_if(members.status());
    std::vector<uint8_t> modes;
    if (const Tensor *m = info.attr_tensor("nodes_modes")) {
      if (m->dtype() != DataType::kUInt8)
        throw Error(invalid_model(label, ": nodes_modes has type ",
                                  dtype_name(m->dtype()), ", expected uint8"));
      modes.assign(m->data<uint8_t>(), m->data<uint8_t>() + m->size());
    }
    const size_t n = features.size();
    const size_t leaves = leaf_weights.value().size();
    auto check_size = [&](size_t size, const char *name, size_t expected,
                          bool optional) {
      if (size != expected && !(optional && size == 0)) {
        throw Error(invalid_model(label, ": attribute ", name, " has ", size,
                                  " values, expected ", expected));
      }
    };
    check_size(modes.size(), "nodes_modes", n, false);
    check_size(splits.value().size(), "nodes_splits", n, false);
    check_size(true_ids.size(), "nodes_truenodeids", n, false);
    check_size(false_ids.size(), "nodes_falsenodeids", n, false);
    check_size(true_leafs.size(), "nodes_trueleafs", n, false);
    check_size(false_leafs.size(), "nodes_falseleafs", n, false);
    check_size(missing.size(), "nodes_missing_value_tracks_true", n, true);
    check_size(leaf_targets.size(), "leaf_targetids", leaves, false);
    if (n == 0 || roots.empty())
      throw Error(
          invalid_model(label, ": the ensemble has no nodes or no tree_roots"));
    if (n + leaves > static_cast<size_t>(INT32_MAX))
      throw Error(invalid_model(label, ": too many nodes"));

    // The NaN-delimited groups of membership_values, one per BRANCH_MEMBER
    // node.
    std::vector<std::vector<double>> groups(1);
    for (double v : members.value()) {
      if (std::isnan(v)) {
        groups.emplace_back();
      } else {
        groups.back().push_back(v);
      }
    }

    ForestBuilder b;
    b.forest.nodes.resize(n + leaves);
    b.leaf_weights.resize(n + leaves);
    auto child = [&](int64_t id, int64_t leaf, const char *side) -> int32_t {
      const int64_t limit =
          leaf ? static_cast<int64_t>(leaves) : static_cast<int64_t>(n);
      if (id < 0 || id >= limit) {
        throw Error(invalid_model(label, ": nodes_", side, "nodeids has ", id,
                                  ", expected [0, ", limit, ") (",
                                  leaf ? "a leaf index" : "a node index", ")"));
      }
      return static_cast<int32_t>(leaf ? static_cast<int64_t>(n) + id : id);
    };
    size_t member_nodes = 0;
    for (size_t i = 0; i < n; ++i) {
      auto &node = b.forest.nodes[i];
      if (modes[i] > 6)
        throw Error(invalid_model(label, ": nodes_modes has ", int{modes[i]},
                                  ", expected 0..6"));
      node.mode = static_cast<NodeMode>(modes[i]);
      node.threshold = splits.value()[i];
      if (features[i] < 0 || features[i] > INT32_MAX)
        throw Error(
            invalid_model(label, ": node ", i, " reads feature ", features[i]));
      node.feature = static_cast<int32_t>(features[i]);
      node.missing_true = !missing.empty() && missing[i] != 0;
      node.true_child = child(true_ids[i], true_leafs[i], "true");
      node.false_child = child(false_ids[i], false_leafs[i], "false");
      if (node.mode == NodeMode::kMember) {
        if (member_nodes >= groups.size() || members.value().empty()) {
          throw Error(invalid_model(
              label, ": membership_values has fewer sets than the ",
              member_nodes + 1, " BRANCH_MEMBER nodes"));
        }
        std::vector<double> set = groups[member_nodes];
        std::sort(set.begin(), set.end());
        node.set = static_cast<int32_t>(b.forest.sets.size());
        b.forest.sets.push_back(std::move(set));
        ++member_nodes;
      }
    }
    for (size_t l = 0; l < leaves; ++l) {
      b.forest.nodes[n + l].mode = NodeMode::kLeaf;
      if (leaf_targets[l] < 0 || leaf_targets[l] >= targets_) {
        throw Error(invalid_model(label, ": leaf_targetids has ",
                                  leaf_targets[l], ", expected [0, ", targets_,
                                  ")"));
      }
      b.leaf_weights[n + l].push_back(
          {static_cast<int32_t>(leaf_targets[l]), leaf_weights.value()[l]});
    }
    for (int64_t root : roots) {
      if (root < 0 || root >= static_cast<int64_t>(n))
        throw Error(invalid_model(label, ": tree_roots has ", root,
                                  ", expected [0, ", n, ")"));
      b.forest.roots.push_back(static_cast<int32_t>(root));
    }
    throw_if(b.check(label, targets_));
    forest_double_ = std::move(b.forest);
    forest_float_ = to_float(forest_double_);
  }

  Status compute(KernelContext &ctx) const override {
    const Tensor *x = ctx.input_tensor(0);
    int64_t rows = 0, cols = 0;
    const std::vector<double> no_base_d;
    const std::vector<float> no_base_f;
    const auto trees = static_cast<int64_t>(forest_double_.roots.size());
    if (x != nullptr && x->dtype() == DataType::kDouble) {
      ONYX_ASSIGN_OR_RETURN(std::vector<double> xs,
                            read_x<double>(ctx, false, &rows, &cols));
      ONYX_RETURN_IF_ERROR(check_features(ctx, forest_double_, cols));
      Tensor &y = ctx.allocate_output(0, DataType::kDouble, {rows, targets_});
      regress(ctx, forest_double_, xs, rows, cols, targets_, aggregate_,
              no_base_d, trees, post_, y.data<double>());
      return Status::ok();
    }
    ONYX_ASSIGN_OR_RETURN(std::vector<float> xs,
                          read_x<float>(ctx, false, &rows, &cols));
    ONYX_RETURN_IF_ERROR(check_features(ctx, forest_float_, cols));
    if (x->dtype() == DataType::kFloat16) {
      std::vector<float> y(static_cast<size_t>(rows * targets_));
      regress(ctx, forest_float_, xs, rows, cols, targets_, aggregate_,
              no_base_f, trees, post_, y.data());
      Tensor &out =
          ctx.allocate_output(0, DataType::kFloat16, {rows, targets_});
      for (size_t i = 0; i < y.size(); ++i)
        out.data<Float16>()[i] = Float16(y[i]);
      return Status::ok();
    }
    Tensor &y = ctx.allocate_output(0, DataType::kFloat, {rows, targets_});
    regress(ctx, forest_float_, xs, rows, cols, targets_, aggregate_, no_base_f,
            trees, post_, y.data<float>());
    return Status::ok();
  }

private:
  Forest<double> forest_double_;
  Forest<float> forest_float_;
  int64_t targets_ = 1;
  Aggregate aggregate_ = Aggregate::kSum;
  ml::PostTransform post_ = ml::PostTransform::kNone;
};

const std::vector<DataType> kFeatureTypes{DataType::kFloat, DataType::kDouble,
                                          DataType::kInt64, DataType::kInt32};

ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "TreeEnsembleRegressor", 1, 2,
                         kFeatureTypes, TreeEnsembleRegressorKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "TreeEnsembleRegressor", 3,
                         kLatestVersion, kFeatureTypes,
                         TreeEnsembleRegressorKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "TreeEnsembleClassifier", 1, 2,
                         kFeatureTypes, TreeEnsembleClassifierKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "TreeEnsembleClassifier", 3,
                         kLatestVersion, kFeatureTypes,
                         TreeEnsembleClassifierKernel);
ONYX_REGISTER_CPU_KERNEL("ai.onnx.ml", "TreeEnsemble", 5, kLatestVersion,
                         (std::vector<DataType>{DataType::kFloat,
                                                DataType::kDouble,
                                                DataType::kFloat16}),
                         TreeEnsembleKernel);

} // namespace
} // namespace onyx::cpu
