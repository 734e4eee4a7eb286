// A model repository laid out as Triton's: ROOT/NAME/VERSION/model.onnx, with
// an optional ROOT/NAME/config.pbtxt. Models are loaded and unloaded whole
// (every version its version policy serves), while requests go on: a request
// holds its model until it is answered.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "model_config.h"
#include "onyx/session.h"
#include "scheduler.h"
#include "statistics.h"

namespace onyx::serving {

struct RepositoryOptions {
  int64_t default_max_batch_size = 4;  // for models without max_batch_size (Triton's default)
  size_t default_max_queue_size = 1024;
  int64_t default_intra_op_threads = 0;  // 0: onyx's default
  std::vector<std::string> default_providers;
};

struct ServedModel {
  std::string name;
  int64_t version = 0;
  std::string path;
  ModelConfig config;
  std::shared_ptr<InferenceSession> session;
  Statistics statistics;
  std::unique_ptr<Scheduler> scheduler;
};

struct ModelState {
  std::string name;
  int64_t version = 0;  // 0: the model as a whole (it has no loadable version)
  std::string state;    // READY, UNAVAILABLE
  std::string reason;
};

class Repository {
 public:
  Repository(std::string root, RepositoryOptions options);
  ~Repository();

  // Model names: the folders under the root.
  std::vector<std::string> names() const;
  // Loads (or reloads) every served version of `name`. Throws ServeError:
  // 404 when the repository has no such model, 400 with the reason when it
  // does not load (the model is then UNAVAILABLE with that reason).
  void load(const std::string& name);
  void unload(const std::string& name);
  // The loaded model; `version` empty means the newest loaded. Throws
  // ServeError(404) naming the model or version.
  std::shared_ptr<ServedModel> get(const std::string& name, const std::string& version = "") const;
  std::vector<int64_t> versions(const std::string& name) const;
  std::vector<ModelState> index() const;
  std::vector<std::shared_ptr<ServedModel>> loaded() const;
  // Every model that was asked to load is READY.
  bool ready() const;
  // Unloads everything (finishing queued requests).
  void unload_all();

  const std::string& root() const { return root_; }

 private:
  std::vector<std::shared_ptr<ServedModel>> load_versions(const std::string& name) const;

  std::string root_;
  RepositoryOptions options_;
  mutable std::mutex mutex_;
  std::map<std::string, std::map<int64_t, std::shared_ptr<ServedModel>>> models_;
  std::map<std::string, std::string> failures_;  // name -> why it did not load
};

}  // namespace onyx::serving
