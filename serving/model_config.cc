#include "model_config.h"

#include <cctype>
#include <charconv>
#include <limits>
#include <set>

namespace onyx::serving {
namespace {

// One field of a protobuf text-format message: a scalar (`text`) or a
// message (`fields`). Repeated fields, written as `f: [a, b]` or as the
// field several times, appear once per element.
struct TextField {
  std::string name;
  bool is_message = false;
  std::string text;
  bool quoted = false;
  std::vector<TextField> fields;
  int line = 0;
};

class TextParser {
 public:
  TextParser(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  std::vector<TextField> parse_all() {
    std::vector<TextField> fields;
    skip_space();
    while (pos_ < text_.size()) {
      parse_field(fields);
      skip_space();
    }
    return fields;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ServeError(400, source_ + ":" + std::to_string(line_) + ": " + what);
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  std::string identifier() {
    skip_space();
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
    if (pos_ == start) {
      fail(pos_ < text_.size() ? std::string("expected a field name, found '") + text_[pos_] + "'"
                               : std::string("expected a field name, found the end of the file"));
    }
    return std::string(text_.substr(start, pos_ - start));
  }

  // A scalar: a quoted string, a number, true/false or an enum name.
  void scalar(TextField& field) {
    skip_space();
    if (pos_ >= text_.size()) fail("field '" + field.name + "' has no value");
    const char quote = text_[pos_];
    if (quote == '"' || quote == '\'') {
      ++pos_;
      std::string value;
      while (pos_ < text_.size() && text_[pos_] != quote) {
        char c = text_[pos_++];
        if (c == '\n') fail("a string of field '" + field.name + "' runs past the end of its line");
        if (c == '\\' && pos_ < text_.size()) {
          c = text_[pos_++];
          if (c == 'n') c = '\n';
          if (c == 't') c = '\t';
        }
        value += c;
      }
      if (pos_ >= text_.size()) fail("a string of field '" + field.name + "' is not closed");
      ++pos_;
      field.text = std::move(value);
      field.quoted = true;
      return;
    }
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   std::string_view("_-+.").find(text_[pos_]) != std::string_view::npos)) {
      ++pos_;
    }
    if (pos_ == start) fail("field '" + field.name + "' has no value");
    field.text = std::string(text_.substr(start, pos_ - start));
  }

  void message_body(TextField& field, char close) {
    field.is_message = true;
    while (!take(close)) {
      skip_space();
      if (pos_ >= text_.size()) fail("message '" + field.name + "' is not closed");
      parse_field(field.fields);
    }
  }

  // One value of `name`: a message in braces or angle brackets, or a scalar.
  void value(const std::string& name, int line, std::vector<TextField>& out) {
    TextField field;
    field.name = name;
    field.line = line;
    if (take('{')) {
      message_body(field, '}');
    } else if (take('<')) {
      message_body(field, '>');
    } else {
      scalar(field);
    }
    out.push_back(std::move(field));
  }

  void parse_field(std::vector<TextField>& out) {
    const std::string name = identifier();
    const int line = line_;
    take(':');
    if (take('[')) {
      if (!take(']')) {
        do {
          value(name, line, out);
        } while (take(','));
        if (!take(']')) fail("list of field '" + name + "' is not closed with ']'");
      }
    } else {
      value(name, line, out);
    }
    if (!take(',')) take(';');
  }

  std::string_view text_;
  const std::string& source_;
  size_t pos_ = 0;
  int line_ = 1;
};

class ConfigReader {
 public:
  explicit ConfigReader(const std::string& source) : source_(source) {}

  [[noreturn]] void fail(const TextField& field, const std::string& what) const {
    throw ServeError(400, source_ + ":" + std::to_string(field.line) + ": field '" + field.name + "' " + what);
  }

  int64_t integer(const TextField& field, int64_t min) const {
    if (field.is_message) fail(field, "expects a number, not a message");
    int64_t value = 0;
    const char* end = field.text.data() + field.text.size();
    const auto [ptr, ec] = std::from_chars(field.text.data(), end, value);
    if (ec != std::errc() || ptr != end) fail(field, "expects a whole number, got '" + field.text + "'");
    if (value < min) fail(field, "must be at least " + std::to_string(min) + ", got " + field.text);
    return value;
  }

  const std::string& text(const TextField& field) const {
    if (field.is_message) fail(field, "expects a value, not a message");
    return field.text;
  }

  const std::vector<TextField>& message(const TextField& field) const {
    if (!field.is_message) fail(field, "expects a message in braces, got '" + field.text + "'");
    return field.fields;
  }

  [[noreturn]] void unknown(const TextField& field, const char* where) const {
    fail(field, std::string("is not supported by onyx serve") + where);
  }

  TensorConfig tensor(const TextField& field) const {
    TensorConfig tensor;
    for (const TextField& f : message(field)) {
      if (f.name == "name") {
        tensor.name = text(f);
      } else if (f.name == "data_type") {
        tensor.datatype = text(f);
        if (datatype_from_protocol(tensor.datatype) == DataType::kUndefined) {
          fail(f, "names an unknown type '" + tensor.datatype + "'");
        }
      } else if (f.name == "dims") {
        tensor.dims.push_back(integer(f, -1));
        tensor.has_dims = true;
      } else if (f.name == "format" || f.name == "label_filename" || f.name == "is_shape_tensor" ||
                 f.name == "optional" || f.name == "allow_ragged_batch" || f.name == "reshape") {
        if (f.name == "reshape" || f.name == "allow_ragged_batch" || f.name == "is_shape_tensor") {
          unknown(f, " (inputs are fed with the model's own shape)");
        }
      } else {
        unknown(f, " in an input or output");
      }
    }
    if (tensor.name.empty()) fail(field, "has no name");
    return tensor;
  }

  void dynamic_batching(const TextField& field, ModelConfig& config) const {
    config.dynamic_batching = true;
    config.dynamic_batching_given = true;
    for (const TextField& f : message(field)) {
      if (f.name == "max_queue_delay_microseconds") {
        config.max_queue_delay_us = integer(f, 0);
      } else if (f.name == "preferred_batch_size") {
        config.preferred_batch_sizes.push_back(integer(f, 1));
      } else if (f.name == "default_queue_policy") {
        for (const TextField& p : message(f)) {
          if (p.name == "max_queue_size") {
            config.max_queue_size = integer(p, 0);
          } else if (p.name != "allow_timeout_override" && p.name != "timeout_action" &&
                     p.name != "default_timeout_microseconds") {
            unknown(p, " in default_queue_policy");
          }
        }
      } else if (f.name != "preserve_ordering") {
        unknown(f, " in dynamic_batching");
      }
    }
  }

  void version_policy(const TextField& field, ModelConfig& config) const {
    for (const TextField& f : message(field)) {
      if (f.name == "latest") {
        config.version_policy = ModelConfig::VersionPolicy::kLatest;
        for (const TextField& n : message(f)) {
          if (n.name != "num_versions") unknown(n, " in version_policy.latest");
          config.latest_versions = integer(n, 1);
        }
      } else if (f.name == "all") {
        config.version_policy = ModelConfig::VersionPolicy::kAll;
      } else if (f.name == "specific") {
        config.version_policy = ModelConfig::VersionPolicy::kSpecific;
        for (const TextField& n : message(f)) {
          if (n.name != "versions") unknown(n, " in version_policy.specific");
          config.specific_versions.push_back(integer(n, 1));
        }
      } else {
        unknown(f, " in version_policy");
      }
    }
  }

  // parameters { key: "intra_op_thread_count" value { string_value: "2" } }
  void parameter(const TextField& field, ModelConfig& config) const {
    std::string key;
    std::string value;
    for (const TextField& f : message(field)) {
      if (f.name == "key") {
        key = text(f);
      } else if (f.name == "value") {
        for (const TextField& v : message(f)) {
          if (v.name != "string_value") unknown(v, " in a parameter value (use string_value)");
          value = text(v);
        }
      }
    }
    TextField as_number = field;
    as_number.text = value;
    as_number.is_message = false;
    if (key == "intra_op_thread_count") {
      config.intra_op_threads = integer(as_number, 0);
    } else if (key == "execution_providers") {  // onyx's: "OpenVINOExecutionProvider,CPUExecutionProvider"
      size_t start = 0;
      while (start <= value.size()) {
        const size_t comma = value.find(',', start);
        const std::string name = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!name.empty()) config.providers.push_back(name);
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else if (key != "inter_op_thread_count" && key != "enable_mem_arena" && key != "enable_mem_pattern") {
      fail(field, "has an unknown key '" + key +
                      "' (onyx serve knows intra_op_thread_count, inter_op_thread_count, execution_providers)");
    }
  }

  ModelConfig read(const std::vector<TextField>& fields) const {
    ModelConfig config;
    int64_t instances = -1;
    for (const TextField& f : fields) {
      if (f.name == "name") {
        config.name = text(f);
      } else if (f.name == "platform") {
        config.platform = text(f);
        if (config.platform != "onnxruntime_onnx" && config.platform != "onyx_onnx") {
          fail(f, "is '" + config.platform + "'; onyx serve runs ONNX models (onnxruntime_onnx)");
        }
      } else if (f.name == "backend") {
        config.backend = text(f);
        if (config.backend != "onnxruntime" && config.backend != "onyx") {
          fail(f, "is '" + config.backend + "'; onyx serve runs the onnxruntime (ONNX) backend's models");
        }
      } else if (f.name == "default_model_filename") {
        config.default_model_filename = text(f);
        if (config.default_model_filename.find('/') != std::string::npos || config.default_model_filename == "..") {
          fail(f, "must be a file name inside the version folder, got '" + config.default_model_filename + "'");
        }
      } else if (f.name == "max_batch_size") {
        config.max_batch_size = integer(f, 0);
      } else if (f.name == "dynamic_batching") {
        dynamic_batching(f, config);
      } else if (f.name == "instance_group") {
        int64_t count = 1;
        for (const TextField& g : message(f)) {
          if (g.name == "count") {
            count = integer(g, 1);
          } else if (g.name == "kind") {
            if (text(g) != "KIND_CPU" && text(g) != "KIND_AUTO" && text(g) != "KIND_MODEL") {
              fail(g, "is '" + text(g) + "'; onyx serve places instances with execution_providers instead");
            }
          } else if (g.name != "name" && g.name != "gpus") {
            unknown(g, " in instance_group");
          }
        }
        // Several groups add up, as in Triton.
        instances = (instances < 0 ? 0 : instances) + count;
      } else if (f.name == "version_policy") {
        version_policy(f, config);
      } else if (f.name == "input") {
        config.inputs.push_back(tensor(f));
      } else if (f.name == "output") {
        config.outputs.push_back(tensor(f));
      } else if (f.name == "parameters") {
        parameter(f, config);
      } else if (f.name == "optimization" || f.name == "model_warmup" || f.name == "response_cache" ||
                 f.name == "model_transaction_policy" || f.name == "runtime") {
        // Hints that do not change results or scheduling: accepted and unused.
      } else {
        unknown(f, "");
      }
    }
    if (instances > 0) config.instance_count = instances;
    return config;
  }

 private:
  const std::string& source_;
};

struct DatatypeName {
  DataType dtype;
  const char* name;
};
constexpr DatatypeName kDatatypes[] = {
    {DataType::kBool, "BOOL"},     {DataType::kUInt8, "UINT8"},   {DataType::kUInt16, "UINT16"},
    {DataType::kUInt32, "UINT32"}, {DataType::kUInt64, "UINT64"}, {DataType::kInt8, "INT8"},
    {DataType::kInt16, "INT16"},   {DataType::kInt32, "INT32"},   {DataType::kInt64, "INT64"},
    {DataType::kFloat16, "FP16"},  {DataType::kFloat, "FP32"},    {DataType::kDouble, "FP64"},
    {DataType::kString, "BYTES"},  {DataType::kBFloat16, "BF16"},
};

// A model's first dimension is a batch dimension the server may grow when it
// is free (not a fixed number) and, where named, the same name everywhere.
bool batch_major(const InferenceSession& session) {
  std::string symbol;
  bool have_symbol = false;
  auto check = [&](const std::vector<ValueMetadata>& values) {
    for (const ValueMetadata& v : values) {
      if (v.type.kind != ValueType::Kind::kTensor || !v.has_shape || v.dims.empty() || v.dims[0] >= 0) return false;
      const std::string& name = v.dim_params.empty() ? std::string() : v.dim_params[0];
      if (!name.empty()) {
        if (have_symbol && name != symbol) return false;
        symbol = name;
        have_symbol = true;
      }
    }
    return true;
  };
  return !session.inputs().empty() && check(session.inputs()) && check(session.outputs());
}

}  // namespace

ModelConfig parse_model_config(std::string_view text, const std::string& source) {
  TextParser parser(text, source);
  return ConfigReader(source).read(parser.parse_all());
}

void complete_model_config(ModelConfig& config, const InferenceSession& session, int64_t default_max_batch_size) {
  const bool batchable = batch_major(session);
  if (config.max_batch_size < 0) {
    config.max_batch_size = batchable ? default_max_batch_size : 0;
    if (!config.dynamic_batching_given) config.dynamic_batching = config.max_batch_size > 0;
  } else if (config.max_batch_size > 0 && !batchable) {
    throw ServeError(400, "max_batch_size is " + std::to_string(config.max_batch_size) +
                              " but the model's inputs and outputs do not all start with one free (batch) dimension; "
                              "set max_batch_size: 0");
  }
  if (config.max_batch_size == 0 && config.dynamic_batching) {
    throw ServeError(400, "dynamic_batching needs max_batch_size above 0");
  }
  for (int64_t size : config.preferred_batch_sizes) {
    if (size > config.max_batch_size) {
      throw ServeError(400, "preferred_batch_size " + std::to_string(size) + " is above max_batch_size " +
                                std::to_string(config.max_batch_size));
    }
  }
  auto check = [&](const std::vector<TensorConfig>& configured, const std::vector<ValueMetadata>& actual,
                   const char* what) {
    for (const TensorConfig& t : configured) {
      const ValueMetadata* match = nullptr;
      for (const ValueMetadata& v : actual) {
        if (v.name == t.name) match = &v;
      }
      if (match == nullptr) {
        std::string names;
        for (const ValueMetadata& v : actual) names += (names.empty() ? "" : ", ") + v.name;
        throw ServeError(400, std::string("the configuration names ") + what + " '" + t.name +
                                  "', which the model lacks (its " + what + "s: " + names + ")");
      }
      if (!t.datatype.empty() && datatype_from_protocol(t.datatype) != match->type.elem_type) {
        throw ServeError(400, std::string("the configuration gives ") + what + " '" + t.name + "' type " + t.datatype +
                                  " but the model's is " + protocol_datatype(match->type.elem_type));
      }
      if (t.has_dims && match->has_shape) {
        const size_t skip = config.max_batch_size > 0 ? 1 : 0;
        bool same = match->dims.size() == t.dims.size() + skip;
        for (size_t i = 0; same && i < t.dims.size(); ++i) {
          const int64_t model_dim = match->dims[i + skip];
          same = t.dims[i] < 0 || model_dim < 0 || t.dims[i] == model_dim;
        }
        if (!same) {
          throw ServeError(400, std::string("the configuration's dims of ") + what + " '" + t.name +
                                    "' do not match the model's shape" +
                                    (skip ? " (with max_batch_size > 0, dims leave out the batch dimension)" : ""));
        }
      }
    }
  };
  for (const ValueMetadata& input : session.inputs()) {
    if (!servable(input)) {
      throw ServeError(400, "input '" + input.name + "' is " + input.type.to_string() +
                                ", which the inference protocol cannot carry (tensors of its datatypes only)");
    }
  }
  check(config.inputs, session.inputs(), "input");
  check(config.outputs, session.outputs(), "output");
}

bool servable(const ValueMetadata& value) {
  return value.type.kind == ValueType::Kind::kTensor && !protocol_datatype(value.type.elem_type).empty();
}

std::string protocol_datatype(DataType dtype) {
  for (const DatatypeName& d : kDatatypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "";
}

DataType datatype_from_protocol(std::string_view name) {
  if (name.starts_with("TYPE_")) {
    name.remove_prefix(5);
    if (name == "STRING") return DataType::kString;
  }
  for (const DatatypeName& d : kDatatypes) {
    if (name == d.name) return d.dtype;
  }
  return DataType::kUndefined;
}

}  // namespace onyx::serving
