"""onyx's Node.js binding (node/): node's own test runner over node/test/, with
the custom-operator library and Python's tiny_cnn output handed to it, and
the outputs a Node.js script prints compared bit for bit with Python's."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from bindings_util import (
    ROOT,
    build_dir,
    custom_op_library,  # noqa: F401 - a fixture
    custom_op_model,
    parse_outputs,
    tiny_cnn_reference,
)

NODE = shutil.which("node") or shutil.which("nodejs")


def cmake_cache_value(folder: Path, name: str) -> str | None:
    for line in (folder / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(name + ":"):
            return line.split("=", 1)[1]
    return None


def node_package() -> Path:
    """<build>/node, where the build puts the `onyx` package with its addon;
    skips when node or its headers are absent (the addon is then not built)."""
    if NODE is None:
        pytest.skip("node is not installed, so the Node.js binding is not tested (scripts/setup.sh installs nodejs)")
    folder = build_dir()
    if folder is None:
        pytest.skip("the Node.js addon is built in a CMake build folder; this onyx was imported from an installed package")
    addon = folder / "node" / "onyx" / "onyx_node.node"
    if addon.exists():
        return folder / "node"
    status = cmake_cache_value(folder, "ONYX_NODE_STATUS")
    if status is not None and status != "built":
        pytest.skip(f"the Node.js addon is {status} (scripts/setup.sh installs nodejs and libnode-dev)")
    pytest.fail(f"{addon} is missing: build it with `cmake --build {folder}`")


def node_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ONYX_NODE_ADDON", "NODE_PATH", "NODE_OPTIONS")}
    env.update(extra)
    return env


def test_node_test_runner(custom_op_library, tmp_path):  # noqa: F811
    package = node_package()
    reference = tmp_path / "tiny_cnn_reference.f32"
    reference.write_bytes(tiny_cnn_reference().astype("<f4").tobytes())
    env = node_env(
        ONYX_NODE_ADDON=str(package / "onyx" / "onyx_node.node"),
        ONYX_CUSTOM_OP_LIBRARY=str(custom_op_library),
        ONYX_CUSTOM_OP_MODEL=str(custom_op_model(tmp_path / "custom.onnx")),
        ONYX_TINY_CNN_REFERENCE=str(reference),
    )
    done = subprocess.run(
        [NODE, "--test", "--test-reporter", "tap", "node/test/"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = done.stdout + done.stderr
    assert done.returncode == 0, f"node --test failed:\n{report}"
    counts = {key: int(value) for key, value in re.findall(r"^# (tests|pass|fail|skipped|cancelled) (\d+)$", report, re.M)}
    assert counts["fail"] == 0 and counts["cancelled"] == 0, report
    # Every test ran: the custom-op tests are not skipped when the library is given.
    assert counts["skipped"] == 0 and counts["pass"] == counts["tests"] >= 20, report
    # The tap reporter prints the tests' stdout as comments.
    printed = parse_outputs("\n".join(line[2:] for line in report.splitlines() if line.startswith("# output ")))
    np.testing.assert_array_equal(printed["probabilities"], tiny_cnn_reference().ravel())


def test_node_script_matches_python():
    package = node_package()
    # require('onyx') through NODE_PATH, as the README shows.
    done = subprocess.run(
        [NODE, str(ROOT / "node" / "examples" / "run_tiny_cnn.js"), str(ROOT / "models" / "tiny_cnn.onnx")],
        env=node_env(NODE_PATH=str(package)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"run_tiny_cnn.js failed:\n{done.stdout}\n{done.stderr}"
    outputs = parse_outputs(done.stdout)
    # Bit for bit the numbers Python gets from the same library and input.
    expected = tiny_cnn_reference().ravel()
    assert outputs["probabilities"].dtype == np.float32
    np.testing.assert_array_equal(outputs["probabilities"].view(np.uint32), expected.view(np.uint32))
