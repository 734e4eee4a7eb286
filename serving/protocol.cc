#include "protocol.h"

#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

namespace onyx::serving {
namespace {

using json = nlohmann::json;

constexpr int kMaxNesting = 64;
// No tensor of a request may have more elements than this, whatever its
// data says (the data is checked against it after).
constexpr int64_t kMaxElements = int64_t{1} << 40;

[[noreturn]] void bad_request(const std::string& message) { throw ServeError(400, message); }

// Calls f.template operator()<T>() with T the C++ type of `dtype`; false for
// a type the protocol cannot carry.
template <typename F>
bool visit_dtype(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::kBool:
      f.template operator()<bool>();
      return true;
    case DataType::kUInt8:
      f.template operator()<uint8_t>();
      return true;
    case DataType::kUInt16:
      f.template operator()<uint16_t>();
      return true;
    case DataType::kUInt32:
      f.template operator()<uint32_t>();
      return true;
    case DataType::kUInt64:
      f.template operator()<uint64_t>();
      return true;
    case DataType::kInt8:
      f.template operator()<int8_t>();
      return true;
    case DataType::kInt16:
      f.template operator()<int16_t>();
      return true;
    case DataType::kInt32:
      f.template operator()<int32_t>();
      return true;
    case DataType::kInt64:
      f.template operator()<int64_t>();
      return true;
    case DataType::kFloat16:
      f.template operator()<Float16>();
      return true;
    case DataType::kBFloat16:
      f.template operator()<BFloat16>();
      return true;
    case DataType::kFloat:
      f.template operator()<float>();
      return true;
    case DataType::kDouble:
      f.template operator()<double>();
      return true;
    default:
      return false;
  }
}

const json* member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// A short description of a JSON value for an error message. Arrays and
// objects are described, not printed: printing recurses, and a request may
// nest them deeper than the stack.
std::string what_json(const json& value) {
  if (value.is_array()) return "an array of " + std::to_string(value.size()) + " items";
  if (value.is_object()) return "an object";
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

void flatten(const json& value, std::vector<const json*>& out, int depth, const std::string& input) {
  if (depth > kMaxNesting)
    bad_request("input '" + input + "': data is nested deeper than " + std::to_string(kMaxNesting));
  if (value.is_array()) {
    for (const json& item : value) flatten(item, out, depth + 1, input);
  } else {
    out.push_back(&value);
  }
}

// JSON data into `tensor`, element by element, each checked for its type.
void fill_from_json(Tensor& tensor, const std::vector<const json*>& items, const std::string& input) {
  auto element_error = [&](size_t i, const char* expected) {
    bad_request("input '" + input + "': data element " + std::to_string(i) + " is " + what_json(*items[i]) + ", not " +
                expected);
  };
  if (tensor.dtype() == DataType::kString) {
    std::string* out = tensor.data<std::string>();
    for (size_t i = 0; i < items.size(); ++i) {
      if (!items[i]->is_string()) element_error(i, "a string (BYTES)");
      out[i] = items[i]->get<std::string>();
    }
    return;
  }
  visit_dtype(tensor.dtype(), [&]<typename T>() {
    T* out = tensor.data<T>();
    for (size_t i = 0; i < items.size(); ++i) {
      const json& item = *items[i];
      if constexpr (std::is_same_v<T, bool>) {
        if (!item.is_boolean()) element_error(i, "true or false (BOOL)");
        out[i] = item.get<bool>();
      } else if constexpr (std::is_integral_v<T>) {
        if (!item.is_number_integer()) element_error(i, "a whole number");
        if (item.is_number_unsigned()) {
          const uint64_t v = item.get<uint64_t>();
          if (v > static_cast<uint64_t>(std::numeric_limits<T>::max())) element_error(i, "in range of its type");
          out[i] = static_cast<T>(v);
        } else {
          const int64_t v = item.get<int64_t>();
          if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
              (v > 0 && static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max()))) {
            element_error(i, "in range of its type");
          }
          out[i] = static_cast<T>(v);
        }
      } else {
        if (!item.is_number()) element_error(i, "a number");
        if constexpr (std::is_same_v<T, double>) {
          out[i] = item.get<double>();
        } else {
          out[i] = T(static_cast<float>(item.get<double>()));
        }
      }
    }
  });
}

// Length-prefixed strings (4-byte little-endian length, then the bytes).
void fill_strings_from_binary(Tensor& tensor, const char* data, size_t size, const std::string& input) {
  std::string* out = tensor.data<std::string>();
  size_t pos = 0;
  int64_t count = 0;
  while (pos < size) {
    if (size - pos < 4) bad_request("input '" + input + "': binary BYTES data ends inside an element's length");
    uint32_t length;
    std::memcpy(&length, data + pos, 4);
    pos += 4;
    if (length > size - pos) {
      bad_request("input '" + input + "': binary BYTES element " + std::to_string(count) + " says " +
                  std::to_string(length) + " bytes but " + std::to_string(size - pos) + " remain");
    }
    if (count >= tensor.size()) {
      bad_request("input '" + input + "': binary BYTES data holds more than the shape's " +
                  std::to_string(tensor.size()) + " elements");
    }
    out[count++].assign(data + pos, length);
    pos += length;
  }
  if (count != tensor.size()) {
    bad_request("input '" + input + "': binary BYTES data holds " + std::to_string(count) + " elements, the shape " +
                std::to_string(tensor.size()));
  }
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) text += ',';
    text += std::to_string(dims[i]);
  }
  return text + "]";
}

// The model's shape for a value: fixed dims as numbers, the rest -1.
std::vector<int64_t> protocol_shape(const ValueMetadata& meta) {
  std::vector<int64_t> dims;
  for (int64_t d : meta.dims) dims.push_back(d >= 0 ? d : -1);
  return dims;
}

Tensor read_input(const json& input, const ValueMetadata& meta, const std::string& body, size_t& cursor) {
  const std::string& name = meta.name;
  const json* datatype = member(input, "datatype");
  if (datatype == nullptr || !datatype->is_string()) bad_request("input '" + name + "' has no \"datatype\" string");
  const std::string type_name = datatype->get<std::string>();
  const DataType dtype = datatype_from_protocol(type_name);
  if (dtype != meta.type.elem_type) {
    bad_request("input '" + name + "' is " + type_name + " but the model takes " +
                protocol_datatype(meta.type.elem_type) + " (" + meta.type.to_string() + ")");
  }
  const json* shape_json = member(input, "shape");
  if (shape_json == nullptr || !shape_json->is_array()) bad_request("input '" + name + "' has no \"shape\" array");
  Shape shape;
  int64_t elements = 1;
  for (const json& d : *shape_json) {
    if (!d.is_number_integer() || (!d.is_number_unsigned() && d.get<int64_t>() < 0)) {
      bad_request("input '" + name + "': shape has a dimension that is not a whole number >= 0: " + what_json(d));
    }
    const uint64_t dim = d.get<uint64_t>();
    if (dim > static_cast<uint64_t>(kMaxElements) || (dim > 0 && elements > kMaxElements / static_cast<int64_t>(dim))) {
      bad_request("input '" + name + "': shape has too many elements (over 2^40)");
    }
    shape.push_back(static_cast<int64_t>(dim));
    elements *= static_cast<int64_t>(dim);
  }
  if (meta.has_shape) {
    bool fits = shape.size() == meta.dims.size();
    for (size_t i = 0; fits && i < shape.size(); ++i) fits = meta.dims[i] < 0 || meta.dims[i] == shape[i];
    if (!fits) {
      bad_request("input '" + name + "' has shape " + shape_text(shape) + " but the model takes " +
                  shape_text(protocol_shape(meta)) + " (-1: any size)");
    }
  }
  const json* parameters = member(input, "parameters");
  const json* binary_size = parameters && parameters->is_object() ? member(*parameters, "binary_data_size") : nullptr;
  const json* data = member(input, "data");
  if (binary_size != nullptr && data != nullptr) bad_request("input '" + name + "' has both \"data\" and binary data");
  if (binary_size == nullptr && data == nullptr)
    bad_request("input '" + name + "' has neither \"data\" nor binary_data_size");
  if (binary_size != nullptr) {
    if (!binary_size->is_number_unsigned()) bad_request("input '" + name + "': binary_data_size is not a whole number");
    const uint64_t size = binary_size->get<uint64_t>();
    if (size > body.size() - cursor) {
      bad_request("input '" + name + "': binary_data_size is " + std::to_string(size) + " but only " +
                  std::to_string(body.size() - cursor) + " bytes of binary data remain in the body");
    }
    if (dtype != DataType::kString && size != static_cast<uint64_t>(elements) * dtype_size(dtype)) {
      bad_request("input '" + name + "': binary_data_size is " + std::to_string(size) + " bytes but shape " +
                  shape_text(shape) + " of " + type_name + " needs " +
                  std::to_string(static_cast<uint64_t>(elements) * dtype_size(dtype)));
    }
    Tensor tensor(dtype, shape);
    if (dtype == DataType::kString) {
      fill_strings_from_binary(tensor, body.data() + cursor, size, name);
    } else if (size > 0) {
      std::memcpy(tensor.raw_data(), body.data() + cursor, size);
    }
    cursor += size;
    return tensor;
  }
  std::vector<const json*> items;
  flatten(*data, items, 0, name);
  if (static_cast<int64_t>(items.size()) != elements) {
    bad_request("input '" + name + "': data has " + std::to_string(items.size()) + " elements but shape " +
                shape_text(shape) + " has " + std::to_string(elements));
  }
  Tensor tensor(dtype, shape);
  fill_from_json(tensor, items, name);
  return tensor;
}

json tensor_to_json(const Tensor& tensor) {
  json data = json::array();
  if (tensor.dtype() == DataType::kString) {
    for (int64_t i = 0; i < tensor.size(); ++i) data.push_back(tensor.data<std::string>()[i]);
    return data;
  }
  visit_dtype(tensor.dtype(), [&]<typename T>() {
    const T* values = tensor.data<T>();
    for (int64_t i = 0; i < tensor.size(); ++i) {
      if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
        data.push_back(static_cast<float>(values[i]));
      } else {
        data.push_back(values[i]);
      }
    }
  });
  return data;
}

void append_binary(const Tensor& tensor, std::string& out) {
  if (tensor.dtype() != DataType::kString) {
    out.append(static_cast<const char*>(tensor.raw_data()), tensor.bytes());
    return;
  }
  for (int64_t i = 0; i < tensor.size(); ++i) {
    const std::string& s = tensor.data<std::string>()[i];
    const uint32_t length = static_cast<uint32_t>(s.size());
    out.append(reinterpret_cast<const char*>(&length), 4);
    out.append(s);
  }
}

json value_json(const ValueMetadata& meta) {
  const std::string datatype = protocol_datatype(meta.type.elem_type);
  return json{{"name", meta.name},
              {"datatype", datatype.empty() ? meta.type.to_string() : datatype},
              {"shape", meta.has_shape ? json(protocol_shape(meta)) : json::array({-1})}};
}

}  // namespace

ParsedRequest parse_infer_request(const std::string& body, std::optional<size_t> json_length,
                                  const InferenceSession& session, const ModelConfig& config) {
  const size_t header = json_length.value_or(body.size());
  if (header > body.size()) {
    bad_request("Inference-Header-Content-Length is " + std::to_string(header) + " but the body has " +
                std::to_string(body.size()) + " bytes");
  }
  json doc;
  try {
    doc = json::parse(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(header));
  } catch (const json::exception& e) {
    bad_request(std::string("the request is not valid JSON: ") + e.what());
  }
  if (!doc.is_object()) bad_request("the request must be a JSON object with \"inputs\"");
  ParsedRequest parsed;
  parsed.request = std::make_unique<InferRequest>();
  if (const json* id = member(doc, "id")) {
    if (!id->is_string()) bad_request("\"id\" must be a string");
    parsed.id = id->get<std::string>();
  }
  bool binary_default = false;
  if (const json* parameters = member(doc, "parameters")) {
    if (!parameters->is_object()) bad_request("\"parameters\" must be an object");
    if (const json* b = member(*parameters, "binary_data_output")) {
      if (!b->is_boolean()) bad_request("\"binary_data_output\" must be true or false");
      binary_default = b->get<bool>();
    }
  }
  const json* inputs = member(doc, "inputs");
  if (inputs == nullptr || !inputs->is_array()) bad_request("the request has no \"inputs\" array");
  const std::vector<ValueMetadata>& model_inputs = session.inputs();
  std::vector<std::optional<Tensor>> tensors(model_inputs.size());
  size_t cursor = header;
  for (const json& input : *inputs) {
    if (!input.is_object()) bad_request("each of \"inputs\" must be an object, got " + what_json(input));
    const json* name = member(input, "name");
    if (name == nullptr || !name->is_string()) bad_request("an input has no \"name\" string");
    const std::string input_name = name->get<std::string>();
    size_t index = model_inputs.size();
    for (size_t i = 0; i < model_inputs.size(); ++i) {
      if (model_inputs[i].name == input_name) index = i;
    }
    if (index == model_inputs.size()) {
      std::string names;
      for (const ValueMetadata& m : model_inputs) names += (names.empty() ? "" : ", ") + m.name;
      bad_request("the model has no input '" + input_name + "' (its inputs: " + names + ")");
    }
    if (tensors[index].has_value()) bad_request("input '" + input_name + "' is given twice");
    tensors[index] = read_input(input, model_inputs[index], body, cursor);
  }
  if (cursor != body.size()) {
    bad_request(std::to_string(body.size() - cursor) +
                " bytes of binary data follow the inputs' binary_data_size parts; the sizes must add up to the body");
  }
  std::string missing;
  for (size_t i = 0; i < model_inputs.size(); ++i) {
    if (!tensors[i].has_value()) missing += (missing.empty() ? "'" : ", '") + model_inputs[i].name + "'";
  }
  if (!missing.empty()) bad_request("the request lacks input " + missing);

  InferRequest& request = *parsed.request;
  for (size_t i = 0; i < model_inputs.size(); ++i) {
    const Tensor& t = *tensors[i];
    if (config.max_batch_size > 0) {
      if (t.rank() == 0) bad_request("input '" + model_inputs[i].name + "' has no batch dimension");
      if (i == 0) request.batch = t.dim(0);
      if (t.dim(0) != request.batch) {
        bad_request("inputs disagree on the batch size: '" + model_inputs[0].name + "' has " +
                    std::to_string(request.batch) + " rows, '" + model_inputs[i].name + "' " +
                    std::to_string(t.dim(0)));
      }
      request.batch_key += std::to_string(static_cast<int>(t.dtype())) + ":";
      for (int64_t d = 1; d < t.rank(); ++d) request.batch_key += std::to_string(t.dim(d)) + ",";
      request.batch_key += ";";
    }
    request.feeds.emplace_back(model_inputs[i].name, *tensors[i]);
  }
  if (config.max_batch_size > 0 && (request.batch < 1 || request.batch > config.max_batch_size)) {
    bad_request("the request's batch size is " + std::to_string(request.batch) + "; the model takes 1 to " +
                std::to_string(config.max_batch_size) + " (max_batch_size in its config.pbtxt)");
  }

  const std::vector<ValueMetadata>& model_outputs = session.outputs();
  if (const json* outputs = member(doc, "outputs")) {
    if (!outputs->is_array()) bad_request("\"outputs\" must be an array");
    std::set<std::string> seen;
    for (const json& output : *outputs) {
      const json* name = output.is_object() ? member(output, "name") : nullptr;
      if (name == nullptr || !name->is_string()) bad_request("each of \"outputs\" needs a \"name\" string");
      const std::string output_name = name->get<std::string>();
      const ValueMetadata* known = nullptr;
      for (const ValueMetadata& m : model_outputs) {
        if (m.name == output_name) known = &m;
      }
      if (known != nullptr && !servable(*known)) {
        bad_request("output '" + output_name + "' is " + known->type.to_string() +
                    ", which the inference protocol cannot carry (tensors only)");
      }
      if (known == nullptr) {
        std::string names;
        for (const ValueMetadata& m : model_outputs) names += (names.empty() ? "" : ", ") + m.name;
        bad_request("the model has no output '" + output_name + "' (its outputs: " + names + ")");
      }
      if (!seen.insert(output_name).second) bad_request("output '" + output_name + "' is asked for twice");
      RequestedOutput requested{output_name, binary_default};
      if (const json* parameters = member(output, "parameters")) {
        if (!parameters->is_object()) bad_request("output '" + output_name + "': \"parameters\" must be an object");
        if (const json* b = member(*parameters, "binary_data")) {
          if (!b->is_boolean()) bad_request("output '" + output_name + "': \"binary_data\" must be true or false");
          requested.binary = b->get<bool>();
        }
        if (member(*parameters, "classification") != nullptr) {
          bad_request("output '" + output_name + "': the classification extension is not supported");
        }
      }
      parsed.outputs.push_back(requested);
    }
  }
  if (parsed.outputs.empty()) {
    for (const ValueMetadata& m : model_outputs) {
      if (servable(m)) parsed.outputs.push_back({m.name, binary_default});
    }
    if (parsed.outputs.empty()) bad_request("the model has no output the inference protocol can carry");
  }
  for (const RequestedOutput& o : parsed.outputs) {
    request.output_names.push_back(o.name);
    request.batch_key += o.name + ",";
  }
  return parsed;
}

Response make_infer_response(const std::string& model_name, int64_t version, const std::optional<std::string>& id,
                             const std::vector<RequestedOutput>& outputs, const std::vector<Value>& values) {
  json doc{{"model_name", model_name}, {"model_version", std::to_string(version)}};
  if (id.has_value()) doc["id"] = *id;
  json out = json::array();
  std::string binary;
  bool any_binary = false;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!values[i].is_tensor()) {
      throw ServeError(500, "output '" + outputs[i].name + "' is " + values[i].describe() +
                                ", which the protocol cannot carry (tensors only)");
    }
    const Tensor& t = values[i].tensor();
    const std::string datatype = protocol_datatype(t.dtype());
    if (datatype.empty()) {
      throw ServeError(500, "output '" + outputs[i].name + "' has element type " + dtype_name(t.dtype()) +
                                ", which the protocol has no name for");
    }
    json entry{{"name", outputs[i].name}, {"datatype", datatype}, {"shape", t.shape()}};
    if (outputs[i].binary) {
      const size_t before = binary.size();
      append_binary(t, binary);
      entry["parameters"] = json{{"binary_data_size", binary.size() - before}};
      any_binary = true;
    } else {
      entry["data"] = tensor_to_json(t);
    }
    out.push_back(std::move(entry));
  }
  doc["outputs"] = std::move(out);
  Response response;
  response.body = doc.dump(-1, ' ', false, json::error_handler_t::replace);
  if (any_binary) {
    response.json_length = response.body.size();
    response.body += binary;
  }
  return response;
}

std::string model_metadata_json(const std::string& name, const std::vector<int64_t>& versions,
                                const InferenceSession& session) {
  json doc{{"name", name}, {"platform", "onnxruntime_onnx"}};
  json v = json::array();
  for (int64_t version : versions) v.push_back(std::to_string(version));
  doc["versions"] = v;
  json inputs = json::array();
  for (const ValueMetadata& m : session.inputs()) inputs.push_back(value_json(m));
  json outputs = json::array();
  for (const ValueMetadata& m : session.outputs()) {
    if (servable(m)) outputs.push_back(value_json(m));
  }
  doc["inputs"] = inputs;
  doc["outputs"] = outputs;
  return doc.dump();
}

std::string model_config_json(const ModelConfig& config, const InferenceSession& session) {
  auto tensors = [&](const std::vector<ValueMetadata>& values) {
    json list = json::array();
    for (const ValueMetadata& m : values) {
      if (!servable(m)) continue;
      std::vector<int64_t> dims = protocol_shape(m);
      if (config.max_batch_size > 0 && !dims.empty()) dims.erase(dims.begin());
      list.push_back(
          json{{"name", m.name}, {"data_type", "TYPE_" + protocol_datatype(m.type.elem_type)}, {"dims", dims}});
    }
    return list;
  };
  json doc{{"name", config.name},
           {"platform", "onnxruntime_onnx"},
           {"backend", "onyx"},
           {"max_batch_size", config.max_batch_size},
           {"input", tensors(session.inputs())},
           {"output", tensors(session.outputs())},
           {"instance_group", json::array({json{{"count", config.instance_count}, {"kind", "KIND_CPU"}}})},
           {"default_model_filename", config.default_model_filename}};
  if (config.dynamic_batching) {
    doc["dynamic_batching"] = json{{"preferred_batch_size", config.preferred_batch_sizes},
                                   {"max_queue_delay_microseconds", config.max_queue_delay_us},
                                   {"default_queue_policy", json{{"max_queue_size", config.max_queue_size}}}};
  }
  json parameters = json::object();
  if (config.intra_op_threads > 0) {
    parameters["intra_op_thread_count"] = json{{"string_value", std::to_string(config.intra_op_threads)}};
  }
  std::string providers;
  for (const std::string& p : session.providers()) providers += (providers.empty() ? "" : ",") + p;
  parameters["execution_providers"] = json{{"string_value", providers}};
  doc["parameters"] = parameters;
  return doc.dump();
}

std::string error_json(const std::string& message) {
  return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace onyx::serving
