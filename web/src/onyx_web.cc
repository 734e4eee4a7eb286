// The WebAssembly module's C functions, called from web/js/onyx.js through
// the module's exports: sessions over the public C++ API (onyx/session.h),
// feeds and results as handles whose tensors JavaScript reads and writes in
// the module's memory.
//
// Errors never cross as exceptions: a function that fails returns 0 (or -1)
// and onyx_web_last_error() gives onyx's message, which JavaScript rejects
// the promise with.
#include <emscripten/emscripten.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/json.h"
#include "model/reader.h"
#include "model/tensor_proto.h"
#include "onyx/session.h"

namespace {

thread_local std::string g_last_error;

void set_error(std::string message) { g_last_error = std::move(message); }

// Runs fn, turning an exception into last_error and `failed`.
template <typename Fn, typename R>
R guarded(R failed, Fn&& fn) {
  try {
    g_last_error.clear();
    return fn();
  } catch (const std::exception& e) {
    set_error(e.what());
  } catch (...) {
    set_error("unknown error");
  }
  return failed;
}

// Values made by a run (or parsed from a TensorProto), read by JavaScript.
struct Results {
  std::vector<std::string> names;
  std::vector<onyx::Value> values;
  std::string scratch;  // the last string element handed out
};

// Feeds being assembled for one run.
struct Feeds {
  onyx::Feeds feeds;
};

struct Session {
  std::unique_ptr<onyx::InferenceSession> session;
  std::string io_json;
  std::string profile;
};

onyx::Result<onyx::Tensor> make_tensor(int32_t dtype, int32_t rank, const int64_t* dims, const void* data,
                                       size_t bytes) {
  if (!onyx::dtype_is_known(dtype) || dtype == 0)
    return onyx::invalid_argument("unknown tensor element type " + std::to_string(dtype));
  const auto type = static_cast<onyx::DataType>(dtype);
  onyx::Shape shape(dims, dims + rank);
  for (int64_t d : shape)
    if (d < 0) return onyx::invalid_argument("a tensor dimension is negative");
  auto created = onyx::Tensor::create(type, shape);
  if (!created.is_ok()) return created.status();
  onyx::Tensor tensor = std::move(created.value());
  if (type == onyx::DataType::kString) {
    // [u32 length, bytes] per element.
    const auto* p = static_cast<const uint8_t*>(data);
    const uint8_t* end = p + bytes;
    auto* out = tensor.data<std::string>();
    for (int64_t i = 0; i < tensor.size(); ++i) {
      uint32_t length = 0;
      if (end - p < 4) return onyx::invalid_argument("string tensor data ends early");
      std::memcpy(&length, p, 4);
      p += 4;
      if (static_cast<size_t>(end - p) < length) return onyx::invalid_argument("string tensor data ends early");
      out[i].assign(reinterpret_cast<const char*>(p), length);
      p += length;
    }
    return tensor;
  }
  if (bytes != tensor.bytes())
    return onyx::invalid_argument("tensor of " + tensor.describe() + " needs " +
                                          std::to_string(tensor.bytes()) + " bytes of data, got " +
                                          std::to_string(bytes));
  if (bytes != 0) std::memcpy(tensor.raw_data(), data, bytes);
  return tensor;
}

// The tensor at (output, item): item -1 is the output itself, otherwise an
// element of a sequence output.
const onyx::Tensor* tensor_at(const Results* r, int32_t output, int32_t item) {
  if (r == nullptr || output < 0 || static_cast<size_t>(output) >= r->values.size()) return nullptr;
  const onyx::Value& v = r->values[static_cast<size_t>(output)];
  if (item < 0) return v.is_tensor() ? &v.tensor() : nullptr;
  if (!v.is_sequence() || static_cast<size_t>(item) >= v.items().size()) return nullptr;
  const onyx::Value& e = v.items()[static_cast<size_t>(item)];
  return e.is_tensor() ? &e.tensor() : nullptr;
}

onyx::Json metadata_json(const std::vector<onyx::ValueMetadata>& values) {
  onyx::Json list = onyx::Json::array();
  for (const auto& m : values) {
    onyx::Json entry = onyx::Json::object();
    entry.set("name", m.name);
    entry.set("onnxType", m.type.to_string());
    entry.set("elemType", static_cast<int64_t>(m.type.elem_type));
    if (m.has_shape) {
      onyx::Json shape = onyx::Json::array();
      for (size_t i = 0; i < m.dims.size(); ++i) {
        if (i < m.dim_params.size() && !m.dim_params[i].empty())
          shape.push_back(m.dim_params[i]);
        else
          shape.push_back(m.dims[i]);
      }
      entry.set("shape", std::move(shape));
    }
    list.push_back(std::move(entry));
  }
  return list;
}

// Flattens `extra` config entries: {"session": {"a": "1"}} -> "session.a" = "1".
void flatten_entries(const onyx::Json& value, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (value.kind() == onyx::Json::Kind::kObject) {
    for (const auto& [key, member] : value.as_object())
      flatten_entries(member, prefix.empty() ? key : prefix + "." + key, out);
  } else if (value.kind() == onyx::Json::Kind::kString) {
    out[prefix] = value.as_string();
  } else if (value.kind() == onyx::Json::Kind::kBool) {
    out[prefix] = value.as_bool() ? "1" : "0";
  } else if (value.is_number()) {
    out[prefix] = std::to_string(value.as_int());
  } else {
    throw onyx::Error(onyx::invalid_argument("session option extra '", prefix, "' is not a string, number or boolean"));
  }
}

onyx::SessionOptions session_options(const onyx::Json& o) {
  onyx::SessionOptions options;
  if (const auto* v = o.find("threads")) options.intra_op_num_threads = static_cast<int>(v->as_int());
  if (const auto* v = o.find("logLevel")) options.log_severity_level = static_cast<int>(v->as_int());
  if (const auto* v = o.find("optLevel")) {
    switch (v->as_int()) {
      case 0: options.graph_optimization_level = onyx::GraphOptimizationLevel::kDisableAll; break;
      case 1: options.graph_optimization_level = onyx::GraphOptimizationLevel::kEnableBasic; break;
      case 2: options.graph_optimization_level = onyx::GraphOptimizationLevel::kEnableExtended; break;
      default: options.graph_optimization_level = onyx::GraphOptimizationLevel::kEnableAll; break;
    }
  }
  // The trace goes to the module's in-memory file system; onyx_web_end_profiling reads it back.
  if (const auto* v = o.find("profiling")) options.enable_profiling = v->as_bool();
  options.profile_file_prefix = "/tmp/onyx_profile";
  if (const auto* v = o.find("enableMemPattern")) options.enable_mem_pattern = v->as_bool();
  if (const auto* v = o.find("enableCpuMemArena")) options.enable_cpu_mem_arena = v->as_bool();
  if (const auto* v = o.find("parallel")) {
    options.execution_mode = v->as_bool() ? onyx::ExecutionMode::kParallel : onyx::ExecutionMode::kSequential;
  }
  if (const auto* v = o.find("freeDimensionOverrides")) {
    for (const auto& [name, value] : v->as_object()) options.free_dimension_overrides[name] = value.as_int();
  }
  if (const auto* v = o.find("extra")) flatten_entries(*v, "", options.config_entries);
  return options;
}

}  // namespace

extern "C" {

EMSCRIPTEN_KEEPALIVE const char* onyx_web_version() { return ONYX_VERSION; }

EMSCRIPTEN_KEEPALIVE const char* onyx_web_last_error() { return g_last_error.c_str(); }

// A session of the model in [bytes, bytes + length), with the options in
// `options_json` (written by web/js/onyx.js): threads, optLevel (0 disabled,
// 1 basic, 2 extended, 99 all), logLevel, profiling, enableMemPattern,
// enableCpuMemArena, parallel, freeDimensionOverrides {name: size}, extra
// (config entries, nested objects joined with '.').
EMSCRIPTEN_KEEPALIVE Session* onyx_web_session_create(const char* bytes, size_t length, const char* options_json) {
  return guarded<>(static_cast<Session*>(nullptr), [&] {
    auto parsed = onyx::parse_json(options_json);
    onyx::throw_if_error(parsed.status());
    const onyx::SessionOptions options = session_options(parsed.value());
    auto s = std::make_unique<Session>();
    s->session = onyx::InferenceSession::from_bytes(std::string_view(bytes, length), options);
    onyx::Json io = onyx::Json::object();
    io.set("inputs", metadata_json(s->session->inputs()));
    io.set("outputs", metadata_json(s->session->outputs()));
    auto text = onyx::to_json(io);
    onyx::throw_if_error(text.status());
    s->io_json = std::move(text.value());
    return s.release();
  });
}

EMSCRIPTEN_KEEPALIVE void onyx_web_session_release(Session* s) { delete s; }

// Stops profiling and returns the Chrome-trace JSON (empty when profiling was
// off); valid until the next call for this session.
EMSCRIPTEN_KEEPALIVE const char* onyx_web_end_profiling(Session* s) {
  return guarded<>(static_cast<const char*>(nullptr), [&] {
    s->profile.clear();
    const std::string path = s->session->end_profiling();
    if (path.empty()) return s->profile.c_str();
    std::ifstream in(path, std::ios::binary);
    s->profile.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    std::remove(path.c_str());
    return s->profile.c_str();
  });
}

// {"inputs": [{name, onnxType, elemType, shape}], "outputs": [...]}
EMSCRIPTEN_KEEPALIVE const char* onyx_web_session_io(const Session* s) { return s->io_json.c_str(); }

EMSCRIPTEN_KEEPALIVE Feeds* onyx_web_feeds_create() { return new Feeds(); }
EMSCRIPTEN_KEEPALIVE void onyx_web_feeds_release(Feeds* f) { delete f; }

// Starts feed `name`: kind 0 a tensor (one onyx_web_feeds_append follows),
// 1 a sequence (any number follow), 2 an empty optional.
EMSCRIPTEN_KEEPALIVE int32_t onyx_web_feeds_add(Feeds* f, const char* name, int32_t kind) {
  return guarded<>(-1, [&] {
    onyx::Value value;
    if (kind == 1)
      value = onyx::Value::sequence({});
    else if (kind == 2)
      value = onyx::Value::none();
    f->feeds.emplace_back(name, std::move(value));
    return 0;
  });
}

// Appends a tensor (copied) to the last feed.
EMSCRIPTEN_KEEPALIVE int32_t onyx_web_feeds_append(Feeds* f, int32_t dtype, int32_t rank, const int64_t* dims,
                                                    const void* data, size_t bytes) {
  return guarded<>(-1, [&] {
    if (f->feeds.empty()) throw onyx::Error(onyx::invalid_argument("no feed to append to"));
    auto tensor = make_tensor(dtype, rank, dims, data, bytes);
    onyx::throw_if_error(tensor.status());
    auto& [name, value] = f->feeds.back();
    if (value.is_sequence()) {
      onyx::Sequence items = value.items();
      items.push_back(onyx::Value(std::move(tensor.value())));
      value = onyx::Value::sequence(std::move(items));
    } else {
      value = onyx::Value(std::move(tensor.value()));
    }
    return 0;
  });
}

// Runs the session; output_names is a '\n'-joined list, empty for all.
EMSCRIPTEN_KEEPALIVE Results* onyx_web_run(const Session* s, const Feeds* f, const char* output_names) {
  return guarded<>(static_cast<Results*>(nullptr), [&] {
    std::vector<std::string> names;
    std::string_view list(output_names);
    while (!list.empty()) {
      const size_t end = list.find('\n');
      names.emplace_back(list.substr(0, end));
      list = end == std::string_view::npos ? std::string_view() : list.substr(end + 1);
    }
    auto r = std::make_unique<Results>();
    r->values = s->session->run(names, f->feeds);
    if (names.empty())
      for (const auto& m : s->session->outputs()) names.push_back(m.name);
    r->names = std::move(names);
    return r.release();
  });
}

// A TensorProto (kind 0), SequenceProto (1) or OptionalProto (2) as a
// one-value Results: the backend suite's test data, for the browser tests.
EMSCRIPTEN_KEEPALIVE Results* onyx_web_tensor_proto_parse(const char* bytes, size_t length, int32_t kind) {
  return guarded<>(static_cast<Results*>(nullptr), [&] {
    const std::string_view data(bytes, length);
    auto r = std::make_unique<Results>();
    if (kind == 0) {
      auto proto = onyx::model::read_tensor_proto(data);
      onyx::throw_if_error(proto.status());
      auto tensor = onyx::model::tensor_from_proto(proto.value());
      onyx::throw_if_error(tensor.status());
      // The tensor may borrow the proto's bytes: keep a copy of its own.
      r->values.emplace_back(tensor.value().clone());
      r->names.push_back(proto.value().name);
      return r.release();
    }
    if (kind == 1) {
      auto proto = onyx::model::read_sequence_proto(data);
      onyx::throw_if_error(proto.status());
      auto value = onyx::model::value_from_sequence_proto(proto.value());
      onyx::throw_if_error(value.status());
      r->names.push_back(proto.value().name);
      r->values.push_back(std::move(value.value()));
    } else {
      auto proto = onyx::model::read_optional_proto(data);
      onyx::throw_if_error(proto.status());
      auto value = onyx::model::value_from_optional_proto(proto.value());
      onyx::throw_if_error(value.status());
      r->names.push_back(proto.value().name);
      r->values.push_back(std::move(value.value()));
    }
    return r.release();
  });
}

EMSCRIPTEN_KEEPALIVE void onyx_web_results_release(Results* r) { delete r; }
EMSCRIPTEN_KEEPALIVE int32_t onyx_web_result_count(const Results* r) { return static_cast<int32_t>(r->values.size()); }
EMSCRIPTEN_KEEPALIVE const char* onyx_web_result_name(const Results* r, int32_t i) {
  return r->names[static_cast<size_t>(i)].c_str();
}
// 0 a tensor, 1 a sequence, 2 an empty optional, 3 something else (a map).
EMSCRIPTEN_KEEPALIVE int32_t onyx_web_result_kind(const Results* r, int32_t i) {
  const onyx::Value& v = r->values[static_cast<size_t>(i)];
  if (v.is_tensor()) return 0;
  if (v.is_sequence()) return 1;
  if (v.is_none()) return 2;
  return 3;
}
EMSCRIPTEN_KEEPALIVE int32_t onyx_web_result_items(const Results* r, int32_t i) {
  const onyx::Value& v = r->values[static_cast<size_t>(i)];
  return v.is_sequence() ? static_cast<int32_t>(v.items().size()) : 0;
}
EMSCRIPTEN_KEEPALIVE int32_t onyx_web_result_type(const Results* r, int32_t i, int32_t item) {
  const onyx::Tensor* t = tensor_at(r, i, item);
  return t == nullptr ? 0 : static_cast<int32_t>(t->dtype());
}
EMSCRIPTEN_KEEPALIVE int32_t onyx_web_result_rank(const Results* r, int32_t i, int32_t item) {
  const onyx::Tensor* t = tensor_at(r, i, item);
  return t == nullptr ? -1 : static_cast<int32_t>(t->rank());
}
EMSCRIPTEN_KEEPALIVE const int64_t* onyx_web_result_dims(const Results* r, int32_t i, int32_t item) {
  const onyx::Tensor* t = tensor_at(r, i, item);
  return t == nullptr ? nullptr : t->shape().data();
}
EMSCRIPTEN_KEEPALIVE const void* onyx_web_result_data(const Results* r, int32_t i, int32_t item) {
  const onyx::Tensor* t = tensor_at(r, i, item);
  return t == nullptr ? nullptr : t->raw_data();
}
EMSCRIPTEN_KEEPALIVE size_t onyx_web_result_bytes(const Results* r, int32_t i, int32_t item) {
  const onyx::Tensor* t = tensor_at(r, i, item);
  return t == nullptr ? 0 : t->bytes();
}
// Element `index` of a string tensor, as UTF-8 (valid until the next call).
EMSCRIPTEN_KEEPALIVE const char* onyx_web_result_string(Results* r, int32_t i, int32_t item, int32_t index,
                                                        int32_t* length) {
  const onyx::Tensor* t = tensor_at(r, i, item);
  if (t == nullptr || t->dtype() != onyx::DataType::kString || index < 0 || index >= t->size()) {
    *length = 0;
    return "";
  }
  r->scratch = t->data<std::string>()[index];
  *length = static_cast<int32_t>(r->scratch.size());
  return r->scratch.data();
}

}  // extern "C"
