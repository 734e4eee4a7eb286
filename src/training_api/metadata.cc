#include "training_api/metadata.h"

namespace onyx::training_api {

namespace {

// The metadata as JSON, or why there is none.
Result<Json> metadata_json(const std::map<std::string, std::string>& properties, const std::string& path,
                           const std::string& kind) {
  auto it = properties.find(kMetadataKey);
  if (it == properties.end()) {
    return invalid_model("'", path, "' is not a ", kind,
                         " model written by onyx.training.artifacts.generate_artifacts (no '", kMetadataKey,
                         "' metadata)");
  }
  Result<Json> json = parse_json(it->second);
  if (!json.is_ok())
    return invalid_model("'", path, "' has malformed '", kMetadataKey, "' metadata: ", json.status().message());
  return json;
}

std::vector<std::string> strings(const Json& json, const char* key) {
  std::vector<std::string> out;
  for (const Json& item : json.at(key).as_array()) out.push_back(item.as_string());
  return out;
}

std::vector<std::pair<std::string, std::string>> string_pairs(const Json& json, const char* key) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, value] : json.at(key).as_object()) out.emplace_back(name, value.as_string());
  return out;
}

// Runs `read` over the JSON; a missing key or a wrong type becomes an error
// naming the file.
template <typename T, typename Read>
Result<T> read_fields(const Json& json, const std::string& path, Read read) {
  try {
    return read(json);
  } catch (const Error& error) {
    return invalid_model("'", path, "' has malformed '", kMetadataKey, "' metadata: ", error.what());
  }
}

}  // namespace

Result<TrainingMetadata> training_metadata(const std::map<std::string, std::string>& properties,
                                           const std::string& path, const std::string& kind) {
  ONYX_ASSIGN_OR_RETURN(Json json, metadata_json(properties, path, kind));
  return read_fields<TrainingMetadata>(json, path, [](const Json& j) {
    TrainingMetadata meta;
    meta.loss = j.at("loss").as_string();
    meta.target = j.at("target").as_string();
    meta.user_outputs = strings(j, "user_outputs");
    meta.parameters = strings(j, "parameters");
    meta.state = strings(j, "state");
    meta.gradients = string_pairs(j, "gradients");
    meta.state_updates = string_pairs(j, "state_updates");
    return meta;
  });
}

Result<OptimizerMetadata> optimizer_metadata(const std::map<std::string, std::string>& properties,
                                             const std::string& path) {
  ONYX_ASSIGN_OR_RETURN(Json json, metadata_json(properties, path, "optimizer"));
  return read_fields<OptimizerMetadata>(json, path, [](const Json& j) {
    OptimizerMetadata meta;
    meta.parameters = strings(j, "parameters");
    meta.states = strings(j, "states");
    if (const Json* rate = j.find("default_learning_rate")) meta.default_learning_rate = rate->as_double();
    return meta;
  });
}

}  // namespace onyx::training_api
