// Arguments and --help of the `onyx` subcommands. A subcommand declares its
// options and positional arguments once; the same declarations parse the
// command line and write the usage text, so the help names every option the
// parser accepts and nothing else.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace onyx::cli {

// A bad command line. main() prints it as "onyx CMD: error: MESSAGE" with a
// pointer to `onyx CMD --help` and exits with kExitUsage.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CommandLine {
 public:
  // `command` is the subcommand ("run"); `summary` says what it does, one
  // paragraph (wrapped when printed).
  CommandLine(std::string command, std::string summary);

  // An option with a value, e.g. names {"-t", "--threads"}, value_name "N".
  // `set` gets the value and throws UsageError("expects ..., got '...'")
  // when it is bad; the parser puts the option's name in front.
  CommandLine& option(std::vector<std::string> names, std::string value_name, std::string help,
                      std::function<void(const std::string&)> set);
  // An option without a value.
  CommandLine& flag(std::vector<std::string> names, std::string help, bool* target);
  // The next positional argument; required ones come before optional ones.
  CommandLine& positional(std::string name, std::string help, std::string* target, bool required = true);
  // A paragraph printed after the options.
  CommandLine& note(std::string text);
  // A command line printed under "example:".
  CommandLine& example(std::string command_line);

  // Parses `args` (the words after the subcommand). Returns false when -h or
  // --help was given, after printing the usage to stdout; throws UsageError
  // for anything else that is wrong. --help wins wherever it appears.
  bool parse(const std::vector<std::string>& args);

  // "usage: onyx run MODEL [options]" and everything below it.
  std::string usage() const;

 private:
  struct Option {
    std::vector<std::string> names;
    std::string value_name;  // empty for a flag
    std::string help;
    std::function<void(const std::string&)> set;
    bool* flag = nullptr;
  };
  struct Positional {
    std::string name;
    std::string help;
    std::string* target;
    bool required;
  };
  const Option* find(const std::string& name) const;

  std::string command_;
  std::string summary_;
  std::vector<Option> options_;
  std::vector<Positional> positionals_;
  std::vector<std::string> notes_;
  std::vector<std::string> examples_;
};

// The whole of `text` as an integer from `min` to `max`; throws UsageError
// ("expects a whole number from 1 to 256, got 'x'") otherwise.
int64_t parse_integer(const std::string& text, int64_t min, int64_t max);
// The whole of `text` as an unsigned 64-bit integer (a random seed).
uint64_t parse_unsigned(const std::string& text);

// Throws UsageError unless `path` is an existing file (not a folder); `what`
// names the argument it came from ("MODEL", "--expected").
void require_file(const std::string& what, const std::string& path);
// The same for a folder.
void require_folder(const std::string& what, const std::string& path);

// The folder a file `path` goes in ("" for the current folder).
std::string folder_of(const std::string& path);
// Creates `folder` and its missing parents (nothing for "" or a folder that
// exists); throws std::runtime_error naming `what` (the argument) and the
// reason when it cannot.
void create_folder(const std::string& what, const std::string& folder);

}  // namespace onyx::cli
