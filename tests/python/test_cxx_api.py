"""The C++ API (include/onyx/onyx_cxx_api.h) from a C++ program
(tests/cxx/cxx_api_test.cc): every class of the wrapper, a custom op written
with CustomOpBase next to the example library built outside the tree, and
the same outputs from C++ as from Python."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from bindings_util import (
    ROOT,
    check_program_outputs,
    custom_op_library,  # noqa: F401 - a fixture
    custom_op_model,
    program,
    run_program,
)


def test_cxx_program_checks_and_matches_python(custom_op_library, tmp_path):  # noqa: F811
    model = custom_op_model(tmp_path / "custom.onnx", with_in_process_op=True)
    done = run_program("onyx_cxx_api_test", ROOT / "models", custom_op_library, model)
    assert "all C++ API checks passed" in done.stdout
    # Bit for bit the numbers Python gets from the same library and input.
    check_program_outputs(done.stdout, y_scale=4)
    # What the C++ kernel threw came back as an error naming its node.
    assert "a kernel throwing Onyx::Exception -> " in done.stdout


def test_cxx_program_usage():
    done = subprocess.run([str(program("onyx_cxx_api_test"))], capture_output=True, text=True)
    assert done.returncode == 2 and "usage" in done.stderr


def test_cxx_program_needs_only_the_c_entry_point():
    """The wrapper is header-only over the C API: of libonyx, a program built
    with it needs OnyxGetApiBase and nothing of onyx's C++ symbols."""
    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) is not installed: cannot list the program's undefined symbols")
    binary = program("onyx_cxx_api_test")
    listing = subprocess.run(["nm", "-D", "--undefined-only", str(binary)], capture_output=True, text=True, check=True)
    undefined = [line.split()[-1] for line in listing.stdout.splitlines() if line.strip()]
    of_onyx = [name for name in undefined if name.startswith("Onyx") or "4onyx" in name]
    assert of_onyx == ["OnyxGetApiBase"], f"the C++ API test needs more of libonyx than its entry point: {of_onyx}"
