#!/usr/bin/env bash
# Gathers the seed corpus for the libFuzzer targets: every model in
# ../shared/models and the ONNX backend data, and the backend test-data tensors
# (.pb), each stored once under its SHA-1 as libFuzzer names its own finds.
#
#   tests/fuzz/make_corpus.sh [OUT_DIR]     (default: build-fuzz/corpus)
#
# OUT_DIR/models   .onnx files: seeds for fuzz_session and fuzz_model_reader
# OUT_DIR/tensors  .pb TensorProtos: extra seeds for fuzz_model_reader
# Set ONYX_SHARED to use another shared folder; ONYX_CORPUS_MAX_BYTES (default
# 4 MiB) skips bigger files, which cost more per run than they add in coverage.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/build-fuzz/corpus}
shared=${ONYX_SHARED:-$root/../shared}
max_bytes=${ONYX_CORPUS_MAX_BYTES:-4194304}

mkdir -p "$out/models" "$out/tensors"

# gather DIR FILE...: copies each FILE into DIR under its content hash
# (duplicates collapse), hashing in one batch rather than one process a file.
gather() {
  local dir=$1
  shift
  [ $# -gt 0 ] || return 0
  printf '%s\0' "$@" | xargs -0 -r stat -L -c '%s %n' |
    awk -v max="$max_bytes" '$1 > 0 && $1 <= max { sub(/^[0-9]+ /, ""); printf "%s%c", $0, 0 }' |
    xargs -0 -r sha1sum | while read -r hash file; do
      [ -e "$dir/$hash" ] || cp "$file" "$dir/$hash"
    done
}

shopt -s nullglob
gather "$out/models" "$root"/models/*.onnx "$shared"/models/*.onnx "$shared"/onnx-backend-data/*/*/model.onnx
gather "$out/tensors" "$shared"/onnx-backend-data/*/*/test_data_set_*/*.pb

echo "corpus: $(ls "$out/models" | wc -l) models in $out/models, $(ls "$out/tensors" | wc -l) tensors in $out/tensors"
