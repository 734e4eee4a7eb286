#!/usr/bin/env python3
"""Builds the benchmark model zoo: real PyTorch models (torchvision, transformers)
with seeded random weights, exported with torch.onnx, plus the inputs each is
benchmarked on.

Nothing is downloaded: every model is constructed from its configuration and
randomly initialised, so the zoo is reproducible offline. Needs
`pip install torch torchvision transformers` (onnxscript too when the TorchScript
exporter is unavailable and the dynamo exporter is used).

    python bench/zoo/make_zoo.py                 # all models into bench/zoo/models/
    python bench/zoo/make_zoo.py --only bert_base --force

For each model NAME it writes models/NAME.onnx and models/NAME.inputs.npz (the
feed, keyed by input name). The CNNs of shared/onnx-backend-data/light are not
copied: bench/run_models.py reads them where they are.
"""

from __future__ import annotations

import argparse
import inspect
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # custom_models.py imports this file's helpers
OPSET = 17
SEQ = 128  # BERT sequence length, GPT-2 KV-cache length
DYNAMO_OPSET = 18  # what torch.onnx.export(dynamo=True) writes by default


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def export(model, args: tuple, path: Path, input_names, output_names, dynamic_axes=None,
           exporter: str = "torchscript", opset: int = OPSET) -> str:
    """Exports with the TorchScript exporter when this torch has it (its graphs are
    the ones most deployed models were made with); else with the dynamo exporter.
    `exporter="dynamo"` asks for the dynamo exporter (torch.export, onnxscript),
    the default of recent torch versions, whose graphs differ (opset 18+,
    decomposed ops). `dynamic_axes` (TorchScript's form) leaves dims symbolic,
    e.g. the batch. Returns which exporter wrote the file."""
    import torch

    kwargs = dict(
        input_names=list(input_names),
        output_names=list(output_names),
        opset_version=opset,
        do_constant_folding=True,
    )
    if dynamic_axes:
        kwargs["dynamic_axes"] = dynamic_axes
    has_dynamo_flag = "dynamo" in inspect.signature(torch.onnx.export).parameters
    errors = []
    if exporter == "dynamo":
        if not has_dynamo_flag:
            raise RuntimeError("this torch has no dynamo exporter")
        kwargs.pop("do_constant_folding")
        attempts = [("dynamo", dict(dynamo=True, external_data=False, optimize=True))]
    elif has_dynamo_flag:
        attempts = [("torchscript", dict(dynamo=False)), ("dynamo", dict(dynamo=True, external_data=False))]
    else:
        attempts = [("torchscript", {})]
    for name, extra in attempts:
        try:
            with torch.no_grad():
                torch.onnx.export(model, args, str(path), **kwargs, **extra)
            return name
        except Exception as e:  # noqa: BLE001 - try the next exporter, report all
            errors.append(f"{name}: {type(e).__name__}: {e}")
            if path.exists():
                path.unlink()
    raise RuntimeError(f"export of {path.name} failed:\n" + "\n".join(errors))


def save_inputs(path: Path, names, tensors) -> None:
    np.savez(path, **{n: t.detach().cpu().numpy() for n, t in zip(names, tensors)})


# ---- the models -----------------------------------------------------------------------


def randomize_batchnorm(model) -> None:
    """Fresh BatchNorm layers are the identity in eval mode (mean 0, var 1, scale 1,
    shift 0): that hides mistakes in BatchNorm folding, and MobileNetV2's logits
    shrink to about 1e-9, too small for an output comparison to mean anything.
    Seeded random statistics and affine parameters, as a trained model has."""
    import torch

    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n, generator=g) * 0.1)


# Each build_NAME(batch) returns (module, input names, example inputs, output
# names): make_NAME exports it at batch 1 with its inputs, bench/gpu_bench.py
# runs it in PyTorch beside onyx.


TORCHVISION = {
    # name: (kind, constructor name or a callable building the module)
    "mobilenet_v2": ("cnn", "mobilenet_v2"),
    "mobilenet_v3_small": ("cnn", "mobilenet_v3_small"),
    "mobilenet_v3_large": ("cnn", "mobilenet_v3_large"),
    "efficientnet_b0": ("cnn", "efficientnet_b0"),
    "shufflenet_v2": ("cnn", "shufflenet_v2_x1_0"),
    "regnet_y_400mf": ("cnn", "regnet_y_400mf"),
    "squeezenet1_1": ("cnn", "squeezenet1_1"),
    "googlenet": ("cnn", "googlenet"),
    "resnet18": ("cnn", "resnet18"),
    "resnet50": ("cnn", "resnet50"),
    "convnext_tiny": ("cnn", "convnext_tiny"),
    "vit_b_16": ("vision transformer", "vit_b_16"),
    # DeiT-tiny is a ViT of width 192, 3 heads, 12 layers, patch 16.
    "deit_tiny": ("vision transformer", "deit_tiny"),
    "swin_t": ("vision transformer", "swin_t"),
}


def build_torchvision(name: str, batch: int = 1):
    import torch
    import torchvision

    ctor = TORCHVISION[name][1]
    if ctor == "deit_tiny":
        from torchvision.models.vision_transformer import VisionTransformer

        model = VisionTransformer(image_size=224, patch_size=16, num_layers=12, num_heads=3, hidden_dim=192, mlp_dim=768)
    elif ctor == "googlenet":
        model = torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=True)
    else:
        model = getattr(torchvision.models, ctor)(weights=None)
    model.eval()
    randomize_batchnorm(model)
    return model, ["input"], (torch.randn(batch, 3, 224, 224),), ["logits"]


def make_torchvision(name: str, out: Path, batch: int = 1, exporter: str = "torchscript") -> str:
    model, names, args, outputs = build_torchvision(name, batch)
    save_inputs(out.with_suffix(".inputs.npz"), names, args)
    if exporter == "dynamo":
        return export(model, args, out, names, outputs, exporter="dynamo", opset=DYNAMO_OPSET)
    return export(model, args, out, names, outputs)


def encoder_config(name: str):
    """The transformers configuration of an encoder of the zoo, by family."""
    from transformers import BertConfig, DistilBertConfig

    if name == "bert_base":
        return BertConfig()  # bert-base: 12 layers, hidden 768, 12 heads, vocab 30522
    if name == "distilbert":
        return DistilBertConfig()  # 6 layers, hidden 768, 12 heads
    if name == "minilm":
        # all-MiniLM-L6-v2's shape: BERT with 6 layers, hidden 384, 12 heads, FFN 1536
        return BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)
    raise KeyError(name)


def build_bert(batch: int = 1, family: str = "bert_base", seq: int = SEQ):
    """A transformers encoder with inputs input_ids, attention_mask (and
    token_type_ids where the family has them), [batch, seq], the last hidden
    state out (and BERT's pooler output)."""
    import torch
    from transformers import AutoModel

    config = encoder_config(family)
    config._attn_implementation = "eager"
    try:
        model = AutoModel.from_config(config, attn_implementation="eager")
    except TypeError:
        model = AutoModel.from_config(config)
    model.eval()
    has_types = family != "distilbert"
    has_pooler = getattr(model, "pooler", None) is not None

    class Wrapper(torch.nn.Module):
        """Plain tuple outputs instead of a ModelOutput."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids=None):
            kw = dict(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)
            if token_type_ids is not None:
                kw["token_type_ids"] = token_type_ids
            r = self.m(**kw)
            return (r.last_hidden_state, r.pooler_output) if has_pooler else (r.last_hidden_state,)

    input_ids = torch.randint(0, config.vocab_size, (batch, seq), dtype=torch.int64)
    attention_mask = torch.ones(batch, seq, dtype=torch.int64)
    attention_mask[:, seq - seq // 8 :] = 0  # padded tail, as a batch of sentences has
    names = ["input_ids", "attention_mask"]
    args = [input_ids, attention_mask]
    if has_types:
        token_type_ids = torch.zeros(batch, seq, dtype=torch.int64)
        token_type_ids[:, seq // 2 :] = 1  # two segments, as for a sentence pair
        names.append("token_type_ids")
        args.append(token_type_ids)
    outputs = ["last_hidden_state", "pooler_output"] if has_pooler else ["last_hidden_state"]
    return Wrapper(model), names, tuple(args), outputs


def make_bert(out: Path, batch: int = 1, family: str = "bert_base", seq: int = SEQ, exporter: str = "torchscript") -> str:
    model, names, args, outputs = build_bert(batch, family, seq)
    save_inputs(out.with_suffix(".inputs.npz"), names, args)
    if exporter == "dynamo":
        return export(model, args, out, names, outputs, exporter="dynamo", opset=DYNAMO_OPSET)
    return export(model, args, out, names, outputs)


def build_gpt2(batch: int = 1):
    """GPT-2 small, one decode step: one new token attends to a 128-token KV cache
    that is given as inputs past_key_values.{i}.key/value [batch, 12, 128, 64]; the
    updated cache comes back as present.{i}.key/value [batch, 12, 129, 64]."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config()  # 12 layers, 12 heads, hidden 768, vocab 50257
    try:
        model = GPT2LMHeadModel(config, attn_implementation="eager")
    except TypeError:
        config._attn_implementation = "eager"
        model = GPT2LMHeadModel(config)
    model.eval()
    n_layer, n_head = config.n_layer, config.n_head
    head_dim = config.n_embd // n_head

    def make_cache(flat):
        """The cache object this transformers version wants, filled from flat tensors."""
        pairs = [(flat[2 * i], flat[2 * i + 1]) for i in range(n_layer)]
        try:
            from transformers import DynamicCache
        except ImportError:
            return tuple(pairs)
        if hasattr(DynamicCache, "from_legacy_cache"):
            return DynamicCache.from_legacy_cache(tuple(pairs))
        try:
            cache = DynamicCache(config=config)
        except TypeError:
            cache = DynamicCache()
        for i, (k, v) in enumerate(pairs):
            cache.update(k, v, i)
        return cache

    def cache_tensors(cache):
        if isinstance(cache, tuple):
            return [t for kv in cache for t in kv]
        if hasattr(cache, "layers"):
            return [t for layer in cache.layers for t in (layer.keys, layer.values)]
        if hasattr(cache, "key_cache"):
            return [t for i in range(len(cache.key_cache)) for t in (cache.key_cache[i], cache.value_cache[i])]
        return [t for kv in cache.to_legacy_cache() for t in kv]

    class Wrapper(torch.nn.Module):
        """Flat past key/value tensors in, logits and flat present tensors out."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, *past):
            cache = make_cache(past)
            r = self.m(input_ids=input_ids, attention_mask=attention_mask, past_key_values=cache, use_cache=True, return_dict=True)
            return (r.logits, *cache_tensors(r.past_key_values))

    input_ids = torch.randint(0, config.vocab_size, (batch, 1), dtype=torch.int64)
    attention_mask = torch.ones(batch, SEQ + 1, dtype=torch.int64)
    past = [torch.randn(batch, n_head, SEQ, head_dim) for _ in range(2 * n_layer)]
    past_names = [f"past_key_values.{i}.{kv}" for i in range(n_layer) for kv in ("key", "value")]
    present_names = [f"present.{i}.{kv}" for i in range(n_layer) for kv in ("key", "value")]
    names = ["input_ids", "attention_mask", *past_names]
    return Wrapper(model), names, (input_ids, attention_mask, *past), ["logits", *present_names]


def make_gpt2(out: Path) -> str:
    model, names, args, outputs = build_gpt2()
    save_inputs(out.with_suffix(".inputs.npz"), names, args)
    return export(model, args, out, names, outputs)


_ZOO: dict = {}


def zoo() -> dict:
    """name -> (kind, make(out) -> exporter used). Kinds group the models for
    the per-kind means of bench/zoo_bench.py. Built on first use, not at
    import: custom_models.py imports this module's helpers."""
    if _ZOO:
        return _ZOO
    from functools import partial

    models = {}
    for name, (kind, _) in TORCHVISION.items():
        models[name] = (kind, partial(make_torchvision, name))
    # a realistic serving batch, and the dynamo exporter's graphs of the same nets
    models["mobilenet_v2_b8"] = ("cnn", partial(make_torchvision, "mobilenet_v2", batch=8))
    models["resnet50_b8"] = ("cnn", partial(make_torchvision, "resnet50", batch=8))
    models["resnet18_dynamo"] = ("cnn", partial(make_torchvision, "resnet18", exporter="dynamo"))
    models["mobilenet_v3_large_dynamo"] = ("cnn", partial(make_torchvision, "mobilenet_v3_large", exporter="dynamo"))
    models["bert_base"] = ("transformer", make_bert)
    models["distilbert"] = ("transformer", partial(make_bert, family="distilbert"))
    for seq in (16, 128, 384):
        models[f"minilm_s{seq}"] = ("transformer", partial(make_bert, family="minilm", seq=seq))
    models["minilm_s128_b8"] = ("transformer", partial(make_bert, family="minilm", seq=128, batch=8))
    models["minilm_s128_dynamo"] = ("transformer", partial(make_bert, family="minilm", seq=128, exporter="dynamo"))
    models["gpt2_decode"] = ("transformer", make_gpt2)
    try:
        import custom_models  # hand-written detectors, OCR, streaming, audio and tabular models
    except ImportError as e:
        print(f"bench/zoo/custom_models.py not loaded: {e}", file=sys.stderr)
    else:
        models.update(custom_models.MODELS)
    _ZOO.update(models)
    return _ZOO


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE / "models", help="output folder (default bench/zoo/models)")
    ap.add_argument("--only", nargs="*", choices=sorted(zoo()), help="build only these models")
    ap.add_argument("--force", action="store_true", help="rebuild models that already exist")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    args.out.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in args.only or list(zoo()):
        out = args.out / f"{name}.onnx"
        if out.exists() and out.with_suffix(".inputs.npz").exists() and not args.force:
            print(f"{name}: exists ({out})")
            continue
        seed_everything(args.seed)
        t0 = time.perf_counter()
        try:
            how = zoo()[name][1](out)
        except Exception as e:  # noqa: BLE001 - build the others, report this one
            print(f"{name}: FAILED: {e}", file=sys.stderr)
            failed.append(name)
            continue
        import onnx

        onnx.checker.check_model(str(out))
        size = out.stat().st_size / 2**20
        opset = next((o.version for o in onnx.load(str(out), load_external_data=False).opset_import if o.domain in ("", "ai.onnx")), "?")
        print(f"{name}: {out} ({size:.1f} MiB, {how}, opset {opset}, {time.perf_counter() - t0:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
