"""The Vulkan provider from Python, on whatever device the Vulkan loader lists
(in CI, Mesa's software driver lavapipe): listed only where a device is, the
real models of ../shared/models against onnxruntime, weights kept on the
device (only feeds and fetches are copied, as the profile shows), I/O binding
that leaves outputs on the device, and its option errors."""

import os

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from helpers import MODELS_DIR, assert_close, profile_nodes_and_copies
from test_models import MODELS, random_feeds

VK = "VulkanExecutionProvider"
CPU = "CPUExecutionProvider"

needs_vulkan = pytest.mark.skipif(
    VK not in onyx.get_available_providers(),
    reason="VulkanExecutionProvider is not available (built without libvulkan-dev and glslang-tools, or the loader "
    "lists no device: install mesa-vulkan-drivers; ONYX_DEBUG_PROVIDERS=1 says why)",
)


def _model_path(name):
    path = os.path.join(MODELS_DIR, name + ".onnx")
    if not os.path.exists(path):
        pytest.skip(f"{path} not found: the real models live in ../shared/models (set ONYX_MODELS_DIR)")
    return path


def _cnn(batch=2):
    rng = np.random.default_rng(3)

    def init(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.3, name)

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c1", "s", "bb", "m", "v"], ["n1"]),
        helper.make_node("Relu", ["n1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], group=4, strides=[2, 2]),
        helper.make_node("HardSwish", ["c2"], ["h2"]),
        helper.make_node("GlobalAveragePool", ["h2"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["y"]),
    ]
    var = numpy_helper.from_array(rng.random(8).astype(np.float32) + 0.5, "v")
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 5])],
        [init("w1", 8, 3, 3, 3), init("b1", 8), init("s", 8), init("bb", 8), init("m", 8), var,
         init("w2", 8, 2, 3, 3), init("wf", 5, 8), init("bf", 5)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def test_listed_only_with_a_device_and_before_the_cpu():
    providers = onyx.get_available_providers()
    assert providers[-1] == CPU
    if VK in providers:
        assert providers.index(VK) < providers.index(CPU)


@needs_vulkan
@pytest.mark.parametrize("model_name", MODELS)
def test_model_with_vulkan_matches_onnxruntime(model_name):
    path = _model_path(model_name)
    ref = onnxruntime.InferenceSession(path, providers=[CPU])
    feeds = random_feeds(model_name, ref)
    want = ref.run(None, feeds)
    ours = onyx.InferenceSession(path, providers=[VK, CPU])
    assert ours.get_providers() == [VK, CPU]
    for g, w, meta in zip(ours.run(None, feeds), want, ref.get_outputs()):
        assert_close(g, w, f"{model_name} {meta.name} with Vulkan")


@needs_vulkan
def test_weights_stay_on_the_device_and_only_feeds_and_fetches_are_copied():
    options = onyx.SessionOptions()
    options.enable_profiling = True
    s = onyx.InferenceSession(_cnn(), options, providers=[VK, CPU])
    x = np.random.default_rng(0).random((2, 3, 16, 16), dtype=np.float32)
    want = onnxruntime.InferenceSession(_cnn(), providers=[CPU]).run(None, {"x": x})[0]
    for _ in range(3):
        assert_close(s.run(None, {"x": x})[0], want, "cnn with Vulkan")
    nodes, copies = profile_nodes_and_copies(s)
    # BatchNormalization is folded into the Conv before it: nine nodes a run,
    # all on the device, and no copy between them (the feed and the fetch
    # cross around the plan; the weights went to the device with the session).
    assert nodes == {VK: 3 * 9}, nodes
    assert copies == 0


@needs_vulkan
def test_io_binding_keeps_outputs_on_the_device():
    s = onyx.InferenceSession(_cnn(), providers=[VK, CPU])
    x = np.random.default_rng(1).random((2, 3, 16, 16), dtype=np.float32)
    want = onnxruntime.InferenceSession(_cnn(), providers=[CPU]).run(None, {"x": x})[0]
    binding = s.io_binding()
    x_on_device = onyx.OrtValue.ortvalue_from_numpy(x, "vulkan", 0)
    assert x_on_device.device_name() == "vulkan"
    binding.bind_ortvalue_input("x", x_on_device)
    binding.bind_output("y", "vulkan")
    s.run_with_iobinding(binding)
    out = binding.get_outputs()[0]
    assert out.device_name() == "vulkan"
    assert_close(out.numpy(), want, "bound output")
    assert_close(binding.copy_outputs_to_cpu()[0], want, "copied output")


@needs_vulkan
def test_options_are_checked():
    with pytest.raises(onyx.OnyxError, match="device_id"):
        onyx.InferenceSession(_cnn(), providers=[(VK, {"device_id": "99"})])
    with pytest.raises(onyx.OnyxError, match="unknown option"):
        onyx.InferenceSession(_cnn(), providers=[(VK, {"fast": "1"})])
    s = onyx.InferenceSession(_cnn(), providers=[(VK, {"device_id": "0"}), CPU])
    assert s.get_provider_options()[VK]["device_id"] == "0"
