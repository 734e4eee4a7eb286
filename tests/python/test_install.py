"""`cmake --install` as a user's projects consume it: the build installed
into a temporary prefix, then built against from outside the tree with
find_package(onyx) (tests/consumer/, and examples/custom_op_library) and with
`pkg-config --cflags --libs onyx`. Nothing of onyx is compiled again: these
build only the small projects themselves."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from bindings_util import EXAMPLE_LIBRARY, ROOT, build_dir, custom_op_model, parse_outputs, tiny_cnn_reference

import onyx


def run(command, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, timeout=300, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed:\n{done.stdout}\n{done.stderr}"
    return done


def cmake_build(source: Path, binary: Path, prefix: Path) -> None:
    """Configures and builds a project outside the tree against `prefix`."""
    configure = ["cmake", "-S", source, "-B", binary, f"-DCMAKE_PREFIX_PATH={prefix}"]
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    run(configure)
    run(["cmake", "--build", binary])


@pytest.fixture(scope="module")
def prefix(tmp_path_factory) -> Path:
    """The build installed with `cmake --install BUILD --prefix TMP`."""
    if shutil.which("cmake") is None:
        pytest.fail("cmake is needed to install onyx and build the consumer projects")
    folder = build_dir()
    if folder is None:
        pytest.skip("installing needs onyx's CMake build folder; this onyx was imported from an installed package")
    out = tmp_path_factory.mktemp("prefix")
    run(["cmake", "--install", folder, "--prefix", out])
    return out


def library_dir(prefix: Path) -> Path:
    found = sorted(prefix.glob("lib*/**/libonyx.so"))
    assert found, f"no libonyx.so under {prefix}"
    return found[0].parent


def test_install_layout(prefix):
    lib = library_dir(prefix)
    assert (prefix / "include" / "onyx" / "onyx_c_api.h").is_file()
    assert (prefix / "include" / "onyx" / "onyx_cxx_api.h").is_file()
    assert (prefix / "include" / "onyx" / "training.h").is_file()
    assert (lib / "cmake" / "onyx" / "onyxConfig.cmake").is_file()
    assert (lib / "cmake" / "onyx" / "onyxConfigVersion.cmake").is_file()
    assert (lib / "pkgconfig" / "onyx.pc").is_file()
    # Nothing of the build tree leaks into the package.
    for exported in (lib / "cmake" / "onyx").glob("onyxTargets*.cmake"):
        text = exported.read_text()
        assert str(ROOT / "src") not in text and "ONYX_VERSION" not in text, exported


def test_cmake_consumer_builds_and_runs(prefix, tmp_path):
    binary = tmp_path / "consumer"
    cmake_build(ROOT / "tests" / "consumer", binary, prefix)
    # No LD_LIBRARY_PATH: the imported target's location is in the rpath.
    done = run([binary / "onyx_consumer", ROOT / "models" / "tiny_cnn.onnx"])
    np.testing.assert_array_equal(parse_outputs(done.stdout)["probabilities"], tiny_cnn_reference().ravel())


def test_pkg_config_c_program(prefix, tmp_path):
    if shutil.which("pkg-config") is None:
        pytest.skip("pkg-config is not installed: cannot check onyx.pc")
    env = dict(os.environ, PKG_CONFIG_PATH=str(library_dir(prefix) / "pkgconfig"))
    assert run(["pkg-config", "--modversion", "onyx"], env=env).stdout.strip() == onyx.__version__
    flags = run(["pkg-config", "--cflags", "--libs", "onyx"], env=env).stdout.split()
    source = tmp_path / "hello.c"
    source.write_text(
        """#include <stdio.h>
#include <onyx/onyx_c_api.h>
int main(void) {
  const OnyxApi* api = OnyxGetApi(ONYX_API_VERSION);
  if (api == NULL) return 1;
  OnyxSessionOptions* options = NULL;
  OnyxStatus* status = api->CreateSessionOptions(&options);
  if (status != NULL) return 1;
  api->ReleaseSessionOptions(options);
  printf("onyx %s\\n", OnyxGetApiBase()->GetVersionString());
  return 0;
}
"""
    )
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("no C compiler (cc, gcc, clang) is installed")
    run([compiler, "-std=c11", "-Wall", "-Werror", source, "-o", tmp_path / "hello", *flags])
    done = run([tmp_path / "hello"], env=dict(os.environ, LD_LIBRARY_PATH=str(library_dir(prefix))))
    assert done.stdout.strip() == f"onyx {onyx.__version__}"


def test_custom_op_library_builds_against_the_package(prefix, tmp_path):
    """examples/custom_op_library through find_package(onyx) alone (no
    ONYX_INCLUDE_DIR), and the library it makes runs in a model."""
    binary = tmp_path / "custom_op_library"
    cmake_build(EXAMPLE_LIBRARY, binary, prefix)
    cache = (binary / "CMakeCache.txt").read_text()
    assert f"onyx_DIR:PATH={library_dir(prefix) / 'cmake' / 'onyx'}" in cache
    library = binary / "libonyx_custom_ops_example.so"
    options = onyx.SessionOptions()
    options.register_custom_ops_library(str(library))
    session = onyx.InferenceSession(str(custom_op_model(tmp_path / "custom.onnx")), options)
    x = np.linspace(0.5, 3, 6, dtype=np.float32).reshape(2, 3)
    y, z = session.run(None, {"X": x})
    np.testing.assert_allclose(y, 2 * np.tanh(x), rtol=1e-6)
    np.testing.assert_array_equal(z, x)
