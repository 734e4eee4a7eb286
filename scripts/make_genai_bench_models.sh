#!/usr/bin/env bash
# The benchmark folders of bench/genai_bench.py: a ~0.5B Llama-style decoder
# (Qwen2.5-0.5B's shape: hidden 896, 24 layers, 14 heads over 2 KV heads,
# intermediate 4864, vocabulary 151936, tied embeddings) with random weights,
# exported by onyx's model builder at fp32 and int4. Nothing is downloaded.
#
#   scripts/make_genai_bench_models.sh [OUT]      # default OUT: bench/genai-models (ignored by git)
#
# Then: python bench/genai_bench.py OUT/qwen05-fp32 OUT/qwen05-int4
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/genai-models}
python=${PYTHON:-.venv/bin/python}
[ -x "$python" ] || python=python3
mkdir -p "$out/qwen05-config"
cat > "$out/qwen05-config/config.json" <<'JSON'
{"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": 151936, "hidden_size": 896,
 "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
 "max_position_embeddings": 32768, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "hidden_act": "silu",
 "initializer_range": 0.02, "tie_word_embeddings": true, "bos_token_id": 151643, "eos_token_id": 151645}
JSON
export PYTHONPATH="$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}"
for precision in fp32 int4; do
  [ -f "$out/qwen05-$precision/genai_config.json" ] && continue
  "$python" -m onyx.genai.builder -i "$out/qwen05-config" -o "$out/qwen05-$precision" -p "$precision" -e cpu
done
echo "benchmark folders: $out/qwen05-fp32 $out/qwen05-int4"
