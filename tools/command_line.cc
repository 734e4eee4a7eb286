// The `onyx` subcommands' argument parser and usage text (command_line.h).
#include "command_line.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "onyx/status.h"

namespace onyx::cli {
namespace {

constexpr size_t kWidth = 80;

// Appends `text` word by word, wrapped before column kWidth; `column` is
// where the line already stands and every further line starts at `indent`.
void append_wrapped(std::string& out, const std::string& text, size_t indent, size_t column) {
  size_t start = 0;
  bool first = true;
  while (start < text.size()) {
    const size_t end = std::min(text.find(' ', start), text.size());
    const std::string word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (!first && column + 1 + word.size() > kWidth) {
      out += '\n';
      out.append(indent, ' ');
      column = indent;
    } else if (!first) {
      out += ' ';
      ++column;
    }
    out += word;
    column += word.size();
    first = false;
  }
  out += '\n';
}

std::string join(const std::vector<std::string>& words, const char* separator) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : separator) + w;
  return out;
}

}  // namespace

CommandLine::CommandLine(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

CommandLine& CommandLine::option(std::vector<std::string> names, std::string value_name, std::string help,
                                 std::function<void(const std::string&)> set) {
  options_.push_back(Option{std::move(names), std::move(value_name), std::move(help), std::move(set), nullptr});
  return *this;
}

CommandLine& CommandLine::flag(std::vector<std::string> names, std::string help, bool* target) {
  options_.push_back(Option{std::move(names), "", std::move(help), nullptr, target});
  return *this;
}

CommandLine& CommandLine::positional(std::string name, std::string help, std::string* target, bool required) {
  positionals_.push_back(Positional{std::move(name), std::move(help), target, required});
  return *this;
}

CommandLine& CommandLine::note(std::string text) {
  notes_.push_back(std::move(text));
  return *this;
}

CommandLine& CommandLine::example(std::string command_line) {
  examples_.push_back(std::move(command_line));
  return *this;
}

const CommandLine::Option* CommandLine::find(const std::string& name) const {
  for (const Option& o : options_) {
    if (std::find(o.names.begin(), o.names.end(), name) != o.names.end()) return &o;
  }
  return nullptr;
}

bool CommandLine::parse(const std::vector<std::string>& args) {
  // The first problem is kept and reported once the whole line has been read,
  // so that --help after a mistake still shows the help.
  std::string error;
  size_t next_positional = 0;
  bool only_positionals = false;  // after "--"
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (!only_positionals && (word == "-h" || word == "--help")) {
      std::fputs(usage().c_str(), stdout);
      return false;
    }
    if (!error.empty()) continue;
    if (!only_positionals && word == "--") {
      only_positionals = true;
      continue;
    }
    if (!only_positionals && word.size() > 1 && word[0] == '-') {
      std::string name = word;
      std::string value;
      const size_t equals = word.find('=');
      const bool inline_value = word.starts_with("--") && equals != std::string::npos;
      if (inline_value) {
        name = word.substr(0, equals);
        value = word.substr(equals + 1);
      }
      const Option* option = find(name);
      if (option == nullptr) {
        error = str_cat("unknown option '", name, "'");
      } else if (option->flag != nullptr) {
        if (inline_value) {
          error = str_cat(name, " takes no value, got '", word, "'");
        } else {
          *option->flag = true;
        }
      } else if (!inline_value && i + 1 >= args.size()) {
        error = str_cat(name, " expects ", option->value_name, " after it, got nothing");
      } else {
        if (!inline_value) value = args[++i];
        try {
          option->set(value);
        } catch (const UsageError& e) {
          error = str_cat(name, " ", e.what());
        }
      }
      continue;
    }
    if (next_positional >= positionals_.size()) {
      std::vector<std::string> names;
      for (const Positional& p : positionals_) names.push_back(p.name);
      error = str_cat("unexpected argument '", word, "' (onyx ", command_, " takes ",
                      names.empty() ? "no arguments" : join(names, " and "), ")");
      continue;
    }
    *positionals_[next_positional++].target = word;
  }
  for (size_t k = next_positional; error.empty() && k < positionals_.size(); ++k) {
    if (positionals_[k].required) error = str_cat("missing ", positionals_[k].name, " (", positionals_[k].help, ")");
  }
  if (!error.empty()) throw UsageError(error);
  return true;
}

std::string CommandLine::usage() const {
  std::string out = "usage: onyx " + command_;
  for (const Positional& p : positionals_) out += p.required ? " " + p.name : " [" + p.name + "]";
  if (!options_.empty()) out += " [options]";
  out += "\n\n";
  append_wrapped(out, summary_, 0, 0);

  // Two columns: the argument or option as typed, then what it does.
  std::vector<std::pair<std::string, std::string>> arguments;
  for (const Positional& p : positionals_) arguments.emplace_back(p.name, p.help);
  std::vector<std::pair<std::string, std::string>> options;
  for (const Option& o : options_) {
    options.emplace_back(join(o.names, ", ") + (o.value_name.empty() ? "" : " " + o.value_name), o.help);
  }
  options.emplace_back("-h, --help", "show this help and exit");
  size_t left = 0;
  for (const auto& rows : {arguments, options}) {
    for (const auto& row : rows) left = std::max(left, row.first.size());
  }
  const size_t column = std::min<size_t>(2 + left + 2, 32);
  auto table = [&](const char* title, const std::vector<std::pair<std::string, std::string>>& rows) {
    if (rows.empty()) return;
    out += std::string("\n") + title + ":\n";
    for (const auto& [name, help] : rows) {
      out += "  " + name;
      if (2 + name.size() + 2 > column) {
        out += '\n';
        out.append(column, ' ');
      } else {
        out += std::string(column - 2 - name.size(), ' ');
      }
      append_wrapped(out, help, column, column);
    }
  };
  table("arguments", arguments);
  table("options", options);
  for (const std::string& n : notes_) {
    out += '\n';
    append_wrapped(out, n, 0, 0);
  }
  if (!examples_.empty()) out += examples_.size() == 1 ? "\nexample:\n" : "\nexamples:\n";
  for (const std::string& e : examples_) out += "  " + e + "\n";
  return out;
}

int64_t parse_integer(const std::string& text, int64_t min, int64_t max) {
  int64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end || value < min || value > max) {
    throw UsageError(str_cat("expects a whole number from ", min, " to ", max, ", got '", text, "'"));
  }
  return value;
}

uint64_t parse_unsigned(const std::string& text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end) {
    throw UsageError(str_cat("expects a whole number from 0 to 2^64-1, got '", text, "'"));
  }
  return value;
}

namespace {

std::filesystem::file_status status_of(const std::string& what, const std::string& path) {
  std::error_code error;
  const std::filesystem::file_status status = std::filesystem::status(path, error);
  if (error && error != std::errc::no_such_file_or_directory) {
    throw UsageError(str_cat(what, " '", path, "' cannot be read: ", error.message()));
  }
  if (path.empty() || !std::filesystem::exists(status)) throw UsageError(str_cat(what, " '", path, "' does not exist"));
  return status;
}

}  // namespace

void require_file(const std::string& what, const std::string& path) {
  if (std::filesystem::is_directory(status_of(what, path))) {
    throw UsageError(str_cat(what, " '", path, "' is a folder, expected a file"));
  }
}

void require_folder(const std::string& what, const std::string& path) {
  if (!std::filesystem::is_directory(status_of(what, path))) {
    throw UsageError(str_cat(what, " '", path, "' is not a folder"));
  }
}

std::string folder_of(const std::string& path) { return std::filesystem::path(path).parent_path().string(); }

void create_folder(const std::string& what, const std::string& folder) {
  if (folder.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(folder, error);
  if (!error && !std::filesystem::is_directory(folder, error)) {
    error = std::make_error_code(std::errc::not_a_directory);
  }
  if (error) throw std::runtime_error(str_cat("cannot create folder '", folder, "' for ", what, ": ", error.message()));
}

}  // namespace onyx::cli
