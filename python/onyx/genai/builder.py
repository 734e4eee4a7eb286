"""Model builder: exports a Hugging Face decoder (GPT-2, Llama, Qwen2, Mistral)
to the folder layout onnxruntime-genai's model builder writes (model.onnx with
GroupQueryAttention and a KV cache, genai_config.json, tokenizer files), from
config.json and *.safetensors alone: no torch, no transformers, no download.

    python -m onyx.genai.builder -i FOLDER -o OUT -p int4 -e cpu
    python -m onyx.genai.builder -i CONFIG_ONLY_FOLDER -o OUT -p fp32   # random weights

See docs/genai.md, section "Model builder".
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import struct
import sys
import time
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import TensorProto, helper

PRECISIONS = ("fp32", "fp16", "int4")
EXECUTION_PROVIDERS = ("cpu",)
ARCHITECTURES = {
    "GPT2LMHeadModel": "gpt2",
    "LlamaForCausalLM": "llama",
    "Qwen2ForCausalLM": "qwen2",
    "MistralForCausalLM": "mistral",
}
# The files onnxruntime-genai's tokenizer (and transformers') read beside the model.
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.json", "merges.txt", "tokenizer.model", "chat_template.jinja")
EXTRA_OPTIONS = {
    "int4_block_size": "block size of the 4-bit quantization along K (16, 32, 64, 128 or 256; default 32)",
    "int4_accuracy_level": "MatMulNBits accuracy_level (0-4; default 4: int8 activations)",
    "int4_is_symmetric": "true (default): signed 4-bit codes, no zero points; false: uint4 with zero points",
    "is_symmetric": "same as int4_is_symmetric (onnxruntime-genai's name)",
    "exclude_embeds": "true: no embedding layer; the model takes inputs_embeds instead of input_ids",
    "exclude_lm_head": "true: no language-model head; the model outputs hidden_states instead of logits",
    "random_weights": "true: ignore any *.safetensors and use seeded random weights (onyx's own option)",
    "seed": "seed of the random weights (default 0)",
}


class BuilderError(Exception):
    """A user error: printed as one line, exit status 2."""


# ---------------------------------------------------------------------------
# Configuration


@dataclass
class DecoderConfig:
    """What the graph needs from config.json, under one set of names for every architecture."""

    architecture: str
    model_type: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_size: int
    intermediate_size: int
    context_length: int
    norm_epsilon: float
    initializer_range: float
    tie_word_embeddings: bool
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    rope_theta: float = 10000.0
    rotary_dim: int = 0
    rope_scaling: dict | None = None
    bos_token_id: int | list | None = None
    eos_token_id: int | list | None = None
    pad_token_id: int | None = None
    raw: dict = field(default_factory=dict)


def _require(raw: dict, key: str, path: str):
    if key not in raw or raw[key] is None:
        raise BuilderError(f"{path}: key '{key}' is missing")
    return raw[key]


def read_config(folder: str) -> DecoderConfig:
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path):
        raise BuilderError(f"{folder}: no config.json (expected a folder as transformers' save_pretrained writes)")
    try:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
    except (OSError, ValueError) as e:
        raise BuilderError(f"{path}: cannot read JSON: {e}") from None
    if not isinstance(raw, dict):
        raise BuilderError(f"{path}: expected a JSON object")
    archs = raw.get("architectures") or []
    arch = next((a for a in archs if a in ARCHITECTURES), None)
    if arch is None:
        raise BuilderError(f"{path}: architecture {archs or raw.get('model_type')} is not supported; "
                           f"supported: {', '.join(ARCHITECTURES)}")
    if arch == "GPT2LMHeadModel":
        hidden = int(_require(raw, "n_embd", path))
        heads = int(_require(raw, "n_head", path))
        act = raw.get("activation_function", "gelu_new")
        if act not in ("gelu_new", "gelu_pytorch_tanh"):
            raise BuilderError(f"{path}: GPT-2 activation_function '{act}' is not supported (expected gelu_new)")
        if raw.get("scale_attn_by_inverse_layer_idx") or raw.get("reorder_and_upcast_attn"):
            raise BuilderError(f"{path}: scale_attn_by_inverse_layer_idx / reorder_and_upcast_attn are not supported")
        cfg = DecoderConfig(
            architecture=arch, model_type="gpt2", vocab_size=int(_require(raw, "vocab_size", path)),
            hidden_size=hidden, num_layers=int(_require(raw, "n_layer", path)), num_heads=heads, num_kv_heads=heads,
            head_size=hidden // heads, intermediate_size=int(raw.get("n_inner") or 4 * hidden),
            context_length=int(raw.get("n_positions") or raw.get("n_ctx") or 1024),
            norm_epsilon=float(raw.get("layer_norm_epsilon", 1e-5)),
            initializer_range=float(raw.get("initializer_range", 0.02)),
            tie_word_embeddings=bool(raw.get("tie_word_embeddings", True)), qkv_bias=True, o_bias=True,
            mlp_bias=True, raw=raw)
    else:
        hidden = int(_require(raw, "hidden_size", path))
        heads = int(_require(raw, "num_attention_heads", path))
        head_size = int(raw.get("head_dim") or hidden // heads)
        act = raw.get("hidden_act", "silu")
        if act != "silu":
            raise BuilderError(f"{path}: hidden_act '{act}' is not supported (expected silu)")
        rope = dict(raw.get("rope_parameters") or {})  # transformers 5 keeps rope_theta here
        scaling = raw.get("rope_scaling") or None
        if scaling is None and rope.get("rope_type", "default") != "default":
            scaling = rope
        if scaling is not None and scaling.get("rope_type", scaling.get("type", "default")) not in ("default", "llama3"):
            raise BuilderError(f"{path}: rope_scaling {scaling.get('rope_type', scaling.get('type'))} is not "
                               "supported (default and llama3 are)")
        if scaling is not None and scaling.get("rope_type", scaling.get("type")) == "default":
            scaling = None
        theta = float(raw.get("rope_theta") or rope.get("rope_theta") or 10000.0)
        partial = float(raw.get("partial_rotary_factor") or rope.get("partial_rotary_factor") or 1.0)
        model_type = ARCHITECTURES[arch]
        cfg = DecoderConfig(
            architecture=arch, model_type=model_type, vocab_size=int(_require(raw, "vocab_size", path)),
            hidden_size=hidden, num_layers=int(_require(raw, "num_hidden_layers", path)), num_heads=heads,
            num_kv_heads=int(raw.get("num_key_value_heads") or heads), head_size=head_size,
            intermediate_size=int(_require(raw, "intermediate_size", path)),
            context_length=int(raw.get("max_position_embeddings") or 4096),
            norm_epsilon=float(raw.get("rms_norm_eps", 1e-6)),
            initializer_range=float(raw.get("initializer_range", 0.02)),
            tie_word_embeddings=bool(raw.get("tie_word_embeddings", False)),
            qkv_bias=model_type == "qwen2" or bool(raw.get("attention_bias", False)),
            o_bias=model_type != "qwen2" and bool(raw.get("attention_bias", False)),
            mlp_bias=bool(raw.get("mlp_bias", False)), rope_theta=theta,
            rotary_dim=int(head_size * partial) // 2 * 2, rope_scaling=scaling, raw=raw)
        if raw.get("use_sliding_window") and raw.get("sliding_window"):
            print(f"onyx.genai.builder: warning: sliding_window {raw['sliding_window']} is ignored "
                  "(full attention over the context)", file=sys.stderr)
    for name in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads", "head_size",
                 "intermediate_size", "context_length"):
        if getattr(cfg, name) <= 0:
            raise BuilderError(f"{path}: {name} is {getattr(cfg, name)}, expected a positive number")
    if cfg.num_heads % cfg.num_kv_heads != 0:
        raise BuilderError(f"{path}: num_attention_heads {cfg.num_heads} is not a multiple of "
                           f"num_key_value_heads {cfg.num_kv_heads}")
    cfg.bos_token_id = raw.get("bos_token_id")
    cfg.eos_token_id = raw.get("eos_token_id")
    cfg.pad_token_id = raw.get("pad_token_id")
    return cfg


# ---------------------------------------------------------------------------
# Weights


def _read_safetensors(path: str) -> dict[str, np.ndarray]:
    """All tensors of one file as numpy arrays; bfloat16 (which numpy lacks) is widened to float32."""
    from safetensors.numpy import load_file

    try:
        return load_file(path)
    except (TypeError, ValueError, RuntimeError):
        pass  # bfloat16 and other types safetensors.numpy cannot give: read the file's own layout
    with open(path, "rb") as f:
        (header_len,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(header_len))
        base = 8 + header_len
        out = {}
        types = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32,
                 "U8": np.uint8, "I8": np.int8, "BOOL": np.bool_}
        for name, info in header.items():
            if name == "__metadata__":
                continue
            start, end = info["data_offsets"]
            f.seek(base + start)
            data = f.read(end - start)
            if info["dtype"] == "BF16":
                bits = np.frombuffer(data, dtype=np.uint16).astype(np.uint32) << 16
                out[name] = bits.view(np.float32).reshape(info["shape"])
            elif info["dtype"] in types:
                out[name] = np.frombuffer(data, dtype=types[info["dtype"]]).reshape(info["shape"])
            else:
                raise BuilderError(f"{path}: tensor {name} has type {info['dtype']}, which is not supported")
    return out


def load_weights(folder: str) -> dict[str, np.ndarray] | None:
    files = sorted(f for f in os.listdir(folder) if f.endswith(".safetensors"))
    if not files:
        return None
    weights: dict[str, np.ndarray] = {}
    for name in files:
        weights.update(_read_safetensors(os.path.join(folder, name)))
    return weights


def random_weights(cfg: DecoderConfig, seed: int) -> dict[str, np.ndarray]:
    """Seeded normal weights with std initializer_range, norms 1 and biases 0 (as transformers initialises)."""
    rng = np.random.default_rng(seed)
    std = cfg.initializer_range

    def normal(*shape):
        return rng.standard_normal(shape, dtype=np.float32) * np.float32(std)

    h, i, d = cfg.hidden_size, cfg.intermediate_size, cfg.head_size
    w: dict[str, np.ndarray] = {}
    if cfg.model_type == "gpt2":
        w["transformer.wte.weight"] = normal(cfg.vocab_size, h)
        w["transformer.wpe.weight"] = normal(cfg.context_length, h)
        for layer in range(cfg.num_layers):
            p = f"transformer.h.{layer}."
            for ln in ("ln_1", "ln_2"):
                w[p + ln + ".weight"] = np.ones(h, np.float32)
                w[p + ln + ".bias"] = np.zeros(h, np.float32)
            for name, shape in (("attn.c_attn", (h, 3 * h)), ("attn.c_proj", (h, h)), ("mlp.c_fc", (h, i)),
                                ("mlp.c_proj", (i, h))):
                w[p + name + ".weight"] = normal(*shape)
                w[p + name + ".bias"] = np.zeros(shape[1], np.float32)
        w["transformer.ln_f.weight"] = np.ones(h, np.float32)
        w["transformer.ln_f.bias"] = np.zeros(h, np.float32)
        if not cfg.tie_word_embeddings:
            w["lm_head.weight"] = normal(cfg.vocab_size, h)
        return w
    q, kv = cfg.num_heads * d, cfg.num_kv_heads * d
    w["model.embed_tokens.weight"] = normal(cfg.vocab_size, h)
    for layer in range(cfg.num_layers):
        p = f"model.layers.{layer}."
        w[p + "input_layernorm.weight"] = np.ones(h, np.float32)
        w[p + "post_attention_layernorm.weight"] = np.ones(h, np.float32)
        for name, (out_dim, in_dim, bias) in {
                "self_attn.q_proj": (q, h, cfg.qkv_bias), "self_attn.k_proj": (kv, h, cfg.qkv_bias),
                "self_attn.v_proj": (kv, h, cfg.qkv_bias), "self_attn.o_proj": (h, q, cfg.o_bias),
                "mlp.gate_proj": (i, h, cfg.mlp_bias), "mlp.up_proj": (i, h, cfg.mlp_bias),
                "mlp.down_proj": (h, i, cfg.mlp_bias)}.items():
            w[p + name + ".weight"] = normal(out_dim, in_dim)
            if bias:
                w[p + name + ".bias"] = np.zeros(out_dim, np.float32)
    w["model.norm.weight"] = np.ones(h, np.float32)
    if not cfg.tie_word_embeddings:
        w["lm_head.weight"] = normal(cfg.vocab_size, h)
    return w


class Weights:
    """Named checkpoint tensors as float32, with a clear error for a missing or misshapen one."""

    def __init__(self, tensors: dict[str, np.ndarray], source: str):
        self.tensors = tensors
        self.source = source
        # GPT-2 checkpoints come with and without the "transformer." prefix.
        if any(k.startswith("h.") or k.startswith("wte.") for k in tensors):
            self.tensors = {("transformer." + k if not k.startswith("lm_head") else k): v for k, v in tensors.items()}

    def has(self, name: str) -> bool:
        return name in self.tensors

    def get(self, name: str, shape: tuple) -> np.ndarray:
        if name not in self.tensors:
            raise BuilderError(f"{self.source}: weight '{name}' is missing")
        t = self.tensors[name]
        if tuple(t.shape) != tuple(shape):
            raise BuilderError(f"{self.source}: weight '{name}' has shape {list(t.shape)}, expected {list(shape)}")
        return np.asarray(t, dtype=np.float32)


# ---------------------------------------------------------------------------
# Graph


class GraphWriter:
    """Nodes and initializers of the model; initializer bytes go straight to model.onnx.data."""

    def __init__(self, data_path: str, float_type: int):
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.data_path = data_path
        self.data_file = open(data_path, "wb")
        self.offset = 0
        self.float_type = float_type
        self.np_float = np.float16 if float_type == TensorProto.FLOAT16 else np.float32
        self.constants: dict = {}

    def close(self):
        self.data_file.close()

    def initializer(self, name: str, array: np.ndarray) -> str:
        array = np.ascontiguousarray(array)
        tensor = onnx.TensorProto()
        tensor.name = name
        tensor.data_type = helper.np_dtype_to_tensor_dtype(array.dtype)
        tensor.dims.extend(array.shape)
        if array.nbytes < 1024:
            tensor.raw_data = array.tobytes()
        else:
            # Page-aligned so that a runtime may map each large tensor in place.
            pad = (-self.offset) % (4096 if array.nbytes >= (1 << 20) else 64)
            self.data_file.write(b"\0" * pad)
            self.offset += pad
            self.data_file.write(memoryview(array).cast("B"))
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (("location", os.path.basename(self.data_path)), ("offset", str(self.offset)),
                               ("length", str(array.nbytes))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            self.offset += array.nbytes
        self.initializers.append(tensor)
        return name

    def float_weight(self, name: str, array: np.ndarray) -> str:
        return self.initializer(name, array.astype(self.np_float))

    def int64_constant(self, values: list[int]) -> str:
        key = ("i64", tuple(values))
        if key not in self.constants:
            name = f"/model/constants/INT64/{list(values)}"
            self.constants[key] = self.initializer(name, np.array(values, dtype=np.int64))
        return self.constants[key]

    def node(self, op: str, inputs: list[str], outputs: list[str] | str | int, name: str, domain: str = "",
             **attrs) -> list[str]:
        if isinstance(outputs, int):
            outputs = [f"{name}/output_{k}" for k in range(outputs)]
        elif isinstance(outputs, str):
            outputs = [outputs]
        self.nodes.append(helper.make_node(op, inputs, outputs, name=name, domain=domain or None, **attrs))
        return outputs


@dataclass
class BuildOptions:
    precision: str = "fp32"
    block_size: int = 32
    accuracy_level: int = 4
    symmetric: bool = True
    exclude_embeds: bool = False
    exclude_lm_head: bool = False


def _rotary_caches(cfg: DecoderConfig) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin [context_length, rotary_dim / 2] of HF's (non-interleaved) rotary embedding."""
    dim = cfg.rotary_dim
    inv_freq = 1.0 / (cfg.rope_theta ** (np.arange(0, dim, 2, dtype=np.float64) / dim))
    s = cfg.rope_scaling
    if s is not None:  # llama3: long wavelengths slowed down by factor, a smooth ramp between
        factor = float(s.get("factor", 8.0))
        low, high = float(s.get("low_freq_factor", 1.0)), float(s.get("high_freq_factor", 4.0))
        old_context = float(s.get("original_max_position_embeddings", 8192))
        wavelength = 2 * math.pi / inv_freq
        smooth = (old_context / wavelength - low) / (high - low)
        scaled = np.where(wavelength > old_context / low, inv_freq / factor, inv_freq)
        middle = (wavelength <= old_context / low) & (wavelength >= old_context / high)
        inv_freq = np.where(middle, (1 - smooth) * inv_freq / factor + smooth * inv_freq, scaled)
    angles = np.outer(np.arange(cfg.context_length, dtype=np.float64), inv_freq)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def _int4_weight(g: GraphWriter, opts: BuildOptions, name: str, w_kn: np.ndarray) -> list[str]:
    """w_kn [K, N] as MatMulNBits' initializers: codes [N, blocks, block/2], scales [N, blocks] and,
    when asymmetric, packed zero points [N, ceil(blocks / 2)]."""
    from onyx.quantization.matmul_nbits_quantizer import pack, quantize_rtn

    n = w_kn.shape[1]
    codes, scales, zeros = quantize_rtn(w_kn, opts.block_size, opts.symmetric)
    b, scales, zp = pack(codes, scales, zeros, opts.symmetric)
    base = name.strip("/").replace("/", ".")
    names = [g.initializer(base + ".weight_Q4", b), g.initializer(base + ".weight_scales", scales.reshape(n, -1))]
    if zp is not None:
        names.append(g.initializer(base + ".weight_zp", zp))
    return names


def _linear(g: GraphWriter, opts: BuildOptions, name: str, x: str, w_kn: np.ndarray, quantize: bool,
            int4_names: list[str] | None = None) -> str:
    """x @ w_kn as MatMul (float) or MatMulNBits (int4; `int4_names` when _int4_weight already wrote them)."""
    k, n = w_kn.shape
    if not quantize:
        return g.node("MatMul", [x, g.float_weight(name.strip("/").replace("/", ".") + ".weight", w_kn)], 1,
                      name + "/MatMul")[0]
    inputs = [x, *(int4_names or _int4_weight(g, opts, name, w_kn))]
    return g.node("MatMulNBits", inputs, 1, name + "/MatMulNBits", domain="com.microsoft", K=k, N=n, bits=4,
                  block_size=opts.block_size, accuracy_level=opts.accuracy_level)[0]


def _add_bias(g: GraphWriter, name: str, x: str, bias: np.ndarray | None) -> str:
    if bias is None or not np.any(bias):
        return x
    return g.node("Add", [x, g.float_weight(name.strip("/").replace("/", ".") + ".bias", bias)], 1, name + "/Add")[0]


def build_graph(cfg: DecoderConfig, weights: Weights, opts: BuildOptions, out_dir: str) -> dict:
    """Writes model.onnx and model.onnx.data; returns the decoder I/O names for genai_config.json."""
    int4 = opts.precision == "int4"
    float_type = TensorProto.FLOAT16 if opts.precision == "fp16" else TensorProto.FLOAT
    g = GraphWriter(os.path.join(out_dir, "model.onnx.data"), float_type)
    h, d, heads, kv_heads = cfg.hidden_size, cfg.head_size, cfg.num_heads, cfg.num_kv_heads
    gpt2 = cfg.model_type == "gpt2"
    prefix = "transformer." if gpt2 else "model."
    inputs, outputs = [], []
    # int4 with tied embeddings: one 4-bit table for the lookup and the lm_head (its K must be whole blocks).
    shared_int4 = (int4 and cfg.tie_word_embeddings and not opts.exclude_embeds and not opts.exclude_lm_head
                   and not weights.has("lm_head.weight") and h % opts.block_size == 0)
    lm_head_int4 = None

    # seqlens_k (int32 [batch]: attended tokens - 1) and total_sequence_length
    # (int32 scalar) from attention_mask, as onnxruntime-genai's models compute them.
    inputs.append(helper.make_tensor_value_info("attention_mask", TensorProto.INT64,
                                                ["batch_size", "total_sequence_length"]))
    mask_sum = g.node("ReduceSum", ["attention_mask", g.int64_constant([1])], 1, "/model/attn_mask/ReduceSum",
                      keepdims=0)[0]
    seqlens = g.node("Sub", [mask_sum, g.int64_constant([1])], 1, "/model/attn_mask/Sub")[0]
    seqlens_k = g.node("Cast", [seqlens], 1, "/model/attn_mask/seqlens_k", to=TensorProto.INT32)[0]
    mask_shape = g.node("Shape", ["attention_mask"], 1, "/model/attn_mask/Shape")[0]
    total = g.node("Gather", [mask_shape, g.initializer("/model/constants/INT64/1", np.array(1, np.int64))], 1,
                   "/model/attn_mask/Gather", axis=0)[0]
    total_len = g.node("Cast", [total], 1, "/model/attn_mask/total_sequence_length", to=TensorProto.INT32)[0]

    # Embeddings.
    if opts.exclude_embeds:
        inputs.insert(0, helper.make_tensor_value_info("inputs_embeds", float_type,
                                                       ["batch_size", "sequence_length", h]))
        hidden = "inputs_embeds"
    else:
        inputs.insert(0, helper.make_tensor_value_info("input_ids", TensorProto.INT64,
                                                       ["batch_size", "sequence_length"]))
        embed_name = prefix + ("wte.weight" if gpt2 else "embed_tokens.weight")
        embed = weights.get(embed_name, (cfg.vocab_size, h))
        if shared_int4:
            # Tied embeddings at int4: the lookup reads the lm_head's 4-bit table (GatherBlockQuantized,
            # as onnxruntime-genai's int4 models do), so the vocabulary is stored once, in 4 bits.
            lm_head_int4 = _int4_weight(g, opts, "/lm_head", embed.T)
            table = g.node("Reshape", [lm_head_int4[0], g.int64_constant([cfg.vocab_size, h // 2])], 1,
                           "/model/embed_tokens/Reshape")[0]
            gather_inputs = [table, "input_ids", lm_head_int4[1]]
            if len(lm_head_int4) > 2:  # zero points, [vocab, blocks / 2] for the lookup
                gather_inputs.append(g.node("Reshape", [lm_head_int4[2], g.int64_constant([cfg.vocab_size, -1])], 1,
                                            "/model/embed_tokens/ZeroPointReshape")[0])
            hidden = g.node("GatherBlockQuantized", gather_inputs, 1, "/model/embed_tokens/GatherBlockQuantized",
                            domain="com.microsoft", bits=4, block_size=opts.block_size, gather_axis=0,
                            quantize_axis=1)[0]
        else:
            hidden = g.node("Gather", [g.float_weight(embed_name, embed), "input_ids"], 1,
                            "/model/embed_tokens/Gather")[0]
    if gpt2:
        # Positions count the attended tokens (cumsum of the mask), so left padding works; the new
        # tokens are the last sequence_length of them.
        cumsum = g.node("CumSum", ["attention_mask", g.initializer("/model/constants/INT64/axis1",
                                                                     np.array(1, np.int64))], 1,
                        "/model/pos_ids/CumSum")[0]
        pos = g.node("Sub", [cumsum, g.int64_constant([1])], 1, "/model/pos_ids/Sub")[0]
        pos = g.node("Max", [pos, g.int64_constant([0])], 1, "/model/pos_ids/Max")[0]
        ids_shape = g.node("Shape", [hidden], 1, "/model/pos_ids/Shape")[0]
        seq = g.node("Slice", [ids_shape, g.int64_constant([1]), g.int64_constant([2])], 1, "/model/pos_ids/Seq")[0]
        start = g.node("Neg", [seq], 1, "/model/pos_ids/Neg")[0]
        pos = g.node("Slice", [pos, start, g.int64_constant([2 ** 62]), g.int64_constant([1])], 1,
                     "/model/pos_ids/Slice")[0]
        wpe = weights.get("transformer.wpe.weight", (cfg.context_length, h))
        pos_embeds = g.node("Gather", [g.float_weight("transformer.wpe.weight", wpe), pos], 1,
                            "/model/embed_positions/Gather")[0]
        hidden = g.node("Add", [hidden, pos_embeds], 1, "/model/embeddings/Add")[0]

    cos_sin = None
    if not gpt2:
        cos, sin = _rotary_caches(cfg)
        cos_sin = [g.float_weight("cos_cache", cos), g.float_weight("sin_cache", sin)]

    def norm(layer_name: str, x: str, skip: str | None, weight_prefix: str, skip_bias: np.ndarray | None):
        """(normed, residual) from x (+ skip + skip_bias): the first norm has no skip."""
        if gpt2:
            gamma = g.float_weight(weight_prefix + ".weight", weights.get(weight_prefix + ".weight", (h,)))
            beta = g.float_weight(weight_prefix + ".bias", weights.get(weight_prefix + ".bias", (h,)))
            if skip is None:
                return g.node("LayerNormalization", [x, gamma, beta], 1, layer_name + "/LayerNorm",
                              epsilon=cfg.norm_epsilon, axis=-1)[0], x
            ins = [x, skip, gamma, beta]
            if skip_bias is not None and np.any(skip_bias):
                ins.append(g.float_weight(weight_prefix + ".skip_bias", skip_bias))
            outs = g.node("SkipLayerNormalization", ins, [layer_name + "/output_0", "", "", layer_name + "/output_3"],
                          layer_name + "/SkipLayerNorm", domain="com.microsoft", epsilon=cfg.norm_epsilon)
            return outs[0], outs[3]
        gamma = g.float_weight(weight_prefix + ".weight", weights.get(weight_prefix + ".weight", (h,)))
        if skip is None:
            return g.node("SimplifiedLayerNormalization", [x, gamma], 1, layer_name + "/LayerNorm",
                          epsilon=cfg.norm_epsilon, axis=-1, stash_type=1)[0], x
        ins = [x, skip, gamma]
        if skip_bias is not None and np.any(skip_bias):
            ins.append(g.float_weight(weight_prefix + ".skip_bias", skip_bias))
        outs = g.node("SkipSimplifiedLayerNormalization", ins,
                      [layer_name + "/output_0", "", "", layer_name + "/output_3"], layer_name + "/SkipLayerNorm",
                      domain="com.microsoft", epsilon=cfg.norm_epsilon)
        return outs[0], outs[3]

    residual, pending, pending_bias = hidden, None, None
    past_shape = ["batch_size", kv_heads, "past_sequence_length", d]
    present_shape = ["batch_size", kv_heads, "total_sequence_length", d]
    kv_inputs, kv_outputs = [], []
    for layer in range(cfg.num_layers):
        ln = f"/model/layers.{layer}"
        wp = f"{prefix}h.{layer}." if gpt2 else f"{prefix}layers.{layer}."
        x, residual = norm(ln + "/input_layernorm", residual, pending,
                           wp + ("ln_1" if gpt2 else "input_layernorm"), pending_bias)
        # Q, K and V in one MatMul and GroupQueryAttention's packed input.
        q_dim, kv_dim = heads * d, kv_heads * d
        if gpt2:
            w_qkv = weights.get(wp + "attn.c_attn.weight", (h, 3 * h))
            b_qkv = weights.get(wp + "attn.c_attn.bias", (3 * h,))
        else:
            parts = [weights.get(wp + f"self_attn.{p}_proj.weight", (dim, h))
                     for p, dim in (("q", q_dim), ("k", kv_dim), ("v", kv_dim))]
            w_qkv = np.concatenate(parts, axis=0).T
            b_qkv = None
            if cfg.qkv_bias:
                b_qkv = np.concatenate([weights.get(wp + f"self_attn.{p}_proj.bias", (dim,))
                                        for p, dim in (("q", q_dim), ("k", kv_dim), ("v", kv_dim))])
        qkv = _linear(g, opts, ln + "/attn/qkv_proj", x, w_qkv, int4)
        qkv = _add_bias(g, ln + "/attn/qkv_proj", qkv, b_qkv)
        past_k, past_v = f"past_key_values.{layer}.key", f"past_key_values.{layer}.value"
        present_k, present_v = f"present.{layer}.key", f"present.{layer}.value"
        kv_inputs += [helper.make_tensor_value_info(past_k, float_type, past_shape),
                      helper.make_tensor_value_info(past_v, float_type, past_shape)]
        kv_outputs += [helper.make_tensor_value_info(present_k, float_type, present_shape),
                       helper.make_tensor_value_info(present_v, float_type, present_shape)]
        gqa_inputs = [qkv, "", "", past_k, past_v, seqlens_k, total_len] + (cos_sin or [])
        attn = g.node("GroupQueryAttention", gqa_inputs, [ln + "/attn/GroupQueryAttention/output_0", present_k,
                                                          present_v], ln + "/attn/GroupQueryAttention",
                      domain="com.microsoft", num_heads=heads, kv_num_heads=kv_heads, scale=1.0 / math.sqrt(d),
                      local_window_size=-1, do_rotary=0 if gpt2 else 1, rotary_interleaved=0)[0]
        if gpt2:
            w_o, b_o = weights.get(wp + "attn.c_proj.weight", (h, h)), weights.get(wp + "attn.c_proj.bias", (h,))
        else:
            w_o = weights.get(wp + "self_attn.o_proj.weight", (h, q_dim)).T
            b_o = weights.get(wp + "self_attn.o_proj.bias", (h,)) if cfg.o_bias else None
        attn_out = _linear(g, opts, ln + "/attn/o_proj", attn, w_o, int4)
        # The output projection's bias is added by the next SkipLayerNorm.
        x, residual = norm(ln + "/post_attention_layernorm", residual, attn_out,
                           wp + ("ln_2" if gpt2 else "post_attention_layernorm"), b_o)
        i = cfg.intermediate_size
        if gpt2:
            fc = _linear(g, opts, ln + "/mlp/fc", x, weights.get(wp + "mlp.c_fc.weight", (h, i)), int4)
            bias = g.float_weight(wp + "mlp.c_fc.bias", weights.get(wp + "mlp.c_fc.bias", (i,)))
            act = g.node("FastGelu", [fc, bias], 1, ln + "/mlp/FastGelu", domain="com.microsoft")[0]
            pending = _linear(g, opts, ln + "/mlp/proj", act, weights.get(wp + "mlp.c_proj.weight", (i, h)), int4)
            pending_bias = weights.get(wp + "mlp.c_proj.bias", (h,))
        else:
            def proj(p, out_dim, in_dim, src):
                w = weights.get(wp + f"mlp.{p}_proj.weight", (out_dim, in_dim)).T
                y = _linear(g, opts, ln + f"/mlp/{p}_proj", src, w, int4)
                if cfg.mlp_bias and p != "down":
                    y = _add_bias(g, ln + f"/mlp/{p}_proj", y, weights.get(wp + f"mlp.{p}_proj.bias", (out_dim,)))
                return y

            gate, up = proj("gate", i, h, x), proj("up", i, h, x)
            sig = g.node("Sigmoid", [gate], 1, ln + "/mlp/act_fn/Sigmoid")[0]
            silu = g.node("Mul", [gate, sig], 1, ln + "/mlp/act_fn/Mul")[0]
            both = g.node("Mul", [silu, up], 1, ln + "/mlp/Mul")[0]
            pending = proj("down", h, i, both)
            pending_bias = weights.get(wp + "mlp.down_proj.bias", (h,)) if cfg.mlp_bias else None

    final = prefix + ("ln_f" if gpt2 else "norm")
    x, _ = norm(f"/model/layers.{cfg.num_layers}/final_norm_layernorm", residual, pending, final, pending_bias)
    if opts.exclude_lm_head:
        g.node("Identity", [x], "hidden_states", "/model/hidden_states/Identity")
        outputs.append(helper.make_tensor_value_info("hidden_states", float_type,
                                                     ["batch_size", "sequence_length", h]))
    else:
        if weights.has("lm_head.weight"):
            lm = weights.get("lm_head.weight", (cfg.vocab_size, h))
        elif cfg.tie_word_embeddings:
            lm = weights.get(prefix + ("wte.weight" if gpt2 else "embed_tokens.weight"), (cfg.vocab_size, h))
        else:
            raise BuilderError(f"{weights.source}: weight 'lm_head.weight' is missing (tie_word_embeddings is false)")
        logits = _linear(g, opts, "/lm_head", x, lm.T, int4, lm_head_int4)
        g.node("Identity", [logits], "logits", "/lm_head/Identity")
        outputs.append(helper.make_tensor_value_info("logits", float_type,
                                                     ["batch_size", "sequence_length", cfg.vocab_size]))
    g.close()

    graph = helper.make_graph(g.nodes, "main_graph", inputs + kv_inputs, outputs + kv_outputs,
                              initializer=g.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.microsoft", 1)],
                              producer_name="onyx.genai.builder")
    model.ir_version = 10
    with open(os.path.join(out_dir, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    names = {"inputs": {}, "outputs": {}}
    names["inputs"]["inputs_embeds" if opts.exclude_embeds else "input_ids"] = (
        "inputs_embeds" if opts.exclude_embeds else "input_ids")
    names["inputs"].update({"attention_mask": "attention_mask", "past_key_names": "past_key_values.%d.key",
                            "past_value_names": "past_key_values.%d.value"})
    names["outputs"]["hidden_states" if opts.exclude_lm_head else "logits"] = (
        "hidden_states" if opts.exclude_lm_head else "logits")
    names["outputs"].update({"present_key_names": "present.%d.key", "present_value_names": "present.%d.value"})
    return names


# ---------------------------------------------------------------------------
# genai_config.json and tokenizer


def _first_id(value):
    if isinstance(value, list):
        return value[0] if value else None
    return value


def write_genai_config(cfg: DecoderConfig, io_names: dict, input_dir: str | None, out_dir: str) -> None:
    generation = {}
    if input_dir and os.path.isfile(os.path.join(input_dir, "generation_config.json")):
        try:
            with open(os.path.join(input_dir, "generation_config.json"), encoding="utf-8") as f:
                generation = json.load(f)
        except (OSError, ValueError):
            generation = {}
    bos = generation.get("bos_token_id", cfg.bos_token_id)
    eos = generation.get("eos_token_id", cfg.eos_token_id)
    pad = cfg.pad_token_id if cfg.pad_token_id is not None else generation.get("pad_token_id", _first_id(eos))

    def in_vocab(key, value):
        # onnxruntime-genai refuses ids outside the vocabulary (transformers' default GPT-2 config
        # keeps 50256 for any vocab_size).
        ids = value if isinstance(value, list) else [value]
        kept = [i for i in ids if isinstance(i, int) and 0 <= i < cfg.vocab_size]
        if len(kept) == len(ids):
            return value
        fallback = kept[0] if kept else cfg.vocab_size - 1
        print(f"onyx.genai.builder: warning: {key} {value} is outside the vocabulary ({cfg.vocab_size}); "
              f"genai_config.json gets {fallback}", file=sys.stderr)
        return fallback

    bos, eos, pad = (in_vocab(k, v) if v is not None else None
                     for k, v in (("bos_token_id", bos), ("eos_token_id", eos), ("pad_token_id", pad)))
    config = {
        "model": {
            "bos_token_id": bos if bos is not None else 0,
            "context_length": cfg.context_length,
            "decoder": {
                "session_options": {"log_id": "onnxruntime-genai", "provider_options": []},
                "filename": "model.onnx",
                "head_size": cfg.head_size,
                "hidden_size": cfg.hidden_size,
                "inputs": io_names["inputs"],
                "outputs": io_names["outputs"],
                "num_attention_heads": cfg.num_heads,
                "num_hidden_layers": cfg.num_layers,
                "num_key_value_heads": cfg.num_kv_heads,
            },
            "eos_token_id": eos if eos is not None else 0,
            "pad_token_id": pad if pad is not None else 0,
            # onnxruntime-genai's "gpt2" type is the older export with one past_%d tensor per layer;
            # its generic "decoder" type runs this layout (separate key/value caches).
            "type": "decoder" if cfg.model_type == "gpt2" else cfg.model_type,
            "vocab_size": cfg.vocab_size,
        },
        "search": {
            "diversity_penalty": 0.0,
            "do_sample": bool(generation.get("do_sample", False)),
            "early_stopping": True,
            "length_penalty": 1.0,
            "max_length": cfg.context_length,
            "min_length": 0,
            "no_repeat_ngram_size": 0,
            "num_beams": 1,
            "num_return_sequences": 1,
            "past_present_share_buffer": True,
            "repetition_penalty": float(generation.get("repetition_penalty", 1.0)),
            "temperature": float(generation.get("temperature", 1.0)),
            "top_k": int(generation.get("top_k", 50)),
            "top_p": float(generation.get("top_p", 1.0)),
        },
    }
    with open(os.path.join(out_dir, "genai_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=4)
        f.write("\n")


# Written for this builder: varied everyday English, code and numbers, so a
# byte-level BPE learns a few thousand merges from it.
_CORPUS_PARAGRAPHS = [
    "The small boat left the harbour before dawn, and the fishermen watched the grey water for signs of the "
    "weather turning. By noon the wind had dropped, the sun broke through, and they counted their catch.",
    "A model builder reads a configuration, loads the weights, and writes a graph that a runtime can execute. "
    "Each layer normalises its input, attends to the tokens before it, and passes the result through a "
    "feed-forward network.",
    "She opened the old notebook and found recipes written in pencil: bread with honey, soup with lentils and "
    "carrots, a cake that needed three eggs and a cup of milk.",
    "def add(a, b):\n    return a + b\n\nfor i in range(10):\n    print(i, add(i, i * 2))\n",
    "The train to the mountains leaves at 7:45 and arrives at 12:30; tickets cost 24 euros, or 12 for "
    "children under twelve. Bring warm clothes, water, and something to read.",
    "In the garden there were roses, tulips, daisies and a tall sunflower that leaned towards the wall. "
    "Bees moved from flower to flower while a cat slept in the shade.",
    "Numbers tell their own story: 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144. Each one is the sum of the two "
    "before it, and their ratio approaches the golden mean.",
    "Questions are welcome. What time is it? Where are we going? Why does the river run to the sea? "
    "How many stars can you see tonight?",
]


def _corpus() -> list[str]:
    words = sorted(set(" ".join(_CORPUS_PARAGRAPHS).replace("\n", " ").split()))
    lines = list(_CORPUS_PARAGRAPHS) * 4
    rng = np.random.default_rng(1234)
    for _ in range(400):  # deterministic word salad widens what the merges cover
        lines.append(" ".join(words[j] for j in rng.integers(0, len(words), 12)))
    return lines


def train_tokenizer(cfg: DecoderConfig, out_dir: str) -> int:
    """A byte-level BPE tokenizer.json with the config's bos/eos ids as special tokens; returns its size."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    specials: dict[int, str] = {}
    bos, eos = _first_id(cfg.bos_token_id), _first_id(cfg.eos_token_id)
    for token_id, text in ((bos, "<|begin_of_text|>" if bos != eos else "<|endoftext|>"), (eos, "<|endoftext|>")):
        if isinstance(token_id, int) and 0 <= token_id < cfg.vocab_size:
            specials.setdefault(token_id, text)
        elif token_id is not None:
            print(f"onyx.genai.builder: warning: special token id {token_id} is outside the vocabulary "
                  f"({cfg.vocab_size}); the tokenizer does not have it", file=sys.stderr)
    low = {i: t for i, t in specials.items() if i < 256}
    leading = [low.get(i, f"<|reserved_{i}|>") for i in range(max(low) + 1)] if low else []
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    target = max(cfg.vocab_size - (len(specials) - len(low)), len(leading) + 256)
    trainer = trainers.BpeTrainer(vocab_size=min(target, cfg.vocab_size), special_tokens=leading,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(_corpus(), trainer)
    # Special ids beyond the trained vocabulary: pad with reserved tokens up to each.
    for token_id in sorted(i for i in specials if i >= 256):
        size = tokenizer.get_vocab_size()
        if token_id < size:
            print(f"onyx.genai.builder: warning: special token id {token_id} falls inside the trained BPE "
                  "vocabulary; the tokenizer does not have it", file=sys.stderr)
            continue
        tokenizer.add_special_tokens([f"<|reserved_{k}|>" for k in range(size, token_id)] + [specials[token_id]])
    tokenizer.save(os.path.join(out_dir, "tokenizer.json"))
    tok_config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "model_max_length": cfg.context_length,
        "add_prefix_space": False,
        "clean_up_tokenization_spaces": False,
    }
    if bos in specials:
        tok_config["bos_token"] = specials[bos]
    if eos in specials:
        tok_config["eos_token"] = specials[eos]
        tok_config["pad_token"] = specials[eos]
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tok_config, f, indent=2)
        f.write("\n")
    return tokenizer.get_vocab_size()


def write_tokenizer(cfg: DecoderConfig, input_dir: str | None, out_dir: str) -> str:
    copied = []
    if input_dir:
        for name in TOKENIZER_FILES:
            src = os.path.join(input_dir, name)
            if os.path.isfile(src):
                shutil.copyfile(src, os.path.join(out_dir, name))
                copied.append(name)
    if "tokenizer.json" in copied or "tokenizer.model" in copied or "vocab.json" in copied:
        return "copied " + ", ".join(copied)
    size = train_tokenizer(cfg, out_dir)
    return f"trained a byte-level BPE tokenizer of {size} tokens on the built-in corpus"


# ---------------------------------------------------------------------------
# Command line


def _hf_cache_folder(model_name: str, cache_dir: str | None) -> str:
    """The snapshot folder of a Hugging Face id in the local cache (never downloads)."""
    roots = []
    if cache_dir:
        roots += [cache_dir, os.path.join(cache_dir, "hub")]
    if os.environ.get("HF_HUB_CACHE"):
        roots.append(os.environ["HF_HUB_CACHE"])
    hf_home = os.environ.get("HF_HOME", os.path.join(os.path.expanduser("~"), ".cache", "huggingface"))
    roots.append(os.path.join(hf_home, "hub"))
    repo = "models--" + model_name.replace("/", "--")
    for root in roots:
        base = os.path.join(root, repo)
        if not os.path.isdir(base):
            continue
        snapshots = os.path.join(base, "snapshots")
        ref = os.path.join(base, "refs", "main")
        if os.path.isfile(ref):
            with open(ref, encoding="utf-8") as f:
                candidate = os.path.join(snapshots, f.read().strip())
            if os.path.isfile(os.path.join(candidate, "config.json")):
                return candidate
        if os.path.isdir(snapshots):
            for name in sorted(os.listdir(snapshots)):
                if os.path.isfile(os.path.join(snapshots, name, "config.json")):
                    return os.path.join(snapshots, name)
    raise BuilderError(f"model '{model_name}' is not in the local Hugging Face cache (looked in "
                       f"{', '.join(roots)}); onyx's builder never downloads: pass a folder with -i")


def _parse_bool(key: str, value: str) -> bool:
    v = str(value).strip().lower()
    if v in ("1", "true", "yes"):
        return True
    if v in ("0", "false", "no"):
        return False
    raise BuilderError(f"--extra_options {key}={value}: expected true or false")


def _parse_extra_options(items: list[str]) -> dict[str, str]:
    options = {}
    for item in items or []:
        if "=" not in item:
            raise BuilderError(f"--extra_options '{item}': expected key=value")
        key, value = item.split("=", 1)
        if key not in EXTRA_OPTIONS:
            raise BuilderError(f"--extra_options: unknown option '{key}'; known: {', '.join(EXTRA_OPTIONS)}")
        options[key] = value
    return options


def build(input_dir: str | None, output_dir: str, precision: str = "fp32", execution_provider: str = "cpu",
          model_name: str | None = None, cache_dir: str | None = None, extra_options: dict | None = None,
          log=None) -> dict:
    """Builds the model folder; returns a summary (seconds, sizes). Raises BuilderError for user errors."""
    log = log or (lambda msg: print(f"onyx.genai.builder: {msg}", file=sys.stderr))
    start = time.perf_counter()
    extra = {k: str(v) for k, v in (extra_options or {}).items()}
    for key in extra:
        if key not in EXTRA_OPTIONS:
            raise BuilderError(f"extra option '{key}' is unknown; known: {', '.join(EXTRA_OPTIONS)}")
    if precision not in PRECISIONS:
        raise BuilderError(f"precision '{precision}' is not supported; expected one of {', '.join(PRECISIONS)}")
    if execution_provider not in EXECUTION_PROVIDERS:
        raise BuilderError(f"execution provider '{execution_provider}' is not supported; expected cpu")
    if input_dir is None:
        if not model_name:
            raise BuilderError("give a model folder with -i/--input or a Hugging Face id with -m/--model_name")
        input_dir = _hf_cache_folder(model_name, cache_dir)
    if not os.path.isdir(input_dir):
        raise BuilderError(f"input folder '{input_dir}' does not exist")
    cfg = read_config(input_dir)
    opts = BuildOptions(precision=precision)
    if "int4_block_size" in extra:
        try:
            opts.block_size = int(extra["int4_block_size"])
        except ValueError:
            opts.block_size = -1
        if opts.block_size not in (16, 32, 64, 128, 256):
            raise BuilderError(f"int4_block_size {extra['int4_block_size']}: expected 16, 32, 64, 128 or 256")
    if "int4_accuracy_level" in extra:
        try:
            opts.accuracy_level = int(extra["int4_accuracy_level"])
        except ValueError:
            opts.accuracy_level = -1
        if opts.accuracy_level not in (0, 1, 2, 3, 4):
            raise BuilderError(f"int4_accuracy_level {extra['int4_accuracy_level']}: expected 0 to 4")
    for key in ("int4_is_symmetric", "is_symmetric"):
        if key in extra:
            opts.symmetric = _parse_bool(key, extra[key])
    opts.exclude_embeds = _parse_bool("exclude_embeds", extra.get("exclude_embeds", "false"))
    opts.exclude_lm_head = _parse_bool("exclude_lm_head", extra.get("exclude_lm_head", "false"))
    use_random = _parse_bool("random_weights", extra.get("random_weights", "false"))
    try:
        seed = int(extra.get("seed", "0"))
    except ValueError:
        raise BuilderError(f"seed {extra['seed']}: expected an integer") from None

    tensors = None if use_random else load_weights(input_dir)
    if tensors is None:
        log(f"{input_dir}: {'random_weights=true' if use_random else 'no *.safetensors'}: using random weights "
            f"(numpy, seed {seed}, std {cfg.initializer_range}); nothing is downloaded")
        tensors = random_weights(cfg, seed)
        source = f"random weights for {input_dir}"
    else:
        source = input_dir
    weights = Weights(tensors, source)
    os.makedirs(output_dir, exist_ok=True)
    io_names = build_graph(cfg, weights, opts, output_dir)
    del weights, tensors
    write_genai_config(cfg, io_names, input_dir, output_dir)
    tokenizer = write_tokenizer(cfg, input_dir, output_dir)
    seconds = time.perf_counter() - start
    size = sum(os.path.getsize(os.path.join(output_dir, f)) for f in ("model.onnx", "model.onnx.data"))
    log(f"{cfg.architecture} {precision}: wrote {output_dir} ({size / 2 ** 20:.1f} MiB) in {seconds:.1f} s; "
        f"tokenizer: {tokenizer}")
    return {"seconds": seconds, "bytes": size, "model_type": cfg.model_type}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m onyx.genai.builder",
        description="Export a Hugging Face decoder (GPT-2, Llama, Qwen2, Mistral) to an onnxruntime-genai model "
                    "folder. A folder with config.json and no weights gets seeded random weights.",
        epilog="extra options: " + "; ".join(f"{k}: {v}" for k, v in EXTRA_OPTIONS.items()))
    parser.add_argument("-m", "--model_name", help="Hugging Face id, resolved from the local cache only")
    parser.add_argument("-i", "--input", help="folder with config.json and *.safetensors")
    parser.add_argument("-o", "--output", required=True, help="output folder")
    parser.add_argument("-p", "--precision", required=True, choices=PRECISIONS)
    parser.add_argument("-e", "--execution_provider", default="cpu", choices=EXECUTION_PROVIDERS)
    parser.add_argument("-c", "--cache_dir", help="Hugging Face cache folder to look in for -m")
    parser.add_argument("--extra_options", nargs="*", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    try:
        extra = _parse_extra_options(args.extra_options)
        build(args.input, args.output, args.precision, args.execution_provider, args.model_name, args.cache_dir,
              extra)
    except BuilderError as e:
        print(f"onyx.genai.builder: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
