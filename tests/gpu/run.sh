#!/usr/bin/env bash
# The GPU check, for a machine with an NVIDIA GPU (nothing is fetched from
# outside): builds onyx with the CUDA and Vulkan providers into build-gpu/,
# runs the ONNX backend node suite through each GPU provider (CPU after it),
# and times ResNet-50, BERT-base and a GPT-2 decode step against PyTorch
# eager on the same GPU (bench/gpu_bench.py, where torch is installed).
# Writes build-gpu/gpu-results/summary.md and prints it; the whole run stays
# under 8 minutes (each phase has its share). Without a GPU it says so and
# exits 0.
#
#     tests/gpu/run.sh                  # from the repository root
#     PYTHON=/path/to/python tests/gpu/run.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
deadline=$((start + 470))  # 7 min 50 s
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no NVIDIA GPU: nothing to measure"
  exit 0
fi
python=${PYTHON:-python3}
build=build-gpu
results=$build/gpu-results
mkdir -p "$results"
summary=$results/summary.md
left() { echo $((deadline - $(date +%s))); }
status=0

{
  echo "# onyx GPU check, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo
  echo "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)"
  echo
} >"$summary"

# Build: only what the checks run, on every core.
echo "== build ($build)"
if ! timeout "$(left)" cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DONYX_CUDA=ON -DONYX_VULKAN=AUTO \
  -DONYX_OPENVINO=OFF -DONYX_BUILD_TESTS=OFF -DONYX_JAVA=OFF -DONYX_CSHARP=OFF -DONYX_NODE=OFF \
  -DPython_EXECUTABLE="$(command -v "$python")" >"$results/configure.log" 2>&1; then
  echo "configure failed: see $results/configure.log" | tee -a "$summary"
  tail -20 "$results/configure.log"
  exit 1
fi
targets=(onyx_cli onyx_cuda)
ninja -C "$build" -t targets all 2>/dev/null | grep -q '^onyx_vulkan:' && targets+=(onyx_vulkan)
ninja -C "$build" -t targets all 2>/dev/null | grep -q '^_onyx:' && targets+=(_onyx onyx_python_files)
if ! timeout $(($(left) - 180)) cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >"$results/build.log" 2>&1; then
  echo "build failed or ran out of its time: see $results/build.log" | tee -a "$summary"
  tail -20 "$results/build.log"
  exit 1
fi
echo "Built ${targets[*]} in $(($(date +%s) - start)) s." >>"$summary"
echo >>"$summary"

# The backend node suite through each GPU provider this machine offers.
providers=$(ONYX_DEBUG_PROVIDERS=1 "$build/onyx" version --verbose 2>"$results/providers.log" | tr -d '\n')
for provider in CUDAExecutionProvider VulkanExecutionProvider; do
  echo "== conformance: $provider"
  log=$results/conformance-$provider.log
  if [ ! -d ../shared/onnx-backend-data ]; then
    echo "- $provider: ../shared/onnx-backend-data not found, suite not run" >>"$summary"
    continue
  fi
  timeout 100 "$build/onyx" conformance ../shared/onnx-backend-data --expected tests/conformance/expected_failures.txt \
    --jobs "$(nproc)" --providers "$provider,CPUExecutionProvider" >"$log" 2>&1
  rc=$?
  [ "$rc" -ne 0 ] && status=1
  echo "- $provider (exit $rc): $(tail -1 "$log")" >>"$summary"
done
echo >>"$summary"
echo "(providers: ${providers:-see $results/providers.log})" >>"$summary"
echo >>"$summary"

# Latency against PyTorch eager, in the time that is left.
echo "== bench/gpu_bench.py"
echo "## Latency (median ms; inputs and outputs on the GPU)" >>"$summary"
echo >>"$summary"
if [ -d "$build/python/onyx" ]; then
  timeout $(($(left) > 10 ? $(left) : 10)) "$python" bench/gpu_bench.py --onyx-path "$build/python" \
    --out "$results/bench.md" --cache "$build/gpu-models" --seconds 1.5 --deadline "$deadline" \
    >"$results/bench.log" 2>&1
  if [ -f "$results/bench.md" ]; then
    cat "$results/bench.md" >>"$summary"
  else
    echo "bench/gpu_bench.py wrote no table (timed out or failed): see $results/bench.log" >>"$summary"
  fi
else
  echo "the Python extension was not built (nanobind missing for $python): no latency table" >>"$summary"
fi
echo >>"$summary"
echo "Finished in $(($(date +%s) - start)) s." >>"$summary"
cat "$summary"
exit "$status"
