// `onyx serve`: the Open Inference Protocol (KServe v2) over HTTP, on
// cpp-httplib, for the models of a repository folder.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "repository.h"

namespace onyx::serving {

struct ServerOptions {
  std::string repository;
  std::string host = "127.0.0.1";
  int port = 8000;                        // 0: any free port
  size_t http_threads = 128;              // connections served at once (each keep-alive connection holds one)
  size_t max_pending_connections = 1024;  // accepted, waiting for a thread; the accept loop waits past this
  size_t max_request_bytes = size_t{64} << 20;
  std::vector<std::string> models;  // load only these at start; empty: all
  bool load_none = false;           // start with nothing loaded (load through the repository API)
  RepositoryOptions repository_options;
  bool verbose = false;
};

class Server {
 public:
  explicit Server(ServerOptions options);
  ~Server();

  // Loads the models, binds and serves until stop(); `on_listening` is
  // called with the bound port before the first request is taken. Returns
  // once in-flight requests are answered and the models unloaded.
  void run(const std::function<void(int port)>& on_listening);
  // Stops taking connections; run() returns when what is in flight is done.
  // Safe from any thread.
  void stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx::serving
