"""The CUDA provider from Python. Everywhere: it is listed only where a CUDA
device is, and asking for it where none is gives onnxruntime's warning and
the CPU. Where a device is: the real
models of ../shared/models against onnxruntime, weights kept on the device
(only feeds and fetches are copied, as the profile shows), float16, I/O
binding that leaves outputs on the device, and its option errors."""

import os
import shutil
import subprocess

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from helpers import MODELS_DIR, assert_close, profile_nodes_and_copies
from test_models import MODELS, random_feeds

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"
have_cuda = CUDA in onyx.get_available_providers()
needs_cuda = pytest.mark.skipif(
    not have_cuda,
    reason="CUDAExecutionProvider is not available (built without the CUDA toolkit, or no CUDA device or driver "
    "on this machine; ONYX_DEBUG_PROVIDERS=1 prints why)",
)
without_cuda = pytest.mark.skipif(have_cuda, reason="a CUDA device is present: the provider is available")


def _relu_model():
    graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def _block(batch=4):
    """MatMul + bias, Gelu (tanh), LayerNormalization, Softmax, Gemm head."""
    rng = np.random.default_rng(5)

    def init(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32) * 0.3, name)

    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["m"]),
        helper.make_node("Add", ["m", "b"], ["a"]),
        helper.make_node("Tanh", ["a"], ["g"]),
        helper.make_node("LayerNormalization", ["g", "scale", "shift"], ["n"]),
        helper.make_node("Softmax", ["n"], ["s"]),
        helper.make_node("Gemm", ["s", "head", "head_bias"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "block",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 5])],
        [init("w", 16, 32), init("b", 32), init("scale", 32), init("shift", 32), init("head", 5, 32),
         init("head_bias", 5)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def test_listed_only_with_a_device_and_before_the_cpu():
    providers = onyx.get_available_providers()
    assert providers[-1] == CPU
    if CUDA in providers:
        assert providers.index(CUDA) < providers.index(CPU)


@without_cuda
@pytest.mark.parametrize("providers", [[CUDA], [CUDA, CPU]])
def test_asking_for_it_without_a_device_warns_and_runs_on_the_cpu(providers):
    # As onnxruntime's Python API does for a provider it does not offer (the
    # C and C++ APIs fail instead, with the CUDA runtime's reason).
    with pytest.warns(UserWarning, match=f"'{CUDA}' is not in available provider names"):
        s = onyx.InferenceSession(_relu_model(), providers=providers)
    assert s.get_providers() == [CPU]
    x = np.array([[-1, 2, -3], [4, -5, 6]], dtype=np.float32)
    np.testing.assert_array_equal(s.run(None, {"x": x})[0], np.maximum(x, 0))


@needs_cuda
@pytest.mark.parametrize("model_name", MODELS)
def test_model_with_cuda_matches_onnxruntime(model_name):
    path = os.path.join(MODELS_DIR, model_name + ".onnx")
    if not os.path.exists(path):
        pytest.skip(f"{path} not found: the real models live in ../shared/models (set ONYX_MODELS_DIR)")
    ref = onnxruntime.InferenceSession(path, providers=[CPU])
    feeds = random_feeds(model_name, ref)
    want = ref.run(None, feeds)
    ours = onyx.InferenceSession(path, providers=[CUDA, CPU])
    assert ours.get_providers() == [CUDA, CPU]
    for g, w, meta in zip(ours.run(None, feeds), want, ref.get_outputs()):
        assert_close(g, w, f"{model_name} {meta.name} with CUDA")


@needs_cuda
def test_weights_stay_on_the_device_and_only_feeds_and_fetches_are_copied():
    options = onyx.SessionOptions()
    options.enable_profiling = True
    s = onyx.InferenceSession(_block(), options, providers=[CUDA, CPU])
    x = np.random.default_rng(0).standard_normal((4, 16)).astype(np.float32)
    want = onnxruntime.InferenceSession(_block(), providers=[CPU]).run(None, {"x": x})[0]
    for _ in range(3):
        assert_close(s.run(None, {"x": x})[0], want, "block with CUDA")
    nodes, copies = profile_nodes_and_copies(s)
    assert CPU not in nodes, nodes
    # No copy step between nodes: x goes in and y comes out around the plan
    # (not profiled as steps), the weights went to the device with the session.
    assert copies == 0


@needs_cuda
def test_float16_model_agrees_with_float32_within_half_precision():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((64, 16)).astype(np.float16)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Softmax", ["m"], ["y"])],
        "half",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [8, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [8, 16])],
        [numpy_helper.from_array(w, "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = rng.standard_normal((8, 64)).astype(np.float16)
    got = onyx.InferenceSession(model.SerializeToString(), providers=[CUDA, CPU]).run(None, {"x": x})[0]
    m = x.astype(np.float32) @ w.astype(np.float32)
    want = np.exp(m - m.max(axis=1, keepdims=True))
    want /= want.sum(axis=1, keepdims=True)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want, atol=5e-3)


@needs_cuda
def test_io_binding_keeps_outputs_on_the_device():
    s = onyx.InferenceSession(_block(), providers=[CUDA, CPU])
    x = np.random.default_rng(2).standard_normal((4, 16)).astype(np.float32)
    want = onnxruntime.InferenceSession(_block(), providers=[CPU]).run(None, {"x": x})[0]
    binding = s.io_binding()
    x_on_device = onyx.OrtValue.ortvalue_from_numpy(x, "cuda", 0)
    assert x_on_device.device_name() == "cuda"
    binding.bind_ortvalue_input("x", x_on_device)
    binding.bind_output("y", "cuda")
    s.run_with_iobinding(binding)
    out = binding.get_outputs()[0]
    assert out.device_name() == "cuda"
    assert_close(out.numpy(), want, "bound output")


@needs_cuda
def test_options_are_checked():
    with pytest.raises(onyx.OnyxError, match="device_id"):
        onyx.InferenceSession(_relu_model(), providers=[(CUDA, {"device_id": "4096"})])
    with pytest.raises(onyx.OnyxError, match="unknown option"):
        onyx.InferenceSession(_relu_model(), providers=[(CUDA, {"fast": "1"})])
    with pytest.raises(onyx.OnyxError, match="not done yet"):
        onyx.InferenceSession(_relu_model(), providers=[(CUDA, {"enable_cuda_graph": "1"})])
    s = onyx.InferenceSession(
        _relu_model(), providers=[(CUDA, {"device_id": "0", "cudnn_conv_algo_search": "HEURISTIC"}), CPU]
    )
    options = s.get_provider_options()[CUDA]
    assert options["device_id"] == "0"
    assert options["cudnn_conv_algo_search"] == "HEURISTIC"
    assert options["use_tf32"] == "0"


def test_gpu_check_script_says_when_there_is_no_gpu():
    """tests/gpu/run.sh is the one GPU check; on a machine without an NVIDIA
    GPU it must say so and succeed (CI runs it here for that)."""
    smi = shutil.which("nvidia-smi")
    if smi is not None and subprocess.run([smi, "-L"], capture_output=True).returncode == 0:
        pytest.skip("an NVIDIA GPU is present: run tests/gpu/run.sh itself (about 8 minutes)")
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    done = subprocess.run(["bash", os.path.join(root, "tests", "gpu", "run.sh")], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "no NVIDIA GPU: nothing to measure" in done.stdout
