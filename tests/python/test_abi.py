"""The C API's ABI: a program compiled against today's header (version 1)
runs against a library whose table has a function appended (the next
version), and a program compiled for the next version finds it there and
gets NULL from a library that is older.

The build makes both libraries without compiling onyx twice: libonyx.so and
libonyx_abi_next.so (onyx_core's objects, c_api.cc compiled again with
ONYX_ABI_TEST_NEXT), and the caller tests/abi/abi_caller.c twice
(onyx_abi_caller for version 1, onyx_abi_caller_next for version 2), without
rpaths: each run picks its library through LD_LIBRARY_PATH, from a folder
where the two library names point at one library or the other."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
from bindings_util import ROOT, parse_outputs, program, tiny_cnn_reference

LIBRARY_NAMES = ("libonyx.so", "libonyx_abi_next.so")


@pytest.fixture(scope="module")
def library_folders(tmp_path_factory) -> dict[str, Path]:
    """"plain" and "next": folders where both library names lead to
    libonyx.so, or to libonyx_abi_next.so."""
    folders = {}
    for kind, target in (("plain", "libonyx.so"), ("next", "libonyx_abi_next.so")):
        library = program(target)
        folder = tmp_path_factory.mktemp(kind)
        for name in LIBRARY_NAMES:
            (folder / name).symlink_to(library)
        folders[kind] = folder
    return folders


def run_caller(name: str, folder: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, LD_LIBRARY_PATH=str(folder))
    return subprocess.run(
        [str(program(name)), str(ROOT / "models")], capture_output=True, text=True, timeout=120, env=env
    )


def passed(done: subprocess.CompletedProcess, folder: Path) -> str:
    assert done.returncode == 0, f"the caller failed:\n{done.stdout}\n{done.stderr}"
    assert "abi caller passed" in done.stdout
    # It ran on the library chosen, not on one found some other way.
    assert f"library: {folder}/" in done.stdout, done.stdout
    np.testing.assert_array_equal(parse_outputs(done.stdout)["probabilities"], tiny_cnn_reference().ravel())
    return done.stdout


def test_version_1_caller_on_its_own_library(library_folders):
    out = passed(run_caller("onyx_abi_caller", library_folders["plain"]), library_folders["plain"])
    assert "header version: 1" in out and "serves version 2: no" in out


def test_version_1_caller_on_the_next_library(library_folders):
    out = passed(run_caller("onyx_abi_caller", library_folders["next"]), library_folders["next"])
    assert "header version: 1" in out and "serves version 2: yes" in out


def test_version_2_caller_finds_the_appended_function(library_folders):
    out = passed(run_caller("onyx_abi_caller_next", library_folders["next"]), library_folders["next"])
    assert "header version: 2" in out and "appended function: appended in version 2" in out


def test_version_2_caller_on_an_older_library_gets_null(library_folders):
    done = run_caller("onyx_abi_caller_next", library_folders["plain"])
    assert done.returncode == 3, f"expected GetApi(2) to be NULL:\n{done.stdout}\n{done.stderr}"
    assert "GetApi(2) is NULL" in done.stdout
