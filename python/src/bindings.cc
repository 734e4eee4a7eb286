// The `_onyx` extension: binds InferenceSession, its options and Value to
// Python. The onnxruntime-compatible API on top of it is python/onyx/*.py.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "onyx/device.h"
#include "onyx/options.h"
#include "onyx/session.h"
#include "onyx/status.h"
#include "onyx/value.h"

namespace nb = nanobind;

namespace onyx {
namespace {

// Exception classes with onnxruntime's names (its capi.onnxruntime_pybind11_state),
// each directly below OnyxError, which is below Exception as onnxruntime's
// classes are: `except InvalidArgument` catches what it catches there, and
// `except RuntimeError` does not catch them, as there.
struct ErrorClasses {
  PyObject* base = nullptr;              // OnyxError
  PyObject* invalid_argument = nullptr;  // InvalidArgument
  PyObject* invalid_graph = nullptr;     // InvalidGraph (onyx's InvalidModel)
  PyObject* invalid_protobuf = nullptr;  // InvalidProtobuf: the model file does not decode
  PyObject* not_implemented = nullptr;   // NotImplemented
  PyObject* fail = nullptr;              // Fail
};
ErrorClasses g_errors;

PyObject* error_class_for(const Error& error) {
  switch (error.code()) {
    case StatusCode::kInvalidArgument: return g_errors.invalid_argument;
    case StatusCode::kInvalidModel:
      // InferenceSession::from_file/from_bytes prefix the reader's errors so.
      return std::string_view(error.what()).starts_with("cannot load model") ? g_errors.invalid_protobuf
                                                                             : g_errors.invalid_graph;
    case StatusCode::kNotImplemented: return g_errors.not_implemented;
    case StatusCode::kRuntimeError: return g_errors.fail;
    case StatusCode::kOk: break;
  }
  return g_errors.base;
}

[[noreturn]] void throw_status(const Status& status) { throw Error(status); }

// ---- devices -----------------------------------------------------------------

constexpr DeviceType kDeviceTypes[] = {DeviceType::kCpu, DeviceType::kCuda, DeviceType::kVulkan, DeviceType::kOpenVino,
                                       DeviceType::kTest};

// A device from the numbers the Python layer passes (onyx's DeviceType and
// an id); refuses numbers that name no device.
Device device_from_python(int type, int id) {
  bool known = false;
  for (DeviceType t : kDeviceTypes) known = known || static_cast<int>(t) == type;
  if (!known) throw_status(invalid_argument("unknown device type number ", type));
  if (id < 0) throw_status(invalid_argument("device id ", id, " is negative"));
  return Device{static_cast<DeviceType>(type), static_cast<int32_t>(id)};
}

// Device memory holds numbers only: a std::string cannot live where host
// code cannot construct it.
void check_device_can_hold(DataType dtype, const Device& device) {
  if (dtype == DataType::kString && !device.host_readable()) {
    throw_status(invalid_argument("string tensors live in host memory only, not on ", device_type_name(device.type)));
  }
}

// ---- numpy <-> Tensor ------------------------------------------------------

// The DLPack type numpy understands for each onyx element type. Types numpy
// lacks are shown through an integer view of the same width: bfloat16 as
// uint16, the float8 family and float4 as uint8, the unpacked 4-/2-bit
// integers (one element per byte in onyx) as int8/uint8.
bool dlpack_dtype_for(DataType dtype, nb::dlpack::dtype* out) {
  using nb::dlpack::dtype_code;
  auto make = [out](dtype_code code, int bits) {
    out->code = static_cast<uint8_t>(code);
    out->bits = static_cast<uint8_t>(bits);
    out->lanes = 1;
    return true;
  };
  switch (dtype) {
    case DataType::kFloat: return make(dtype_code::Float, 32);
    case DataType::kDouble: return make(dtype_code::Float, 64);
    case DataType::kFloat16: return make(dtype_code::Float, 16);
    case DataType::kBFloat16: return make(dtype_code::UInt, 16);
    case DataType::kInt8: return make(dtype_code::Int, 8);
    case DataType::kInt16: return make(dtype_code::Int, 16);
    case DataType::kInt32: return make(dtype_code::Int, 32);
    case DataType::kInt64: return make(dtype_code::Int, 64);
    case DataType::kUInt8: return make(dtype_code::UInt, 8);
    case DataType::kUInt16: return make(dtype_code::UInt, 16);
    case DataType::kUInt32: return make(dtype_code::UInt, 32);
    case DataType::kUInt64: return make(dtype_code::UInt, 64);
    case DataType::kBool: return make(dtype_code::Bool, 8);
    case DataType::kComplex64: return make(dtype_code::Complex, 64);
    case DataType::kComplex128: return make(dtype_code::Complex, 128);
    case DataType::kFloat8E4M3FN:
    case DataType::kFloat8E4M3FNUZ:
    case DataType::kFloat8E5M2:
    case DataType::kFloat8E5M2FNUZ:
    case DataType::kFloat8E8M0:
    case DataType::kFloat4E2M1:
    case DataType::kUInt4:
    case DataType::kUInt2: return make(dtype_code::UInt, 8);
    case DataType::kInt4:
    case DataType::kInt2: return make(dtype_code::Int, 8);
    default: return false;
  }
}

// The onyx element type of a DLPack type as numpy exports it.
DataType dtype_from_dlpack(const nb::dlpack::dtype& t) {
  using nb::dlpack::dtype_code;
  if (t.lanes != 1) return DataType::kUndefined;
  switch (static_cast<dtype_code>(t.code)) {
    case dtype_code::Float:
      if (t.bits == 32) return DataType::kFloat;
      if (t.bits == 64) return DataType::kDouble;
      if (t.bits == 16) return DataType::kFloat16;
      break;
    case dtype_code::Int:
      if (t.bits == 8) return DataType::kInt8;
      if (t.bits == 16) return DataType::kInt16;
      if (t.bits == 32) return DataType::kInt32;
      if (t.bits == 64) return DataType::kInt64;
      break;
    case dtype_code::UInt:
      if (t.bits == 8) return DataType::kUInt8;
      if (t.bits == 16) return DataType::kUInt16;
      if (t.bits == 32) return DataType::kUInt32;
      if (t.bits == 64) return DataType::kUInt64;
      break;
    case dtype_code::Bool:
      if (t.bits == 8) return DataType::kBool;
      break;
    case dtype_code::Complex:
      if (t.bits == 64) return DataType::kComplex64;
      if (t.bits == 128) return DataType::kComplex128;
      break;
    case dtype_code::Bfloat:
      if (t.bits == 16) return DataType::kBFloat16;
      break;
    default: break;
  }
  return DataType::kUndefined;
}

std::string dlpack_dtype_name(const nb::dlpack::dtype& t) {
  static const char* const kCodes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  const char* code = t.code < 7 ? kCodes[t.code] : "dlpack-code-";
  return str_cat(code, t.code < 7 ? "" : std::to_string(t.code), static_cast<int>(t.bits));
}

// Holds a Python object from C++ (a Tensor's keep_alive); the reference is
// dropped under the GIL, whichever thread releases the last Tensor copy.
std::shared_ptr<void> keep_python_object_alive(nb::handle object) {
  object.inc_ref();
  return std::shared_ptr<void>(object.ptr(), [](void* p) {
    if (!Py_IsInitialized()) return;  // interpreter gone: nothing left to release
    nb::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(p));
  });
}

// Wraps a C-contiguous CPU numpy array as a Tensor without copying. The array
// stays alive as long as any Tensor sharing the buffer does. `as_type`
// (optional) reinterprets the bytes as another type of the same width, e.g.
// uint16 numbers as bfloat16.
Tensor tensor_from_numpy(nb::handle array, DataType as_type) {
  nb::ndarray<nb::ro, nb::device::cpu> view;
  if (!nb::try_cast(array, view, false)) {
    throw_status(invalid_argument("expected a numpy array on the CPU, got ",
                                  nb::cast<std::string>(nb::str(array.type().attr("__name__")))));
  }
  DataType dtype = dtype_from_dlpack(view.dtype());
  if (dtype == DataType::kUndefined) {
    throw_status(invalid_argument("numpy element type ", dlpack_dtype_name(view.dtype()), " has no ONNX equivalent"));
  }
  if (as_type != DataType::kUndefined && as_type != dtype) {
    if (dtype_size(as_type) != dtype_size(dtype) || as_type == DataType::kString) {
      throw_status(invalid_argument("cannot view numpy ", dtype_name(dtype), " data as ", dtype_name(as_type)));
    }
    dtype = as_type;
  }
  Shape shape(view.ndim());
  for (size_t i = 0; i < view.ndim(); ++i) shape[i] = static_cast<int64_t>(view.shape(i));
  // Row-major check: a dimension of extent 1 may carry any stride, and an
  // empty array any strides at all.
  int64_t expected = 1;
  for (size_t i = view.ndim(); i-- > 0 && shape_size(shape) != 0;) {
    if (shape[i] != 1 && view.stride(i) != expected) {
      throw_status(invalid_argument("numpy array is not C-contiguous (use numpy.ascontiguousarray)"));
    }
    expected *= shape[i];
  }
  void* data = const_cast<void*>(view.data());
  return Tensor::borrow(dtype, std::move(shape), data, Device{}, keep_python_object_alive(array));
}

// A string tensor from a flat Python sequence of str (or bytes) items.
Tensor tensor_from_strings(nb::handle items, const Shape& shape) {
  nb::list flat = nb::list(items);
  const int64_t count = shape_size(shape);
  for (int64_t d : shape) {
    if (d < 0) throw_status(invalid_argument("negative dimension in string tensor shape ", shape_to_string(shape)));
  }
  if (static_cast<int64_t>(flat.size()) != count) {
    throw_status(invalid_argument("string tensor of shape ", shape_to_string(shape), " needs ", count,
                                  " items, got ", flat.size()));
  }
  Tensor tensor(DataType::kString, shape);
  auto* out = tensor.data<std::string>();
  for (size_t i = 0; i < flat.size(); ++i) {
    nb::handle item = flat[i];
    if (PyUnicode_Check(item.ptr())) {
      Py_ssize_t size = 0;
      const char* utf8 = PyUnicode_AsUTF8AndSize(item.ptr(), &size);
      if (utf8 == nullptr) throw nb::python_error();
      out[i].assign(utf8, static_cast<size_t>(size));
    } else if (PyBytes_Check(item.ptr())) {
      out[i].assign(PyBytes_AS_STRING(item.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(item.ptr())));
    } else {
      out[i] = nb::cast<std::string>(nb::str(item));
    }
  }
  return tensor;
}

nb::object decode_utf8(const std::string& s) {
  // Never fails: bytes that are not UTF-8 become U+FFFD.
  PyObject* text = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
  if (text == nullptr) throw nb::python_error();
  return nb::steal(text);
}

// One tensor element as a Python scalar (for map values and keys).
nb::object element_to_python(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat: return nb::float_(t.data<float>()[i]);
    case DataType::kDouble: return nb::float_(t.data<double>()[i]);
    case DataType::kFloat16: return nb::float_(static_cast<float>(t.data<Float16>()[i]));
    case DataType::kInt8: return nb::int_(t.data<int8_t>()[i]);
    case DataType::kInt16: return nb::int_(t.data<int16_t>()[i]);
    case DataType::kInt32: return nb::int_(t.data<int32_t>()[i]);
    case DataType::kInt64: return nb::int_(t.data<int64_t>()[i]);
    case DataType::kUInt8: return nb::int_(t.data<uint8_t>()[i]);
    case DataType::kUInt16: return nb::int_(t.data<uint16_t>()[i]);
    case DataType::kUInt32: return nb::int_(t.data<uint32_t>()[i]);
    case DataType::kUInt64: return nb::int_(t.data<uint64_t>()[i]);
    case DataType::kBool: return nb::bool_(t.data<bool>()[i]);
    case DataType::kString: return decode_utf8(t.data<std::string>()[i]);
    default: break;
  }
  throw_status(not_implemented("map element type ", dtype_name(t.dtype()), " cannot be converted to Python"));
}

nb::object numpy_module() {
  // Kept for the life of the process and never released: a static nb::object
  // would be decref'd by exit handlers after the interpreter is gone.
  static PyObject* numpy = nb::module_::import_("numpy").release().ptr();
  return nb::borrow(numpy);
}

// A tensor as a numpy array. Numbers are not copied: the array's base is a
// capsule holding a Tensor copy, which keeps the buffer alive.
nb::object tensor_to_numpy(const Tensor& device_tensor) {
  // Device memory is copied to the host first; the array owns that copy.
  const Tensor tensor = device_tensor.device().host_readable() ? device_tensor : copy_tensor(device_tensor, Device{});
  const Shape& shape = tensor.shape();
  if (tensor.dtype() == DataType::kString) {
    const int64_t n = tensor.size();
    nb::list items;
    const auto* strings = tensor.data<std::string>();
    for (int64_t i = 0; i < n; ++i) items.append(decode_utf8(strings[i]));
    nb::tuple dims = nb::steal<nb::tuple>(PyTuple_New(static_cast<Py_ssize_t>(shape.size())));
    for (size_t i = 0; i < shape.size(); ++i) {
      PyTuple_SET_ITEM(dims.ptr(), static_cast<Py_ssize_t>(i), PyLong_FromLongLong(shape[i]));
    }
    nb::object np = numpy_module();
    nb::object array = np.attr("empty")(nb::int_(n), nb::arg("dtype") = np.attr("object_"));
    // array[:] = items assigns element-wise: a str never becomes a nested array.
    if (n > 0) array[nb::slice(nb::none(), nb::none(), nb::none())] = items;
    return array.attr("reshape")(dims);
  }
  nb::dlpack::dtype dt;
  if (!dlpack_dtype_for(tensor.dtype(), &dt)) {
    throw_status(not_implemented("output element type ", dtype_name(tensor.dtype()), " has no numpy equivalent"));
  }
  std::vector<size_t> dims(shape.begin(), shape.end());
  auto* owner_tensor = new Tensor(tensor);
  nb::capsule owner(owner_tensor, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  // A zero-sized tensor may have no buffer; numpy still wants a non-null pointer.
  static uint64_t empty_buffer[2] = {0, 0};
  void* data = tensor.size() == 0 || owner_tensor->raw_data() == nullptr ? static_cast<void*>(empty_buffer)
                                                                          : owner_tensor->raw_data();
  nb::ndarray<nb::numpy> array(data, dims.size(), dims.data(), owner, nullptr, dt);
  return array.cast();
}

nb::object value_to_python(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kNone: return nb::none();
    case Value::Kind::kTensor: return tensor_to_numpy(value.tensor());
    case Value::Kind::kSequence: {
      nb::list items;
      for (const Value& item : value.items()) items.append(value_to_python(item));
      return items;
    }
    case Value::Kind::kMap: {
      const Map& map = value.map_data();
      if (map.keys.size() != map.values.size()) {
        throw_status(runtime_error("map output has ", map.keys.size(), " keys but ", map.values.size(), " values"));
      }
      nb::dict out;
      for (int64_t i = 0; i < map.keys.size(); ++i) out[element_to_python(map.keys, i)] = element_to_python(map.values, i);
      return out;
    }
  }
  return nb::none();
}

// ---- metadata ----------------------------------------------------------------

// The shape as onnxruntime shows it: int for a fixed dimension, str for a
// symbolic one, None for an unknown one; [] for non-tensors and unknown rank.
nb::list shape_to_python(const ValueMetadata& meta) {
  nb::list shape;
  if (!meta.has_shape) return shape;
  for (size_t i = 0; i < meta.dims.size(); ++i) {
    const std::string* symbol = i < meta.dim_params.size() ? &meta.dim_params[i] : nullptr;
    if (symbol != nullptr && !symbol->empty()) {
      shape.append(nb::str(symbol->c_str()));
    } else if (meta.dims[i] >= 0) {
      shape.append(nb::int_(meta.dims[i]));
    } else {
      shape.append(nb::none());
    }
  }
  return shape;
}

// The caller owns the feed arrays and may change them after the run; an
// output that aliases one (Identity of an input) is copied, in its memory.
void copy_outputs_aliasing_feeds(std::vector<Value>& outputs, const Feeds& feeds) {
  for (Value& v : outputs) {
    if (!v.is_tensor()) continue;
    for (const auto& feed : feeds) {
      if (feed.second.is_tensor() && v.tensor().shares_buffer_with(feed.second.tensor())) {
        const Tensor& t = v.tensor();
        v = Value(t.device().host_readable() ? t.clone() : copy_tensor(t, t.device()));
        break;
      }
    }
  }
}

// Runs `work` with the GIL released, its errors as a Status.
template <typename Work>
Status without_gil(Work&& work) {
  nb::gil_scoped_release release;
  try {
    return work();
  } catch (const Error& e) {
    return Status(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    return runtime_error("out of memory while running the model");
  } catch (const std::exception& e) {
    return runtime_error(e.what());
  }
}

// Runs with the GIL released (so other Python threads run meanwhile, and may
// set RunOptions.terminate).
std::vector<Value> run_session(const InferenceSession& session, const std::vector<std::string>& output_names,
                               const std::vector<std::pair<std::string, Value>>& feeds, const RunOptions& run_options) {
  std::vector<Value> outputs;
  throw_if_error(without_gil([&] { return session.run(output_names, feeds, run_options, &outputs); }));
  copy_outputs_aliasing_feeds(outputs, feeds);
  return outputs;
}

// Runs with a binding's inputs and outputs (GIL released); returns its outputs.
std::vector<Value> run_binding(const InferenceSession& session, IoBinding& binding, const RunOptions& run_options) {
  throw_if_error(without_gil([&] {
    session.run_with_binding(binding, run_options);
    return Status::ok();
  }));
  std::vector<Value> outputs = binding.outputs();
  copy_outputs_aliasing_feeds(outputs, binding.inputs());
  return outputs;
}

void translate_error(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const Error& e) {
    // Messages quote names from the model, which may not be valid UTF-8.
    const char* what = e.what();
    PyObject* message = PyUnicode_DecodeUTF8(what, static_cast<Py_ssize_t>(std::strlen(what)), "replace");
    if (message == nullptr) return;  // the decoding error is already set
    PyErr_SetObject(error_class_for(e), message);
    Py_DECREF(message);
  }
}

PyObject* new_error_class(nb::module_& m, const char* name, PyObject* base, const char* doc) {
  std::string qualified = std::string("onyx.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base, nullptr);
  if (cls == nullptr) throw nb::python_error();
  m.attr(name) = nb::handle(cls);
  return cls;
}

}  // namespace
}  // namespace onyx

NB_MODULE(_onyx, m) {
  using namespace onyx;
  m.doc() = "onyx's C++ core; use the `onyx` package, not this module";

  g_errors.base = new_error_class(m, "OnyxError", PyExc_Exception, "Base of every error onyx's core raises.");
  g_errors.invalid_argument =
      new_error_class(m, "InvalidArgument", g_errors.base, "A wrong feed, option or call argument.");
  g_errors.invalid_graph = new_error_class(m, "InvalidGraph", g_errors.base, "The model's graph is malformed.");
  g_errors.invalid_protobuf =
      new_error_class(m, "InvalidProtobuf", g_errors.base, "The model file is not a readable ONNX protobuf.");
  g_errors.not_implemented =
      new_error_class(m, "NotImplemented", g_errors.base, "The model needs an op, version or type onyx lacks.");
  g_errors.fail = new_error_class(m, "Fail", g_errors.base, "A kernel failed, or a run was terminated.");
  // onnxruntime's other classes: onyx raises NoSuchFile (from Python); the rest
  // exist so that code catching them ports unchanged.
  new_error_class(m, "NoSuchFile", g_errors.base, "The model path does not exist.");
  new_error_class(m, "NoModel", g_errors.base, "onnxruntime's NoModel; onyx does not raise it.");
  new_error_class(m, "EngineError", g_errors.base, "onnxruntime's EngineError; onyx does not raise it.");
  new_error_class(m, "RuntimeException", g_errors.base, "onnxruntime's RuntimeException; onyx does not raise it.");
  new_error_class(m, "ModelLoaded", g_errors.base, "onnxruntime's ModelLoaded; onyx does not raise it.");
  new_error_class(m, "EPFail", g_errors.base, "onnxruntime's EPFail; onyx does not raise it.");
  nb::register_exception_translator(translate_error);

  // Arithmetic like onnxruntime's enums: int(level) and comparisons with ints work.
  nb::enum_<GraphOptimizationLevel>(m, "GraphOptimizationLevel", nb::is_arithmetic())
      .value("ORT_DISABLE_ALL", GraphOptimizationLevel::kDisableAll)
      .value("ORT_ENABLE_BASIC", GraphOptimizationLevel::kEnableBasic)
      .value("ORT_ENABLE_EXTENDED", GraphOptimizationLevel::kEnableExtended)
      .value("ORT_ENABLE_LAYOUT", GraphOptimizationLevel::kEnableLayout)
      .value("ORT_ENABLE_ALL", GraphOptimizationLevel::kEnableAll);

  nb::enum_<ExecutionMode>(m, "ExecutionMode", nb::is_arithmetic())
      .value("ORT_SEQUENTIAL", ExecutionMode::kSequential)
      .value("ORT_PARALLEL", ExecutionMode::kParallel);

  nb::class_<SessionOptions>(m, "SessionOptions")
      .def(nb::init<>())
      .def("__copy__", [](const SessionOptions& o) { return SessionOptions(o); })
      .def_rw("graph_optimization_level", &SessionOptions::graph_optimization_level)
      .def_rw("intra_op_num_threads", &SessionOptions::intra_op_num_threads)
      .def_rw("inter_op_num_threads", &SessionOptions::inter_op_num_threads)
      .def_rw("execution_mode", &SessionOptions::execution_mode)
      .def_rw("enable_profiling", &SessionOptions::enable_profiling)
      .def_rw("profile_file_prefix", &SessionOptions::profile_file_prefix)
      .def_rw("log_severity_level", &SessionOptions::log_severity_level)
      .def_rw("log_id", &SessionOptions::log_id)
      .def_rw("optimized_model_filepath", &SessionOptions::optimized_model_filepath)
      .def_rw("disabled_optimizers", &SessionOptions::disabled_optimizers)
      .def_rw("enable_mem_pattern", &SessionOptions::enable_mem_pattern)
      .def_rw("enable_cpu_mem_arena", &SessionOptions::enable_cpu_mem_arena)
      .def_rw("config_entries", &SessionOptions::config_entries)
      .def_rw("provider_options", &SessionOptions::provider_options)
      .def_rw("free_dimension_overrides", &SessionOptions::free_dimension_overrides)
      .def_rw("free_dimension_overrides_by_denotation", &SessionOptions::free_dimension_overrides_by_denotation)
      .def(
          "set_initializer_override",
          [](SessionOptions& o, const std::string& name, const Value& value) {
            if (!value.is_tensor()) throw_status(invalid_argument("initializer '", name, "' must be a tensor"));
            for (auto& entry : o.initializer_overrides) {
              if (entry.first == name) {
                entry.second = value.tensor();
                return;
              }
            }
            o.initializer_overrides.emplace_back(name, value.tensor());
          },
          nb::arg("name"), nb::arg("value"))
      .def(
          "register_custom_ops_library",
          [](SessionOptions& o, const std::string& path) { register_custom_ops_library(o, path); }, nb::arg("path"))
      .def_prop_ro("initializer_override_names", [](const SessionOptions& o) {
        std::vector<std::string> names;
        for (const auto& entry : o.initializer_overrides) names.push_back(entry.first);
        return names;
      });

  nb::class_<RunOptions>(m, "RunOptions")
      .def(nb::init<>())
      .def_rw("log_severity_level", &RunOptions::log_severity_level)
      .def_rw("run_tag", &RunOptions::run_tag)
      .def_prop_rw(
          "terminate", [](const RunOptions& o) { return o.terminate.get(); },
          [](RunOptions& o, bool value) { o.terminate.set(value); });

  nb::class_<ValueType>(m, "ValueType")
      .def_prop_ro("kind", [](const ValueType& t) { return static_cast<int>(t.kind); })
      .def_prop_ro("elem_type", [](const ValueType& t) { return static_cast<int>(t.elem_type); })
      .def_prop_ro("key_type", [](const ValueType& t) { return static_cast<int>(t.key_type); })
      .def_prop_ro("inner", [](const ValueType& t) { return t.inner; })
      .def("__str__", &ValueType::to_string)
      .def("__repr__", [](const ValueType& t) { return "ValueType(" + t.to_string() + ")"; });
  m.attr("KIND_TENSOR") = static_cast<int>(ValueType::Kind::kTensor);
  m.attr("KIND_SEQUENCE") = static_cast<int>(ValueType::Kind::kSequence);
  m.attr("KIND_MAP") = static_cast<int>(ValueType::Kind::kMap);
  m.attr("KIND_OPTIONAL") = static_cast<int>(ValueType::Kind::kOptional);
  m.attr("KIND_SPARSE_TENSOR") = static_cast<int>(ValueType::Kind::kSparseTensor);

  nb::class_<ValueMetadata>(m, "ValueMetadata")
      .def_ro("name", &ValueMetadata::name)
      .def_ro("value_type", &ValueMetadata::type)
      .def_prop_ro("type", [](const ValueMetadata& v) { return v.type.to_string(); })
      .def_prop_ro("shape", &shape_to_python)
      .def_ro("has_shape", &ValueMetadata::has_shape)
      .def_ro("dims", &ValueMetadata::dims)
      .def_ro("dim_params", &ValueMetadata::dim_params);

  nb::class_<ModelMetadata>(m, "ModelMetadata")
      .def_ro("producer_name", &ModelMetadata::producer_name)
      .def_ro("graph_name", &ModelMetadata::graph_name)
      .def_ro("domain", &ModelMetadata::domain)
      .def_ro("description", &ModelMetadata::description)
      .def_ro("graph_description", &ModelMetadata::graph_description)
      .def_ro("version", &ModelMetadata::version)
      .def_ro("custom_metadata_map", &ModelMetadata::custom_metadata_map);

  // A feed value built from Python objects; holds numpy memory without copies.
  nb::class_<Value>(m, "Value")
      .def_static(
          "from_numpy",
          [](nb::handle array, int as_type) { return Value(tensor_from_numpy(array, static_cast<DataType>(as_type))); },
          nb::arg("array"), nb::arg("as_type") = 0)
      .def_static(
          "from_strings", [](nb::handle items, const Shape& shape) { return Value(tensor_from_strings(items, shape)); },
          nb::arg("items"), nb::arg("shape"))
      .def_static(
          "sequence",
          [](const std::vector<Value>& items, const ValueType* elem_type) {
            return Value::sequence(items, elem_type ? *elem_type : ValueType{});
          },
          nb::arg("items"), nb::arg("elem_type").none() = nb::none())
      .def_static(
          "map",
          [](const Value& keys, const Value& values) {
            if (!keys.is_tensor() || !values.is_tensor() || keys.tensor().rank() != 1 || values.tensor().rank() != 1 ||
                keys.tensor().size() != values.tensor().size()) {
              throw_status(invalid_argument("a map needs 1-D keys and values of the same length"));
            }
            return Value::map(Map{keys.tensor(), values.tensor()});
          },
          nb::arg("keys"), nb::arg("values"))
      .def_static(
          "none", [](const ValueType* type) { return Value::none(type ? *type : ValueType{}); },
          nb::arg("type").none() = nb::none())
      .def("as_optional",
           [](const Value& v) {
             Value out = v;
             out.set_optional(true);
             return out;
           })
      .def_static(
          "empty",
          [](int elem_type, const Shape& shape, int device_type, int device_id) {
            if (!dtype_is_known(elem_type)) throw_status(invalid_argument("unknown ONNX element type ", elem_type));
            const Device device = device_from_python(device_type, device_id);
            check_device_can_hold(static_cast<DataType>(elem_type), device);
            Result<Tensor> tensor = Tensor::create(static_cast<DataType>(elem_type), shape, device_allocator(device));
            throw_if_error(tensor.status());
            return Value(std::move(tensor).value());
          },
          nb::arg("elem_type"), nb::arg("shape"), nb::arg("device_type") = 0, nb::arg("device_id") = 0)
      // A copy of a tensor in a device's memory (the host's for the CPU).
      .def(
          "to_device",
          [](const Value& v, int device_type, int device_id) {
            if (!v.is_tensor())
              throw_status(invalid_argument("only tensors can be copied to a device, not ", v.describe()));
            const Device device = device_from_python(device_type, device_id);
            check_device_can_hold(v.tensor().dtype(), device);
            return Value(copy_tensor(v.tensor(), device));
          },
          nb::arg("device_type"), nb::arg("device_id"))
      // Memory the caller owns and keeps alive (IOBinding.bind_input's buffer_ptr).
      .def_static(
          "from_pointer",
          [](uintptr_t pointer, int elem_type, const Shape& shape, int device_type, int device_id) {
            if (!dtype_is_known(elem_type) || static_cast<DataType>(elem_type) == DataType::kString) {
              throw_status(invalid_argument("cannot bind memory of ONNX element type ", elem_type));
            }
            const Device device = device_from_python(device_type, device_id);
            device_allocator(device);  // refuses a device no provider serves
            for (int64_t d : shape) {
              if (d < 0) throw_status(invalid_argument("negative dimension in shape ", shape_to_string(shape)));
            }
            if (pointer == 0 && shape_size(shape) != 0) throw_status(invalid_argument("null buffer pointer"));
            return Value(
                Tensor::borrow(static_cast<DataType>(elem_type), shape, reinterpret_cast<void*>(pointer), device));
          },
          nb::arg("pointer"), nb::arg("elem_type"), nb::arg("shape"), nb::arg("device_type") = 0,
          nb::arg("device_id") = 0)
      // Copies a tensor's elements into this tensor's buffer (same type and shape).
      .def("copy_from",
           [](Value& self, const Value& source) {
             if (!self.is_tensor() || !source.is_tensor()) {
               throw_status(invalid_argument("copy_from needs two tensors"));
             }
             Tensor& to = self.tensor();
             const Tensor& from = source.tensor();
             if (to.dtype() != from.dtype() || to.shape() != from.shape()) {
               throw_status(invalid_argument("cannot copy ", from.describe(), " into ", to.describe()));
             }
             if (to.raw_data() == from.raw_data()) return;
             if (!to.device().host_readable() || !from.device().host_readable()) {
               copy_tensor_into(from, to);
               return;
             }
             if (to.dtype() == DataType::kString) {
               std::copy_n(from.data<std::string>(), from.size(), to.data<std::string>());
             } else if (from.bytes() != 0) {
               std::memmove(to.raw_data(), from.raw_data(), from.bytes());
             }
           })
      .def("numpy", [](const Value& v) { return value_to_python(v); })
      .def_prop_ro("type", [](const Value& v) { return v.type().to_string(); })
      .def_prop_ro("is_tensor", &Value::is_tensor)
      .def_prop_ro("is_sequence", &Value::is_sequence)
      .def_prop_ro("is_none", &Value::is_none)
      .def_prop_ro("elem_type", [](const Value& v) { return v.is_tensor() ? static_cast<int>(v.tensor().dtype()) : 0; })
      .def_prop_ro("shape", [](const Value& v) { return v.is_tensor() ? v.tensor().shape() : Shape{}; })
      .def_prop_ro("device_type",
                   [](const Value& v) { return v.is_tensor() ? static_cast<int>(v.tensor().device().type) : 0; })
      .def_prop_ro("device_id", [](const Value& v) { return v.is_tensor() ? v.tensor().device().id : 0; })
      .def_prop_ro("data_ptr",
                   [](Value& v) { return v.is_tensor() ? reinterpret_cast<uintptr_t>(v.tensor().raw_data()) : 0; })
      .def_prop_ro("size_in_bytes", [](const Value& v) { return v.is_tensor() ? v.tensor().bytes() : size_t{0}; })
      .def("__repr__", [](const Value& v) { return "Value(" + v.describe() + ")"; });

  // The C++ IoBinding; python/onyx/io_binding.py fills one per run.
  nb::class_<IoBinding>(m, "IoBinding")
      .def(nb::init<>())
      .def("bind_input", &IoBinding::bind_input, nb::arg("name"), nb::arg("value"))
      .def(
          "bind_output",
          [](IoBinding& b, const std::string& name, int device_type, int device_id) {
            b.bind_output(name, device_from_python(device_type, device_id));
          },
          nb::arg("name"), nb::arg("device_type") = 0, nb::arg("device_id") = 0)
      .def(
          "bind_output_to",
          [](IoBinding& b, const std::string& name, const Value& destination) {
            if (!destination.is_tensor()) {
              throw_status(
                  invalid_argument("output '", name, "' can be bound to a tensor only, not ", destination.describe()));
            }
            b.bind_output(name, destination.tensor());
          },
          nb::arg("name"), nb::arg("destination"))
      .def("clear_inputs", &IoBinding::clear_inputs)
      .def("clear_outputs", &IoBinding::clear_outputs)
      .def("output_names", &IoBinding::output_names)
      .def_prop_ro("outputs", [](const IoBinding& b) { return b.outputs(); });

  m.def("device_type_name", [](int type) { return device_type_name(device_from_python(type, 0).type); });
  m.def("device_is_served", [](int type) { return device_is_served(device_from_python(type, 0).type); });
  {
    nb::dict types;
    for (DeviceType t : kDeviceTypes) types[nb::str(device_type_name(t).c_str())] = static_cast<int>(t);
    m.attr("DEVICE_TYPES") = types;
  }

  nb::class_<InferenceSession>(m, "InferenceSession")
      .def_static(
          "from_file",
          [](const std::string& path, const SessionOptions& options, const std::vector<std::string>& providers) {
            nb::gil_scoped_release release;
            return InferenceSession::from_file(path, options, providers);
          },
          nb::arg("path"), nb::arg("options"), nb::arg("providers"))
      .def_static(
          "from_bytes",
          [](nb::bytes bytes, const SessionOptions& options, const std::vector<std::string>& providers) {
            std::string_view view(static_cast<const char*>(bytes.data()), bytes.size());
            nb::gil_scoped_release release;  // `bytes` is immutable and held by the caller
            return InferenceSession::from_bytes(view, options, providers);
          },
          nb::arg("data"), nb::arg("options"), nb::arg("providers"))
      .def(
          "run",
          [](const InferenceSession& session, const std::vector<std::string>& output_names,
             const std::vector<std::pair<std::string, Value>>& feeds, const RunOptions& run_options) {
            nb::list result;
            for (const Value& v : run_session(session, output_names, feeds, run_options)) {
              result.append(value_to_python(v));
            }
            return result;
          },
          nb::arg("output_names"), nb::arg("feeds"), nb::arg("run_options"))
      // The same, returning the outputs as Values (OrtValue, IOBinding).
      .def("run_values", &run_session, nb::arg("output_names"), nb::arg("feeds"), nb::arg("run_options"))
      .def("run_with_binding", &run_binding, nb::arg("binding"), nb::arg("run_options"))
      // Metadata is copied out: it is small and read once per session.
      .def_prop_ro("inputs", &InferenceSession::inputs, nb::rv_policy::copy)
      .def_prop_ro("outputs", &InferenceSession::outputs, nb::rv_policy::copy)
      .def_prop_ro("overridable_initializers", &InferenceSession::overridable_initializers, nb::rv_policy::copy)
      .def_prop_ro("metadata", &InferenceSession::metadata, nb::rv_policy::copy)
      .def_prop_ro("opsets", &InferenceSession::opsets)
      .def("providers", &InferenceSession::providers)
      .def("provider_options", &InferenceSession::provider_options)
      .def("end_profiling", &InferenceSession::end_profiling)
      .def("profiling_start_time_ns", &InferenceSession::profiling_start_time_ns);

  m.def("available_providers", &available_providers);
  m.def("_register_testing_providers", &register_testing_providers);
  m.def("_test_device_counters", &testing_device_counters);
  m.def("_reset_test_device_counters", &reset_testing_device_counters);
  m.def("version", []() { return std::string(version()); });
}
