"""The Java binding (java/, package ai.onyx, JNI over the C API) through its
test runner java/test/ai/onyx/OnyxTest.java: the same tiny_cnn output as
Python bit for bit, strings, sequences and maps, and the custom-op library
built outside the tree."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import onnx
import pytest
from bindings_util import (
    check_program_outputs,
    ROOT,
    build_dir,
    custom_op_library,  # noqa: F401 - a fixture
    custom_op_model,
)
from onnx import TensorProto, helper


def java_build() -> Path:
    """build/java (onyx.jar, libonyx_jni.so, the runner's classes). Skips
    only where the JDK is absent or the build turned the binding off."""
    if shutil.which("java") is None or shutil.which("javac") is None:
        pytest.skip(
            "the JDK is absent (no java and javac on PATH), so the Java binding is not built; "
            "scripts/setup.sh installs it (apt: default-jdk-headless)"
        )
    folder = build_dir()
    if folder is None:
        pytest.skip("the Java binding is built in a CMake build folder; this onyx was imported from an installed package")
    if re.search(r"^ONYX_JAVA:BOOL=OFF$", (folder / "CMakeCache.txt").read_text(), re.MULTILINE):
        pytest.skip(f"{folder} was configured with -DONYX_JAVA=OFF")
    java = folder / "java"
    needed = [java / "onyx.jar", java / "libonyx_jni.so", java / "tests" / "ai" / "onyx" / "OnyxTest.class"]
    missing = [str(p) for p in needed if not p.exists()]
    if missing:
        pytest.fail(
            f"the JDK is installed but {', '.join(missing)} is missing: "
            f"reconfigure and build ({'cmake -S . -B ' + str(folder)} && cmake --build {folder})"
        )
    return java


def values_model(path: Path) -> Path:
    """text (string [n]) -> Identity -> text_out; a, b (float) ->
    SequenceConstruct -> pair; scores (float [1, 2]) -> ZipMap (labels 10,
    20) -> by_label, a sequence of maps."""
    nodes = [
        helper.make_node("Identity", ["text"], ["text_out"]),
        helper.make_node("SequenceConstruct", ["a", "b"], ["pair"]),
        helper.make_node("ZipMap", ["scores"], ["by_label"], domain="ai.onnx.ml", classlabels_int64s=[10, 20]),
    ]
    float_map = helper.make_map_type_proto(TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, []))
    graph = helper.make_graph(
        nodes,
        "values",
        [
            helper.make_tensor_value_info("text", TensorProto.STRING, ["n"]),
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["m"]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, ["k"]),
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2]),
        ],
        [
            helper.make_tensor_value_info("text_out", TensorProto.STRING, ["n"]),
            helper.make_tensor_sequence_value_info("pair", TensorProto.FLOAT, None),
            helper.make_value_info("by_label", helper.make_sequence_type_proto(float_map)),
        ],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 1)]
    )
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def run_java(java: Path, *args) -> subprocess.CompletedProcess:
    command = [
        "java",
        "-Xcheck:jni",  # the JVM checks every JNI call the binding makes
        f"-Djava.library.path={java}",
        "-cp",
        f"{java / 'onyx.jar'}:{java / 'tests'}",
        "ai.onyx.OnyxTest",
        *map(str, args),
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=300)


def test_java_runner_checks_and_matches_python(custom_op_library, tmp_path):  # noqa: F811
    java = java_build()
    done = run_java(
        java,
        "--models",
        ROOT / "models",
        "--custom-op-library",
        custom_op_library,
        "--custom-op-model",
        custom_op_model(tmp_path / "custom.onnx"),
        "--values-model",
        values_model(tmp_path / "values.onnx"),
    )
    assert done.returncode == 0, f"OnyxTest failed:\n{done.stdout}\n{done.stderr}"
    assert "all Java API checks passed" in done.stdout
    # -Xcheck:jni reports misuse (an exception left pending, too many local
    # references) as warnings without failing.
    assert "WARNING" not in done.stderr, done.stderr
    # Bit for bit the numbers Python gets from the same library and input.
    check_program_outputs(done.stdout, y_scale=2)
    assert "'positive_check'" in done.stdout


def test_java_runner_usage():
    java = java_build()
    done = run_java(java)
    assert done.returncode == 2 and "usage" in done.stderr
