// `onyx conformance`: runs ONNX backend test cases (model.onnx plus
// test_data_set_*/input_*.pb and output_*.pb), each in its own process so
// that a crash or a hang fails that case only, and compares outputs with the
// suite's tolerances.
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cli.h"
#include "model/reader.h"
#include "model/tensor_proto.h"
#include "ort_conformance_script.h"
#include "providers/testing/test_device.h"

namespace onyx::cli {
namespace {

struct Options {
  std::string dir;
  std::vector<std::string> filters;
  std::string expected_file;
  std::string report_file;
  int timeout_s = 120;
  int jobs = 2;
  bool verbose = false;
  std::string compare_with;  // "onnxruntime": run the same cases through it too
  bool function_bodies = false;  // run ops the ONNX spec defines as functions through their bodies
  std::vector<std::string> providers;  // execution providers in order (empty: the CPU alone)
  double rtol = 1e-3;
  double atol = 1e-7;
};

struct Case {
  std::string name;
  std::string suite;                 // the folder holding the case: node, simple, light, ...
  std::string model;                 // model path
  std::vector<std::string> data_sets;  // folders with input_*.pb / output_*.pb
  std::vector<std::string> flat_outputs;  // light/: <name>_output_N.pb beside the model
  double rtol = 1e-3;
  double atol = 1e-7;
};

// The ONNX suite's own per-model tolerances for light/ (its model test table).
double light_rtol(const std::string& stem) { return stem == "light_densenet121" ? 2e-3 : 1e-3; }

// light/ models come without inputs: the suite feeds each float input
// arange(n)/n in its shape, symbolic dimensions taken as 1.
Result<Feeds> light_inputs(const InferenceSession& session) {
  Feeds feeds;
  for (const ValueMetadata& m : session.inputs()) {
    if (m.type.kind != ValueType::Kind::kTensor || m.type.elem_type != DataType::kFloat) {
      return not_implemented("input '", m.name, "' is not a float tensor; the suite only makes float inputs");
    }
    Shape shape;
    for (int64_t d : m.dims) shape.push_back(d >= 0 ? d : 1);
    ONYX_ASSIGN_OR_RETURN(Tensor t, Tensor::create(DataType::kFloat, shape));
    const int64_t n = t.size();
    for (int64_t i = 0; i < n; ++i) t.data<float>()[i] = static_cast<float>(static_cast<double>(i) / static_cast<double>(n));
    feeds.emplace_back(m.name, Value(std::move(t)));
  }
  return feeds;
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool is_file(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Files named prefix<N>.pb in numeric order.
std::vector<std::string> numbered(const std::string& dir, const std::string& prefix) {
  std::vector<std::pair<int, std::string>> found;
  for (const std::string& n : list_dir(dir)) {
    if (n.rfind(prefix, 0) == 0 && n.size() > prefix.size() + 3 && n.substr(n.size() - 3) == ".pb") {
      const std::string digits = n.substr(prefix.size(), n.size() - prefix.size() - 3);
      if (!digits.empty() && std::all_of(digits.begin(), digits.end(), ::isdigit)) {
        found.emplace_back(std::stoi(digits), dir + "/" + n);
      }
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

// A case folder, a folder of case folders, a light/-style folder, or a root
// holding several of those.
void discover(const std::string& dir, std::vector<Case>& cases, int depth) {
  if (is_file(dir + "/model.onnx")) {
    Case c;
    c.name = dir.substr(dir.find_last_of('/') + 1);
    const std::string parent = dir.substr(0, dir.find_last_of('/'));
    c.suite = parent.substr(parent.find_last_of('/') + 1);
    c.model = dir + "/model.onnx";
    for (const std::string& n : list_dir(dir)) {
      if (n.rfind("test_data_set_", 0) == 0 && is_dir(dir + "/" + n)) c.data_sets.push_back(dir + "/" + n);
    }
    cases.push_back(c);
    return;
  }
  bool flat = false;
  for (const std::string& n : list_dir(dir)) {
    if (n.size() > 5 && n.substr(n.size() - 5) == ".onnx" && is_file(dir + "/" + n)) {
      const std::string stem = n.substr(0, n.size() - 5);
      std::vector<std::string> outs = numbered(dir, stem + "_output_");
      if (outs.empty()) continue;
      Case c;
      c.name = stem;
      c.suite = dir.substr(dir.find_last_of('/') + 1);
      c.model = dir + "/" + n;
      c.flat_outputs = outs;
      c.rtol = light_rtol(stem);
      cases.push_back(c);
      flat = true;
    }
  }
  if (flat || depth > 2) return;
  for (const std::string& n : list_dir(dir)) {
    if (is_dir(dir + "/" + n)) discover(dir + "/" + n, cases, depth + 1);
  }
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Result<Value> load_value(const std::string& path, const ValueType& type) {
  const std::string bytes = read_file(path);
  if (type.kind == ValueType::Kind::kSequence) {
    ONYX_ASSIGN_OR_RETURN(model::SequenceProto seq, model::read_sequence_proto(bytes));
    return model::value_from_sequence_proto(seq);
  }
  if (type.kind == ValueType::Kind::kOptional) {
    ONYX_ASSIGN_OR_RETURN(model::OptionalProto opt, model::read_optional_proto(bytes));
    return model::value_from_optional_proto(opt);
  }
  ONYX_ASSIGN_OR_RETURN(model::TensorProto proto, model::read_tensor_proto(bytes));
  ONYX_ASSIGN_OR_RETURN(Tensor t, model::tensor_from_proto(proto));
  // The proto's bytes die with this function: own the data.
  return Value(t.clone());
}

template <typename T>
double as_double(const Tensor& t, int64_t i) {
  return static_cast<double>(t.data<T>()[i]);
}

double element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat: return as_double<float>(t, i);
    case DataType::kDouble: return as_double<double>(t, i);
    case DataType::kFloat16: return as_double<Float16>(t, i);
    case DataType::kBFloat16: return as_double<BFloat16>(t, i);
    case DataType::kInt8: return as_double<int8_t>(t, i);
    case DataType::kInt16: return as_double<int16_t>(t, i);
    case DataType::kInt32: return as_double<int32_t>(t, i);
    case DataType::kInt64: return as_double<int64_t>(t, i);
    case DataType::kUInt8: return as_double<uint8_t>(t, i);
    case DataType::kUInt16: return as_double<uint16_t>(t, i);
    case DataType::kUInt32: return as_double<uint32_t>(t, i);
    case DataType::kUInt64: return as_double<uint64_t>(t, i);
    case DataType::kBool: return as_double<bool>(t, i);
    default: return static_cast<double>(static_cast<const uint8_t*>(t.raw_data())[i]);
  }
}

std::string compare(const Value& got, const Value& want, const Options& opt, const std::string& what) {
  if (want.is_none()) return got.is_none() ? "" : what + ": expected an empty optional, got " + got.describe();
  if (got.is_none()) return what + ": got an empty optional, expected " + want.describe();
  if (want.is_sequence()) {
    if (!got.is_sequence()) return what + ": expected a sequence, got " + got.describe();
    if (got.items().size() != want.items().size()) {
      return str_cat(what, ": sequence has ", got.items().size(), " items, expected ", want.items().size());
    }
    for (size_t i = 0; i < want.items().size(); ++i) {
      std::string r = compare(got.items()[i], want.items()[i], opt, str_cat(what, "[", i, "]"));
      if (!r.empty()) return r;
    }
    return "";
  }
  if (!got.is_tensor()) return what + ": expected a tensor, got " + got.describe();
  const Tensor& g = got.tensor();
  const Tensor& w = want.tensor();
  if (g.dtype() != w.dtype()) return str_cat(what, ": type ", dtype_name(g.dtype()), ", expected ", dtype_name(w.dtype()));
  if (g.shape() != w.shape()) {
    return str_cat(what, ": shape ", shape_to_string(g.shape()), ", expected ", shape_to_string(w.shape()));
  }
  if (w.dtype() == DataType::kString) {
    for (int64_t i = 0; i < w.size(); ++i) {
      if (g.data<std::string>()[i] != w.data<std::string>()[i]) {
        return str_cat(what, "[", i, "] = \"", g.data<std::string>()[i], "\", expected \"", w.data<std::string>()[i], "\"");
      }
    }
    return "";
  }
  const bool exact = !(w.dtype() == DataType::kFloat || w.dtype() == DataType::kDouble ||
                       w.dtype() == DataType::kFloat16 || w.dtype() == DataType::kBFloat16);
  int64_t mismatches = 0;
  int64_t first = -1;
  for (int64_t i = 0; i < w.size(); ++i) {
    const double a = element(g, i);
    const double b = element(w, i);
    bool ok;
    if (std::isnan(b)) {
      ok = std::isnan(a);
    } else if (std::isinf(b)) {
      ok = a == b;
    } else if (exact) {
      ok = a == b;
    } else {
      ok = std::fabs(a - b) <= opt.atol + opt.rtol * std::fabs(b);
    }
    if (!ok) {
      if (first < 0) first = i;
      ++mismatches;
    }
  }
  if (mismatches == 0) return "";
  return str_cat(what, ": ", mismatches, " of ", w.size(), " values differ; first at ", first, ": got ",
                 element(g, first), ", expected ", element(w, first));
}

// Runs one case in this process; returns "" on success or the reason.
std::string run_case(const Case& c, const Options& opt) {
  try {
    SessionOptions so;
    so.intra_op_num_threads = 1;
    if (opt.function_bodies) so.config_entries["onyx.prefer_function_bodies"] = "1";
    auto session = InferenceSession::from_file(c.model, so, opt.providers);
    auto run_set = [&](const std::vector<std::string>& input_files,
                       const std::vector<std::string>& output_files) -> std::string {
      const auto& inputs = session->inputs();
      if (input_files.size() > inputs.size()) {
        return str_cat("the data set has ", input_files.size(), " inputs, the model takes ", inputs.size());
      }
      Feeds feeds;
      if (!c.flat_outputs.empty()) {
        Result<Feeds> made = light_inputs(*session);
        if (!made.is_ok()) return made.status().message();
        feeds = std::move(made).value();
      }
      for (size_t i = 0; i < input_files.size(); ++i) {
        Result<Value> v = load_value(input_files[i], inputs[i].type);
        if (!v.is_ok()) return "cannot read " + input_files[i] + ": " + v.status().message();
        feeds.emplace_back(inputs[i].name, std::move(v).value());
      }
      std::vector<Value> got;
      Status s = session->run({}, feeds, {}, &got);
      if (!s.is_ok()) return s.message();
      const auto& outputs = session->outputs();
      if (output_files.size() != got.size()) {
        return str_cat("the model gave ", got.size(), " outputs, the data set has ", output_files.size());
      }
      for (size_t i = 0; i < output_files.size(); ++i) {
        Result<Value> want = load_value(output_files[i], outputs[i].type);
        if (!want.is_ok()) return "cannot read " + output_files[i] + ": " + want.status().message();
        Options tolerances = opt;
        tolerances.rtol = c.rtol;
        tolerances.atol = c.atol;
        std::string r = compare(got[i], *want, tolerances, "output '" + outputs[i].name + "'");
        if (!r.empty()) return r;
      }
      return "";
    };
    if (!c.flat_outputs.empty()) return run_set({}, c.flat_outputs);
    for (const std::string& set : c.data_sets) {
      std::string r = run_set(numbered(set, "input_"), numbered(set, "output_"));
      if (!r.empty()) return r;
    }
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

struct Outcome {
  bool passed = false;
  std::string reason;
};

// Forks one child per case; at most `jobs` at a time.
std::vector<Outcome> run_isolated(const std::vector<Case>& cases, const Options& opt) {
  std::vector<Outcome> outcomes(cases.size());
  struct Running {
    size_t index;
    int fd;
  };
  std::map<pid_t, Running> running;
  size_t next = 0;
  auto collect = [&]() {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    auto it = running.find(pid);
    if (it == running.end()) return;
    std::string message;
    char buffer[4096];
    ssize_t n;
    while ((n = read(it->second.fd, buffer, sizeof(buffer))) > 0) message.append(buffer, static_cast<size_t>(n));
    close(it->second.fd);
    Outcome& o = outcomes[it->second.index];
    if (WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      o.reason = sig == SIGALRM ? str_cat("timed out after ", opt.timeout_s, " s")
                                : str_cat("crashed with signal ", sig, " (", strsignal(sig), ")");
    } else if (message.rfind("PASS", 0) == 0) {
      o.passed = true;
    } else if (message.rfind("FAIL ", 0) == 0) {
      o.reason = message.substr(5);
    } else {
      o.reason = str_cat("exited with status ", WEXITSTATUS(status), " without a result");
    }
    if (opt.verbose) {
      std::printf("%s %s%s%s\n", o.passed ? "PASS" : "FAIL", cases[it->second.index].name.c_str(),
                  o.passed ? "" : ": ", o.reason.c_str());
      std::fflush(stdout);
    }
    running.erase(it);
  };
  std::fflush(stdout);
  while (next < cases.size() || !running.empty()) {
    while (next < cases.size() && static_cast<int>(running.size()) < opt.jobs) {
      int fds[2];
      if (pipe(fds) != 0) {
        outcomes[next].reason = "cannot create a pipe";
        ++next;
        continue;
      }
      const pid_t pid = fork();
      if (pid == 0) {
        close(fds[0]);
        alarm(static_cast<unsigned>(opt.timeout_s));
        std::string reason = run_case(cases[next], opt);
        if (reason.size() > 2000) reason = reason.substr(0, 2000) + "...";
        for (char& ch : reason) {
          if (ch == '\n') ch = ' ';
        }
        const std::string message = reason.empty() ? "PASS" : "FAIL " + reason;
        ssize_t written = write(fds[1], message.data(), message.size());
        (void)written;
        close(fds[1]);
        _exit(0);
      }
      close(fds[1]);
      if (pid < 0) {
        close(fds[0]);
        outcomes[next].reason = "cannot fork";
        ++next;
        continue;
      }
      running[pid] = Running{next, fds[0]};
      ++next;
    }
    if (!running.empty()) collect();
  }
  return outcomes;
}

// The expected-failures list: "case_name  # reason" per line.
std::map<std::string, std::string> read_expected(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t hash = line.find('#');
    std::string name = line.substr(0, hash);
    name.erase(name.find_last_not_of(" \t\r") + 1);
    name.erase(0, name.find_first_not_of(" \t"));
    if (name.empty()) continue;
    std::string reason = hash == std::string::npos ? "" : line.substr(hash + 1);
    reason.erase(0, reason.find_first_not_of(" \t"));
    out[name] = reason;
  }
  return out;
}

// Runs the cases through onnxruntime with the Python script built into this
// binary; returns one outcome per case (all failing, with the reason, when
// Python or onnxruntime is missing).
std::vector<Outcome> run_onnxruntime(const std::vector<Case>& cases) {
  std::vector<Outcome> outcomes(cases.size());
  char script_path[] = "/tmp/onyx_ort_script_XXXXXX";
  char list_path[] = "/tmp/onyx_ort_cases_XXXXXX";
  const int script_fd = mkstemp(script_path);
  const int list_fd = mkstemp(list_path);
  if (script_fd < 0 || list_fd < 0) {
    for (Outcome& o : outcomes) o.reason = "cannot create temporary files";
    return outcomes;
  }
  close(script_fd);
  close(list_fd);
  std::ofstream(script_path) << kOrtConformanceScript;
  {
    std::ofstream list(list_path);
    for (const Case& c : cases) {
      std::string sets;
      for (const std::string& s : c.data_sets) sets += (sets.empty() ? "" : "|") + s;
      list << c.name << '\t' << c.model << '\t' << sets << '\t' << c.rtol << '\t' << c.atol << '\t'
           << (c.flat_outputs.empty() ? 0 : 1) << '\n';
    }
  }
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < cases.size(); ++i) index[cases[i].name] = i;
  for (Outcome& o : outcomes) o.reason = "onnxruntime gave no result";
  const std::string command = std::string("python3 ") + script_path + " " + list_path + " 2>&1";
  if (FILE* p = popen(command.c_str(), "r")) {
    char buffer[8192];
    while (fgets(buffer, sizeof(buffer), p)) {
      std::string line = buffer;
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      if (line.rfind("PASS ", 0) == 0) {
        auto it = index.find(line.substr(5));
        if (it != index.end()) outcomes[it->second] = Outcome{true, ""};
      } else if (line.rfind("FAIL ", 0) == 0) {
        const size_t colon = line.find(": ", 5);
        auto it = index.find(line.substr(5, colon == std::string::npos ? std::string::npos : colon - 5));
        if (it != index.end()) outcomes[it->second].reason = colon == std::string::npos ? "" : line.substr(colon + 2);
      } else if (line.find("Error") != std::string::npos) {
        std::fprintf(stderr, "onnxruntime runner: %s\n", line.c_str());
      }
    }
    pclose(p);
  }
  unlink(script_path);
  unlink(list_path);
  return outcomes;
}

std::string default_data_dir() {
  if (const char* env = std::getenv("ONYX_BACKEND_DATA")) return env;
  for (const char* candidate : {"../shared/onnx-backend-data", "../../shared/onnx-backend-data"}) {
    if (is_dir(candidate)) return candidate;
  }
  // The data the installed onnx package ships.
  if (FILE* p = popen("python3 -c \"import onnx.backend.test, os; "
                      "print(os.path.join(os.path.dirname(onnx.backend.test.__file__), 'data'))\" 2>/dev/null",
                      "r")) {
    char buffer[4096] = {0};
    std::string path = fgets(buffer, sizeof(buffer), p) ? buffer : "";
    pclose(p);
    while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
    if (is_dir(path)) return path;
  }
  return "";
}

}  // namespace

int conformance_command(const std::vector<std::string>& args) {
  Options opt;
  CommandLine command_line("conformance",
                           "Runs ONNX backend test cases (a folder holding model.onnx and test_data_set_*/, or "
                           "folders of them, or light/-style model files with their outputs beside them), each in "
                           "its own process so that a crash or a hang fails that case only, and compares the "
                           "outputs with the suite's tolerances. Exits 1 when a case fails (with --expected: when "
                           "a case fails that FILE does not list, or a listed case passes).");
  command_line.positional("DIR",
                          "the cases; by default $ONYX_BACKEND_DATA, ../shared/onnx-backend-data, or the data the "
                          "onnx Python package ships",
                          &opt.dir, false);
  command_line.option({"--filter"}, "TEXT", "only cases whose name contains TEXT; repeat to add more",
                      [&opt](const std::string& v) { opt.filters.push_back(v); });
  command_line.option({"--expected"}, "FILE", "the expected failures, one 'case_name  # reason' a line",
                      [&opt](const std::string& v) { opt.expected_file = v; });
  command_line.option({"--report"}, "FILE",
                      "also write the counts and every failure to FILE; its folder is created if missing",
                      [&opt](const std::string& v) { opt.report_file = v; });
  command_line.option({"--timeout"}, "SECONDS", "a case running longer fails (default 120)",
                      [&opt](const std::string& v) { opt.timeout_s = static_cast<int>(parse_integer(v, 1, 86400)); });
  command_line.option({"-j", "--jobs"}, "N", "cases run at once (default 2)",
                      [&opt](const std::string& v) { opt.jobs = static_cast<int>(parse_integer(v, 1, 256)); });
  command_line.option({"--compare"}, "onnxruntime",
                      "also run every case through onnxruntime (pip) with the same inputs and tolerances, and print "
                      "both pass counts per folder",
                      [&opt](const std::string& v) {
                        if (v != "onnxruntime") throw UsageError("knows only 'onnxruntime', got '" + v + "'");
                        opt.compare_with = v;
                      });
  command_line.flag({"--function-bodies"},
                    "run the ops that the ONNX spec defines as functions through their function bodies instead of "
                    "their kernels",
                    &opt.function_bodies);
  command_line.option({"--providers"}, "NAME,NAME...",
                      "execution providers in order, the CPU the fallback; TestDeviceExecutionProvider and "
                      "TestCompilerExecutionProvider are the simulated device that checks copies between memories",
                      [&opt](const std::string& v) {
                        opt.providers.clear();
                        for (size_t start = 0; start <= v.size();) {
                          const size_t end = std::min(v.find(',', start), v.size());
                          if (end > start) opt.providers.push_back(v.substr(start, end - start));
                          start = end + 1;
                        }
                        if (opt.providers.empty()) throw UsageError("expects provider names, got '" + v + "'");
                      });
  command_line.flag({"-v", "--verbose"}, "print each case's result as it finishes", &opt.verbose);
  command_line.example(
      "onyx conformance ../shared/onnx-backend-data --expected tests/conformance/expected_failures.txt --jobs 2");
  if (!command_line.parse(args)) return kExitOk;

  if (!opt.dir.empty()) require_folder("DIR", opt.dir);
  if (!opt.expected_file.empty()) require_file("--expected", opt.expected_file);
  if (!opt.providers.empty()) {
    // The simulated device is in every build, registered on request.
    for (const std::string& name : opt.providers) {
      if (name == testing::kTestDeviceProvider || name == testing::kTestCompilerProvider) {
        testing::register_test_device_providers();
      }
    }
    std::vector<std::string> known = available_providers();
    for (const char* simulated : {testing::kTestDeviceProvider, testing::kTestCompilerProvider}) {
      if (std::find(known.begin(), known.end(), simulated) == known.end()) known.push_back(simulated);
    }
    std::string names;
    for (const std::string& k : known) names += (names.empty() ? "" : ", ") + k;
    for (const std::string& name : opt.providers) {
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        throw UsageError(str_cat("--providers has unknown provider '", name, "' (known: ", names, ")"));
      }
    }
  }
  if (opt.dir.empty()) opt.dir = default_data_dir();
  if (opt.dir.empty() || !is_dir(opt.dir)) {
    throw UsageError("no test data found: give DIR, or set ONYX_BACKEND_DATA to the folder of the cases");
  }
  if (!opt.report_file.empty()) create_folder("--report", folder_of(opt.report_file));
  std::vector<Case> all;
  discover(opt.dir, all, 0);
  std::vector<Case> cases;
  for (const Case& c : all) {
    bool keep = opt.filters.empty();
    for (const std::string& f : opt.filters) keep = keep || c.name.find(f) != std::string::npos;
    if (keep) cases.push_back(c);
  }
  std::vector<Outcome> outcomes = run_isolated(cases, opt);

  size_t passed = 0;
  for (const Outcome& o : outcomes) passed += o.passed ? 1 : 0;
  const size_t failed = cases.size() - passed;
  std::ostringstream report;
  report << "onyx conformance on " << opt.dir << "\n";
  report << passed << " passed, " << failed << " failed, of " << cases.size() << " cases\n";
  for (size_t i = 0; i < cases.size(); ++i) {
    if (!outcomes[i].passed) report << "FAIL " << cases[i].name << ": " << outcomes[i].reason << "\n";
  }
  bool report_written = true;
  if (!opt.report_file.empty()) {
    std::ofstream out(opt.report_file);
    out << report.str();
    report_written = static_cast<bool>(out);
  }

  int exit_code = failed == 0 ? kExitOk : kExitFailure;
  if (!opt.expected_file.empty()) {
    const auto expected = read_expected(opt.expected_file);
    std::vector<std::string> unexpected, now_passing;
    for (size_t i = 0; i < cases.size(); ++i) {
      const bool listed = expected.count(cases[i].name) > 0;
      if (!outcomes[i].passed && !listed) unexpected.push_back(cases[i].name + ": " + outcomes[i].reason);
      // A random op's output matches numpy's draws now and then by chance:
      // its entry (reason "random op: ...") may pass without failing the run.
      const bool by_chance = listed && expected.at(cases[i].name).starts_with("random op:");
      if (outcomes[i].passed && listed && !by_chance) now_passing.push_back(cases[i].name);
      if (outcomes[i].passed && by_chance) std::printf("passes by chance (random op): %s\n", cases[i].name.c_str());
    }
    for (const auto& u : unexpected) std::printf("NEW FAILURE %s\n", u.c_str());
    for (const auto& p : now_passing) std::printf("NOW PASSES %s (remove it from %s)\n", p.c_str(), opt.expected_file.c_str());
    exit_code = (unexpected.empty() && now_passing.empty()) ? kExitOk : kExitFailure;
    std::printf("expected failures: %zu listed; %zu new failures, %zu listed cases now pass\n", expected.size(),
                unexpected.size(), now_passing.size());
  } else if (!opt.verbose) {
    for (size_t i = 0; i < cases.size(); ++i) {
      if (!outcomes[i].passed) std::printf("FAIL %s: %s\n", cases[i].name.c_str(), outcomes[i].reason.c_str());
    }
  }
  if (!opt.compare_with.empty()) {
    std::vector<Outcome> reference = run_onnxruntime(cases);
    std::map<std::string, std::array<size_t, 3>> per_suite;  // cases, onyx, onnxruntime
    for (size_t i = 0; i < cases.size(); ++i) {
      auto& row = per_suite[cases[i].suite];
      ++row[0];
      row[1] += outcomes[i].passed ? 1 : 0;
      row[2] += reference[i].passed ? 1 : 0;
    }
    std::array<size_t, 3> total{0, 0, 0};
    std::ostringstream table;
    table << "| folder | cases | onyx | onnxruntime |\n|---|---|---|---|\n";
    for (const auto& [suite, row] : per_suite) {
      table << "| " << suite << " | " << row[0] << " | " << row[1] << " | " << row[2] << " |\n";
      for (int k = 0; k < 3; ++k) total[k] += row[k];
    }
    table << "| total | " << total[0] << " | " << total[1] << " | " << total[2] << " |\n";
    std::printf("\n%s", table.str().c_str());
    if (!opt.report_file.empty()) {
      std::ofstream out(opt.report_file, std::ios::app);
      out << "\n" << table.str();
      for (size_t i = 0; i < cases.size(); ++i) {
        if (!reference[i].passed) out << "ONNXRUNTIME FAIL " << cases[i].name << ": " << reference[i].reason << "\n";
      }
    }
  }
  std::printf("conformance: %zu passed, %zu failed\n", passed, failed);
  if (!report_written) {
    std::fprintf(stderr, "onyx conformance: error: cannot write the report to '%s'\n", opt.report_file.c_str());
    return kExitFailure;
  }
  return exit_code;
}

}  // namespace onyx::cli
