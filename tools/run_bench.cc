// `onyx run` and `onyx bench`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "cli.h"
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
  command_line.example("onyx bench model.onnx -r 200 -t 1");
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
  return kExitOk;
}

}  // namespace onyx::cli
