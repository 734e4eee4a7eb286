#include "server.h"

#include <httplib.h>

#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "protocol.h"

namespace onyx::serving {
namespace {

using json = nlohmann::json;

// httplib's connection queue, bounded: `threads` serve connections, at most
// `max_pending` accepted ones wait, and past that the accept loop waits too
// (new clients then queue in the kernel's backlog rather than in memory).
class BoundedTaskQueue : public httplib::TaskQueue {
 public:
  BoundedTaskQueue(size_t threads, size_t max_pending) : max_pending_(max_pending) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }
  ~BoundedTaskQueue() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock<std::mutex> lock(mutex_);
    space_.wait(lock, [&] { return jobs_.size() < max_pending_ || shutdown_; });
    jobs_.push_back(std::move(fn));
    lock.unlock();
    ready_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      shutdown_ = true;
    }
    ready_.notify_all();
    space_.notify_all();
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
    threads_.clear();
  }

 private:
  void work() {
    while (true) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return !jobs_.empty() || shutdown_; });
        if (jobs_.empty()) return;  // shut down, nothing left
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      space_.notify_one();
      fn();
    }
  }

  size_t max_pending_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::condition_variable space_;
  std::deque<std::function<void()>> jobs_;
  bool shutdown_ = false;
  std::vector<std::thread> threads_;
};

uint64_t nanoseconds_since(Clock::time_point start) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
}

void reply_json(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void reply_error(httplib::Response& res, int status, const std::string& message) {
  reply_json(res, status, error_json(message));
}

// The URL's model name and optional version (regex groups 1 and 2).
std::pair<std::string, std::string> model_and_version(const httplib::Request& req) {
  std::string name = req.matches.size() > 1 ? req.matches[1].str() : "";
  std::string version = req.matches.size() > 2 ? req.matches[2].str() : "";
  return {name, version};
}

json duration_json(const Duration& d) { return json{{"count", d.count}, {"ns", d.ns}}; }

std::string label(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

template <size_t N>
void write_histogram(std::ostringstream& out, const char* name, const std::string& labels, const Histogram<N>& h) {
  for (size_t i = 0; i < N; ++i) {
    out << name << "_bucket{" << labels << ",le=\"" << h.bounds[i] << "\"} " << h.counts[i] << "\n";
  }
  out << name << "_bucket{" << labels << ",le=\"+Inf\"} " << h.total << "\n";
  out << name << "_sum{" << labels << "} " << h.sum << "\n";
  out << name << "_count{" << labels << "} " << h.total << "\n";
}

}  // namespace

struct Server::Impl {
  explicit Impl(ServerOptions o) : options(std::move(o)), repository(options.repository, options.repository_options) {}

  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;

  // Every route's errors become a status and {"error": message}.
  Handler guarded(Handler inner) {
    return [inner](const httplib::Request& req, httplib::Response& res) {
      try {
        inner(req, res);
      } catch (const ServeError& e) {
        reply_error(res, e.http_status(), e.what());
      } catch (const Error& e) {
        reply_error(res, e.code() == StatusCode::kInvalidArgument ? 400 : 500, e.what());
      } catch (const std::bad_alloc&) {
        reply_error(res, 503, "the server ran out of memory for this request");
      } catch (const std::exception& e) {
        reply_error(res, 500, e.what());
      }
    };
  }

  void infer(const httplib::Request& req, httplib::Response& res) {
    const Clock::time_point start = Clock::now();
    const auto [name, version] = model_and_version(req);
    std::shared_ptr<ServedModel> model = repository.get(name, version);
    try {
      std::optional<size_t> json_length;
      if (req.has_header("Inference-Header-Content-Length")) {
        const std::string text = req.get_header_value("Inference-Header-Content-Length");
        size_t length = 0;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), length);
        if (ec != std::errc() || ptr != text.data() + text.size()) {
          throw ServeError(400, "Inference-Header-Content-Length is '" + text + "', not a byte count");
        }
        json_length = length;
      }
      ParsedRequest parsed = parse_infer_request(req.body, json_length, *model->session, model->config);
      parsed.request->arrival = start;
      std::future<std::vector<Value>> result = model->scheduler->submit(std::move(parsed.request));
      const std::vector<Value> values = result.get();
      Response response = make_infer_response(model->name, model->version, parsed.id, parsed.outputs, values);
      if (response.json_length.has_value()) {
        res.set_header("Inference-Header-Content-Length", std::to_string(*response.json_length));
        res.set_content(std::move(response.body), "application/octet-stream");
      } else {
        res.set_content(std::move(response.body), "application/json");
      }
      res.status = 200;
      model->statistics.record_request(true, nanoseconds_since(start));
    } catch (...) {
      model->statistics.record_request(false, nanoseconds_since(start));
      throw;
    }
  }

  std::string statistics_json(const std::string& name, const std::string& version) {
    std::vector<std::shared_ptr<ServedModel>> models;
    if (name.empty()) {
      models = repository.loaded();
    } else if (version.empty()) {
      for (int64_t v : repository.versions(name)) models.push_back(repository.get(name, std::to_string(v)));
      if (models.empty()) models.push_back(repository.get(name));  // throws the reason
    } else {
      models.push_back(repository.get(name, version));
    }
    json list = json::array();
    for (const auto& model : models) {
      const Statistics::Snapshot s = model->statistics.snapshot();
      json batches = json::array();
      for (const auto& [size, d] : s.batches) {
        batches.push_back(json{{"batch_size", size},
                               {"compute_input", duration_json({d.count, 0})},
                               {"compute_infer", duration_json(d)},
                               {"compute_output", duration_json({d.count, 0})}});
      }
      list.push_back(json{{"name", model->name},
                          {"version", std::to_string(model->version)},
                          {"last_inference", s.last_inference_ms},
                          {"inference_count", s.inference_count},
                          {"execution_count", s.execution_count},
                          {"inference_stats", json{{"success", duration_json(s.success)},
                                                   {"fail", duration_json(s.fail)},
                                                   {"queue", duration_json(s.queue)},
                                                   {"compute_input", duration_json({s.compute.count, 0})},
                                                   {"compute_infer", duration_json(s.compute)},
                                                   {"compute_output", duration_json({s.compute.count, 0})},
                                                   {"cache_hit", duration_json({})},
                                                   {"cache_miss", duration_json({})}}},
                          {"batch_stats", batches}});
    }
    return json{{"model_stats", list}}.dump();
  }

  std::string metrics_text() {
    std::ostringstream out;
    const auto models = repository.loaded();
    auto each = [&](const char* name, const char* type, const char* help, const auto& value) {
      out << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
      for (const auto& model : models) {
        const std::string labels =
            "model=\"" + label(model->name) + "\",version=\"" + std::to_string(model->version) + "\"";
        value(labels, *model);
      }
    };
    std::map<const ServedModel*, Statistics::Snapshot> snapshot_of;
    for (const auto& model : models) snapshot_of[model.get()] = model->statistics.snapshot();
    auto counter = [&](const char* name, const char* help, auto field) {
      each(name, "counter", help, [&](const std::string& labels, const ServedModel& m) {
        out << name << "{" << labels << "} " << field(snapshot_of[&m]) << "\n";
      });
    };
    counter("onyx_inference_request_success_total", "Inference requests answered with outputs.",
            [](const Statistics::Snapshot& s) { return s.success.count; });
    counter("onyx_inference_request_failure_total", "Inference requests answered with an error.",
            [](const Statistics::Snapshot& s) { return s.fail.count; });
    counter("onyx_inference_count_total", "Batch rows inferred (a request of batch 4 counts 4).",
            [](const Statistics::Snapshot& s) { return s.inference_count; });
    counter("onyx_inference_exec_count_total", "Session runs (a dynamic batch of several requests counts 1).",
            [](const Statistics::Snapshot& s) { return s.execution_count; });
    each("onyx_inference_queue_size", "gauge", "Requests waiting in the model's queue now.",
         [&](const std::string& labels, const ServedModel& m) {
           out << "onyx_inference_queue_size{" << labels << "} " << m.scheduler->queued() << "\n";
         });
    each("onyx_inference_request_duration_seconds", "histogram", "Request latency, arrival to response.",
         [&](const std::string& labels, const ServedModel& m) {
           write_histogram(out, "onyx_inference_request_duration_seconds", labels, snapshot_of[&m].request_seconds);
         });
    each("onyx_inference_queue_duration_seconds", "histogram", "Time a request waited before its run started.",
         [&](const std::string& labels, const ServedModel& m) {
           write_histogram(out, "onyx_inference_queue_duration_seconds", labels, snapshot_of[&m].queue_seconds);
         });
    each("onyx_inference_batch_size", "histogram", "Rows per session run (dynamic batches included).",
         [&](const std::string& labels, const ServedModel& m) {
           write_histogram(out, "onyx_inference_batch_size", labels, snapshot_of[&m].batch_sizes);
         });
    out << "# HELP onyx_http_requests_total HTTP requests answered, by status code.\n"
        << "# TYPE onyx_http_requests_total counter\n";
    {
      std::lock_guard<std::mutex> lock(codes_mutex);
      for (const auto& [code, count] : http_codes)
        out << "onyx_http_requests_total{code=\"" << code << "\"} " << count << "\n";
    }
    return out.str();
  }

  void routes() {
    const std::string model = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";
    http.Get("/v2/health/live", guarded([](const httplib::Request&, httplib::Response& res) { res.status = 200; }));
    http.Get("/v2/health/ready", guarded([this](const httplib::Request&, httplib::Response& res) {
               if (repository.ready()) {
                 res.status = 200;
               } else {
                 reply_error(res, 503, "a model failed to load; see POST /v2/repository/index");
               }
             }));
    http.Get("/v2", guarded([](const httplib::Request&, httplib::Response& res) {
               reply_json(
                   res, 200,
                   json{{"name", "onyx"},
                        {"version", version()},
                        {"extensions", {"binary_tensor_data", "model_repository", "statistics", "model_configuration"}}}
                       .dump());
             }));
    http.Get(model, guarded([this](const httplib::Request& req, httplib::Response& res) {
               const auto [name, v] = model_and_version(req);
               auto served = repository.get(name, v);
               std::vector<int64_t> versions =
                   v.empty() ? repository.versions(name) : std::vector<int64_t>{served->version};
               reply_json(res, 200, model_metadata_json(name, versions, *served->session));
             }));
    http.Get(model + "/ready", guarded([this](const httplib::Request& req, httplib::Response& res) {
               const auto [name, v] = model_and_version(req);
               repository.get(name, v);  // throws when not loaded
               res.status = 200;
             }));
    http.Get(model + "/config", guarded([this](const httplib::Request& req, httplib::Response& res) {
               const auto [name, v] = model_and_version(req);
               auto served = repository.get(name, v);
               reply_json(res, 200, model_config_json(served->config, *served->session));
             }));
    http.Get(R"(/v2/models(?:/([^/]+)(?:/versions/([^/]+))?)?/stats)",
             guarded([this](const httplib::Request& req, httplib::Response& res) {
               const auto [name, v] = model_and_version(req);
               reply_json(res, 200, statistics_json(name, v));
             }));
    http.Post(model + "/infer",
              guarded([this](const httplib::Request& req, httplib::Response& res) { infer(req, res); }));
    http.Post("/v2/repository/index", guarded([this](const httplib::Request&, httplib::Response& res) {
                json list = json::array();
                for (const ModelState& s : repository.index()) {
                  json entry{{"name", s.name}, {"state", s.state}};
                  if (s.version > 0) entry["version"] = std::to_string(s.version);
                  if (!s.reason.empty()) entry["reason"] = s.reason;
                  list.push_back(entry);
                }
                reply_json(res, 200, list.dump());
              }));
    http.Post(R"(/v2/repository/models/([^/]+)/load)",
              guarded([this](const httplib::Request& req, httplib::Response& res) {
                const std::string name = req.matches[1].str();
                repository.load(name);
                log("loaded model '" + name + "'");
                res.status = 200;
              }));
    http.Post(R"(/v2/repository/models/([^/]+)/unload)",
              guarded([this](const httplib::Request& req, httplib::Response& res) {
                const std::string name = req.matches[1].str();
                repository.unload(name);
                log("unloaded model '" + name + "'");
                res.status = 200;
              }));
    http.Get("/metrics", guarded([this](const httplib::Request&, httplib::Response& res) {
               res.status = 200;
               res.set_content(metrics_text(), "text/plain; version=0.0.4");
             }));
    http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      if (res.status == 413) {
        reply_error(res, 413,
                    "the request body is larger than the server's limit of " +
                        std::to_string(options.max_request_bytes) + " bytes (onyx serve --max-request-mb)");
      } else if (res.status == 404) {
        reply_error(res, 404,
                    "no route " + req.method + " " + req.path + " (the Open Inference Protocol's are under /v2)");
      } else {
        reply_error(res, res.status,
                    res.status == 400 ? std::string("malformed HTTP request (a POST needs a Content-Length, even 0)")
                                      : "HTTP error " + std::to_string(res.status));
      }
    });
    http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      {
        std::lock_guard<std::mutex> lock(codes_mutex);
        ++http_codes[res.status];
      }
      if (options.verbose) log(req.method + " " + req.path + " " + std::to_string(res.status));
    });
    http.set_payload_max_length(options.max_request_bytes);
    http.set_keep_alive_max_count(1000);
    // Headers and body go out in separate writes: without this, Nagle's
    // algorithm and the client's delayed ACK add 40 ms to each response.
    http.set_tcp_nodelay(true);
    const size_t threads = options.http_threads;
    const size_t pending = options.max_pending_connections;
    http.new_task_queue = [threads, pending] { return new BoundedTaskQueue(threads, pending); };
  }

  void log(const std::string& line) {
    std::lock_guard<std::mutex> lock(log_mutex);
    std::fprintf(stderr, "onyx serve: %s\n", line.c_str());
    std::fflush(stderr);
  }

  ServerOptions options;
  Repository repository;
  httplib::Server http;
  std::mutex log_mutex;
  std::mutex codes_mutex;
  std::map<int, uint64_t> http_codes;
  std::atomic<bool> stop_requested{false};
};

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() = default;

void Server::run(const std::function<void(int port)>& on_listening) {
  Impl& s = *impl_;
  if (!s.options.load_none) {
    for (const std::string& name : s.options.models.empty() ? s.repository.names() : s.options.models) {
      try {
        s.repository.load(name);
        for (int64_t v : s.repository.versions(name)) {
          const auto model = s.repository.get(name, std::to_string(v));
          const ModelConfig& c = model->config;
          s.log("loaded model '" + name + "' version " + std::to_string(v) + ": " +
                (c.max_batch_size > 0 ? "batches up to " + std::to_string(c.max_batch_size) +
                                            (c.dynamic_batching ? ", dynamic batching (delay " +
                                                                      std::to_string(c.max_queue_delay_us) + " us)"
                                                                : ", no dynamic batching")
                                      : std::string("not batched")) +
                ", " + std::to_string(c.instance_count) + " instance(s), queue up to " +
                std::to_string(c.max_queue_size));
        }
      } catch (const ServeError& e) {
        s.log(std::string("error: ") + e.what());
      }
    }
  }
  s.routes();
  const int port = s.options.port == 0 ? s.http.bind_to_any_port(s.options.host)
                                       : (s.http.bind_to_port(s.options.host, s.options.port) ? s.options.port : -1);
  if (port < 0) {
    throw std::runtime_error("cannot listen on " + s.options.host + ":" + std::to_string(s.options.port) +
                             " (is the port in use?)");
  }
  on_listening(port);
  if (!s.stop_requested) s.http.listen_after_bind();
  s.log("stopped taking requests; unloading models");
  s.repository.unload_all();
}

void Server::stop() {
  impl_->stop_requested = true;
  impl_->http.stop();
}

}  // namespace onyx::serving
