"""What the tests of onyx's other languages share: the build folder that holds
their programs, the example custom-operator library (built outside the
tree, as a user builds theirs), the models they run and the input every
language feeds, so that their outputs can be compared with Python's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_LIBRARY = ROOT / "examples" / "custom_op_library"
EXAMPLE_DOMAIN = "ai.onyx.example"


def build_dir() -> Path | None:
    """The CMake build folder whose Python package the tests import (build/
    for `PYTHONPATH=build/python`), or $ONYX_BUILD_DIR."""
    if os.environ.get("ONYX_BUILD_DIR"):
        folder = Path(os.environ["ONYX_BUILD_DIR"])
        return folder if folder.is_absolute() else ROOT / folder
    import onyx

    package = Path(onyx.__file__).resolve().parent
    candidate = package.parent.parent
    return candidate if (candidate / "CMakeCache.txt").exists() else None


def onyx_command() -> Path:
    """The build tree's `onyx` program, else the installed one (fails the
    test when neither is there)."""
    import onyx.__main__ as onyx_main

    folder = build_dir()
    path = folder / "onyx" if folder is not None else onyx_main.find_command()
    if path is None or not path.is_file():
        pytest.fail(f"the onyx program is missing ({path}): build it with `ninja -C build`")
    return path


def program(name: str) -> Path:
    """A test program of the build; skips with the reason when onyx was
    installed without its build tree (pip install .)."""
    folder = build_dir()
    if folder is None:
        pytest.skip(f"{name} is built in a CMake build folder; this onyx was imported from an installed package")
    path = folder / name
    if not path.exists():
        pytest.fail(f"{path} is missing: build it with `cmake --build {folder}`")
    return path


def run_program(name: str, *args) -> subprocess.CompletedProcess:
    """Runs a test program of the build with `args`; it must succeed."""
    done = subprocess.run([str(program(name)), *map(str, args)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{name} failed:\n{done.stdout}\n{done.stderr}"
    return done


def tiny_cnn_image() -> np.ndarray:
    """The input every language feeds models/tiny_cnn.onnx: exact in any
    floating point (multiples of 1/64)."""
    i = np.arange(3 * 32 * 32, dtype=np.int64)
    return (((i * 7) % 101 - 50) / 64.0).astype(np.float32).reshape(1, 3, 32, 32)


def tiny_cnn_reference() -> np.ndarray:
    """tiny_cnn's output from the Python API with one thread (as every
    language runs it), the reference the others must match exactly."""
    import onyx

    options = onyx.SessionOptions()
    options.intra_op_num_threads = 1
    # The CPU provider named, as every language's program uses it (pytest
    # --providers must not change the reference).
    session = onyx.InferenceSession(str(ROOT / "models" / "tiny_cnn.onnx"), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"image": tiny_cnn_image()})[0]


def parse_outputs(stdout: str) -> dict[str, np.ndarray]:
    """The "output NAME: v0 v1 ..." lines a language's test program prints."""
    outputs = {}
    for line in stdout.splitlines():
        if line.startswith("output ") and ":" in line:
            name, values = line[len("output ") :].split(":", 1)
            outputs[name.strip()] = np.array([float(v) for v in values.split()], dtype=np.float32)
    return outputs


def check_program_outputs(stdout: str, y_scale: float) -> None:
    """A language's test program printed tiny_cnn's probabilities bit for bit
    as Python computes them, and the custom-op model's Y = y_scale *
    tanh(X) for X = 0.5, 1, ..., 3 (scale 2 from ScaledTanh, 4 with the C
    and C++ programs' in-process Twice after it)."""
    outputs = parse_outputs(stdout)
    np.testing.assert_array_equal(outputs["probabilities"], tiny_cnn_reference().ravel())
    x = np.array([0.5, 1.0, 1.5, 2.0, 2.5, 3.0], dtype=np.float32)
    np.testing.assert_allclose(outputs["Y"], y_scale * np.tanh(x), rtol=1e-6)


@pytest.fixture(scope="session")
def custom_op_library(tmp_path_factory) -> Path:
    """examples/custom_op_library built on its own with CMake against the
    checkout's headers, the way a user builds a library of their own."""
    if shutil.which("cmake") is None:
        pytest.fail("cmake is needed to build the example custom-operator library")
    out = tmp_path_factory.mktemp("custom_op_library")
    configure = ["cmake", "-S", str(EXAMPLE_LIBRARY), "-B", str(out), f"-DONYX_INCLUDE_DIR={ROOT / 'include'}"]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    for command in (configure, ["cmake", "--build", str(out)]):
        done = subprocess.run(command, capture_output=True, text=True)
        assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}"
    library = out / "libonyx_custom_ops_example.so"
    assert library.exists()
    return library


def custom_op_model(path: Path, with_in_process_op: bool = False) -> Path:
    """X (float [2, 3]) -> ScaledTanh(scale=2) -> T; CheckPositive(X) -> Z; and
    Y = T, or Y = Twice(T) (domain test.capi, the op the C test program
    registers in process)."""
    nodes = [
        helper.make_node("ScaledTanh", ["X"], ["T"], name="scaled", domain=EXAMPLE_DOMAIN, scale=2.0),
        helper.make_node("CheckPositive", ["X"], ["Z"], name="positive_check", domain=EXAMPLE_DOMAIN),
    ]
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid(EXAMPLE_DOMAIN, 1)]
    if with_in_process_op:
        nodes.append(helper.make_node("Twice", ["T"], ["Y"], name="twice", domain="test.capi"))
        opsets.append(helper.make_opsetid("test.capi", 1))
    else:
        nodes.append(helper.make_node("Identity", ["T"], ["Y"]))
    graph = helper.make_graph(
        nodes,
        "custom_ops",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [2, 3])],
        [
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("Z", TensorProto.FLOAT, [2, 3]),
        ],
    )
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    onnx.save(model, str(path))
    return path
