// The pass manager: runs each level's passes to a fixed point, applies the
// patches they return (checking that they do not conflict within a sweep),
// keeps shapes inferred, verifies the graph after each pass when asked, and
// records per-pass statistics.
#include "optimizer/optimizer.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "graph/builder.h"
#include "graph/shape_inference.h"
#include "optimizer/pass.h"

namespace onyx::optimizer {
namespace {

constexpr int kMaxSweepsPerPass = 32;
constexpr int kMaxRoundsPerLevel = 8;

}  // namespace

PassList basic_passes() {
  PassList passes;
  passes.push_back(make_constant_folding_pass());
  passes.push_back(make_shape_folding_pass());
  passes.push_back(make_dead_code_elimination_pass());
  passes.push_back(make_noop_elimination_pass());
  passes.push_back(make_reduce_to_global_pool_pass());
  passes.push_back(make_transpose_optimization_pass());
  passes.push_back(make_common_subexpression_elimination_pass());
  passes.push_back(make_conv_batchnorm_fusion_pass());
  passes.push_back(make_conv_add_mul_fusion_pass());
  passes.push_back(make_matmul_add_gemm_fusion_pass());
  return passes;
}

PassList extended_passes() {
  PassList passes;
  // QDQ groups first: the float fusions below (Conv + Relu, MatMul + scale)
  // would take their float ops apart. Activations fold into the Q before the
  // Conv/MatMul groups are matched; DQ -> Q pairs the fusions leave between
  // quantized ops cancel; then the DequantizeLinear of constant weights no
  // fusion took is folded (basic folding leaves them for the fusions).
  passes.push_back(make_quantize_activation_fusion_pass());
  passes.push_back(make_qdq_drop_fusion_pass());
  passes.push_back(make_qdq_conv_matmul_fusion_pass());
  passes.push_back(make_dq_matmul_nbits_fusion_pass());
  passes.push_back(make_qdq_elementwise_fusion_pass());
  passes.push_back(make_dequantize_quantize_elimination_pass());
  passes.push_back(make_constant_folding_pass(/*after_qdq=*/true));
  // quantize_dynamic's MatMulInteger chains.
  passes.push_back(make_dynamic_quantize_matmul_fusion_pass());
  // Linear layers first, as nn.Linear writes them, so the fusions below see
  // GPT-2 and TensorFlow exports the same way; attention before
  // matmul_scale_fusion, which would take its Q·Kᵀ apart.
  passes.push_back(make_reshaped_matmul_fusion_pass());
  passes.push_back(make_attention_fusion_pass());
  passes.push_back(make_gelu_fusion_pass());
  passes.push_back(make_fast_gelu_fusion_pass());
  passes.push_back(make_layer_norm_fusion_pass());
  passes.push_back(make_rms_norm_fusion_pass());
  passes.push_back(make_skip_layer_norm_fusion_pass());
  passes.push_back(make_embed_layer_norm_fusion_pass());
  passes.push_back(make_silu_fusion_pass());
  passes.push_back(make_activation_fusion_pass());
  passes.push_back(make_conv_residual_fusion_pass());
  passes.push_back(make_matmul_scale_fusion_pass());
  // Fusions leave their pattern's dead remains (and may create CSE chances).
  passes.push_back(make_dead_code_elimination_pass());
  return passes;
}

namespace {

std::string unique_name(const graph::Graph& graph, const std::string& base) {
  if (graph.find_value(base) < 0) return base;
  for (int i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (graph.find_value(candidate) < 0) return candidate;
  }
}

// Decides, within one sweep, which patches may be applied together: a patch
// is refused when it removes a node an earlier patch removed or reads from,
// or reads a value whose producer an earlier patch removed without keeping
// the value alive. Refused patches are found again in the next sweep.
class PatchSet {
 public:
  explicit PatchSet(const PassContext& ctx) : ctx_(ctx) {}

  bool add(Patch patch) {
    if (!valid(patch)) return false;
    for (size_t n : patch.remove_nodes) {
      if (removed_.count(n) || pinned_.count(n)) return false;
    }
    std::vector<int32_t> reads;
    for (const graph::Node& node : patch.add_nodes) {
      for (int32_t in : node.inputs) reads.push_back(in);
    }
    for (const auto& [from, to] : patch.replace_uses) reads.push_back(to);
    for (int32_t v : reads) {
      if (v < 0 || v >= kPatchValueBase) continue;
      const int32_t p = ctx_.producer_index(v);
      if (p >= 0 && removed_.count(static_cast<size_t>(p)) && !kept_alive_.count(v)) return false;
    }
    for (int32_t v : reads) {
      if (v < 0 || v >= kPatchValueBase) continue;
      const int32_t p = ctx_.producer_index(v);
      if (p >= 0) pinned_.insert(static_cast<size_t>(p));
    }
    for (size_t n : patch.remove_nodes) removed_.insert(n);
    for (const auto& [from, to] : patch.replace_uses) kept_alive_.insert(from);
    for (const auto& [v, t] : patch.make_constant) kept_alive_.insert(v);
    for (const graph::Node& node : patch.add_nodes) {
      for (int32_t out : node.outputs) kept_alive_.insert(out);
    }
    patches_.push_back(std::move(patch));
    return true;
  }

  std::vector<Patch>& patches() { return patches_; }

 private:
  // A patch on its own must leave no dangling use and move no pinned value.
  bool valid(const Patch& patch) const {
    const int32_t value_count = static_cast<int32_t>(ctx_.graph().values.size());
    const int32_t new_count = static_cast<int32_t>(patch.new_values.size());
    auto id_ok = [&](int32_t v) {
      return v == graph::kNoValue || (v >= 0 && v < value_count) ||
             (v >= kPatchValueBase && v - kPatchValueBase < new_count);
    };
    std::unordered_set<size_t> removing(patch.remove_nodes.begin(), patch.remove_nodes.end());
    for (size_t n : patch.remove_nodes) {
      if (n >= ctx_.node_count() || !ctx_.owns(n)) return false;
    }
    std::unordered_set<int32_t> alive;
    for (const auto& [from, to] : patch.replace_uses) {
      if (!id_ok(from) || !id_ok(to) || from < 0 || to < 0 || from >= kPatchValueBase) return false;
      if (ctx_.is_pinned(from)) return false;
      alive.insert(from);
    }
    for (const auto& [v, t] : patch.make_constant) {
      if (v < 0 || v >= value_count || ctx_.is_pinned(v)) return false;
      alive.insert(v);
    }
    for (const graph::Node& node : patch.add_nodes) {
      for (int32_t in : node.inputs) {
        if (!id_ok(in)) return false;
      }
      for (int32_t out : node.outputs) {
        if (!id_ok(out)) return false;
        // An existing value may only be re-produced when its producer goes.
        if (out >= 0 && out < kPatchValueBase) {
          const int32_t p = ctx_.producer_index(out);
          const graph::ValueEntry& v = ctx_.value(out);
          if (v.is_initializer || v.is_graph_input || v.is_outer_scope) return false;
          if (p >= 0 && !removing.count(static_cast<size_t>(p))) return false;
        }
        alive.insert(out);
      }
    }
    for (size_t n : patch.remove_nodes) {
      for (int32_t out : ctx_.node(n).outputs) {
        if (out < 0 || alive.count(out)) continue;
        if (ctx_.is_pinned(out)) return false;
        for (size_t user : ctx_.consumers(out)) {
          if (!removing.count(user)) return false;
        }
      }
    }
    return true;
  }

  const PassContext& ctx_;
  std::unordered_set<size_t> removed_;
  std::unordered_set<size_t> pinned_;
  std::unordered_set<int32_t> kept_alive_;
  std::vector<Patch> patches_;
};

Status apply_patches(graph::Graph& graph, std::vector<Patch>& patches, const std::string& owner,
                     PassStatistics& stats) {
  std::vector<char> removed(graph.nodes.size(), 0);
  std::unordered_map<int32_t, int32_t> alias;
  // A patch's new nodes take the place of the first node it removes (a patch
  // that removes none appends them): the executor runs nodes in this order
  // where their inputs allow, so a fused node keeps the place of what it
  // replaces instead of moving behind everything else (which would keep
  // values alive longer, and run a training graph's backward nodes before
  // its forward ones). The first, not the last: an Identity removed at the
  // end of the graph must not take the node that now writes its output
  // there with it.
  std::map<size_t, std::vector<graph::Node>> added_at;  // position -> nodes
  const size_t end = graph.nodes.size();
  for (Patch& patch : patches) {
    std::vector<int32_t> ids;
    for (Patch::NewValue& nv : patch.new_values) {
      const int32_t id = graph.value_id(unique_name(graph, nv.name));
      graph::ValueEntry& entry = graph.values[static_cast<size_t>(id)];
      entry.info = nv.info;
      if (nv.constant) {
        graph.initializers[id] = *nv.constant;
        entry.is_initializer = true;
      }
      ids.push_back(id);
    }
    auto map = [&](int32_t v) { return v >= kPatchValueBase ? ids[static_cast<size_t>(v - kPatchValueBase)] : v; };
    for (size_t n : patch.remove_nodes) {
      if (!removed[n]) ++stats.nodes_removed;
      removed[n] = 1;
    }
    for (auto& [v, tensor] : patch.make_constant) {
      graph.initializers[v] = tensor;
      graph.values[static_cast<size_t>(v)].is_initializer = true;
      graph.values[static_cast<size_t>(v)].info = info_of(tensor);
    }
    for (const auto& [v, info] : patch.refine_info) {
      if (v >= 0 && static_cast<size_t>(v) < graph.values.size()) graph.values[static_cast<size_t>(v)].info = info;
    }
    for (const auto& [from, to] : patch.replace_uses) alias[map(from)] = map(to);
    const size_t at =
        patch.remove_nodes.empty() ? end : *std::min_element(patch.remove_nodes.begin(), patch.remove_nodes.end());
    for (graph::Node& node : patch.add_nodes) {
      for (int32_t& in : node.inputs) in = map(in);
      for (int32_t& out : node.outputs) out = map(out);
      if (!owner.empty()) node.execution_provider = owner;
      added_at[at].push_back(std::move(node));
      ++stats.nodes_added;
    }
    ++stats.applied;
  }
  auto resolve = [&](int32_t v) {
    // Chains (a -> b -> c) arise when neighbouring patches each replace one
    // link; a cycle would be a pass bug, so the walk is bounded.
    for (size_t guard = 0; guard <= alias.size(); ++guard) {
      auto it = alias.find(v);
      if (it == alias.end()) return v;
      v = it->second;
    }
    return v;
  };
  std::vector<graph::Node> nodes;
  nodes.reserve(graph.nodes.size() + static_cast<size_t>(stats.nodes_added));
  for (size_t n = 0; n <= end; ++n) {
    if (n < end && !removed[n]) nodes.push_back(std::move(graph.nodes[n]));
    auto here = added_at.find(n);
    if (here == added_at.end()) continue;
    for (graph::Node& node : here->second) nodes.push_back(std::move(node));
  }
  if (!alias.empty()) {
    for (graph::Node& node : nodes) {
      for (int32_t& in : node.inputs) {
        if (in >= 0) in = resolve(in);
      }
    }
  }
  for (graph::ValueEntry& v : graph.values) v.producer = -1;
  return graph::sort_nodes(graph, nodes);
}

Status verify_graph_in(const graph::Graph& graph, const std::unordered_set<std::string>& outer_names) {
  const int32_t count = static_cast<int32_t>(graph.values.size());
  std::vector<char> defined(graph.values.size(), 0);
  for (int32_t id : graph.inputs) {
    if (id < 0 || id >= count) return invalid_model("graph '", graph.name, "': input id ", id, " is out of range");
    defined[static_cast<size_t>(id)] = 1;
  }
  for (const auto& [id, tensor] : graph.initializers) {
    if (id < 0 || id >= count)
      return invalid_model("graph '", graph.name, "': initializer id ", id, " is out of range");
    if (!graph.values[static_cast<size_t>(id)].is_initializer) {
      return invalid_model("graph '", graph.name, "': initializer '", graph.value_name(id), "' is not flagged as one");
    }
    if (graph.values[static_cast<size_t>(id)].producer >= 0) {
      return invalid_model("graph '", graph.name, "': initializer '", graph.value_name(id),
                           "' is also produced by a node");
    }
    defined[static_cast<size_t>(id)] = 1;
  }
  for (int32_t id : graph.outer_scope_values) {
    if (id < 0 || id >= count)
      return invalid_model("graph '", graph.name, "': outer value id ", id, " is out of range");
    defined[static_cast<size_t>(id)] = 1;
  }
  for (size_t i = 0; i < graph.values.size(); ++i) {
    if (graph.values[i].is_outer_scope || outer_names.count(graph.values[i].name)) defined[i] = 1;
  }
  std::vector<char> produced(graph.values.size(), 0);
  std::unordered_set<std::string> visible = outer_names;
  for (const graph::ValueEntry& v : graph.values) visible.insert(v.name);
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const graph::Node& node = graph.nodes[n];
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const int32_t in = node.inputs[i];
      if (in == graph::kNoValue) continue;
      if (in < 0 || in >= count) return invalid_model(node.label(n), ": input ", i, " has id ", in, " out of range");
      if (!defined[static_cast<size_t>(in)]) {
        return invalid_model(node.label(n), ": input ", i, " '", graph.value_name(in),
                             "' is used before it is defined (or never defined)");
      }
    }
    for (size_t o = 0; o < node.outputs.size(); ++o) {
      const int32_t out = node.outputs[o];
      if (out == graph::kNoValue) continue;
      if (out < 0 || out >= count)
        return invalid_model(node.label(n), ": output ", o, " has id ", out, " out of range");
      const graph::ValueEntry& v = graph.values[static_cast<size_t>(out)];
      if (produced[static_cast<size_t>(out)]) {
        return invalid_model(node.label(n), ": output '", v.name, "' is produced twice");
      }
      if (v.is_initializer || v.is_graph_input) {
        return invalid_model(node.label(n), ": output '", v.name, "' is also a graph input or initializer");
      }
      if (v.producer != static_cast<int32_t>(n)) {
        return invalid_model(node.label(n), ": output '", v.name, "' records producer ", v.producer, ", expected ", n);
      }
      produced[static_cast<size_t>(out)] = 1;
      defined[static_cast<size_t>(out)] = 1;
    }
    for (const auto& [name, a] : node.attributes) {
      if (a.g) ONYX_RETURN_IF_ERROR(verify_graph_in(*a.g, visible));
      for (const auto& g : a.graphs) ONYX_RETURN_IF_ERROR(verify_graph_in(*g, visible));
    }
  }
  for (size_t i = 0; i < graph.values.size(); ++i) {
    const int32_t p = graph.values[i].producer;
    if (p >= 0 && !produced[i]) {
      return invalid_model("graph '", graph.name, "': value '", graph.values[i].name, "' records producer ", p,
                           " which does not produce it");
    }
  }
  for (int32_t id : graph.outputs) {
    if (id < 0 || id >= count) return invalid_model("graph '", graph.name, "': output id ", id, " is out of range");
    if (!defined[static_cast<size_t>(id)]) {
      return invalid_model("graph '", graph.name, "': output '", graph.value_name(id), "' is never produced");
    }
  }
  return Status::ok();
}

bool level_at_least(GraphOptimizationLevel level, GraphOptimizationLevel wanted) {
  return static_cast<int>(level) >= static_cast<int>(wanted);
}

}  // namespace

Status verify_graph(const graph::Graph& graph) { return verify_graph_in(graph, {}); }

Result<std::vector<PassStatistics>> optimize_graph(graph::Graph& graph, const OptimizerOptions& options) {
  std::vector<PassList> levels;
  if (level_at_least(options.level, GraphOptimizationLevel::kEnableBasic)) levels.push_back(basic_passes());
  return run_passes(graph, levels, options);
}

namespace {

// Per-pass statistics, one entry per pass in the order they first ran.
class StatsTable {
 public:
  PassStatistics& operator[](const std::string& name) {
    auto it = index_.find(name);
    if (it != index_.end()) return all_[it->second];
    index_[name] = all_.size();
    all_.push_back(PassStatistics{name});
    return all_.back();
  }
  std::vector<PassStatistics> take() { return std::move(all_); }

 private:
  std::unordered_map<std::string, size_t> index_;
  std::vector<PassStatistics> all_;
};

// Runs each level's passes on `graph` itself (not its subgraphs) to a fixed
// point. True when anything changed.
Result<bool> run_levels(graph::Graph& graph, std::vector<PassList>& levels, const OptimizerOptions& options,
                        const graph::InferenceOptions& inference, StatsTable& all_stats) {
  bool any_changed = false;
  for (auto& passes : levels) {
    for (int round = 0; round < kMaxRoundsPerLevel; ++round) {
      bool round_changed = false;
      for (auto& pass : passes) {
        const std::string name = pass->name();
        if (std::find(options.disabled_optimizers.begin(), options.disabled_optimizers.end(), name) !=
            options.disabled_optimizers.end()) {
          continue;
        }
        const auto start = std::chrono::steady_clock::now();
        PassStatistics& stats = all_stats[name];
        for (int sweep = 0; sweep < kMaxSweepsPerPass; ++sweep) {
          bool changed = false;
          {
            PassContext ctx(graph, options);
            pass->begin_sweep(ctx);
            PatchSet set(ctx);
            for (size_t n = 0; n < graph.nodes.size(); ++n) {
              std::optional<Patch> patch = pass->match(ctx, n);
              if (patch) set.add(std::move(*patch));
            }
            if (!set.patches().empty()) {
              Status applied = apply_patches(graph, set.patches(), options.owner, stats);
              if (!applied.is_ok()) {
                return Status(applied.code(), "optimizer pass " + name + " broke the graph: " + applied.message());
              }
              changed = true;
            }
          }
          const int cleaned = pass->finish(graph);
          if (cleaned > 0) {
            stats.applied += cleaned;
            changed = true;
          }
          if (!changed) break;
          round_changed = true;
          ONYX_RETURN_IF_ERROR(graph::infer_shapes(graph, inference));
          if (options.verify_after_each_pass) {
            Status verified = verify_graph(graph);
            if (!verified.is_ok()) {
              return Status(verified.code(), "after optimizer pass " + name + ": " + verified.message());
            }
          }
        }
        stats.milliseconds +=
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      }
      if (!round_changed) break;
      any_changed = true;
    }
  }
  return any_changed;
}

// The same passes in every If branch and Loop/Scan body, outer graphs first.
// Exporters write a body's constants as Constant nodes and its shape
// arithmetic as node chains, which would otherwise run on every call (a
// streaming model's If runs its whole network). A body's passes see only its
// own constants: the values it reads from enclosing graphs stay unknown, and
// those it shares with bodies nested in it stay pinned (PassContext).
Result<bool> run_levels_in_subgraphs(graph::Graph& graph, std::vector<PassList>& levels,
                                     const OptimizerOptions& options, const graph::InferenceOptions& inference,
                                     StatsTable& stats) {
  bool changed = false;
  for (graph::Node& node : graph.nodes) {
    for (auto& [name, attr] : node.attributes) {
      std::vector<graph::Graph*> bodies;
      if (attr.g) bodies.push_back(attr.g.get());
      for (auto& g : attr.graphs) bodies.push_back(g.get());
      for (graph::Graph* body : bodies) {
        ONYX_ASSIGN_OR_RETURN(bool here, run_levels(*body, levels, options, inference, stats));
        ONYX_ASSIGN_OR_RETURN(bool inner, run_levels_in_subgraphs(*body, levels, options, inference, stats));
        changed = changed || here || inner;
      }
    }
  }
  return changed;
}

}  // namespace

Result<std::vector<PassStatistics>> run_passes(graph::Graph& graph, std::vector<PassList>& levels,
                                               const OptimizerOptions& options) {
  if (levels.empty()) return std::vector<PassStatistics>{};

  graph::InferenceOptions inference;
  inference.error_on_mismatch = false;
  inference.initializers_in_inputs_are_constant = options.initializers_in_inputs_are_constant;
  inference.external = options.external_inference;

  StatsTable stats;
  ONYX_RETURN_IF_ERROR(run_levels(graph, levels, options, inference, stats).status());
  ONYX_ASSIGN_OR_RETURN(bool bodies_changed, run_levels_in_subgraphs(graph, levels, options, inference, stats));
  // A body's own inference above knew nothing of its enclosing graphs; the
  // whole model's gives its values their full types and shapes again.
  if (bodies_changed) ONYX_RETURN_IF_ERROR(graph::infer_shapes(graph, inference));
  return stats.take();
}

}  // namespace onyx::optimizer
