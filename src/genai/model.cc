// Model: genai_config.json, the decoder's session, and the checks that the
// model's inputs and outputs are the ones the configuration names.
#include "genai/model.h"

#include <algorithm>
#include <filesystem>
#include <set>

#include "model/reader.h"
#include "session/session_factory.h"

namespace onyx::genai {
namespace {

constexpr int32_t kOnnxFloat = 1;
constexpr int32_t kOnnxInt8 = 3;

// og's provider names in provider_options, and onyx's session names for them.
std::string session_provider_name(const std::string& name) {
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "cpu") return "CPUExecutionProvider";
  if (lower == "cuda") return "CUDAExecutionProvider";
  if (lower == "openvino") return "OpenVINOExecutionProvider";
  if (lower == "vulkan") return "VulkanExecutionProvider";
  return name;
}

const ValueMetadata* find_meta(const std::vector<ValueMetadata>& list, const std::string& name) {
  for (const ValueMetadata& m : list) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

void require_meta(const std::vector<ValueMetadata>& list, const std::string& name, const char* what,
                  const std::string& file, const std::string& key) {
  if (find_meta(list, name) == nullptr) {
    throw Error(invalid_argument(file, " has no ", what, " '", name, "' (genai_config.json: ", key, ")"));
  }
}

}  // namespace

void rewrite_for_int8_kv_cache(model::ModelProto& model, const DecoderConfig& d) {
  model::GraphProto& graph = *model.graph;
  std::set<std::string> inputs, outputs;
  for (int64_t layer = 0; layer < d.num_hidden_layers; ++layer) {
    inputs.insert(layer_name(d.past_key_names, layer));
    inputs.insert(layer_name(d.past_value_names, layer));
    outputs.insert(layer_name(d.present_key_names, layer));
    outputs.insert(layer_name(d.present_value_names, layer));
  }
  auto retype = [&](std::vector<model::ValueInfoProto>& list, const std::set<std::string>& names, const char* what) {
    size_t found = 0;
    for (model::ValueInfoProto& value : list) {
      if (names.count(value.name) == 0) continue;
      ++found;
      model::TypeProto& type = value.type;
      if (type.elem_type != kOnnxFloat) {
        throw Error(invalid_argument("kv_cache_type int8: ", what, " '", value.name,
                                     "' is not float32, the only cache type rewritten"));
      }
      type.elem_type = kOnnxInt8;
      if (type.has_shape && type.shape.dim.size() == 4) {
        type.shape.dim[3].has_value = true;
        type.shape.dim[3].dim_value = d.head_size + 4;
        type.shape.dim[3].dim_param.clear();
      }
    }
    if (found != names.size()) {
      throw Error(invalid_argument("kv_cache_type int8: the model has ", found, " of the ", names.size(), " cache ",
                                   what, "s the config names"));
    }
  };
  retype(graph.input, inputs, "input");
  retype(graph.output, outputs, "output");
  for (model::ValueInfoProto& value : graph.value_info) {
    if (inputs.count(value.name) || outputs.count(value.name)) value.type.elem_type = kOnnxInt8;
  }
  size_t attention_nodes = 0;
  for (model::NodeProto& node : graph.node) {
    if (node.op_type != "GroupQueryAttention") continue;
    ++attention_nodes;
    for (const char* name : {"k_quant_type", "v_quant_type"}) {
      auto it = std::find_if(node.attribute.begin(), node.attribute.end(),
                             [&](const model::AttributeProto& a) { return a.name == name; });
      model::AttributeProto attribute;
      attribute.name = name;
      attribute.type = model::AttributeProto::STRING;
      attribute.s = "PER_TOKEN";
      if (it == node.attribute.end())
        node.attribute.push_back(attribute);
      else
        *it = attribute;
    }
  }
  if (attention_nodes == 0)
    throw Error(invalid_argument("kv_cache_type int8 needs a model with GroupQueryAttention nodes; this one has none"));
}

bool rewrite_for_last_token_logits(model::ModelProto& model, const DecoderConfig& d) {
  model::GraphProto& graph = *model.graph;
  auto producer = [&](const std::string& value) -> model::NodeProto* {
    for (model::NodeProto& node : graph.node) {
      if (std::find(node.output.begin(), node.output.end(), value) != node.output.end()) return &node;
    }
    return nullptr;
  };
  model::NodeProto* head = producer(d.logits);
  std::set<std::string> reshaped = {d.logits};  // values from the head to the logits: one row per batch now
  while (head != nullptr && head->op_type == "Identity" && head->domain.empty() && head->input.size() == 1) {
    reshaped.insert(head->input[0]);
    head = producer(head->input[0]);
  }
  if (head == nullptr || head->input.empty()) return false;
  const bool matmul = head->op_type == "MatMul" && head->domain.empty();
  const bool nbits = head->op_type == "MatMulNBits" && head->domain == "com.microsoft";
  if (!matmul && !nbits) return false;
  for (const model::NodeProto& node : graph.node) {
    // Another reader of the hidden states would still see every position; only the head is cut.
    if (&node != head && std::find(node.input.begin(), node.input.end(), head->input[0]) != node.input.end()) {
      return false;
    }
  }
  const std::string hidden = head->input[0];
  const std::string picked = hidden + "/onyx_last_token", unsqueezed = picked + "/unsqueezed";
  const std::string axes = picked + "/axes";
  // GatherND with batch_dims 1: row b's hidden state at index[b] -> [batch, hidden]; then [batch, 1, hidden].
  model::NodeProto gather;
  gather.op_type = "GatherND";
  gather.name = "/onyx_genai/last_token/GatherND";
  gather.input = {hidden, kLastTokenInput};
  gather.output = {picked};
  model::AttributeProto batch_dims;
  batch_dims.name = "batch_dims";
  batch_dims.type = model::AttributeProto::INT;
  batch_dims.i = 1;
  gather.attribute.push_back(batch_dims);
  model::NodeProto axes_node;
  axes_node.op_type = "Constant";
  axes_node.name = "/onyx_genai/last_token/axes";
  axes_node.output = {axes};
  model::AttributeProto value;
  value.name = "value";
  value.type = model::AttributeProto::TENSOR;
  value.t = std::make_shared<model::TensorProto>();
  value.t->dims = {1};
  value.t->data_type = 7;  // int64
  value.t->int64_data = {1};
  axes_node.attribute.push_back(value);
  model::NodeProto unsqueeze;
  unsqueeze.op_type = "Unsqueeze";
  unsqueeze.name = "/onyx_genai/last_token/Unsqueeze";
  unsqueeze.input = {picked, axes};
  unsqueeze.output = {unsqueezed};
  head->input[0] = unsqueezed;
  const auto at = graph.node.begin() + (head - graph.node.data());
  graph.node.insert(at, {gather, axes_node, unsqueeze});  // `head` dangles from here

  model::ValueInfoProto index;
  index.name = kLastTokenInput;
  index.has_type = true;
  index.type.value_case = model::TypeProto::Case::kTensorType;
  index.type.elem_type = 7;  // int64
  index.type.has_shape = true;
  index.type.shape.dim.resize(2);
  index.type.shape.dim[0].dim_param = "batch_size";
  index.type.shape.dim[1].has_value = true;
  index.type.shape.dim[1].dim_value = 1;
  graph.input.push_back(index);
  for (model::ValueInfoProto& output : graph.output) {
    if (output.name == d.logits && output.type.has_shape && output.type.shape.dim.size() == 3) {
      output.type.shape.dim[1] = model::TensorShapeProto::Dimension{};
      output.type.shape.dim[1].has_value = true;
      output.type.shape.dim[1].dim_value = 1;
    }
  }
  // The declared shapes of values between the cut and the output no longer hold.
  std::erase_if(graph.value_info, [&](const model::ValueInfoProto& v) { return reshaped.count(v.name) != 0; });
  return true;
}

int64_t Model::Impl::max_length(int64_t requested) const {
  if (requested > 0) return requested;
  if (config.search.max_length > 0) return config.search.max_length;
  return config.context_length;
}

namespace {

std::shared_ptr<Model::Impl> load_model(const Json& document, const std::string& folder) {
  auto impl = std::make_shared<Model::Impl>();
  impl->config = parse_model_config(document, folder);
  const ModelConfig& c = impl->config;
  const DecoderConfig& d = c.decoder;
  const std::string path = (std::filesystem::path(folder) / d.filename).string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw Error(invalid_argument("genai_config.json: model.decoder.filename: '", d.filename, "' is not a file in '",
                                 folder, "'"));
  }
  Result<model::ModelProto> proto = model::read_model_file(path);
  if (!proto.is_ok()) throw Error(invalid_argument("cannot load '", path, "': ", proto.status().message()));
  for (const model::NodeProto& node : proto->graph->node) {
    if (node.op_type == "GroupQueryAttention") impl->group_query_attention = true;
  }
  SessionOptions options;
  options.intra_op_num_threads = d.intra_op_num_threads;
  options.inter_op_num_threads = d.inter_op_num_threads;
  options.log_id = d.log_id;
  std::vector<std::string> providers;
  for (const auto& [name, values] : d.providers) {
    const std::string session_name = session_provider_name(name);
    providers.push_back(session_name);
    options.provider_options[session_name] = values;
  }
  if (d.int8_kv_cache) rewrite_for_int8_kv_cache(*proto, d);
  impl->last_token_logits = rewrite_for_last_token_logits(*proto, d);
  impl->session = session::SessionFactory::from_model(std::move(proto).value(), options, providers);
  const std::string file = d.filename;
  const auto& inputs = impl->session->inputs();
  const auto& outputs = impl->session->outputs();
  require_meta(inputs, d.input_ids, "input", file, "model.decoder.inputs.input_ids");
  require_meta(outputs, d.logits, "output", file, "model.decoder.outputs.logits");
  for (int64_t layer = 0; layer < d.num_hidden_layers; ++layer) {
    require_meta(inputs, layer_name(d.past_key_names, layer), "input", file, "model.decoder.inputs.past_key_names");
    require_meta(inputs, layer_name(d.past_value_names, layer), "input", file, "model.decoder.inputs.past_value_names");
    require_meta(outputs, layer_name(d.present_key_names, layer), "output", file,
                 "model.decoder.outputs.present_key_names");
    require_meta(outputs, layer_name(d.present_value_names, layer), "output", file,
                 "model.decoder.outputs.present_value_names");
  }
  const std::string extra_layer = layer_name(d.past_key_names, d.num_hidden_layers);
  if (find_meta(inputs, extra_layer) != nullptr) {
    throw Error(invalid_argument(file, " has input '", extra_layer,
                                 "', more layers than genai_config.json: model.decoder.num_hidden_layers (",
                                 d.num_hidden_layers, ")"));
  }
  impl->has_attention_mask = find_meta(inputs, d.attention_mask) != nullptr;
  impl->has_position_ids = find_meta(inputs, d.position_ids) != nullptr;
  const ValueMetadata& past = *find_meta(inputs, layer_name(d.past_key_names, 0));
  impl->cache_dtype = past.type.elem_type;
  if (impl->cache_dtype != DataType::kFloat && impl->cache_dtype != DataType::kInt8) {
    throw Error(not_implemented(file, ": input '", past.name, "' is ", past.type.to_string(),
                                "; onyx.genai runs float32 (or int8) caches"));
  }
  const ValueMetadata& logits = *find_meta(outputs, d.logits);
  if (logits.type.elem_type != DataType::kFloat) {
    throw Error(not_implemented(file, ": output '", logits.name, "' is ", logits.type.to_string(),
                                "; onyx.genai reads float32 logits"));
  }
  if (past.has_shape && past.dims.size() == 4 && past.dims[1] > 0 && past.dims[1] != d.num_key_value_heads) {
    throw Error(invalid_argument(file, ": input '", past.name, "' has ", past.dims[1],
                                 " heads, genai_config.json: model.decoder.num_key_value_heads says ",
                                 d.num_key_value_heads));
  }
  impl->cache_row = d.int8_kv_cache ? d.head_size + 4 : d.head_size;
  if (c.past_present_share_buffer && !impl->group_query_attention) {
    throw Error(invalid_argument("genai_config.json: search.past_present_share_buffer is true, but ", file,
                                 " has no GroupQueryAttention node to write a shared cache in place"));
  }
  return impl;
}

}  // namespace

Model::Model(const std::string& folder) : impl_(load_model(read_config_file(folder), folder)) {}
Model::Model(const Config& config) : impl_(load_model(config.impl_->document, config.impl_->folder)) {}
Model::~Model() = default;

const std::string& Model::folder() const { return impl_->config.folder; }
const std::string& Model::type() const { return impl_->config.type; }
int64_t Model::vocab_size() const { return impl_->config.vocab_size; }
int64_t Model::context_length() const { return impl_->config.context_length; }

int64_t Model::kv_cache_bytes(int64_t batch, int64_t max_length) const {
  const DecoderConfig& d = impl_->config.decoder;
  const int64_t row_bytes = impl_->cache_row * static_cast<int64_t>(dtype_size(impl_->cache_dtype));
  return 2 * d.num_hidden_layers * batch * d.num_key_value_heads * impl_->max_length(max_length) * row_bytes;
}

}  // namespace onyx::genai
