// Shared pieces of the `onyx` command: the subcommands, .npy files, random
// inputs shaped by a model, and value printing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "command_line.h"
#include "onyx/session.h"

namespace onyx::cli {

// Each subcommand parses and checks all of its arguments before it loads a
// model or writes anything: a bad command line throws UsageError.
int run_command(const std::vector<std::string>& args);
int inspect_command(const std::vector<std::string>& args);
int bench_command(const std::vector<std::string>& args);
int conformance_command(const std::vector<std::string>& args);
int operators_command(const std::vector<std::string>& args);
int optimize_command(const std::vector<std::string>& args);
int version_command(const std::vector<std::string>& args);
int serve_command(const std::vector<std::string>& args);
int generate_command(const std::vector<std::string>& args);
int chat_command(const std::vector<std::string>& args);

// Reads / writes NumPy .npy files (little-endian numeric and bool dtypes).
Result<Tensor> read_npy(const std::string& path);
Status write_npy(const Tensor& tensor, const std::string& path);

// Seeded random feeds for every model input: symbolic dims become 1, floats
// are uniform in [0, 1), integers 0 or 1 (valid as ids, masks and segment ids alike), strings "a".
Result<Feeds> random_feeds(const InferenceSession& session, uint64_t seed);

// "float[1,1000] 0.1 0.2 ... " (first `count` values).
std::string preview(const Value& value, int count = 6);

// Peak resident memory of this process in bytes (VmHWM).
int64_t peak_rss_bytes();

// Exit codes: success, a failure while working (a model that does not load,
// an output folder that cannot be made), a bad command line.
constexpr int kExitOk = 0;
constexpr int kExitFailure = 1;
constexpr int kExitUsage = 2;

}  // namespace onyx::cli
