"""The C API (include/onyx/onyx_c_api.h) from a C program, custom operators
from a library built outside the tree, and the same outputs from C as from
Python."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from bindings_util import (
    ROOT,
    check_program_outputs,
    custom_op_library,  # noqa: F401 - a fixture
    custom_op_model,
    program,
    run_program,
)

import onyx


def test_c_program_checks_and_matches_python(custom_op_library, tmp_path):  # noqa: F811
    model = custom_op_model(tmp_path / "custom.onnx", with_in_process_op=True)
    done = run_program("onyx_capi_test", ROOT / "models", custom_op_library, model)
    assert "all C API checks passed" in done.stdout
    # Bit for bit the numbers Python gets from the same library and input.
    check_program_outputs(done.stdout, y_scale=4)


def test_c_program_usage():
    done = subprocess.run([str(program("onyx_capi_test"))], capture_output=True, text=True)
    assert done.returncode == 2 and "usage" in done.stderr


def session_with_library(library, model, threads: int = 1) -> onyx.InferenceSession:
    options = onyx.SessionOptions()
    options.intra_op_num_threads = threads
    options.register_custom_ops_library(str(library))
    return onyx.InferenceSession(str(model), options, providers=["CPUExecutionProvider"])


def test_python_runs_the_custom_op_library(custom_op_library, tmp_path):  # noqa: F811
    session = session_with_library(custom_op_library, custom_op_model(tmp_path / "custom.onnx"))
    x = np.random.default_rng(0).uniform(0.1, 3, (2, 3)).astype(np.float32)
    y, z = session.run(None, {"X": x})
    np.testing.assert_allclose(y, 2 * np.tanh(x), rtol=1e-6)
    np.testing.assert_array_equal(z, x)
    # Shape inference of the op: the outputs' types and shapes are known.
    assert [(o.name, o.type, o.shape) for o in session.get_outputs()] == [
        ("Y", "tensor(float)", [2, 3]),
        ("Z", "tensor(float)", [2, 3]),
    ]


def test_a_failing_custom_op_names_its_node(custom_op_library, tmp_path):  # noqa: F811
    session = session_with_library(custom_op_library, custom_op_model(tmp_path / "custom.onnx"))
    x = np.ones((2, 3), dtype=np.float32)
    x[1, 2] = -2
    with pytest.raises(Exception, match=r"CheckPositive 'positive_check'.*element 5 is -2, not positive"):
        session.run(None, {"X": x})
    # The session still runs good input afterwards.
    session.run(None, {"X": np.ones((2, 3), dtype=np.float32)})


def test_custom_op_typed_variants(custom_op_library, tmp_path):  # noqa: F811
    """ScaledTanh is registered for float and for double: each node gets the
    kernel of its input's type, and a third type is refused clearly."""
    from onnx import TensorProto, helper

    def model(elem_type, path):
        node = helper.make_node("ScaledTanh", ["X"], ["Y"], name="st", domain="ai.onyx.example", scale=0.5)
        graph = helper.make_graph(
            [node],
            "typed",
            [helper.make_tensor_value_info("X", elem_type, ["n"])],
            [helper.make_tensor_value_info("Y", elem_type, ["n"])],
        )
        m = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onyx.example", 1)]
        )
        m.ir_version = 8
        import onnx

        onnx.save(m, str(path))
        return path

    x = np.linspace(-2, 2, 7)
    session = session_with_library(custom_op_library, model(TensorProto.DOUBLE, tmp_path / "double.onnx"))
    (y,) = session.run(None, {"X": x})
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, 0.5 * np.tanh(x), rtol=1e-15)
    with pytest.raises(Exception, match=r"no custom operator 'ScaledTanh' registered for inputs \(tensor\(int32\)\)"):
        session_with_library(custom_op_library, model(TensorProto.INT32, tmp_path / "int.onnx"))


def test_custom_op_library_errors(tmp_path):
    options = onyx.SessionOptions()
    with pytest.raises(Exception, match="cannot load the custom operator library"):
        options.register_custom_ops_library(str(tmp_path / "missing.so"))
    # A model whose custom op nobody registered: a clear error naming it.
    with pytest.raises(Exception, match=r"ai.onyx.example.*ScaledTanh"):
        onyx.InferenceSession(str(custom_op_model(tmp_path / "custom.onnx")))


def test_python_module_goes_through_the_c_api():
    """The extension reaches the library through OnyxGetApiBase's table and
    the generation C API's functions (onyx_genai_c.h) alone (plus the
    test-only device hooks), so what Python can do, a C program can do: the
    C API is complete by construction."""
    from onyx import _onyx

    done = subprocess.run(["nm", "-D", "--undefined-only", _onyx.__file__], capture_output=True, text=True, check=True)
    names = {line.split()[-1] for line in done.stdout.splitlines() if line.strip()}
    demangled = subprocess.run(["c++filt"], input="\n".join(sorted(names)), capture_output=True, text=True, check=True)
    from_onyx = sorted(n for n in demangled.stdout.splitlines() if "onyx" in n.lower())
    genai_header = (Path(__file__).resolve().parents[2] / "include" / "onyx" / "onyx_genai_c.h").read_text()
    genai = [n for n in from_onyx if n.startswith("OnyxGenai")]
    assert genai, "onyx.genai's binding calls no OnyxGenai* function"
    assert [n for n in genai if not re.search(rf"\b{n}\(", genai_header)] == []
    assert [n for n in from_onyx if not n.startswith("OnyxGenai")] == [
        "OnyxGetApiBase",
        "onyx::register_testing_providers()",
        "onyx::reset_testing_device_counters()",
        "onyx::testing_device_counters[abi:cxx11]()",
    ]
