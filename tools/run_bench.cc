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

// Parses the options shared by run and bench; returns false (after printing
// why) on a usage error.
bool parse(const std::vector<std::string>& args, const char* command, CommonArgs& out) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* what) -> const std::string* {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "onyx %s: %s needs %s\n", command, a.c_str(), what);
        return nullptr;
      }
      return &args[++i];
    };
    try {
      if (a == "--input" || a == "-i") {
        const std::string* v = value("NAME=FILE.npy");
        if (!v) return false;
        const size_t eq = v->find('=');
        if (eq == std::string::npos) {
          std::fprintf(stderr, "onyx %s: --input expects NAME=FILE.npy, got '%s'\n", command, v->c_str());
          return false;
        }
        out.inputs.emplace_back(v->substr(0, eq), v->substr(eq + 1));
      } else if (a == "--output-dir" || a == "-o") {
        const std::string* v = value("a folder");
        if (!v) return false;
        out.output_dir = *v;
      } else if (a == "-t" || a == "--threads") {
        const std::string* v = value("a number");
        if (!v) return false;
        out.threads = std::stoi(*v);
      } else if (a == "-r" || a == "--runs") {
        const std::string* v = value("a number");
        if (!v) return false;
        out.runs = std::max(1, std::stoi(*v));
      } else if (a == "--warmup") {
        const std::string* v = value("a number");
        if (!v) return false;
        out.warmup = std::max(0, std::stoi(*v));
      } else if (a == "--profile") {
        const std::string* v = value("a file prefix");
        if (!v) return false;
        out.profile_prefix = *v;
      } else if (a == "--seed") {
        const std::string* v = value("a number");
        if (!v) return false;
        out.seed = std::stoull(*v);
      } else if (!a.empty() && a[0] == '-') {
        std::fprintf(stderr, "onyx %s: unknown option '%s'\n", command, a.c_str());
        return false;
      } else if (out.model.empty()) {
        out.model = a;
      } else {
        std::fprintf(stderr, "onyx %s: unexpected argument '%s'\n", command, a.c_str());
        return false;
      }
    } catch (const std::exception&) {
      std::fprintf(stderr, "onyx %s: %s expects a number, got '%s'\n", command, a.c_str(), args[i].c_str());
      return false;
    }
  }
  if (out.model.empty()) {
    std::fprintf(stderr, "onyx %s: no MODEL given\n", command);
    return false;
  }
  return true;
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
  if (!parse(arg_list, "run", args)) return kExitUsage;
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
  if (!parse(arg_list, "bench", args)) return kExitUsage;
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
