// A fused group compiled by OpenVINO: the group's standalone graph goes
// through the ONNX frontend and compile_model once, with the symbolic
// dimensions left dynamic (the CPU plugin runs dynamic shapes itself). Each
// run borrows an infer request from a pool, so threads never share one.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

#include "providers/openvino/openvino_provider.h"

namespace onyx::openvino {
namespace {

class InferRequestPool {
 public:
  explicit InferRequestPool(ov::CompiledModel& model) : model_(model) {}

  ov::InferRequest acquire() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (free_.empty()) return model_.create_infer_request();
    ov::InferRequest r = std::move(free_.back());
    free_.pop_back();
    return r;
  }
  void release(ov::InferRequest request) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(std::move(request));
  }

 private:
  ov::CompiledModel& model_;
  std::mutex mutex_;
  std::vector<ov::InferRequest> free_;
};

class OpenVinoKernel final : public Kernel {
 public:
  // `input_ports[i]`: the compiled model's input for the group's input i, or
  // -1 where OpenVINO dropped it (an input its ops ignore, such as
  // Dropout's ratio at inference); `output_ports[o]` likewise, never -1.
  OpenVinoKernel(ov::CompiledModel compiled, std::vector<DataType> input_types, std::vector<int> input_ports,
                 std::vector<DataType> output_types, std::vector<int> output_ports, std::string label)
      : compiled_(std::move(compiled)),
        pool_(compiled_),
        input_types_(std::move(input_types)),
        input_ports_(std::move(input_ports)),
        output_types_(std::move(output_types)),
        output_ports_(std::move(output_ports)),
        label_(std::move(label)) {
    for (size_t o = 0; o < output_types_.size(); ++o) {
      const ov::PartialShape& shape = compiled_.output(static_cast<size_t>(output_ports_[o])).get_partial_shape();
      std::optional<Shape> fixed;
      if (shape.is_static()) {
        Shape s;
        for (const ov::Dimension& d : shape) s.push_back(d.get_length());
        fixed = s;
      }
      // Two outputs of one port (an Identity inside the group) cannot both be
      // bound: the later ones are copied.
      const bool shared = std::count(output_ports_.begin(), output_ports_.begin() + static_cast<std::ptrdiff_t>(o),
                                     output_ports_[o]) > 0;
      static_output_shapes_.push_back(shared ? std::nullopt : fixed);
    }
  }

  Status compute(KernelContext& ctx) const override {
    ov::InferRequest request;
    try {
      request = pool_.acquire();
    } catch (const std::exception& e) {
      return runtime_error(label_, " (OpenVINOExecutionProvider): ", e.what());
    }
    Status status = run(ctx, request);
    pool_.release(std::move(request));
    return status;
  }

  // The kernel keeps its weights inside the compiled model.
  bool needs_constant_data(size_t) const override { return false; }

 private:
  Status run(KernelContext& ctx, ov::InferRequest& request) const {
    static char empty_buffer[64];
    try {
      for (size_t i = 0; i < input_types_.size(); ++i) {
        const Tensor* t = ctx.input_tensor(i);
        if (t == nullptr || !t->device().host_readable()) {
          return invalid_argument(label_, ": input ", i, " is not a host tensor");
        }
        if (t->dtype() != input_types_[i]) {
          return invalid_argument(label_, ": input ", i, " has element type ", dtype_name(t->dtype()), ", expected ",
                                  dtype_name(input_types_[i]));
        }
        ov::Shape shape(t->shape().begin(), t->shape().end());
        // OpenVINO reads the caller's buffer in place; it never writes inputs.
        void* data = t->size() == 0 ? empty_buffer : const_cast<void*>(t->raw_data());
        if (input_ports_[i] < 0) continue;
        request.set_input_tensor(static_cast<size_t>(input_ports_[i]),
                                 ov::Tensor(to_ov_type(input_types_[i]), shape, data));
      }
      // Outputs of a fixed shape are written by OpenVINO straight into the
      // session's buffers; dynamic ones are copied out after the run.
      for (size_t o = 0; o < output_types_.size(); ++o) {
        if (!static_output_shapes_[o]) continue;
        Tensor& out = ctx.allocate_output(o, output_types_[o], *static_output_shapes_[o]);
        ov::Shape shape(out.shape().begin(), out.shape().end());
        void* data = out.size() == 0 ? empty_buffer : out.raw_data();
        request.set_output_tensor(static_cast<size_t>(output_ports_[o]),
                                  ov::Tensor(to_ov_type(output_types_[o]), shape, data));
      }
      request.infer();
      for (size_t o = 0; o < output_types_.size(); ++o) {
        if (static_output_shapes_[o]) continue;
        const ov::Tensor result = request.get_output_tensor(static_cast<size_t>(output_ports_[o]));
        if (result.get_element_type() != to_ov_type(output_types_[o])) {
          return runtime_error(label_, " (OpenVINOExecutionProvider): output ", o, " came back as ",
                               result.get_element_type().get_type_name(), ", expected ", dtype_name(output_types_[o]));
        }
        const ov::Shape& s = result.get_shape();
        Tensor& out = ctx.allocate_output(o, output_types_[o], Shape(s.begin(), s.end()));
        if (out.bytes() > 0) std::memcpy(out.raw_data(), result.data(), out.bytes());
      }
    } catch (const Error& e) {
      return Status(e.code(), e.what());
    } catch (const std::exception& e) {
      return runtime_error(label_, " (OpenVINOExecutionProvider): ", e.what());
    }
    return Status::ok();
  }

  ov::CompiledModel compiled_;
  mutable InferRequestPool pool_;
  std::vector<DataType> input_types_;
  std::vector<int> input_ports_;
  std::vector<DataType> output_types_;
  std::vector<int> output_ports_;
  std::vector<std::optional<Shape>> static_output_shapes_;
  std::string label_;
};

}  // namespace

Result<std::unique_ptr<Kernel>> compile_fused_graph(ov::Core& core, const OpenVinoOptions& options,
                                                    const graph::Graph& fused, const std::string& label) {
  std::vector<DataType> input_types, output_types;
  for (int32_t v : fused.inputs) input_types.push_back(fused.values[static_cast<size_t>(v)].info.type.elem_type);
  for (int32_t v : fused.outputs) output_types.push_back(fused.values[static_cast<size_t>(v)].info.type.elem_type);
  try {
    std::shared_ptr<ov::Model> model = convert_onnx(serialize_for_openvino(fused), false);
    // Ports by tensor name: the frontend drops inputs no op reads.
    auto port_of = [](const std::vector<ov::Output<ov::Node>>& ports, const std::string& name) {
      for (size_t p = 0; p < ports.size(); ++p) {
        if (ports[p].get_names().count(name)) return static_cast<int>(p);
      }
      return -1;
    };
    std::vector<int> input_ports, output_ports;
    for (size_t i = 0; i < input_types.size(); ++i) {
      const std::string& name = fused.value_name(fused.inputs[i]);
      const int port = port_of(model->inputs(), name);
      // The types must be the group's, since buffers are bound as they are.
      if (port >= 0 && model->input(static_cast<size_t>(port)).get_element_type() != to_ov_type(input_types[i])) {
        return runtime_error(label, " (OpenVINOExecutionProvider): input '", name, "' converted as ",
                             model->input(static_cast<size_t>(port)).get_element_type().get_type_name(), ", expected ",
                             dtype_name(input_types[i]));
      }
      input_ports.push_back(port);
    }
    for (size_t o = 0; o < output_types.size(); ++o) {
      const std::string& name = fused.value_name(fused.outputs[o]);
      const int port = port_of(model->outputs(), name);
      if (port < 0) {
        return runtime_error(label, " (OpenVINOExecutionProvider): OpenVINO's model has no output '", name, "'");
      }
      output_ports.push_back(port);
    }
    ov::CompiledModel compiled = core.compile_model(model, options.device_type, options.compile_properties());
    for (size_t o = 0; o < output_types.size(); ++o) {
      const ov::element::Type type = compiled.output(static_cast<size_t>(output_ports[o])).get_element_type();
      if (type != to_ov_type(output_types[o])) {
        return runtime_error(label, " (OpenVINOExecutionProvider): output '", fused.value_name(fused.outputs[o]),
                             "' compiled as ", type.get_type_name(), ", expected ", dtype_name(output_types[o]));
      }
    }
    return std::unique_ptr<Kernel>(new OpenVinoKernel(std::move(compiled), std::move(input_types),
                                                      std::move(input_ports), std::move(output_types),
                                                      std::move(output_ports), label));
  } catch (const std::exception& e) {
    return runtime_error(label, " (OpenVINOExecutionProvider): OpenVINO cannot compile it: ", e.what());
  }
}

}  // namespace onyx::openvino
