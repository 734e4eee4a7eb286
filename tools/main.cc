// The `onyx` command: run, inspect, bench and conformance.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli.h"

namespace {

void print_usage() {
  std::printf(
      "usage: onyx <command> [options]\n"
      "\n"
      "commands:\n"
      "  run MODEL [--input NAME=FILE.npy ...] [--output-dir DIR] [--seed N] [-t THREADS] [--profile PREFIX]\n"
      "      run a model once (random inputs where none are given) and print its outputs\n"
      "  inspect MODEL\n"
      "      opsets, inputs and outputs, op histogram, unsupported ops, parameter count\n"
      "  bench MODEL [-r RUNS] [-t THREADS] [--warmup N]\n"
      "      latency percentiles, throughput, session creation time, peak memory\n"
      "  conformance [DIR] [--filter TEXT] [--expected FILE] [--report FILE] [--timeout SECONDS] [-v]\n"
      "      run ONNX backend test cases, each in its own process\n"
      "  optimize IN OUT [--level disable|basic|extended|layout|all] [--stats]\n"
      "      write the graph a session runs at that level (default all), with per-pass statistics\n"
      "  operators\n"
      "      the supported operators, versions and types as Markdown (docs/operators.md)\n"
      "  version\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
    print_usage();
    return args.empty() ? onyx::cli::kExitUsage : onyx::cli::kExitOk;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "run") return onyx::cli::run_command(args);
    if (command == "inspect") return onyx::cli::inspect_command(args);
    if (command == "bench") return onyx::cli::bench_command(args);
    if (command == "conformance") return onyx::cli::conformance_command(args);
    if (command == "operators") return onyx::cli::operators_command(args);
    if (command == "optimize") return onyx::cli::optimize_command(args);
    if (command == "version" || command == "--version") {
      std::printf("onyx %s\n", onyx::version());
      return onyx::cli::kExitOk;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onyx %s: error: %s\n", command.c_str(), e.what());
    return onyx::cli::kExitFailure;
  }
  std::fprintf(stderr, "onyx: unknown command '%s'\n\n", command.c_str());
  print_usage();
  return onyx::cli::kExitUsage;
}
