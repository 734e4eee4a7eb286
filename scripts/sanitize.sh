#!/usr/bin/env bash
# Builds the core and the C++ tests with AddressSanitizer, LeakSanitizer and
# UndefinedBehaviorSanitizer (-DONYX_SANITIZE=ON, in build-asan, ccache on when
# installed) and runs onyx_tests under them. Exits non-zero on a failing test
# or on any sanitizer report (memory error, leak, undefined behaviour).
#
#   scripts/sanitize.sh                 # every test
#   scripts/sanitize.sh 'Session*:Limits*'   # a --gtest_filter
#
# ONYX_ASAN_BUILD_DIR overrides the build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${ONYX_ASAN_BUILD_DIR:-build-asan}
filter=${1:-*}
jobs=$(nproc)
# The project's virtual environment (scripts/setup.sh) has the onnx package
# that writes the custom-operator model below.
python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python

# -O2 keeps the suite fast; -g1 (line tables) is enough for symbolized stack
# traces at a fraction of full debug info's compile time. NDEBUG stays off so
# that asserts and the optimizer's verify-after-each-pass run too.
cmake -S . -B "$build" -G Ninja -DONYX_SANITIZE=ON -DONYX_PYTHON=OFF -DONYX_BUILD_TESTS=ON \
  -DCMAKE_BUILD_TYPE=Sanitize -DCMAKE_CXX_FLAGS_SANITIZE="-O2 -g1" -DCMAKE_C_FLAGS_SANITIZE="-O2 -g1" >/dev/null
cmake --build "$build" -j "$jobs" --target onyx_tests onyx_capi_test onyx_cli

log="$build/sanitize.log"
echo "== onyx_tests under ASan+LSan+UBSan (log: $log)"
status=0
# halt_on_error: the first report ends the run with a non-zero status;
# detect_leaks: LeakSanitizer reports at exit and then exits non-zero.
# The memory-growth tests measure resident memory, which ASan's quarantine of
# freed blocks (256 MB by default) would inflate: they run on their own with
# the quarantine off; everything else runs with it on, to catch use-after-free.
growth_test=Concurrency.CreatingAndDestroyingSessionsDoesNotGrowMemory:SessionMemory.ManyInputShapesKeepResidentMemoryFlat
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "$build/onyx_tests" --gtest_brief=1 --gtest_filter="$filter-$growth_test" 2>&1 | tee "$log" || status=$?
if [ "$status" -eq 0 ]; then
  ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:quarantine_size_mb=0 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/onyx_tests" --gtest_brief=1 --gtest_filter="$growth_test" 2>&1 | tee -a "$log" || status=$?
fi

# The C API from C, with the example custom-operator library (built here
# without sanitizers, as a user's library would be) and a model using it.
if [ "$status" -eq 0 ] && [ "$filter" = "*" ]; then
  echo "== onyx_capi_test under ASan+LSan+UBSan"
  cc -shared -fPIC -O2 -Iinclude examples/custom_op_library/custom_ops.c -o "$build/libonyx_custom_ops_example.so" -lm
  "$python" -c "import sys; sys.path.insert(0, 'tests/python'); from pathlib import Path; \
from bindings_util import custom_op_model; custom_op_model(Path('$build/custom_ops.onnx'), with_in_process_op=True)"
  ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/onyx_capi_test" models "$build/libonyx_custom_ops_example.so" "$build/custom_ops.onnx" 2>&1 |
    tee -a "$log" | tail -1 || status=$?
  grep -q "all C API checks passed" "$log" || status=1
fi

# A report that did not change the exit status (a sanitizer in recover mode,
# a report from a thread the test harness swallowed) still fails the run.
if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|: runtime error: |SUMMARY: UndefinedBehaviorSanitizer" "$log"; then
  echo "sanitize.sh: sanitizer report(s) in $log" >&2
  [ "$status" -ne 0 ] || status=1
fi
if [ "$status" -ne 0 ]; then
  echo "sanitize.sh: FAILED (exit $status)" >&2
else
  echo "sanitize.sh: clean"
fi
exit "$status"
