#!/usr/bin/env bash
# Installs what building and testing onyx needs on Debian 12: the compiler
# toolchain and GoogleTest from apt, and the Python packages from PyPI.
# Safe to run again: it installs only what is missing.
set -euo pipefail

need_apt=()
command -v cmake >/dev/null || need_apt+=(cmake)
command -v ninja >/dev/null || need_apt+=(ninja-build)
command -v g++ >/dev/null || need_apt+=(g++)
command -v ccache >/dev/null || need_apt+=(ccache)
command -v javac >/dev/null || need_apt+=(default-jdk-headless)  # the Java binding (java/)
[ -f /usr/include/gtest/gtest.h ] || need_apt+=(libgtest-dev)
command -v python3 >/dev/null || need_apt+=(python3 python3-dev python3-pip python3-venv)
# The Python extension needs Python.h; pip may be missing from a bare python3.
if command -v python3 >/dev/null; then
  python3 -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
    need_apt+=(python3-dev)
  python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
fi
# Image codecs for ImageDecoder (optional: without them onyx still builds, and
# the op reports the missing format). Headers may sit in a multiarch folder.
have_header() { compgen -G "/usr/include/$1" >/dev/null || compgen -G "/usr/include/*/$1" >/dev/null; }
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
have_header jpeglib.h || need_apt+=(libjpeg-dev)
have_header png.h || need_apt+=(libpng-dev)
have_header tiffio.h || need_apt+=(libtiff-dev)
have_header webp/decode.h || need_apt+=(libwebp-dev)
have_header "openjpeg-2.*/openjpeg.h" || need_apt+=(libopenjp2-7-dev)
# The Node.js binding (node/): node, and its N-API headers (node_api.h).
command -v node >/dev/null || need_apt+=(nodejs); [ -f /usr/include/node/node_api.h ] || need_apt+=(libnode-dev)
# The C# binding (csharp/): Mono's compiler and runtime.
{ command -v mcs >/dev/null && command -v mono >/dev/null; } || need_apt+=(mono-mcs mono-runtime)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

# openvino: the wheel the OpenVINO provider builds against (headers, libraries, CMake config).
python_packages=(numpy onnx onnxruntime nanobind scikit-build-core pytest scikit-learn skl2onnx openvino)
missing=()
for p in "${python_packages[@]}"; do
  module=${p//-/_}
  [ "$module" = scikit_learn ] && module=sklearn
  python3 -c "import $module" 2>/dev/null || missing+=("$p")
done
# Debian's own python3 refuses system-wide pip installs (PEP 668). On such a
# python, let pip install for this user's development machine, so that the
# README's `pip install .` works too; a pyenv or venv python needs nothing.
if python3 -c 'import sys, sysconfig, os; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["stdlib"], "EXTERNALLY-MANAGED")))' 2>/dev/null &&
   [ -z "${VIRTUAL_ENV:-}" ]; then
  python3 -m pip config --user set global.break-system-packages true >/dev/null
fi
if [ ${#missing[@]} -gt 0 ]; then
  python3 -m pip install -q "${missing[@]}"
fi
echo "onyx setup: build tools and Python packages are in place"
