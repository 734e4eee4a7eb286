#!/usr/bin/env bash
# Installs what building and testing onyx needs on Debian 12: the compiler
# toolchain and GoogleTest from apt (the one system-wide step, through sudo
# when not root), and the Python packages into the project's own virtual
# environment, .venv/ in the checkout. It never runs pip against the system or
# user site-packages and never changes pip's configuration.
# Safe to run again: it installs only what is missing, so a second run takes
# a couple of seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.venv

need_apt=()
command -v cmake >/dev/null || need_apt+=(cmake)
command -v ninja >/dev/null || need_apt+=(ninja-build)
command -v g++ >/dev/null || need_apt+=(g++)
command -v ccache >/dev/null || need_apt+=(ccache)
command -v javac >/dev/null || need_apt+=(default-jdk-headless)  # the Java binding (java/)
[ -f /usr/include/gtest/gtest.h ] || need_apt+=(libgtest-dev)
command -v python3 >/dev/null || need_apt+=(python3 python3-dev python3-venv)
if command -v python3 >/dev/null; then
  # The Python extension needs Python.h.
  python3 -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
    need_apt+=(python3-dev)
  # Debian splits the venv module's pip bootstrap (ensurepip) into python3-venv.
  [ -x "$venv/bin/python" ] || python3 -c 'import venv, ensurepip' 2>/dev/null || need_apt+=(python3-venv)
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
# `onyx serve` (serving/): cpp-httplib and nlohmann-json.
[ -f /usr/include/httplib.h ] || need_apt+=(libcpp-httplib-dev)
[ -f /usr/include/nlohmann/json.hpp ] || need_apt+=(nlohmann-json3-dev)
# Data-parallel training (onyx.training.distributed): OpenMPI's mpirun, and
# its headers and mpicc for building mpi4py.
command -v mpirun >/dev/null || need_apt+=(openmpi-bin)
command -v mpicc >/dev/null || need_apt+=(libopenmpi-dev)
# The Vulkan provider (src/providers/vulkan/): the loader's headers, the GLSL
# compiler its shaders are built with, and Mesa's software Vulkan driver
# (lavapipe), which runs them on the CPU where no GPU is.
[ -f /usr/include/vulkan/vulkan.h ] || need_apt+=(libvulkan-dev)
command -v glslangValidator >/dev/null || need_apt+=(glslang-tools)
compgen -G "/usr/share/vulkan/icd.d/lvp_icd*.json" >/dev/null || need_apt+=(mesa-vulkan-drivers)
# onyx for the web (web/, scripts/build_web.sh): Emscripten, and acorn for its
# JavaScript optimizer; headless Chromium and its WebDriver for the browser
# tests (tests/python/test_web.py).
command -v emcc >/dev/null || need_apt+=(emscripten)
[ -d /usr/share/nodejs/acorn ] || need_apt+=(node-acorn)
# Emscripten compiles with clang-19 (scripts/build_web.sh says why).
[ -x /usr/lib/llvm-19/bin/clang++ ] || need_apt+=(clang-19)
[ -x /usr/lib/llvm-19/bin/wasm-ld ] || need_apt+=(lld-19)
[ -x /usr/lib/llvm-19/bin/llvm-ar ] || need_apt+=(llvm-19)
command -v tsc >/dev/null || need_apt+=(node-typescript)  # checks web/js/onyx.d.ts
command -v chromium >/dev/null || need_apt+=(chromium)
command -v chromedriver >/dev/null || need_apt+=(chromium-driver)
# The C# binding (csharp/): Mono's compiler and runtime.
{ command -v mcs >/dev/null && command -v mono >/dev/null; } || need_apt+=(mono-mcs mono-runtime)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "onyx setup: apt-get install ${need_apt[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}"
fi

# The project's virtual environment. It does not see the system's
# site-packages, so what the tests import is exactly what is installed here.
# A venv whose python no longer runs (its base interpreter was removed) is
# made again.
if ! "$venv/bin/python" -c '' 2>/dev/null; then
  echo "onyx setup: creating the virtual environment $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
fi

# Distribution names as pip knows them. nanobind and scikit-build-core build
# the extension (`pip install --no-build-isolation .` uses these); openvino is
# the wheel the OpenVINO provider builds against (headers, libraries, CMake
# config); onnx also generates the backend conformance suite when
# ../shared/onnx-backend-data is absent (scripts/make_backend_data.py).
# tritonclient is the HTTP client the server's tests use; ray (with its data
# and serve extras) runs onyx.ray's tests on a local cluster. mpi4py carries
# gradients between the processes of data-parallel training. onnx-ir is what
# onnxruntime's MatMulNBitsQuantizer needs (the interop tests of
# onyx.quantization run it). tokenizers is onyx.genai's Python tokenizer,
# safetensors how its model builder reads Hugging Face weights, and
# onnxruntime-genai the reference its tests and benchmark compare against.
# selenium drives headless Chromium in the browser tests of onyx-web.
python_packages=(numpy onnx onnxruntime nanobind scikit-build-core pytest scikit-learn skl2onnx openvino tritonclient ray
  mpi4py onnx-ir tokenizers safetensors onnxruntime-genai selenium)
# What pip installs for a name above, where it needs extras.
declare -A install_as=([tritonclient]="tritonclient[http]" [ray]="ray[data,serve]")
mapfile -t missing < <("$venv/bin/python" - "${python_packages[@]}" <<'EOF'
import importlib.metadata, sys
for name in sys.argv[1:]:
    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        print(name)
EOF
)
if [ ${#missing[@]} -gt 0 ]; then
  to_install=()
  for name in "${missing[@]}"; do to_install+=("${install_as[$name]:-$name}"); done
  echo "onyx setup: installing into $venv: ${to_install[*]}"
  "$venv/bin/python" -m pip install --disable-pip-version-check -q "${to_install[@]}"
fi
# PyTorch and transformers are only references (the training benchmark
# bench/train_step.py, transformers' generate() for onyx.genai's tests) and
# large: installed with --with-torch (with onnxscript, which the dynamo
# exporter of bench/zoo/make_zoo.py needs).
if [[ " $* " == *" --with-torch "* ]] && ! "$venv/bin/python" -c 'import torch, torchvision, transformers, onnxscript' 2>/dev/null; then
  echo "onyx setup: installing torch and transformers into $venv (references for training and generation)"
  "$venv/bin/python" -m pip install --disable-pip-version-check -q torch torchvision transformers onnxscript
fi
echo "onyx setup: build tools are in place; Python packages are in $venv (source $venv/bin/activate, or call $venv/bin/python)"
