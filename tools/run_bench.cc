// `onyx run` and `onyx bench`.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "cli.h"
#include "common/json.h"
#include "common/thread_pool.h"

namespace onyx::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct CommonArgs {
  std::string model;
  std::vector<std::pair<std::string, std::string>> inputs;  // name -> .npy
  std::string output_dir;
  int threads = 0;
  int runs = 100;
  int warmup = 5;
  uint64_t seed = 0;
  std::string profile_prefix;  // write a Chrome trace when set
  bool profile_split = false;  // bench: time by op type and between kernels
};

constexpr int64_t kMaxThreads = 1024;
constexpr int64_t kMaxRuns = 1000000000;

// The arguments run and bench share: the model, its inputs, threads, seed.
void add_model_arguments(CommandLine& command_line, CommonArgs& args) {
  command_line.positional("MODEL", "the model, an .onnx file", &args.model);
  command_line.option({"-i", "--input"}, "NAME=FILE.npy",
                      "feed input NAME from a NumPy .npy file; repeat for more inputs. Inputs not given get seeded "
                      "random values (floats in [0, 1), integers 0 or 1)",
                      [&args](const std::string& v) {
                        const size_t eq = v.find('=');
                        if (eq == std::string::npos || eq == 0 || eq + 1 == v.size()) {
                          throw UsageError("expects NAME=FILE.npy, got '" + v + "'");
                        }
                        const std::string name = v.substr(0, eq);
                        for (const auto& given : args.inputs) {
                          if (given.first == name) throw UsageError("gives input '" + name + "' a second time");
                        }
                        args.inputs.emplace_back(name, v.substr(eq + 1));
                      });
  command_line.option(
      {"-t", "--threads"}, "N", "threads for the ops (default 0: one per core)",
      [&args](const std::string& v) { args.threads = static_cast<int>(parse_integer(v, 0, kMaxThreads)); });
  command_line.option({"--seed"}, "N", "seed of the random inputs (default 0)",
                      [&args](const std::string& v) { args.seed = parse_unsigned(v); });
}

// Every file the arguments name exists: checked before the model loads.
void check_files(const CommonArgs& args) {
  require_file("MODEL", args.model);
  for (const auto& [name, path] : args.inputs) require_file("--input " + name, path);
}

Result<Feeds> make_feeds(const InferenceSession& session, const CommonArgs& args) {
  ONYX_ASSIGN_OR_RETURN(Feeds feeds, random_feeds(session, args.seed));
  for (const auto& [name, path] : args.inputs) {
    ONYX_ASSIGN_OR_RETURN(Tensor t, read_npy(path));
    bool found = false;
    for (auto& [feed_name, value] : feeds) {
      if (feed_name == name) {
        value = Value(t);
        found = true;
      }
    }
    if (!found) feeds.emplace_back(name, Value(t));  // the session names the error if it is unknown
  }
  return feeds;
}


// One node's event of a profile: [start, end) in microseconds on a thread.
struct NodeSpan {
  std::string op_type;
  int64_t start = 0;
  int64_t end = 0;
  int64_t thread = 0;
};

// Where a run's time goes, from a profile of `runs` runs after `skip`
// warm-up runs: each op type's own time (a node's time less that of the
// nodes nested in it, as an If's or a Loop's body), and the run time no
// kernel covers.
struct TimeSplit {
  int runs = 0;
  double covered_us = 0;                            // per run: union of the node spans
  std::map<std::string, std::pair<double, double>> by_op;  // op -> (self µs per run, nodes per run)
};

Result<TimeSplit> split_profile(const std::string& path, int skip) {
  std::ifstream in(path);
  if (!in) return runtime_error("cannot read the profile ", path);
  std::stringstream text;
  text << in.rdbuf();
  ONYX_ASSIGN_OR_RETURN(Json trace, parse_json(text.str()));
  std::vector<std::pair<int64_t, int64_t>> runs;  // model_run windows
  std::vector<NodeSpan> nodes;
  for (const Json& e : trace.as_array()) {
    const std::string& cat = e.at("cat").as_string();
    const int64_t ts = e.at("ts").as_int();
    const int64_t dur = e.at("dur").as_int();
    if (cat == "Session" && e.at("name").as_string() == "model_run") runs.emplace_back(ts, ts + dur);
    if (cat == "Node") nodes.push_back({e.at("args").at("op_name").as_string(), ts, ts + dur, e.at("tid").as_int()});
  }
  std::sort(runs.begin(), runs.end());
  if (static_cast<int>(runs.size()) <= skip) return runtime_error("the profile has no timed runs");
  runs.erase(runs.begin(), runs.begin() + skip);
  TimeSplit split;
  split.runs = static_cast<int>(runs.size());
  // Nodes of the timed runs, by thread then start (longest first, so a
  // node comes before the ones nested in it).
  std::vector<NodeSpan> timed;
  for (const NodeSpan& n : nodes) {
    auto it = std::upper_bound(runs.begin(), runs.end(), std::make_pair(n.start, INT64_MAX));
    if (it != runs.begin() && n.start >= std::prev(it)->first && n.end <= std::prev(it)->second) timed.push_back(n);
  }
  std::sort(timed.begin(), timed.end(), [](const NodeSpan& a, const NodeSpan& b) {
    return a.thread != b.thread ? a.thread < b.thread : a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  std::vector<double> self(timed.size());
  std::vector<size_t> open;  // enclosing nodes on the current thread
  for (size_t i = 0; i < timed.size(); ++i) {
    self[i] = static_cast<double>(timed[i].end - timed[i].start);
    while (!open.empty() && (timed[open.back()].thread != timed[i].thread || timed[open.back()].end <= timed[i].start)) {
      open.pop_back();
    }
    if (!open.empty() && timed[i].end <= timed[open.back()].end) self[open.back()] -= static_cast<double>(timed[i].end - timed[i].start);
    open.push_back(i);
  }
  const double per_run = 1.0 / split.runs;
  for (size_t i = 0; i < timed.size(); ++i) {
    auto& [us, count] = split.by_op[timed[i].op_type];
    us += std::max(0.0, self[i]) * per_run;
    count += per_run;
  }
  // Kernel-covered time: the union of the spans on all threads.
  std::vector<std::pair<int64_t, int64_t>> spans;
  for (const NodeSpan& n : timed) spans.emplace_back(n.start, n.end);
  std::sort(spans.begin(), spans.end());
  int64_t covered = 0, reach = INT64_MIN;
  for (const auto& [a, b] : spans) {
    if (b <= reach) continue;
    covered += b - std::max(a, reach);
    reach = b;
  }
  split.covered_us = static_cast<double>(covered) * per_run;
  return split;
}

void print_split(const TimeSplit& split, double mean_ms) {
  std::vector<std::pair<std::string, std::pair<double, double>>> ops(split.by_op.begin(), split.by_op.end());
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  const double total_us = mean_ms * 1000.0;
  std::printf("\ntime per run by op type (own time; %d profiled runs; %% of the unprofiled mean %.3f ms):\n",
              split.runs, mean_ms);
  std::printf("  %-28s %10s %7s %7s\n", "op", "ms", "%", "nodes");
  for (const auto& [op, v] : ops) {
    std::printf("  %-28s %10.4f %6.1f%% %7.1f\n", op.c_str(), v.first / 1000.0, 100.0 * v.first / total_us, v.second);
  }
  // What no kernel covers: binding feeds, planning, allocation, the
  // executor's loop, waking threads. Measured against the unprofiled runs,
  // since recording the profile itself takes time between kernels.
  const double overhead_us = std::max(0.0, total_us - split.covered_us);
  std::printf("  %-28s %10.4f %6.1f%%\n", "overhead (between kernels)", overhead_us / 1000.0,
              100.0 * overhead_us / total_us);
}

}  // namespace

int run_command(const std::vector<std::string>& arg_list) {
  CommonArgs args;
  CommandLine command_line("run",
                           "Runs MODEL once and prints each input and output (type, shape and first values), the "
                           "session creation time and the run time.");
  add_model_arguments(command_line, args);
  command_line.option({"-o", "--output-dir"}, "DIR",
                      "also write each tensor output to DIR/NAME.npy ('/' in NAME becomes '_'); DIR is created "
                      "if missing",
                      [&args](const std::string& v) { args.output_dir = v; });
  command_line.option({"--profile"}, "PREFIX",
                      "write a Chrome trace of the run to PREFIX_<time>.json (open it in chrome://tracing or "
                      "Perfetto); PREFIX's folder is created if missing",
                      [&args](const std::string& v) { args.profile_prefix = v; });
  command_line.example("onyx run model.onnx --input x=x.npy --output-dir out -t 4");
  if (!command_line.parse(arg_list)) return kExitOk;
  check_files(args);
  create_folder("--output-dir", args.output_dir);
  if (!args.profile_prefix.empty()) create_folder("--profile", folder_of(args.profile_prefix));

  SessionOptions options;
  options.intra_op_num_threads = args.threads;
  options.enable_profiling = !args.profile_prefix.empty();
  options.profile_file_prefix = args.profile_prefix;
  const auto created = Clock::now();
  auto session = InferenceSession::from_file(args.model, options);
  const double create_ms = ms_since(created);
  Result<Feeds> feeds = make_feeds(*session, args);
  throw_if_error(feeds.status());
  for (const auto& [name, value] : *feeds) std::printf("input  %s: %s\n", name.c_str(), preview(value).c_str());
  const auto start = Clock::now();
  std::vector<Value> outputs = session->run({}, *feeds);
  const double run_ms = ms_since(start);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = session->outputs()[i].name;
    std::printf("output %s: %s\n", name.c_str(), preview(outputs[i]).c_str());
    if (!args.output_dir.empty() && outputs[i].is_tensor()) {
      std::string file = name;
      std::replace(file.begin(), file.end(), '/', '_');
      throw_if_error(write_npy(outputs[i].tensor(), args.output_dir + "/" + file + ".npy"));
    }
  }
  std::printf("session creation %.2f ms, run %.2f ms\n", create_ms, run_ms);
  if (options.enable_profiling) std::printf("profile written to %s\n", session->end_profiling().c_str());
  return kExitOk;
}

int bench_command(const std::vector<std::string>& arg_list) {
  CommonArgs args;
  CommandLine command_line("bench",
                           "Runs MODEL --warmup times, then --runs times, and prints latency percentiles (p50, p90, "
                           "p99), throughput, session creation time and peak resident memory. Writes no files.");
  add_model_arguments(command_line, args);
  command_line.option({"-r", "--runs"}, "N", "timed runs (default 100)",
                      [&args](const std::string& v) { args.runs = static_cast<int>(parse_integer(v, 1, kMaxRuns)); });
  command_line.option({"--warmup"}, "N", "untimed runs first (default 5)",
                      [&args](const std::string& v) { args.warmup = static_cast<int>(parse_integer(v, 0, kMaxRuns)); });
  command_line.flag({"--profile"},
                    "then run again with profiling and print where a run's time goes: each op type's own time "
                    "and the time between kernels (the runtime's overhead)",
                    &args.profile_split);
  command_line.example("onyx bench model.onnx -r 200 -t 1");
  command_line.example("onyx bench model.onnx -t 1 --profile");
  if (!command_line.parse(arg_list)) return kExitOk;
  check_files(args);

  SessionOptions options;
  options.intra_op_num_threads = args.threads;
  const auto created = Clock::now();
  auto session = InferenceSession::from_file(args.model, options);
  const double create_ms = ms_since(created);
  const int64_t created_rss = peak_rss_bytes();
  Result<Feeds> feeds = make_feeds(*session, args);
  throw_if_error(feeds.status());
  for (int i = 0; i < args.warmup; ++i) session->run({}, *feeds);
  std::vector<double> latencies;
  const auto all = Clock::now();
  for (int i = 0; i < args.runs; ++i) {
    const auto start = Clock::now();
    session->run({}, *feeds);
    latencies.push_back(ms_since(start));
  }
  const double total_ms = ms_since(all);
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) {
    const size_t k = std::min(latencies.size() - 1, static_cast<size_t>(p * static_cast<double>(latencies.size())));
    return latencies[k];
  };
  std::printf("model            %s\n", args.model.c_str());
  std::printf("threads          %d\n", args.threads > 0 ? args.threads : ThreadPool::default_thread_count());
  std::printf("runs             %d (warmup %d)\n", args.runs, args.warmup);
  std::printf("session creation %.2f ms\n", create_ms);
  std::printf("latency p50      %.3f ms\n", pct(0.50));
  std::printf("latency p90      %.3f ms\n", pct(0.90));
  std::printf("latency p99      %.3f ms\n", pct(0.99));
  std::printf("throughput       %.2f runs/s\n", 1000.0 * args.runs / total_ms);
  // Peak resident memory (VmHWM): during session creation, and over the whole
  // process, runs included.
  constexpr double kMiB = 1024.0 * 1024.0;
  std::printf("peak memory      %.1f MiB (%.1f MiB by the end of session creation)\n",
              static_cast<double>(peak_rss_bytes()) / kMiB, static_cast<double>(created_rss) / kMiB);
  if (args.profile_split) {
    session.reset();
    options.enable_profiling = true;
    options.profile_file_prefix =
        (std::filesystem::temp_directory_path() / ("onyx_bench_" + std::to_string(getpid()))).string();
    auto profiled = InferenceSession::from_file(args.model, options);
    for (int i = 0; i < args.warmup + args.runs; ++i) profiled->run({}, *feeds);
    const std::string trace = profiled->end_profiling();
    Result<TimeSplit> split = split_profile(trace, args.warmup);
    std::error_code ignored;
    std::filesystem::remove(trace, ignored);
    throw_if_error(split.status());
    print_split(*split, total_ms / args.runs);
  }
  return kExitOk;
}

}  // namespace onyx::cli
