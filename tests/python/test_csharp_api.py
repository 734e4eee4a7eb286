"""The C# binding (csharp/, Onyx.dll over the C API through P/Invoke) from
Mono: the runner's own checks, the example custom-op library, and the same
outputs from C# as from Python, bit for bit."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from bindings_util import (
    check_program_outputs,
    ROOT,
    build_dir,
    custom_op_library,  # noqa: F401 - a fixture
    custom_op_model,
)


def run_csharp(*args, expect_success: bool = True) -> subprocess.CompletedProcess:
    """mono OnyxTest.exe ARGS, with the build's libonyx on LD_LIBRARY_PATH."""
    if shutil.which("mono") is None or shutil.which("mcs") is None:
        pytest.skip("the C# binding needs Mono's mcs and mono (apt-get install mono-mcs mono-runtime; scripts/setup.sh does)")
    folder = build_dir()
    if folder is None:
        pytest.skip("OnyxTest.exe is built in a CMake build folder; this onyx was imported from an installed package")
    runner = folder / "csharp" / "OnyxTest.exe"
    if not runner.exists():
        pytest.fail(f"{runner} is missing although Mono is installed: reconfigure and build ({folder}) so CMake finds mcs")
    library_path = os.pathsep.join(p for p in (str(folder), os.environ.get("LD_LIBRARY_PATH", "")) if p)
    done = subprocess.run(
        ["mono", "--debug", str(runner), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "LD_LIBRARY_PATH": library_path},
    )
    if expect_success:
        assert done.returncode == 0, f"OnyxTest.exe failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


def test_csharp_checks_and_matches_python(custom_op_library, tmp_path):  # noqa: F811
    model = custom_op_model(tmp_path / "custom.onnx")
    done = run_csharp(ROOT / "models", custom_op_library, model)
    assert "all C# checks passed" in done.stdout
    for check in (
        "ok: a tensor over a pinned float[] without a copy",
        "ok: a run without its input -> InvalidArgument: ",
        "ok: string tensors",
        "ok: the custom op library runs",
    ):
        assert check in done.stdout, f"{check!r} is not among the runner's lines:\n{done.stdout}"
    assert re.search(r"ok: a custom op that fails -> Fail: .*'positive_check'.*not positive", done.stdout)
    # Bit for bit the numbers Python gets from the same library and input.
    check_program_outputs(done.stdout, y_scale=2)


def test_csharp_runner_fails_when_a_check_fails(tmp_path):
    # A model folder without tiny_cnn.onnx: those checks fail, the others pass,
    # and the exit status says so.
    done = run_csharp(tmp_path, expect_success=False)
    assert done.returncode == 1
    assert "FAILED: tiny_cnn through OnyxValues" in done.stdout and "ok: string tensors" in done.stdout


def test_csharp_runner_usage():
    done = run_csharp(expect_success=False)
    assert done.returncode == 2 and "usage" in done.stderr


def test_csharp_function_table_matches_the_header():
    """NativeMethods.cs reads the C API's table as a struct of pointers: its
    fields must be the header's members, in order (no Mono needed)."""
    header = (ROOT / "include" / "onyx" / "onyx_c_api.h").read_text()
    table = header[header.index("struct OnyxApi {") :]
    table = table[: table.index("\n};")]
    # The ABI test's stand-in for a version 2 member is not part of version 1.
    table = re.sub(r"#ifdef ONYX_ABI_TEST_NEXT.*?#endif", "", table, flags=re.S)
    members = [a or b for a, b in re.findall(r"ONYX_API_(?:STATUS|VOID)\((\w+)|\(ONYX_API_CALL\*\s*(\w+)\)", table)]
    source = (ROOT / "csharp" / "src" / "NativeMethods.cs").read_text()
    struct = source[source.index("internal struct OnyxApi") :]
    struct = struct[: struct.index("}")]
    fields = re.findall(r"public IntPtr (\w+);", struct)
    assert len(members) > 100
    assert fields == members
