#include "repository.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace onyx::serving {
namespace fs = std::filesystem;

namespace {

bool version_number(const std::string& text, int64_t* version) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *version);
  return ec == std::errc() && ptr == end && *version > 0;
}

}  // namespace

Repository::Repository(std::string root, RepositoryOptions options)
    : root_(std::move(root)), options_(std::move(options)) {}

Repository::~Repository() { unload_all(); }

std::vector<std::string> Repository::names() const {
  std::vector<std::string> names;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(root_, error)) {
    const std::string name = entry.path().filename().string();
    // Hidden folders (.git, editors' and notebooks' caches) are not models.
    if (entry.is_directory(error) && !name.starts_with('.')) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::shared_ptr<ServedModel>> Repository::load_versions(const std::string& name) const {
  const fs::path folder = fs::path(root_) / name;
  ModelConfig config;
  const fs::path config_path = folder / "config.pbtxt";
  if (fs::exists(config_path)) {
    std::ifstream in(config_path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    config = parse_model_config(text.str(), config_path.string());
    if (!config.name.empty() && config.name != name) {
      throw ServeError(400, config_path.string() + ": name is '" + config.name + "' but the folder is '" + name + "'");
    }
  }
  config.name = name;
  std::vector<int64_t> available;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(folder, error)) {
    int64_t version = 0;
    if (entry.is_directory(error) && version_number(entry.path().filename().string(), &version) &&
        fs::exists(entry.path() / config.default_model_filename)) {
      available.push_back(version);
    }
  }
  std::sort(available.begin(), available.end());
  if (available.empty()) {
    throw ServeError(400, "model '" + name + "' has no version folder (" + name + "/1/" +
                              config.default_model_filename + ") in " + root_);
  }
  std::vector<int64_t> chosen;
  switch (config.version_policy) {
    case ModelConfig::VersionPolicy::kAll:
      chosen = available;
      break;
    case ModelConfig::VersionPolicy::kLatest: {
      const size_t count = std::min<size_t>(available.size(), static_cast<size_t>(config.latest_versions));
      chosen.assign(available.end() - static_cast<std::ptrdiff_t>(count), available.end());
      break;
    }
    case ModelConfig::VersionPolicy::kSpecific:
      for (int64_t v : config.specific_versions) {
        if (std::find(available.begin(), available.end(), v) == available.end()) {
          throw ServeError(400, "model '" + name + "': version_policy names version " + std::to_string(v) +
                                    ", which has no folder with " + config.default_model_filename);
        }
        chosen.push_back(v);
      }
      break;
  }
  std::vector<std::shared_ptr<ServedModel>> served;
  for (int64_t version : chosen) {
    auto model = std::make_shared<ServedModel>();
    model->name = name;
    model->version = version;
    model->path = (folder / std::to_string(version) / config.default_model_filename).string();
    model->config = config;
    SessionOptions session_options;
    const int64_t threads = config.intra_op_threads > 0 ? config.intra_op_threads : options_.default_intra_op_threads;
    session_options.intra_op_num_threads = static_cast<int>(threads);
    const std::vector<std::string>& providers =
        config.providers.empty() ? options_.default_providers : config.providers;
    try {
      model->session = InferenceSession::from_file(model->path, session_options, providers);
    } catch (const std::exception& e) {
      throw ServeError(400, "model '" + name + "' version " + std::to_string(version) + " does not load: " + e.what());
    }
    complete_model_config(model->config, *model->session, options_.default_max_batch_size);
    SchedulerOptions scheduling;
    scheduling.max_batch_size = model->config.max_batch_size;
    scheduling.dynamic_batching = model->config.dynamic_batching;
    scheduling.max_queue_delay = std::chrono::microseconds(model->config.max_queue_delay_us);
    for (int64_t size : model->config.preferred_batch_sizes) {
      scheduling.preferred_batch_size = std::max(scheduling.preferred_batch_size, size);
    }
    scheduling.max_queue_size = model->config.max_queue_size > 0 ? static_cast<size_t>(model->config.max_queue_size)
                                                                 : options_.default_max_queue_size;
    model->config.max_queue_size = static_cast<int64_t>(scheduling.max_queue_size);
    scheduling.instance_count = model->config.instance_count;
    model->scheduler = std::make_unique<Scheduler>(model->session, scheduling, &model->statistics);
    served.push_back(std::move(model));
  }
  return served;
}

void Repository::load(const std::string& name) {
  const std::vector<std::string> known = names();
  if (std::find(known.begin(), known.end(), name) == known.end()) {
    throw ServeError(404, "the repository " + root_ + " has no model '" + name + "'");
  }
  std::vector<std::shared_ptr<ServedModel>> served;
  try {
    served = load_versions(name);
  } catch (const ServeError& e) {
    std::lock_guard<std::mutex> lock(mutex_);
    failures_[name] = e.what();
    throw;
  }
  std::map<int64_t, std::shared_ptr<ServedModel>> versions;
  for (auto& model : served) versions[model->version] = model;
  std::map<int64_t, std::shared_ptr<ServedModel>> previous;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    failures_.erase(name);
    previous = std::move(models_[name]);
    models_[name] = std::move(versions);
  }
  // The versions replaced finish what they have queued.
  for (auto& [version, model] : previous) model->scheduler->stop();
}

void Repository::unload(const std::string& name) {
  std::map<int64_t, std::shared_ptr<ServedModel>> previous;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = models_.find(name);
    if (it == models_.end()) {
      if (failures_.erase(name) > 0) return;
      throw ServeError(400, "model '" + name + "' is not loaded");
    }
    previous = std::move(it->second);
    models_.erase(it);
  }
  for (auto& [version, model] : previous) model->scheduler->stop();
}

std::shared_ptr<ServedModel> Repository::get(const std::string& name, const std::string& version) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = models_.find(name);
  if (it == models_.end() || it->second.empty()) {
    const auto failed = failures_.find(name);
    if (failed != failures_.end()) throw ServeError(503, "model '" + name + "' is not ready: " + failed->second);
    throw ServeError(404, "no model '" + name + "' is loaded");
  }
  if (version.empty()) return it->second.rbegin()->second;
  int64_t number = 0;
  if (!version_number(version, &number)) {
    throw ServeError(400, "model version '" + version + "' is not a whole number above 0");
  }
  const auto v = it->second.find(number);
  if (v == it->second.end()) {
    std::string served;
    for (const auto& [n, m] : it->second) served += (served.empty() ? "" : ", ") + std::to_string(n);
    throw ServeError(404, "model '" + name + "' has no version " + version + " loaded (served: " + served + ")");
  }
  return v->second;
}

std::vector<int64_t> Repository::versions(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int64_t> result;
  const auto it = models_.find(name);
  if (it != models_.end()) {
    for (const auto& [version, model] : it->second) result.push_back(version);
  }
  return result;
}

std::vector<ModelState> Repository::index() const {
  std::vector<ModelState> states;
  const std::vector<std::string> all = names();
  std::lock_guard<std::mutex> lock(mutex_);
  for (const std::string& name : all) {
    const auto it = models_.find(name);
    if (it != models_.end()) {
      for (const auto& [version, model] : it->second) states.push_back({name, version, "READY", ""});
      continue;
    }
    const auto failed = failures_.find(name);
    states.push_back({name, 0, "UNAVAILABLE", failed != failures_.end() ? failed->second : "unloaded"});
  }
  return states;
}

std::vector<std::shared_ptr<ServedModel>> Repository::loaded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::shared_ptr<ServedModel>> result;
  for (const auto& [name, versions] : models_) {
    for (const auto& [version, model] : versions) result.push_back(model);
  }
  return result;
}

bool Repository::ready() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failures_.empty();
}

void Repository::unload_all() {
  std::map<std::string, std::map<int64_t, std::shared_ptr<ServedModel>>> previous;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    previous = std::move(models_);
    models_.clear();
  }
  for (auto& [name, versions] : previous) {
    for (auto& [version, model] : versions) model->scheduler->stop();
  }
}

}  // namespace onyx::serving
