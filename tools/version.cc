// `onyx version`: the version, and with --verbose the execution providers
// this build can use.
#include <cstdio>

#include "cli.h"

namespace onyx::cli {

int version_command(const std::vector<std::string>& args) {
  bool verbose = false;
  CommandLine command_line("version", "Prints the version of onyx (also 'onyx --version').");
  command_line.flag(
      {"-v", "--verbose"},
      "also list the execution providers this build can use, most preferred first, and whether it has `onyx serve`",
      &verbose);
  command_line.example("onyx version --verbose");
  if (!command_line.parse(args)) return kExitOk;
  std::printf("onyx %s\n", version());
  if (verbose) {
    std::string providers;
    for (const std::string& p : available_providers()) providers += (providers.empty() ? "" : ", ") + p;
    std::printf("providers: %s\n", providers.c_str());
#ifdef ONYX_SERVE
    std::printf("server: onyx serve (HTTP, Open Inference Protocol)\n");
#else
    std::printf("server: not built (needs libcpp-httplib-dev and nlohmann-json3-dev)\n");
#endif
  }
  return kExitOk;
}

}  // namespace onyx::cli
