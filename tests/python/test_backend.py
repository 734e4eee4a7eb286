"""onyx.backend driven by the ONNX project's backend test runner on every
node case of the suite, through the Python API (feeds and outputs as numpy
and ml_dtypes arrays, sequences, optionals), against the conformance gate's
expected failures; plus direct prepare/run_model/run_node calls."""

import os
import re
import unittest.mock

import numpy as np
import onnx.backend.test
import onnx.backend.test.runner
import pytest
from onnx import TensorProto, helper
from onnx.backend.test.case.test_case import TestCase

import onyx.backend
from helpers import add_relu_model

# The ONNX backend suite's node cases as files (model.onnx + test_data_set_0).
# onnx's own loader generates all ~1,800 node cases in memory, which takes
# minutes; here only the chosen cases are read from disk.
BACKEND_DATA = os.environ.get(
    "ONYX_BACKEND_DATA",
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "onnx-backend-data"))
EXPECTED_FAILURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance", "expected_failures.txt")
# Cases that fail only through this runner, each with its reason.
PYTHON_RUNNER_FAILURES = {
    # The runner loads the expected output, a sequence of tensors of growing
    # length, and then fails comparing it ("len() of unsized object"); onyx's
    # output equals it element for element (checked by `onyx conformance`).
    "test_loop16_seq_none": "the onnx runner cannot compare this case's expected sequence",
}


def _case_names():
    """Every node case of the suite (about 8 s through the Python API), or with
    ONYX_BACKEND_CASES=<regex> those whose name matches (e.g. '^test_conv')."""
    pattern = os.environ.get("ONYX_BACKEND_CASES", ".")
    found = re.compile(pattern)
    return sorted(n for n in os.listdir(os.path.join(BACKEND_DATA, "node")) if found.search(n))


def _expected_failures():
    """name -> reason, from the conformance gate's list and the runner's own."""
    failures = dict(PYTHON_RUNNER_FAILURES)
    with open(EXPECTED_FAILURES) as listed:
        for line in listed:
            name, _, reason = line.partition("#")
            if name.strip():
                failures[name.strip()] = reason.strip()
    return failures


def _disk_cases(kind):
    """The chosen node cases as onnx TestCase records pointing at their folders."""
    if kind != "node":
        return []  # the Real and PyTorch categories would download models
    cases = []
    for name in _case_names():
        folder = os.path.join(BACKEND_DATA, "node", name)
        if os.path.exists(os.path.join(folder, "model.onnx")):
            cases.append(TestCase(name=name, model_name=name[len("test_"):], url=None, model_dir=folder,
                                  model=None, data_sets=None, kind="node", rtol=1e-3, atol=1e-7))
    return cases


if os.path.isdir(os.path.join(BACKEND_DATA, "node")):
    with unittest.mock.patch.object(onnx.backend.test.runner, "load_model_tests",
                                    lambda data_dir=None, kind=None: _disk_cases(kind)):
        _runner = onnx.backend.test.BackendTest(onyx.backend, __name__)
    for _name, _reason in _expected_failures().items():
        if _reason.startswith("random"):
            # Expected values drawn from numpy's generator: nothing to compare.
            _runner.exclude(f"^{_name}_cpu$")
        else:
            _runner.xfail(f"^{_name}_cpu$")  # strict: a case that starts passing fails here
    globals().update(_runner.test_cases)
else:

    @pytest.mark.skip(reason=f"{BACKEND_DATA}/node not found (set ONYX_BACKEND_DATA to the ONNX backend test data)")
    def test_onnx_backend_node_cases():
        pass


def test_supports_device():
    assert onyx.backend.supports_device("CPU")
    assert not onyx.backend.supports_device("CUDA")


def test_prepare_and_run_model():
    x = np.ones((2, 3), np.float32)
    rep = onyx.backend.prepare(add_relu_model(), "CPU")
    y, z = rep.run([x])
    np.testing.assert_array_equal(z, 2 * x)
    outputs = onyx.backend.run_model(add_relu_model(), {"X": x})
    np.testing.assert_array_equal(outputs[0], y)
    assert outputs.Y is outputs[0] or np.array_equal(outputs.Y, y)


def test_run_node():
    node = helper.make_node("Sub", ["a", "b"], ["c"])
    a = np.array([3, 4], np.int64)
    b = np.array([1, 1], np.int64)
    (c,) = onyx.backend.run_node(node, [a, b])
    np.testing.assert_array_equal(c, [2, 3])
    node = helper.make_node("Cast", ["x"], ["y"], to=TensorProto.INT32)
    (y,) = onyx.backend.run_node(node, [np.array([1.7, -2.2], np.float32)])
    assert y.dtype == np.int32
    np.testing.assert_array_equal(y, [1, -2])
