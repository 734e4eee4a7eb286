"""The wheel as a user gets it: `pip wheel .` builds it, it installs into a
fresh virtual environment, and from there the `onyx` command, the Python
package and a C program built against the wheel's headers and libonyx.so
run tiny_cnn. The wheel's CMake folder (build-<wheel tag>/) sits beside
build/, so its objects come from ccache when build/ was built first (about a
minute instead of a full build; CMakeLists.txt sets CCACHE_BASEDIR)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from bindings_util import ROOT, build_dir, tiny_cnn_image, tiny_cnn_reference


# The environment of a fresh shell: the tests' own PYTHONPATH (scripts/test.sh
# points it at build/python) and virtual environment must not leak into the
# fresh one.
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def run(command, timeout=300, env=CLEAN_ENV, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=timeout, env=env,
                          **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done


@pytest.fixture(scope="module")
def wheel(request, tmp_path_factory) -> Path:
    if request.config.getoption("--providers"):
        pytest.skip("the wheel's contents do not depend on --providers; the plain pytest run checks it")
    for module in ("scikit_build_core", "nanobind"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"building the wheel needs {module} in this Python (scripts/setup.sh installs it into .venv)")
    if shutil.which("cmake") is None or shutil.which("ninja") is None:
        pytest.skip("building the wheel needs cmake and ninja (scripts/setup.sh installs them)")
    out = tmp_path_factory.mktemp("dist")
    # The build dependencies of this Python, not a download: the same
    # scikit-build-core and nanobind as `pip install --no-build-isolation .`.
    command = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", out, ROOT]
    # The flags of the build tree the tests run from (CI adds -Werror), so
    # that the compiles are ccache hits rather than a second full build.
    werror = "OFF"
    folder = build_dir()
    if folder is not None and "ONYX_WERROR:BOOL=ON" in (folder / "CMakeCache.txt").read_text():
        werror = "ON"
    command.append(f"--config-settings=cmake.define.ONYX_WERROR={werror}")
    run(command, timeout=3600)
    found = sorted(out.glob("onyx-*.whl"))
    assert len(found) == 1, found
    return found[0]


def test_wheel_holds_package_library_command_and_headers(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("onyx/__init__.py", "onyx/training/__init__.py", "onyx/training/api.py", "onyx/quantization/__init__.py",
                 "onyx/quantization/__main__.py", "onyx/quantization/matmul_nbits_quantizer.py", "onyx/libonyx.so", "onyx/include/onyx/onyx_c_api.h",
                 "onyx/include/onyx/onyx_cxx_api.h"):
        assert name in names, f"{name} is not in {wheel.name}"
    assert any(n.startswith("onyx/_onyx") and n.endswith(".so") for n in names), "no extension module"
    assert any(n.endswith(".data/scripts/onyx") for n in names), "no onyx command"
    # Nothing of the build or the tests rides along.
    assert not any("onyx_tests" in n or "CMakeFiles" in n for n in names)


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel installed and nothing else.
    numpy (the one dependency) is borrowed from this Python through a .pth
    file rather than downloaded, so the test needs no network."""
    folder = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", folder])
    python = folder / "bin" / "python"
    run([python, "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check", wheel])
    import numpy

    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip())
    (site / "borrowed_numpy.pth").write_text(str(Path(numpy.__file__).parent.parent) + "\n")
    return folder


def test_onyx_command_runs_a_model(venv, tmp_path):
    done = run([venv / "bin" / "onyx", "run", ROOT / "models" / "tiny_cnn.onnx"], cwd=tmp_path)
    assert "probabilities" in done.stdout, done.stdout


def test_package_imports_from_the_venv_and_runs_a_model(venv, tmp_path):
    np.save(tmp_path / "image.npy", tiny_cnn_image())
    script = f"""
import numpy as np, onyx
print(onyx.__file__)
options = onyx.SessionOptions()
options.intra_op_num_threads = 1
session = onyx.InferenceSession({str(ROOT / "models" / "tiny_cnn.onnx")!r}, options, providers=["CPUExecutionProvider"])
np.save("probabilities.npy", session.run(None, {{"image": np.load("image.npy")}})[0])
"""
    done = run([venv / "bin" / "python", "-c", script], cwd=tmp_path)
    assert Path(done.stdout.splitlines()[0]).is_relative_to(venv), done.stdout
    np.testing.assert_array_equal(np.load(tmp_path / "probabilities.npy"), tiny_cnn_reference())


def test_c_program_builds_against_the_wheel(venv, tmp_path):
    python = venv / "bin" / "python"
    include, lib = run([python, "-c", "import onyx; print(onyx.get_include()); print(onyx.get_library_dir())"],
                       cwd=tmp_path).stdout.split()
    assert Path(include, "onyx", "onyx_c_api.h").is_file()
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler (cc, gcc, clang) is installed")
    source = tmp_path / "version.c"
    source.write_text(
        """#include <stdio.h>
#include <onyx/onyx_c_api.h>
int main(void) {
  printf("onyx %s\\n", OnyxGetApiBase()->GetVersionString());
  return OnyxGetApi(ONYX_API_VERSION) == NULL;
}
"""
    )
    program = tmp_path / "version"
    run([compiler, "-std=c11", "-Wall", "-Werror", source, f"-I{include}", f"-L{lib}", "-lonyx",
         f"-Wl,-rpath,{lib}", "-o", program])
    version = run([python, "-c", "import onyx; print(onyx.__version__)"], cwd=tmp_path).stdout.strip()
    assert run([program]).stdout.strip() == f"onyx {version}"


def test_get_include_and_library_dir_in_this_onyx():
    """The same two functions where the tests import onyx from (the build
    tree's build/python, or an installed wheel)."""
    import onyx

    assert Path(onyx.get_include(), "onyx", "onyx_cxx_api.h").is_file()
    assert Path(onyx.get_library_dir(), "libonyx.so").is_file()
