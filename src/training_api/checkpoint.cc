#include "training_api/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/json.h"

namespace onyx::training_api {

namespace {

constexpr char kMagic[8] = {'O', 'N', 'Y', 'X', 'C', 'K', 'P', 'T'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kAlign = 64;
constexpr size_t kPrefixBytes = 24;  // magic, version, reserved, header length

uint64_t align_up(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

struct NumpyType {
  DataType type;
  const char* dtype;
};
// Little-endian, as checkpoint.py writes every array; one-byte types have no
// byte order ("|").
constexpr NumpyType kNumpyTypes[] = {
    {DataType::kFloat, "<f4"},     {DataType::kDouble, "<f8"},      {DataType::kFloat16, "<f2"},
    {DataType::kInt8, "|i1"},      {DataType::kUInt8, "|u1"},       {DataType::kBool, "|b1"},
    {DataType::kInt16, "<i2"},     {DataType::kUInt16, "<u2"},      {DataType::kInt32, "<i4"},
    {DataType::kUInt32, "<u4"},    {DataType::kInt64, "<i8"},       {DataType::kUInt64, "<u8"},
    {DataType::kComplex64, "<c8"}, {DataType::kComplex128, "<c16"},
};

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
uint64_t get_le(const char* bytes, int count) {
  uint64_t v = 0;
  for (int i = count - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(bytes[i]);
  return v;
}

// Adds a tensor's fields to its header entry: dtype, shape, offset, nbytes.
void add_tensor_fields(Json& entry, const Tensor& tensor, uint64_t offset) {
  Json shape = Json::array();
  for (int64_t d : tensor.shape()) shape.push_back(d);
  entry.set("dtype", numpy_dtype(tensor.dtype()));
  entry.set("shape", std::move(shape));
  entry.set("offset", static_cast<int64_t>(offset));
  entry.set("nbytes", static_cast<int64_t>(tensor.bytes()));
}

// Reads the tensors of a header, each from its place in the file.
class TensorReader {
 public:
  TensorReader(const std::string& path, std::ifstream& file, uint64_t data_start, uint64_t file_size)
      : path_(path), file_(file), data_start_(data_start), file_size_(file_size) {}

  Tensor read(const Json& entry) {
    const std::string& dtype = entry.at("dtype").as_string();
    const DataType type = dtype_from_numpy(dtype);
    if (type == DataType::kUndefined) fail(str_cat("a tensor of dtype '", dtype, "', which onyx does not read"));
    Shape shape;
    for (const Json& d : entry.at("shape").as_array()) {
      if (d.as_int() < 0) fail("a tensor with a negative dimension");
      shape.push_back(d.as_int());
    }
    const int64_t offset = entry.at("offset").as_int();
    const int64_t nbytes = entry.at("nbytes").as_int();
    if (offset < 0 || nbytes < 0) fail("a tensor with a negative offset or size");
    Tensor tensor(type, shape);
    if (static_cast<int64_t>(tensor.bytes()) != nbytes) {
      fail(str_cat("a tensor of ", nbytes, " bytes, but ", dtype, shape_to_string(shape), " takes ", tensor.bytes()));
    }
    const uint64_t start = data_start_ + static_cast<uint64_t>(offset);
    if (start + static_cast<uint64_t>(nbytes) > file_size_) {
      throw Error(invalid_model("'", path_, "' is truncated (a tensor runs past the end of the file)"));
    }
    file_.seekg(static_cast<std::streamoff>(start));
    file_.read(static_cast<char*>(tensor.raw_data()), static_cast<std::streamsize>(nbytes));
    if (!file_) throw Error(runtime_error("cannot read '", path_, "': ", std::strerror(errno)));
    return tensor;
  }

  [[noreturn]] void fail(const std::string& what) const { throw Error(invalid_argument(what)); }

 private:
  const std::string& path_;
  std::ifstream& file_;
  uint64_t data_start_;
  uint64_t file_size_;
};

training::CheckpointState state_from_header(const Json& header, TensorReader& tensors) {
  training::CheckpointState state;
  for (const Json& entry : header.at("parameters").as_array()) {
    state.add_parameter(entry.at("name").as_string(), tensors.read(entry), entry.at("requires_grad").as_bool());
  }
  const Json* optimizer = header.find("optimizer");
  if (optimizer != nullptr && !optimizer->is_null()) {
    training::OptimizerState opt;
    opt.step = optimizer->at("step").as_int();
    opt.learning_rate = optimizer->at("learning_rate").as_double();
    for (const Json& entry : optimizer->at("states").as_array()) {
      opt.moment(entry.at("param").as_string(), entry.at("key").as_string()) = tensors.read(entry);
    }
    state.set_optimizer_state(std::move(opt));
  }
  if (const Json* properties = header.find("properties")) {
    for (const auto& [name, property] : properties->as_object()) {
      const std::string& type = property.at("type").as_string();
      const Json& value = property.at("value");
      if (type == "int") {
        state.set_property(name, value.as_int());
      } else if (type == "float") {
        state.set_property(name, value.as_double());
      } else if (type == "str") {
        state.set_property(name, value.as_string());
      } else {
        tensors.fail(str_cat("property '", name, "' of type '", type, "' (expected int, float or str)"));
      }
    }
  }
  return state;
}

}  // namespace

std::string numpy_dtype(DataType type) {
  for (const NumpyType& t : kNumpyTypes) {
    if (t.type == type) return t.dtype;
  }
  return "";
}

DataType dtype_from_numpy(const std::string& dtype) {
  for (const NumpyType& t : kNumpyTypes) {
    if (dtype == t.dtype) return t.type;
  }
  return DataType::kUndefined;
}

Result<training::CheckpointState> read_checkpoint(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return invalid_argument("no checkpoint file at '", path, "'");
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  std::ifstream file(path, std::ios::binary);
  if (ec || !file) return runtime_error("cannot open '", path, "': ", std::strerror(errno));
  char prefix[kPrefixBytes] = {};
  file.read(prefix, kPrefixBytes);
  if (file_size < kPrefixBytes || std::memcmp(prefix, kMagic, sizeof(kMagic)) != 0) {
    return invalid_model("'", path, "' is not an onyx checkpoint (no ONYXCKPT magic)");
  }
  const uint64_t version = get_le(prefix + 8, 4);
  if (version != kVersion) {
    return invalid_model("'", path, "' is an onyx checkpoint of format version ", version, "; this onyx reads version ",
                         kVersion);
  }
  const uint64_t header_bytes = get_le(prefix + 16, 8);
  if (header_bytes > file_size - kPrefixBytes) {
    return invalid_model("'", path, "' is truncated (its header runs past the end of the file)");
  }
  std::string text(header_bytes, '\0');
  file.read(text.data(), static_cast<std::streamsize>(header_bytes));
  if (!file) return runtime_error("cannot read '", path, "': ", std::strerror(errno));
  Result<Json> header = parse_json(text);
  if (!header.is_ok()) return invalid_model("'", path, "' has a malformed header: ", header.status().message());
  TensorReader tensors(path, file, align_up(kPrefixBytes + header_bytes), file_size);
  try {
    return state_from_header(header.value(), tensors);
  } catch (const Error& error) {
    if (error.code() != StatusCode::kInvalidArgument) throw;
    // What the JSON accessors and the entry checks found: the header does not
    // describe a checkpoint.
    return invalid_model("'", path, "' has a malformed header: ", error.what());
  }
}

Status write_checkpoint(const training::CheckpointState& state, const std::string& path, bool include_optimizer_state) {
  std::vector<std::pair<uint64_t, const Tensor*>> blobs;
  uint64_t offset = 0;
  Status bad_type;
  // Gives the tensor its place in the data section, recorded in `entry`.
  auto place = [&](const Tensor& tensor, Json& entry) {
    if (numpy_dtype(tensor.dtype()).empty() && bad_type.is_ok()) {
      bad_type = invalid_argument("cannot save '", path, "': a checkpoint holds no ", dtype_name(tensor.dtype()),
                                  " tensors (numpy has no such type)");
    }
    if (!tensor.device().host_readable() && bad_type.is_ok()) {
      bad_type = invalid_argument("cannot save '", path, "': a tensor on ", device_to_string(tensor.device()));
    }
    add_tensor_fields(entry, tensor, offset);
    blobs.emplace_back(offset, &tensor);
    offset = align_up(offset + tensor.bytes());
  };

  Json parameters = Json::array();
  for (const training::Parameter& p : state.parameters()) {
    Json entry(Json::Object{{"name", p.name}});
    place(p.data, entry);
    entry.set("requires_grad", p.requires_grad);
    parameters.push_back(std::move(entry));
  }
  Json optimizer;
  if (include_optimizer_state && state.has_optimizer_state()) {
    const training::OptimizerState& opt = state.optimizer_state();
    Json states = Json::array();
    for (const auto& [param, moments] : opt.moments) {
      for (const auto& [key, tensor] : moments) {
        Json entry(Json::Object{{"param", param}, {"key", key}});
        place(tensor, entry);
        states.push_back(std::move(entry));
      }
    }
    optimizer = Json(Json::Object{{"step", opt.step}, {"learning_rate", opt.learning_rate}, {"states", states}});
  }
  ONYX_RETURN_IF_ERROR(bad_type);
  Json properties = Json::object();
  for (const auto& [name, value] : state.properties()) {
    static const char* const kTypes[] = {"int", "float", "str"};
    Json v = std::visit([](const auto& x) { return Json(x); }, value);
    properties.set(name, Json(Json::Object{{"type", kTypes[value.index()]}, {"value", std::move(v)}}));
  }
  Json header(Json::Object{{"parameters", std::move(parameters)},
                           {"optimizer", std::move(optimizer)},
                           {"properties", std::move(properties)}});
  Result<std::string> text = to_json(header);
  if (!text.is_ok()) return invalid_argument("cannot save '", path, "': ", text.status().message());

  std::string prefix(kMagic, sizeof(kMagic));
  put_u32(prefix, kVersion);
  put_u32(prefix, 0);
  put_u64(prefix, text->size());
  prefix += text.value();
  prefix.resize(align_up(prefix.size()), '\0');
  return replace_file(path, [&](std::FILE* f) {
    if (std::fwrite(prefix.data(), 1, prefix.size(), f) != prefix.size()) return false;
    uint64_t written = 0;
    static const char kZeros[kAlign] = {};
    for (const auto& [at, tensor] : blobs) {
      if (std::fwrite(kZeros, 1, at - written, f) != at - written) return false;
      if (std::fwrite(tensor->raw_data(), 1, tensor->bytes(), f) != tensor->bytes()) return false;
      written = at + tensor->bytes();
    }
    return true;
  });
}

Status replace_file(const std::string& path, const std::function<bool(std::FILE*)>& fill) {
  const std::filesystem::path target = std::filesystem::absolute(path);
  const std::filesystem::path folder = target.parent_path();
  const std::filesystem::path temp = folder / str_cat(".", target.filename().string(), ".tmp-", getpid());
  std::FILE* f = std::fopen(temp.c_str(), "wb");
  if (f == nullptr) return runtime_error("cannot write '", path, "': ", std::strerror(errno));
  bool ok = fill(f) && std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const int error = errno;
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(temp.c_str(), target.c_str()) != 0) {
    const int cause = ok ? errno : error;
    std::remove(temp.c_str());
    return runtime_error("cannot write '", path, "': ", std::strerror(cause));
  }
  // The rename itself survives a power cut once the folder is synced.
  const int fd = open(folder.c_str(), O_RDONLY);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
  return Status::ok();
}

}  // namespace onyx::training_api

namespace onyx::training {

const Tensor* OptimizerState::find(const std::string& param, const std::string& key) const {
  for (const auto& [name, entries] : moments) {
    if (name != param) continue;
    for (const auto& [k, tensor] : entries) {
      if (k == key) return &tensor;
    }
  }
  return nullptr;
}

Tensor& OptimizerState::moment(const std::string& param, const std::string& key) {
  auto it = std::find_if(moments.begin(), moments.end(), [&](const auto& entry) { return entry.first == param; });
  if (it == moments.end()) it = moments.insert(moments.end(), {param, {}});
  for (auto& [k, tensor] : it->second) {
    if (k == key) return tensor;
  }
  return it->second.emplace_back(key, Tensor()).second;
}

CheckpointState CheckpointState::load_checkpoint(const std::string& path) {
  Result<CheckpointState> state = training_api::read_checkpoint(path);
  throw_if_error(state.status());
  return std::move(state).value();
}

void CheckpointState::save_checkpoint(const CheckpointState& state, const std::string& path,
                                      bool include_optimizer_state) {
  throw_if_error(training_api::write_checkpoint(state, path, include_optimizer_state));
}

const Parameter& CheckpointState::parameter(const std::string& name) const {
  auto it = index_.find(name);
  if (it == index_.end()) throw Error(invalid_argument("the checkpoint has no parameter '", name, "'"));
  return params_[it->second];
}

Parameter& CheckpointState::mutable_parameter(const std::string& name) {
  return const_cast<Parameter&>(std::as_const(*this).parameter(name));
}

void CheckpointState::add_parameter(const std::string& name, Tensor data, bool requires_grad) {
  if (has_parameter(name)) throw Error(invalid_argument("the checkpoint already has a parameter '", name, "'"));
  index_[name] = params_.size();
  params_.push_back({name, std::move(data), requires_grad});
}

void CheckpointState::set_parameter(const std::string& name, const Tensor& value) {
  Parameter& p = mutable_parameter(name);
  if (value.dtype() != p.data.dtype() || value.shape() != p.data.shape()) {
    throw Error(invalid_argument("parameter '", name, "' is ", p.data.describe(), ", got ", value.describe()));
  }
  p.data = value.clone();
}

Tensor CheckpointState::gradient(const std::string& name) const {
  parameter(name);  // a name the state does not know is an error, not "no gradient"
  auto it = grads_.find(name);
  return grad_reset_ || it == grads_.end() ? Tensor() : it->second;
}

OptimizerState& CheckpointState::optimizer_state() {
  return const_cast<OptimizerState&>(std::as_const(*this).optimizer_state());
}

const OptimizerState& CheckpointState::optimizer_state() const {
  if (!optimizer_) {
    throw Error(
        invalid_argument("the checkpoint has no optimizer state (no Optimizer has run on it, and the file "
                         "was saved without include_optimizer_state)"));
  }
  return *optimizer_;
}

bool CheckpointState::has_property(const std::string& name) const {
  return std::any_of(properties_.begin(), properties_.end(), [&](const auto& p) { return p.first == name; });
}

const PropertyValue& CheckpointState::property(const std::string& name) const {
  for (const auto& [key, value] : properties_) {
    if (key == name) return value;
  }
  throw Error(invalid_argument("the checkpoint has no property '", name, "'"));
}

void CheckpointState::set_property(const std::string& name, PropertyValue value) {
  for (auto& [key, current] : properties_) {
    if (key == name) {
      current = std::move(value);
      return;
    }
  }
  properties_.emplace_back(name, std::move(value));
}

void CheckpointState::erase_property(const std::string& name) {
  std::erase_if(properties_, [&](const auto& p) { return p.first == name; });
}

}  // namespace onyx::training
