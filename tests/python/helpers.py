"""Shared helpers of the Python tests: small models built with onnx.helper,
and the comparison with onnxruntime."""

from __future__ import annotations

import json
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

# ../shared beside the checkout holds the real models (not shipped with onyx).
SHARED_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared")
MODELS_DIR = os.environ.get("ONYX_MODELS_DIR", os.path.join(SHARED_DIR, "models"))


def make_model(nodes, inputs, outputs, initializers=(), opset=17, extra_opsets=(), **model_kwargs) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "test_graph", inputs, outputs, initializer=list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets, **model_kwargs)
    model.ir_version = min(model.ir_version, 8)  # what the installed onnxruntime reads
    return model


def add_relu_model() -> onnx.ModelProto:
    """Y = Relu(X + B), Z = X * 2: X is [batch, 3] with a symbolic batch."""
    nodes = [
        helper.make_node("Add", ["X", "B"], ["S"], name="add"),
        helper.make_node("Relu", ["S"], ["Y"], name="relu"),
        helper.make_node("Mul", ["X", "two"], ["Z"], name="mul"),
    ]
    inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, ["batch", 3])]
    outputs = [
        helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["batch", 3]),
        helper.make_tensor_value_info("Z", TensorProto.FLOAT, ["batch", 3]),
    ]
    inits = [
        helper.make_tensor("B", TensorProto.FLOAT, [3], [0.5, -1.0, 2.0]),
        helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
    ]
    return make_model(nodes, inputs, outputs, inits)


def assert_close(actual, expected, name: str = "output") -> None:
    """Within 1e-4 absolute plus 1e-3 relative to the largest magnitude of the
    expected output; strings, sequences and maps compare exactly/recursively."""
    if isinstance(expected, list):
        assert isinstance(actual, list), f"{name}: expected a list, got {type(actual).__name__}"
        assert len(actual) == len(expected), f"{name}: {len(actual)} items, expected {len(expected)}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_close(a, e, f"{name}[{i}]")
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{name}: expected a dict, got {type(actual).__name__}"
        assert sorted(actual) == sorted(expected), f"{name}: keys differ"
        for key in expected:
            assert_close(np.asarray(actual[key]), np.asarray(expected[key]), f"{name}[{key!r}]")
        return
    if expected is None:
        assert actual is None, f"{name}: expected None"
        return
    actual = np.asarray(actual)
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, f"{name}: shape {actual.shape}, expected {expected.shape}"
    if expected.dtype == object or expected.dtype.kind in "US":
        assert actual.tolist() == expected.tolist(), f"{name}: strings differ"
        return
    assert actual.dtype == expected.dtype, f"{name}: dtype {actual.dtype}, expected {expected.dtype}"
    if expected.size == 0:
        return
    if expected.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected, err_msg=name)
        return
    a = actual.astype(np.float64)
    e = expected.astype(np.float64)
    tolerance = 1e-4 + 1e-3 * float(np.max(np.abs(e)))
    error = float(np.max(np.abs(a - e)))
    assert error <= tolerance, f"{name}: max abs error {error:.3g} > tolerance {tolerance:.3g}"


def profile_nodes_and_copies(session):
    """(nodes run per provider, copy steps) of a profiled session's runs so
    far, from the file end_profiling() writes (removed afterwards). Copies
    of feeds in and fetches out happen around the plan and are not steps."""
    path = session.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    nodes, copies = {}, 0
    for e in events:
        if e.get("cat") != "Node":
            continue
        if e["args"]["op_name"] == "Copy":
            copies += 1
        else:
            nodes[e["args"]["provider"]] = nodes.get(e["args"]["provider"], 0) + 1
    return nodes, copies
