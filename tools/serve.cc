// `onyx serve MODEL_REPOSITORY`: the Open Inference Protocol (KServe v2) over
// HTTP for a Triton-style model repository (serving/). Built where
// cpp-httplib and nlohmann-json are found; otherwise the command says what
// to install.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <thread>

#include "cli.h"
#ifdef ONYX_SERVE
#include <pthread.h>

#include "serving/server.h"
#endif

namespace onyx::cli {

int serve_command(const std::vector<std::string>& args) {
  std::string repository;
  std::string host = "127.0.0.1";
  int port = 8000;
  int64_t http_threads = 128;
  int64_t max_request_mb = 64;
  int64_t max_queue_size = 1024;
  int64_t default_max_batch_size = 4;
  int64_t threads = 0;
  std::vector<std::string> providers;
  std::vector<std::string> load_models;
  std::string control_mode = "none";
  bool verbose = false;
  CommandLine command_line(
      "serve",
      "Serves the models of MODEL_REPOSITORY over HTTP with the Open Inference Protocol (KServe v2, as Triton "
      "and its tritonclient speak it): health, server and model metadata, inference with JSON or binary tensors, "
      "the model repository API, statistics and Prometheus metrics at /metrics. The repository is laid out as "
      "Triton's: NAME/VERSION/model.onnx with an optional NAME/config.pbtxt (max_batch_size, dynamic_batching, "
      "instance_group, version_policy, parameters). Stops on SIGINT or SIGTERM after answering the requests in "
      "flight.");
  command_line.positional("MODEL_REPOSITORY", "the folder of models (NAME/VERSION/model.onnx)", &repository);
  command_line.option({"--host"}, "ADDRESS", "address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)",
                      [&](const std::string& v) { host = v; });
  command_line.option({"-p", "--port"}, "N", "port to listen on (default 8000; 0 picks a free port)",
                      [&](const std::string& v) { port = static_cast<int>(parse_integer(v, 0, 65535)); });
  command_line.option({"--http-threads"}, "N",
                      "connections served at once; a keep-alive connection holds one (default 128)",
                      [&](const std::string& v) { http_threads = parse_integer(v, 1, 4096); });
  command_line.option({"--max-request-mb"}, "N", "largest request body in MiB; larger ones get 413 (default 64)",
                      [&](const std::string& v) { max_request_mb = parse_integer(v, 1, 1 << 16); });
  command_line.option({"--max-queue-size"}, "N",
                      "requests a model queues before it answers 503, unless its config.pbtxt says (default 1024)",
                      [&](const std::string& v) { max_queue_size = parse_integer(v, 1, 1 << 24); });
  command_line.option({"--default-max-batch-size"}, "N",
                      "max_batch_size of models whose config.pbtxt does not give one and whose inputs and outputs "
                      "all start with a free batch dimension (default 4, as Triton; 0 turns batching off)",
                      [&](const std::string& v) { default_max_batch_size = parse_integer(v, 0, 1 << 20); });
  command_line.option({"-t", "--threads"}, "N",
                      "threads for each model's ops, unless its config.pbtxt says (default 0: one per core)",
                      [&](const std::string& v) { threads = parse_integer(v, 0, 1024); });
  command_line.option({"--providers"}, "A,B", "execution providers for models whose config.pbtxt names none",
                      [&](const std::string& v) {
                        size_t start = 0;
                        while (start <= v.size()) {
                          const size_t comma = v.find(',', start);
                          const std::string name = v.substr(start, comma == std::string::npos ? comma : comma - start);
                          if (name.empty())
                            throw UsageError("expects provider names separated by commas, got '" + v + "'");
                          providers.push_back(name);
                          if (comma == std::string::npos) break;
                          start = comma + 1;
                        }
                      });
  command_line.option({"--model-control-mode"}, "MODE",
                      "none: load every model at start (default); explicit: load only --load-model ones. Models are "
                      "loaded and unloaded through POST /v2/repository/models/NAME/load and /unload in both",
                      [&](const std::string& v) {
                        if (v != "none" && v != "explicit")
                          throw UsageError("expects none or explicit, got '" + v + "'");
                        control_mode = v;
                      });
  command_line.option({"--load-model"}, "NAME", "with --model-control-mode explicit, a model to load at start; repeat",
                      [&](const std::string& v) { load_models.push_back(v); });
  command_line.flag({"-v", "--verbose"}, "log every request's method, path and status", &verbose);
  command_line.example("onyx serve models/ --port 8000");
  command_line.note(
      "Inference: POST /v2/models/NAME[/versions/V]/infer. A client: pip install tritonclient[http]; "
      "tritonclient.http.InferenceServerClient('localhost:8000').");
  if (!command_line.parse(args)) return kExitOk;
  require_folder("MODEL_REPOSITORY", repository);
  if (!load_models.empty() && control_mode != "explicit") {
    throw UsageError("--load-model needs --model-control-mode explicit (otherwise every model loads)");
  }
#ifdef ONYX_SERVE
  serving::ServerOptions options;
  options.repository = repository;
  options.host = host;
  options.port = port;
  options.http_threads = static_cast<size_t>(http_threads);
  options.max_request_bytes = static_cast<size_t>(max_request_mb) << 20;
  options.verbose = verbose;
  options.models = load_models;
  options.load_none = control_mode == "explicit" && load_models.empty();
  options.repository_options.default_max_batch_size = default_max_batch_size;
  options.repository_options.default_max_queue_size = static_cast<size_t>(max_queue_size);
  options.repository_options.default_intra_op_threads = threads;
  options.repository_options.default_providers = providers;

  // SIGINT and SIGTERM go to one thread (blocked everywhere else, so every
  // thread made from here on inherits that), which stops the server.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  serving::Server server(options);
  std::atomic<bool> finished{false};
  std::thread signal_thread([&] {
    int signal = 0;
    sigwait(&stop_signals, &signal);
    if (finished) return;
    std::fprintf(stderr, "onyx serve: %s: finishing the requests in flight, then stopping\n",
                 signal == SIGINT ? "SIGINT" : "SIGTERM");
    server.stop();
  });
  int status = kExitOk;
  try {
    server.run([&](int bound) {
      std::printf("onyx serve: listening on http://%s:%d\n", host.c_str(), bound);
      std::fflush(stdout);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onyx serve: error: %s\n", e.what());
    status = kExitFailure;
  }
  finished = true;
  pthread_kill(signal_thread.native_handle(), SIGTERM);
  signal_thread.join();
  std::fprintf(stderr, "onyx serve: stopped\n");
  return status;
#else
  std::fprintf(stderr,
               "onyx serve: error: this onyx was built without the server; it needs cpp-httplib and nlohmann-json "
               "(apt-get install libcpp-httplib-dev nlohmann-json3-dev, which scripts/setup.sh does) and a rebuild\n");
  return kExitFailure;
#endif
}

}  // namespace onyx::cli
