// genai_config.json: reading, overlays and the checks with their messages.
#include "genai/config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace onyx::genai {
namespace {

constexpr const char* kFile = "genai_config.json";

[[noreturn]] void fail_key(const std::string& key, const std::string& what) {
  throw Error(invalid_argument(kFile, ": ", key, ": ", what));
}

// The member at a dotted path below `root`, nullptr when any part is absent.
const Json* find_path(const Json& root, const std::string& path) {
  const Json* node = &root;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (node->kind() != Json::Kind::kObject) {
      fail_key(path.substr(0, start == 0 ? 0 : start - 1),
               std::string("expected an object, found ") + json_kind_name(node->kind()));
    }
    node = node->find(part);
    if (node == nullptr || dot == std::string::npos) return node;
    start = dot + 1;
  }
}

const Json& require(const Json& root, const std::string& path) {
  const Json* value = find_path(root, path);
  if (value == nullptr) fail_key(path, "the key is missing");
  return *value;
}

template <typename T, typename Read>
T read_as(const Json& value, const std::string& path, Read read) {
  try {
    return read(value);
  } catch (const Error& e) {
    fail_key(path, e.what());
  }
}

int64_t get_int(const Json& root, const std::string& path, int64_t fallback, bool required = false) {
  const Json* value = required ? &require(root, path) : find_path(root, path);
  if (value == nullptr || value->is_null()) return fallback;
  if (value->kind() == Json::Kind::kDouble) {
    const double d = value->as_double();
    if (d == static_cast<double>(static_cast<int64_t>(d))) return static_cast<int64_t>(d);
  }
  return read_as<int64_t>(*value, path, [](const Json& v) { return v.as_int(); });
}

double get_double(const Json& root, const std::string& path, double fallback) {
  const Json* value = find_path(root, path);
  if (value == nullptr || value->is_null()) return fallback;
  return read_as<double>(*value, path, [](const Json& v) { return v.as_double(); });
}

bool get_bool(const Json& root, const std::string& path, bool fallback) {
  const Json* value = find_path(root, path);
  if (value == nullptr || value->is_null()) return fallback;
  return read_as<bool>(*value, path, [](const Json& v) { return v.as_bool(); });
}

std::string get_string(const Json& root, const std::string& path, const std::string& fallback, bool required = false) {
  const Json* value = required ? &require(root, path) : find_path(root, path);
  if (value == nullptr || value->is_null()) return fallback;
  return read_as<std::string>(*value, path, [](const Json& v) { return v.as_string(); });
}

int64_t get_positive(const Json& root, const std::string& path) {
  const int64_t value = get_int(root, path, 0, true);
  if (value <= 0) fail_key(path, "expected a positive integer, found " + std::to_string(value));
  return value;
}

// og's provider_options: [{"cuda": {"key": "value"}}, ...].
std::vector<std::pair<std::string, std::map<std::string, std::string>>> read_providers(const Json& root) {
  const std::string path = "model.decoder.session_options.provider_options";
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> providers;
  const Json* list = find_path(root, path);
  if (list == nullptr || list->is_null()) return providers;
  if (list->kind() != Json::Kind::kArray)
    fail_key(path, std::string("expected an array, found ") + json_kind_name(list->kind()));
  for (size_t i = 0; i < list->as_array().size(); ++i) {
    const Json& entry = list->as_array()[i];
    const std::string where = path + "[" + std::to_string(i) + "]";
    if (entry.kind() != Json::Kind::kObject)
      fail_key(where, std::string("expected an object, found ") + json_kind_name(entry.kind()));
    for (const auto& [name, options] : entry.as_object()) {
      std::map<std::string, std::string> values;
      if (options.kind() != Json::Kind::kObject) {
        fail_key(where + "." + name, std::string("expected an object, found ") + json_kind_name(options.kind()));
      }
      for (const auto& [key, value] : options.as_object()) {
        if (value.kind() == Json::Kind::kString)
          values[key] = value.as_string();
        else
          values[key] = to_json(value).value();
      }
      providers.emplace_back(name, std::move(values));
    }
  }
  return providers;
}

}  // namespace

std::string layer_name(const std::string& pattern, int64_t layer) {
  const size_t at = pattern.find("%d");
  if (at == std::string::npos) return pattern;
  return pattern.substr(0, at) + std::to_string(layer) + pattern.substr(at + 2);
}

void merge_json(Json& base, const Json& overlay) {
  if (base.kind() != Json::Kind::kObject || overlay.kind() != Json::Kind::kObject) {
    base = overlay;
    return;
  }
  for (const auto& [key, value] : overlay.as_object()) {
    const Json* existing = base.find(key);
    if (existing != nullptr && existing->kind() == Json::Kind::kObject && value.kind() == Json::Kind::kObject) {
      Json merged = *existing;
      merge_json(merged, value);
      base.set(key, std::move(merged));
    } else {
      base.set(key, value);
    }
  }
}

Json read_config_file(const std::string& folder) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    throw Error(invalid_argument("model folder '", folder, "' does not exist or is not a folder"));
  const fs::path path = fs::path(folder) / kFile;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(invalid_argument("model folder '", folder, "' has no ", kFile));
  std::stringstream buffer;
  buffer << in.rdbuf();
  Result<Json> document = parse_json(buffer.str());
  if (!document.is_ok()) throw Error(invalid_argument(path.string(), ": ", document.status().message()));
  if (document->kind() != Json::Kind::kObject) throw Error(invalid_argument(path.string(), ": expected a JSON object"));
  return std::move(document).value();
}

ModelConfig parse_model_config(const Json& root, const std::string& folder) {
  ModelConfig c;
  c.folder = folder;
  c.type = get_string(root, "model.type", "", true);
  c.bos_token_id = static_cast<int32_t>(get_int(root, "model.bos_token_id", -1));
  const Json& eos = require(root, "model.eos_token_id");
  if (eos.kind() == Json::Kind::kArray) {
    for (const Json& id : eos.as_array()) {
      c.eos_token_ids.push_back(
          static_cast<int32_t>(read_as<int64_t>(id, "model.eos_token_id", [](const Json& v) { return v.as_int(); })));
    }
    if (c.eos_token_ids.empty()) fail_key("model.eos_token_id", "expected at least one id");
  } else {
    c.eos_token_ids.push_back(static_cast<int32_t>(get_int(root, "model.eos_token_id", 0, true)));
  }
  c.pad_token_id = static_cast<int32_t>(get_int(root, "model.pad_token_id", c.eos_token_ids[0]));
  c.context_length = get_positive(root, "model.context_length");
  c.vocab_size = get_positive(root, "model.vocab_size");

  DecoderConfig& d = c.decoder;
  require(root, "model.decoder");
  d.filename = get_string(root, "model.decoder.filename", "", true);
  d.intra_op_num_threads = static_cast<int>(get_int(root, "model.decoder.session_options.intra_op_num_threads", 0));
  d.inter_op_num_threads = static_cast<int>(get_int(root, "model.decoder.session_options.inter_op_num_threads", 0));
  d.log_id = get_string(root, "model.decoder.session_options.log_id", "");
  d.providers = read_providers(root);
  d.num_attention_heads = get_positive(root, "model.decoder.num_attention_heads");
  d.num_key_value_heads = get_int(root, "model.decoder.num_key_value_heads", d.num_attention_heads);
  if (d.num_key_value_heads <= 0) fail_key("model.decoder.num_key_value_heads", "expected a positive integer");
  d.num_hidden_layers = get_positive(root, "model.decoder.num_hidden_layers");
  d.hidden_size = get_int(root, "model.decoder.hidden_size", 0);
  d.head_size = get_int(root, "model.decoder.head_size", d.hidden_size > 0 ? d.hidden_size / d.num_attention_heads : 0);
  if (d.head_size <= 0) fail_key("model.decoder.head_size", "the key is missing (and hidden_size does not give it)");
  d.input_ids = get_string(root, "model.decoder.inputs.input_ids", d.input_ids);
  d.attention_mask = get_string(root, "model.decoder.inputs.attention_mask", d.attention_mask);
  d.position_ids = get_string(root, "model.decoder.inputs.position_ids", d.position_ids);
  d.past_key_names = get_string(root, "model.decoder.inputs.past_key_names", d.past_key_names);
  d.past_value_names = get_string(root, "model.decoder.inputs.past_value_names", d.past_value_names);
  d.logits = get_string(root, "model.decoder.outputs.logits", d.logits);
  d.present_key_names = get_string(root, "model.decoder.outputs.present_key_names", d.present_key_names);
  d.present_value_names = get_string(root, "model.decoder.outputs.present_value_names", d.present_value_names);
  const std::string cache_type = get_string(root, "model.decoder.kv_cache_type", "float");
  if (cache_type != "float" && cache_type != "int8") {
    fail_key("model.decoder.kv_cache_type", "expected \"float\" or \"int8\", found \"" + cache_type + "\"");
  }
  d.int8_kv_cache = cache_type == "int8";

  SearchOptions& s = c.search;
  s.max_length = get_int(root, "search.max_length", 0);
  s.min_length = get_int(root, "search.min_length", s.min_length);
  s.do_sample = get_bool(root, "search.do_sample", s.do_sample);
  s.top_k = get_int(root, "search.top_k", s.top_k);
  s.top_p = get_double(root, "search.top_p", s.top_p);
  s.temperature = get_double(root, "search.temperature", s.temperature);
  s.repetition_penalty = get_double(root, "search.repetition_penalty", s.repetition_penalty);
  s.num_beams = get_int(root, "search.num_beams", s.num_beams);
  s.num_return_sequences = get_int(root, "search.num_return_sequences", s.num_return_sequences);
  s.length_penalty = get_double(root, "search.length_penalty", s.length_penalty);
  s.early_stopping = get_bool(root, "search.early_stopping", s.early_stopping);
  s.no_repeat_ngram_size = get_int(root, "search.no_repeat_ngram_size", s.no_repeat_ngram_size);
  s.random_seed = get_int(root, "search.random_seed", s.random_seed);
  c.past_present_share_buffer = get_bool(root, "search.past_present_share_buffer", false);
  return c;
}

// ---- Config (the public class) ----------------------------------------------

Config::Config(const std::string& folder) : impl_(std::make_unique<Impl>()) {
  impl_->folder = folder;
  impl_->document = read_config_file(folder);
}
Config::Config(const Config& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}
Config& Config::operator=(const Config& other) {
  if (this != &other) *impl_ = *other.impl_;
  return *this;
}
Config::~Config() = default;

void Config::overlay(std::string_view json) {
  Result<Json> overlay = parse_json(json);
  if (!overlay.is_ok()) throw Error(invalid_argument("Config.overlay: ", overlay.status().message()));
  if (overlay->kind() != Json::Kind::kObject) throw Error(invalid_argument("Config.overlay: expected a JSON object"));
  Json merged = impl_->document;
  merge_json(merged, *overlay);
  parse_model_config(merged, impl_->folder);  // refuses an overlay that breaks the configuration
  impl_->document = std::move(merged);
}

namespace {
Json& provider_list(Json& document) {
  Json* node = &document;
  for (const char* key : {"model", "decoder", "session_options"}) {
    if (node->find(key) == nullptr) node->set(key, Json::object());
    node = const_cast<Json*>(node->find(key));
  }
  if (node->find("provider_options") == nullptr) node->set("provider_options", Json::array());
  return *const_cast<Json*>(node->find("provider_options"));
}
}  // namespace

void Config::clear_providers() { provider_list(impl_->document) = Json::array(); }

void Config::append_provider(const std::string& name) {
  Json entry = Json::object();
  entry.set(name, Json::object());
  provider_list(impl_->document).push_back(std::move(entry));
}

const std::string& Config::folder() const { return impl_->folder; }

}  // namespace onyx::genai
