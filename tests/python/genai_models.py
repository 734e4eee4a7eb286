"""Tiny decoder model folders for the genai tests, made by onyx's model builder
from a config.json alone (seeded random weights, a tokenizer trained on the
builder's built-in corpus): no torch, no transformers, no download.

    from genai_models import build_tiny_model, decode_loop
    folder = build_tiny_model(tmp_path, "qwen2", "int4")       # model.onnx, genai_config.json, tokenizer.json
    tokens, logits = decode_loop(onnxruntime.InferenceSession(folder + "/model.onnx"), folder, [1, 5, 9], 8)

initializer_range 0.5 (not transformers' 0.02) makes the random logits far
apart, so greedy decoding does not hinge on near ties.
"""

from __future__ import annotations

import json
import os

import numpy as np

from onyx.genai import builder

ARCHS = ("gpt2", "llama", "qwen2", "mistral")


def tiny_config(arch: str, **overrides) -> dict:
    """config.json of a 2-layer, hidden-64 model of the given family (vocab 512)."""
    if arch == "gpt2":
        cfg = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 512, "n_embd": 64,
               "n_layer": 2, "n_head": 4, "n_positions": 256, "activation_function": "gelu_new",
               "layer_norm_epsilon": 1e-5, "initializer_range": 0.5, "tie_word_embeddings": True,
               "bos_token_id": 1, "eos_token_id": 2}
    else:
        arch_name = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "mistral": "MistralForCausalLM"}[arch]
        cfg = {"architectures": [arch_name], "model_type": arch, "vocab_size": 512, "hidden_size": 64,
               "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
               "num_key_value_heads": 2, "max_position_embeddings": 256, "rms_norm_eps": 1e-6,
               "rope_theta": 10000.0, "hidden_act": "silu", "initializer_range": 0.5,
               "tie_word_embeddings": arch == "qwen2", "bos_token_id": 1, "eos_token_id": 2}
    cfg.update(overrides)
    return cfg


def write_config(folder: str, cfg: dict) -> str:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)
    return folder


def build_tiny_model(tmp_path, arch: str = "qwen2", precision: str = "fp32", extra_options: dict | None = None,
                     **config_overrides) -> str:
    """Builds a tiny random model folder under tmp_path and returns its path."""
    tag = f"{arch}-{precision}" + "".join(f"-{k}{v}" for k, v in sorted((extra_options or {}).items()))
    source = write_config(os.path.join(str(tmp_path), "config-" + tag), tiny_config(arch, **config_overrides))
    out = os.path.join(str(tmp_path), "model-" + tag)
    builder.build(source, out, precision, extra_options=extra_options, log=lambda msg: None)
    return out


def decoder_info(folder: str) -> dict:
    with open(os.path.join(folder, "genai_config.json"), encoding="utf-8") as f:
        return json.load(f)["model"]["decoder"]


def empty_past(session, folder: str, batch: int = 1) -> dict:
    """Zero-length past_key_values.* feeds of the session's KV type."""
    info = decoder_info(folder)
    feeds = {}
    for inp in session.get_inputs():
        if inp.name.startswith("past_key_values."):
            dtype = np.float16 if inp.type == "tensor(float16)" else np.float32
            feeds[inp.name] = np.zeros((batch, info["num_key_value_heads"], 0, info["head_size"]), dtype)
    return feeds


def decode_loop(session, folder: str, prompt: list[int], steps: int, forced: list[int] | None = None):
    """Greedy decoding with the cache fed back (present.N -> past_key_values.N), in any session with
    onnxruntime's API. `forced` feeds those tokens instead of the argmax (to compare two sessions on
    one token path). Returns (new tokens, list of last-position logits per step)."""
    names = [o.name for o in session.get_outputs()]
    ids = np.array([prompt], np.int64)
    mask = np.ones_like(ids)
    feeds = {"input_ids": ids, "attention_mask": mask, **empty_past(session, folder)}
    tokens, logits = [], []
    for step in range(steps):
        out = dict(zip(names, session.run(None, feeds)))
        last = out["logits"][0, -1].astype(np.float32)
        logits.append(last)
        token = int(last.argmax()) if forced is None else int(forced[step])
        tokens.append(token)
        mask = np.ones((1, mask.shape[1] + 1), np.int64)
        feeds = {"input_ids": np.array([[token]], np.int64), "attention_mask": mask}
        for name in names:
            if name.startswith("present."):
                feeds["past_key_values." + name[len("present."):]] = out[name]
    return tokens, logits
