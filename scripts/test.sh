#!/usr/bin/env bash
# Builds onyx once (C++ library, command, tests and Python extension) and runs
# every test: GoogleTest, pytest, and the ONNX backend conformance suite
# against its expected-failures list.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${ONYX_BUILD_DIR:-build}
jobs=$(nproc)
# Let ccache share objects between checkouts in different folders (CI clones
# afresh each time): paths are hashed relative to the checkout.
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1
# The project's virtual environment (scripts/setup.sh makes it): python3,
# pytest and the onnx package the tests and `onyx conformance` call are its own.
if [ ! -x .venv/bin/python ]; then
  echo "scripts/test.sh: .venv is missing; run scripts/setup.sh first" >&2
  exit 1
fi
# shellcheck disable=SC1091
source .venv/bin/activate

echo "== include layering"
scripts/check_layers.sh

# CI (CI=true) turns compiler warnings into errors; a local run only prints them.
werror=OFF
[ "${CI:-}" = true ] && werror=ON
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DONYX_WERROR="$werror" \
  -DPython_EXECUTABLE="$root/.venv/bin/python" -DPython3_EXECUTABLE="$root/.venv/bin/python" >/dev/null
cmake --build "$build" -j "$jobs"

# onyx for the web (web/): both WebAssembly builds into web/dist/, which
# tests/python/test_web.py runs under Node.js and in headless Chromium.
if command -v emcmake >/dev/null; then
  echo "== onyx-web (WebAssembly)"
  scripts/build_web.sh
else
  echo "== onyx-web: emscripten is not installed (scripts/setup.sh installs it); its tests will skip"
fi

echo "== C++ tests"
"$build/onyx_tests" --gtest_brief=1
# Packed weights on transparent huge pages (opt-in, src/providers/cpu/huge_pages.h).
ONYX_HUGE_PAGES=1 "$build/onyx_tests" --gtest_brief=1 --gtest_filter='Sgemm*:*Int4*:*MatMul*'
# The vectorized activations (src/providers/cpu/math/fast_math.h) capped at
# each width the CPU may have; the plain run above took its best.
for isa in portable avx2; do
  ONYX_FAST_MATH_ISA=$isa "$build/onyx_tests" --gtest_brief=1 --gtest_filter='MathActivation*:MathUnary*:UnaryFastPaths*:*Softmax*:*Gelu*:OptimizerActivationFusion*:Rnn*:Gru*:Lstm*:Recurrent*'
done
# Every int8 GEMM path the CPU runs, forced in the integer ops too (src/providers/cpu/quant/int8_isa.h).
for isa in portable avx2 avx512vnni; do
  ONYX_INT8_ISA=$isa "$build/onyx_tests" --gtest_brief=1 \
    --gtest_filter='QGemmInt8*:QLinear*:ConvInteger*:*MatMulInteger*:Int4*'
  # test_qdq_fusion.py: where the forced kernel reads rows in place (portable,
  # avx512vnni), the quantized convolutions move to channels-last too.
  ONYX_INT8_ISA=$isa PYTHONPATH="$root/$build/python" python3 -m pytest -q tests/python/test_quant_contrib.py \
    tests/python/test_qdq_fusion.py
done

# The Vulkan provider's GEMMs both ways (src/providers/vulkan/vulkan_device.h:
# tiled for GPUs, flat for CPU drivers); the plain run above took the device's own.
for gemm in tiled flat; do
  ONYX_VULKAN_GEMM=$gemm "$build/onyx_tests" --gtest_brief=1 --gtest_filter='Vulkan*:*MatMul*:*Gemm*:Conv*'
done

echo "== C++ tests under AddressSanitizer and UndefinedBehaviorSanitizer"
scripts/sanitize.sh

echo "== Python tests"
PYTHONPATH="$root/$build/python" python3 -m pytest -q tests/python

asan=${ONYX_ASAN_BUILD_DIR:-build-asan}
if grep -q "server: onyx serve" <("$asan/onyx" version --verbose 2>/dev/null); then
  echo "== onyx serve under ASan+LSan+UBSan: malformed and fuzzed requests, a full queue, shutdown"
  # The server is the sanitizer build's (ONYX_BUILD_DIR names the program's
  # folder); a report aborts it, and a leak at exit makes its status nonzero,
  # which the shutdown test checks. (Outputs are compared bit for bit only
  # against the same build: the sanitizer build rounds a few sums differently.)
  ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ONYX_BUILD_DIR="$(realpath "$asan")" PYTHONPATH="$root/$build/python" python3 -m pytest -q tests/python/test_serve.py \
    -k "malformed or fuzz or size_limit or queue_bound or bad_config"
fi

echo "== Python tests through the simulated device (every session that names no providers)"
# The server's and Ray's tests are left out: their sessions live in other
# processes (onyx serve, Ray's workers), which --providers does not reach.
PYTHONPATH="$root/$build/python" python3 -m pytest -q tests/python \
  --providers TestCompilerExecutionProvider,TestDeviceExecutionProvider,CPUExecutionProvider \
  --ignore=tests/python/test_serve.py --ignore=tests/python/test_ray.py

echo "== docs/operators.md matches the kernel registry"
# The table part (everything before "## Conformance") is the command's output.
"$build/onyx" operators | diff -u <(sed '/^## Conformance/,$d' docs/operators.md) - || {
  echo "docs/operators.md is stale: regenerate it with '$build/onyx operators > docs/operators.md'"
  exit 1
}

echo "== ONNX backend conformance"
# The suite: $ONYX_BACKEND_DATA when set, else ../shared/onnx-backend-data beside
# the checkout, else the one the onnx package in .venv generates from its own
# case definitions (about 20 s, once per build folder and onnx version).
# The gate is the same: a failure not in expected_failures.txt fails, and so
# does a listed case that passes; a listed case the suite lacks is ignored.
# The generated suite adds tests/conformance/expected_failures_generated.txt:
# cases ../shared lacks, or whose generated expected values differ from its.
data=${ONYX_BACKEND_DATA:-$root/../shared/onnx-backend-data}
expected=tests/conformance/expected_failures.txt
if [ -z "${ONYX_BACKEND_DATA:-}" ] && [ ! -d "$data/node" ]; then
  echo "conformance: $data is absent; using the onnx package's cases, written to $build/onnx-backend-data"
  python scripts/make_backend_data.py "$build/onnx-backend-data"
  data=$build/onnx-backend-data
  # Plus the cases that fail only in the generated suite, each with its reason.
  expected=$build/expected_failures_generated.txt
  cat tests/conformance/expected_failures.txt tests/conformance/expected_failures_generated.txt >"$expected"
fi
"$build/onyx" conformance "$data" --expected "$expected" \
  --report "$build/conformance_report.txt" --jobs "$jobs"
if "$build/onyx" version --verbose | grep -q VulkanExecutionProvider; then
  echo "== ONNX backend conformance through the Vulkan provider (in CI: lavapipe, Mesa's software Vulkan)"
  # Every case the CPU passes must pass with Vulkan first: the same list.
  "$build/onyx" conformance "$data" --expected "$expected" \
    --providers VulkanExecutionProvider,CPUExecutionProvider \
    --report "$build/conformance_report_vulkan.txt" --jobs "$jobs"
else
  echo "== the Vulkan provider is not in this build or lists no device: its conformance pass is skipped"
fi
echo "== ONNX backend conformance through the simulated device (copies, events, fused groups)"
"$build/onyx" conformance "$data" --expected "$expected" \
  --providers TestCompilerExecutionProvider,TestDeviceExecutionProvider,CPUExecutionProvider \
  --report "$build/conformance_report_test_device.txt" --jobs "$jobs"
