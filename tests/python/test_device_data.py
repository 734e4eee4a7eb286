"""Device data from Python, as onnxruntime scripts use it with CUDA: OrtValues
in device memory (no session needed), IOBinding with inputs and outputs that
stay on the device, and the errors for devices this build lacks.

The device is the simulated one (TestDeviceExecutionProvider, device name
"test"): its memory is scrambled, so a host read of it gives garbage, and it
counts every copy between it and the host; the counters prove where data
went. Results are compared with onnxruntime on its CPU."""

from __future__ import annotations

import gc

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onyx
from helpers import assert_close, make_model

onyx._onyx._register_testing_providers()

DEVICE_PROVIDERS = ["TestDeviceExecutionProvider", "CPUExecutionProvider"]


def counters() -> dict:
    return onyx._onyx._test_device_counters()


def reset() -> None:
    onyx._onyx._reset_test_device_counters()


def matmul_add_softmax_model():
    """Y = Softmax(X @ W + B), X [1, 2, 4], W [4, 3]: every node has a kernel on the
    test device. (X is 3-D so that MatMul and Add stay two nodes: the basic
    passes would fuse 2-D ones into a Gemm, which runs on the CPU.)"""
    rng = np.random.default_rng(7)
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    nodes = [
        helper.make_node("MatMul", ["X", "W"], ["M"], name="matmul"),
        helper.make_node("Add", ["M", "B"], ["S"], name="add"),
        helper.make_node("Softmax", ["S"], ["Y"], name="softmax", axis=-1),
    ]
    inits = [
        helper.make_tensor("W", TensorProto.FLOAT, [4, 3], w.ravel().tolist()),
        helper.make_tensor("B", TensorProto.FLOAT, [3], b.ravel().tolist()),
    ]
    model = make_model(
        nodes,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 2, 4])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 2, 3])],
        inits,
    )
    return model.SerializeToString()


MODEL = matmul_add_softmax_model()
X = np.random.default_rng(3).standard_normal((1, 2, 4)).astype(np.float32)


@pytest.fixture(scope="module")
def expected():
    """onnxruntime's output on its CPU."""
    return onnxruntime.InferenceSession(MODEL, providers=["CPUExecutionProvider"]).run(None, {"X": X})[0]


@pytest.fixture
def device_session():
    session = onyx.InferenceSession(MODEL, providers=DEVICE_PROVIDERS)
    assert session.get_providers() == DEVICE_PROVIDERS
    return session


# ---- OrtValue on a device ------------------------------------------------------------------


def test_ortvalue_from_numpy_on_the_device_copies_there_once():
    reset()
    value = onyx.OrtValue.ortvalue_from_numpy(X, "test", 0)
    assert counters()["host_to_device"] == 1
    assert value.device_name() == "test"
    # What describes the tensor is the same as for a CPU value, here and in onnxruntime.
    theirs = onnxruntime.OrtValue.ortvalue_from_numpy(X, "cpu", 0)
    for method in ("shape", "data_type", "element_type", "is_tensor", "has_value", "tensor_size_in_bytes"):
        assert getattr(value, method)() == getattr(theirs, method)(), method
    assert value.data_ptr() != X.ctypes.data
    assert "device='test'" in repr(value)
    reset()
    back = value.numpy()
    assert counters()["device_to_host"] == 1 and counters()["host_to_device"] == 0
    np.testing.assert_array_equal(back, X)
    assert not np.shares_memory(back, X)


def test_ortvalue_from_shape_and_type_on_the_device_and_update_inplace():
    for element_type in (np.float32, TensorProto.FLOAT, "float32"):
        value = onyx.OrtValue.ortvalue_from_shape_and_type([2, 3], element_type, "test", 0)
        assert (value.device_name(), value.shape(), value.data_type()) == ("test", [2, 3], "tensor(float)")
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    reset()
    value.update_inplace(data)
    assert counters()["host_to_device"] == 1
    np.testing.assert_array_equal(value.numpy(), data)
    integers = onyx.OrtValue.ortvalue_from_numpy(np.array([[1, -2], [3, 4]], np.int64), "TEST", 0)
    np.testing.assert_array_equal(integers.numpy(), [[1, -2], [3, 4]])
    assert integers.data_type() == "tensor(int64)"
    empty = onyx.OrtValue.ortvalue_from_shape_and_type([0, 3], np.float32, "test", 0)
    assert empty.numpy().shape == (0, 3)


def test_cpu_ortvalues_stay_as_they_were():
    value = onyx.OrtValue.ortvalue_from_numpy(X, "cpu", 0)
    assert value.device_name() == "cpu" and np.shares_memory(value.numpy(), X)
    made = onyx.OrtValue.ortvalue_from_shape_and_type([2], np.int64, "cpu", 0)
    assert made.device_name() == "cpu"


def test_ortdevice_matches_onnxruntime():
    for name, device_id in (("cuda", 0), ("cpu", 0), ("cuda", 1), ("gpu", 0), ("npu", 0)):
        ours, theirs = onyx.OrtDevice.make(name, device_id), onnxruntime.OrtDevice.make(name, device_id)
        for method in ("device_type", "device_id", "device_vendor_id", "device_mem_type"):
            assert getattr(ours, method)() == getattr(theirs, method)(), (name, method)
    c_device = onnxruntime.capi._pybind_state.OrtDevice
    for kind in ("cpu", "gpu", "cuda", "npu", "fpga", "default_memory"):
        assert getattr(onyx.OrtDevice, kind)() == getattr(c_device, kind)(), kind
    assert onyx.OrtDevice.make("test", 0).device_type() == 100
    for runtime in (onyx, onnxruntime):
        with pytest.raises(Exception, match="[Uu]nsupported device type.*foo"):
            runtime.OrtDevice.make("foo", 0)


# ---- running with device data ------------------------------------------------------------------


def test_iobinding_keeps_inputs_and_outputs_on_the_device(device_session, expected):
    x = onyx.OrtValue.ortvalue_from_numpy(X, "test", 0)
    binding = device_session.io_binding()
    binding.bind_ortvalue_input("X", x)
    binding.bind_output("Y", "test", 0)
    reset()
    for _ in range(3):
        device_session.run_with_iobinding(binding)
        binding.synchronize_outputs()
    done = counters()
    # Weights were placed on the device with the session; a run copies nothing.
    assert done["host_to_device"] == 0 and done["device_to_host"] == 0, done
    assert done["kernels_run"] >= 9, done  # MatMul, Add and Softmax ran on the device each time
    (y,) = binding.get_outputs()
    assert isinstance(y, onyx.OrtValue) and y.device_name() == "test" and y.shape() == [1, 2, 3]
    reset()
    (copy,) = binding.copy_outputs_to_cpu()
    assert counters()["device_to_host"] == 1
    assert_close(copy, expected)
    assert_close(y.numpy(), expected)


def test_device_outputs_outlive_their_session(expected):
    session = onyx.InferenceSession(MODEL, providers=DEVICE_PROVIDERS)
    binding = session.io_binding()
    binding.bind_cpu_input("X", X)
    binding.bind_output("Y", "test")
    reset()
    session.run_with_iobinding(binding)
    # The CPU input goes to the device once; the output stays there.
    assert (counters()["host_to_device"], counters()["device_to_host"]) == (1, 0)
    (y,) = binding.get_outputs()
    del session, binding
    gc.collect()
    assert_close(y.numpy(), expected)


def test_output_bound_to_device_memory_of_the_caller(device_session, expected):
    x = onyx.OrtValue.ortvalue_from_numpy(X, "test", 0)
    target = onyx.OrtValue.ortvalue_from_shape_and_type([1, 2, 3], np.float32, "test", 0)
    pointer_target = onyx.OrtValue.ortvalue_from_shape_and_type([1, 2, 3], np.float32, "test", 0)
    for bind in (
        lambda b: b.bind_ortvalue_output("Y", target),
        lambda b: b.bind_output("Y", "test", 0, np.float32, [1, 2, 3], pointer_target.data_ptr()),
    ):
        binding = device_session.io_binding()
        binding.bind_input("X", "test", 0, np.float32, [1, 2, 4], x.data_ptr())
        bind(binding)
        reset()
        device_session.run_with_iobinding(binding)
        assert (counters()["host_to_device"], counters()["device_to_host"]) == (0, 0)
    assert binding.get_outputs()[0].device_name() == "test"
    assert_close(target.numpy(), expected)
    assert_close(pointer_target.numpy(), expected)


def test_cpu_bound_output_of_a_device_session_comes_back_once(device_session, expected):
    x = onyx.OrtValue.ortvalue_from_numpy(X, "test", 0)
    binding = device_session.io_binding()
    binding.bind_ortvalue_input("X", x)
    binding.bind_output("Y")
    reset()
    device_session.run_with_iobinding(binding)
    assert (counters()["host_to_device"], counters()["device_to_host"]) == (0, 1)
    (y,) = binding.get_outputs()
    assert y.device_name() == "cpu"
    assert_close(y.numpy(), expected)


def test_device_values_feed_run_and_run_with_ort_values(device_session, expected):
    x = onyx.OrtValue.ortvalue_from_numpy(X, "test", 0)
    reset()
    assert_close(device_session.run(None, {"X": x})[0], expected)
    assert (counters()["host_to_device"], counters()["device_to_host"]) == (0, 1)
    (y,) = device_session.run_with_ort_values(None, {"X": x})
    assert y.device_name() == "cpu"
    assert_close(y.numpy(), expected)
    # A session without the device's provider has no copy from its memory (as in
    # onnxruntime, where a session copies only between the memories of its providers).
    cpu_session = onyx.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    with pytest.raises(onyx.OnyxError, match="Test"):
        cpu_session.run(None, {"X": x})


# ---- errors ----------------------------------------------------------------------------------


def test_devices_this_build_lacks_are_refused_as_onnxruntime_refuses_them():
    lacking = ["cuda", "gpu", "dml", "cann"]
    if "CUDAExecutionProvider" in onyx.get_available_providers():
        lacking.remove("cuda")
    if any(p in onyx.get_available_providers() for p in ("CUDAExecutionProvider", "VulkanExecutionProvider")):
        # A "gpu" is the first GPU provider's memory (CUDA's, else Vulkan's).
        lacking.remove("gpu")
        value = onyx.OrtValue.ortvalue_from_numpy(X, "gpu", 0)
        assert value.device_name() in ("cuda", "vulkan")
        np.testing.assert_array_equal(value.numpy(), X)
    for device in lacking:
        for runtime in (onyx, onnxruntime):
            with pytest.raises(RuntimeError) as raised:
                runtime.OrtValue.ortvalue_from_numpy(X, device, 0)
            if runtime is onyx:
                assert f"device '{device}'" in str(raised.value) and "no execution provider" in str(raised.value)
        with pytest.raises(RuntimeError, match=f"no execution provider for device '{device}' is loaded"):
            onyx.OrtValue.ortvalue_from_shape_and_type([2], np.float32, device, 0)
    for runtime in (onyx, onnxruntime):
        # onnxruntime raises a bare Exception here; onyx a ValueError.
        with pytest.raises(Exception, match="[Uu]nsupported device type.*'?vulcan"):
            runtime.OrtValue.ortvalue_from_numpy(X, "vulcan", 0)
        with pytest.raises(TypeError):
            runtime.OrtValue.ortvalue_from_numpy(X, 3, 0)


def test_bad_device_arguments_are_clear_errors():
    with pytest.raises(RuntimeError, match="'test'.*id 1.*TestDeviceExecutionProvider serves Test:0"):
        onyx.OrtValue.ortvalue_from_numpy(X, "test", 1)
    with pytest.raises(ValueError, match="device_id must be 0 or more"):
        onyx.OrtValue.ortvalue_from_numpy(X, "test", -1)
    with pytest.raises(TypeError, match="device_id must be an int"):
        onyx.OrtValue.ortvalue_from_shape_and_type([2], np.float32, "test", "0")
    with pytest.raises(RuntimeError, match="string tensors live in host memory only"):
        onyx.OrtValue.ortvalue_from_numpy(np.array(["a", "b"], object), "test", 0)
    with pytest.raises(RuntimeError, match="negative dimension"):
        onyx.OrtValue.ortvalue_from_shape_and_type([-1], np.float32, "test", 0)
    # A vendor picks the "gpu" it means; none of them is loaded here.
    with pytest.raises(RuntimeError, match="'gpu'.*no execution provider.*through openvino"):
        onyx.OrtValue.ortvalue_from_numpy(X, "gpu", 0, 0x8086)


def test_iobinding_device_errors(device_session):
    binding = device_session.io_binding()
    with pytest.raises(RuntimeError, match="'cuda'.*no execution provider"):
        binding.bind_input("X", "cuda", 0, np.float32, [1, 2, 4], X.ctypes.data)
    with pytest.raises(ValueError, match="unsupported device type 'tpu'"):
        binding.bind_output("Y", "tpu")
    with pytest.raises(TypeError, match="buffer_ptr must be an int"):
        binding.bind_input("X", "test", 0, np.float32, [1, 2, 4], "0x10")
    # A device output the session cannot make: the run says which device and output.
    cpu_session = onyx.InferenceSession(MODEL, providers=["CPUExecutionProvider"])
    cpu_binding = cpu_session.io_binding()
    cpu_binding.bind_cpu_input("X", X)
    cpu_binding.bind_output("Y", "test")
    with pytest.raises(RuntimeError, match="output 'Y' is bound to Test:0, which no provider of this session has"):
        cpu_session.run_with_iobinding(cpu_binding)
    # A device output of another shape than the result.
    binding.bind_ortvalue_input("X", onyx.OrtValue.ortvalue_from_numpy(X, "test", 0))
    binding.bind_ortvalue_output("Y", onyx.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32, "test", 0))
    wrong_shape = r"output 'Y' is float\[1,2,3\], but the tensor bound for it is float\[2,3\]"
    with pytest.raises(RuntimeError, match=wrong_shape):
        device_session.run_with_iobinding(binding)
