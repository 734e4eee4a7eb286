#!/usr/bin/env bash
# Builds onyx for the web (web/CMakeLists.txt) with Emscripten, both builds,
# and assembles the npm package `onyx-web` in web/dist/:
#
#   web/dist/onyx.js, onyx.d.ts, package.json    the API (web/js/)
#   web/dist/wasm/onyx-simd-threaded.{js,wasm,worker.js}   SIMD128 + pthreads
#   web/dist/wasm/onyx-plain.{js,wasm}                     neither (the fallback)
#
# Usage: scripts/build_web.sh [--variant simd-threaded|plain]...
# Needs Debian's emscripten, node-acorn, clang-19, lld-19 and llvm-19
# (scripts/setup.sh installs them).
# Build folders: build-web-simd/ and build-web-plain/; objects are shared
# through ccache like the native build's.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=1

variants=()
while [ $# -gt 0 ]; do
  case "$1" in
    --variant) variants+=("$2"); shift 2 ;;
    *) echo "scripts/build_web.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ ${#variants[@]} -eq 0 ] && variants=(simd-threaded plain)

if ! command -v emcmake >/dev/null; then
  echo "scripts/build_web.sh: emcmake not found: apt-get install emscripten node-acorn (scripts/setup.sh does)" >&2
  exit 1
fi
# Emscripten's JavaScript optimizer requires acorn, which Debian installs in
# /usr/share/nodejs; a node from elsewhere (nodesource) does not look there.
export NODE_PATH="/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}"
# Debian's Emscripten (3.1.6) with clang-19 as its compiler instead of its own
# clang 14: clang 14 writes WebAssembly exceptions' landing-pad context to a
# plain global, while the threaded libunwind it links reads a thread-local
# one, so with threads every typed `catch` missed (docs/web.md). Emscripten
# calls its tools by Debian's clang-14 names: a folder of links gives them.
llvm=/usr/lib/llvm-19/bin
if [ ! -x "$llvm/clang++" ] || [ ! -x "$llvm/wasm-ld" ] || [ ! -x "$llvm/llvm-ar" ]; then
  echo "scripts/build_web.sh: clang-19, lld-19 and llvm-19 are needed (scripts/setup.sh installs them)" >&2
  exit 1
fi
tools="$root/build-web-llvm"
mkdir -p "$tools"
for tool in "$llvm"/*; do
  name=$(basename "$tool")
  ln -sfn "$tool" "$tools/$name"
  ln -sfn "$tool" "$tools/$name-14"
done
export EM_LLVM_ROOT="$tools"

# CI fails on a compiler warning here too, but not through -Werror: the flags
# stay the same in and out of CI, so CI's clean clone reuses a local build's
# objects from ccache (which replays their warnings), instead of compiling
# both builds afresh.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for variant in "${variants[@]}"; do
  case "$variant" in
    simd-threaded) dir=build-web-simd ;;
    plain) dir=build-web-plain ;;
    *) echo "scripts/build_web.sh: --variant is simd-threaded or plain" >&2; exit 2 ;;
  esac
  echo "== onyx-web: $variant ($dir)"
  emcmake cmake -S web -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DONYX_WEB_VARIANT="$variant" >/dev/null
  cmake --build "$dir" -j "$(nproc)" 2>&1 | tee -a "$log"
done
if [ "${CI:-}" = true ] && grep -q 'warning:' "$log"; then
  echo "scripts/build_web.sh: compiler warnings (CI treats them as errors):" >&2
  grep 'warning:' "$log" | sort -u >&2
  exit 1
fi

dist=web/dist
mkdir -p "$dist/wasm"
cp web/js/onyx.js web/js/onyx.d.ts web/package.json "$dist/"
# The Emscripten scripts are CommonJS-style classic scripts: their folder
# says so to Node, since the package itself is an ES module.
echo '{ "type": "commonjs" }' > "$dist/wasm/package.json"
for dir in build-web-simd build-web-plain; do
  [ -d "$dir" ] || continue
  for f in "$dir"/onyx-*.js "$dir"/onyx-*.wasm; do
    [ -e "$f" ] && cp "$f" "$dist/wasm/"
  done
done
ls -l "$dist/wasm" | awk 'NR > 1 { printf "  %-32s %10d bytes\n", $9, $5 }'
echo "onyx-web: $root/$dist"
