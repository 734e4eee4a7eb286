// The `onyx` command: picks the subcommand; each subcommand parses its own
// arguments (`onyx CMD --help`). `python -m onyx` runs this same program.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
};

constexpr Command kCommands[] = {
    {"run", "run a model once and print its inputs, outputs and timings", onyx::cli::run_command},
    {"inspect", "a model's opsets, inputs, outputs, ops, parameters and unsupported ops", onyx::cli::inspect_command},
    {"bench", "latency percentiles, throughput, session creation time and peak memory", onyx::cli::bench_command},
    {"optimize", "write the graph a session runs at an optimization level, as .onnx", onyx::cli::optimize_command},
    {"generate", "generate text from a prompt with a genai model folder, streaming", onyx::cli::generate_command},
    {"chat", "chat with a genai model folder, keeping the KV cache between turns", onyx::cli::chat_command},
    {"conformance", "run ONNX backend test cases, each in its own process", onyx::cli::conformance_command},
    {"serve", "serve a model repository over HTTP (Open Inference Protocol, as Triton)", onyx::cli::serve_command},
    {"operators", "the supported operators, versions and types as Markdown", onyx::cli::operators_command},
    {"version", "the version (and with --verbose the execution providers)", onyx::cli::version_command},
};

const Command* find_command(const std::string& name) {
  for (const Command& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

void print_usage(FILE* out) {
  std::fprintf(out, "usage: onyx <command> [options]\n\nonyx runs ONNX models. Commands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
  std::fprintf(out,
               "  %-12s this help, or a command's with 'onyx help COMMAND'\n"
               "\n"
               "'onyx COMMAND --help' shows a command's options and an example.\n"
               "'python -m onyx' is the same command.\n"
               "exit status: 0 success, 1 failure, 2 bad command line.\n",
               "help");
}

// Runs a subcommand and turns its exceptions into an error line and an exit code.
int dispatch(const Command& command, const std::vector<std::string>& args) {
  try {
    return command.run(args);
  } catch (const onyx::cli::UsageError& e) {
    std::fprintf(stderr, "onyx %s: error: %s\n(see 'onyx %s --help')\n", command.name, e.what(), command.name);
    return onyx::cli::kExitUsage;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onyx %s: error: %s\n", command.name, e.what());
    return onyx::cli::kExitFailure;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fprintf(stderr, "onyx: error: no command given\n\n");
    print_usage(stderr);
    return onyx::cli::kExitUsage;
  }
  const std::string name = args[0];
  args.erase(args.begin());
  if (name == "-h" || name == "--help" || (name == "help" && args.empty())) {
    print_usage(stdout);
    return onyx::cli::kExitOk;
  }
  if (name == "--version") return dispatch(*find_command("version"), args);
  if (name == "help") {
    const Command* command = find_command(args[0]);
    if (command == nullptr || args.size() > 1) {
      std::fprintf(stderr, "onyx help: error: %s\n(see 'onyx --help')\n",
                   command == nullptr
                       ? ("unknown command '" + args[0] + "'").c_str()
                       : ("unexpected argument '" + args[1] + "' (onyx help takes one COMMAND)").c_str());
      return onyx::cli::kExitUsage;
    }
    return dispatch(*command, {"--help"});
  }
  if (const Command* command = find_command(name)) return dispatch(*command, args);
  std::fprintf(stderr, "onyx: error: unknown command '%s'\n\n", name.c_str());
  print_usage(stderr);
  return onyx::cli::kExitUsage;
}
