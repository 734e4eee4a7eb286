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
OPSET = 17
SEQ = 128  # BERT sequence length, GPT-2 KV-cache length


def seed_everything(seed: int) -> None:
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def export(model, args: tuple, path: Path, input_names, output_names, dynamic_axes=None) -> str:
    """Exports with the TorchScript exporter when this torch has it (its graphs are
    the ones most deployed models were made with); else with the dynamo exporter.
    `dynamic_axes` (TorchScript's form) leaves dims symbolic, e.g. the batch.
    Returns which exporter wrote the file."""
    import torch

    kwargs = dict(
        input_names=list(input_names),
        output_names=list(output_names),
        opset_version=OPSET,
        do_constant_folding=True,
    )
    if dynamic_axes:
        kwargs["dynamic_axes"] = dynamic_axes
    has_dynamo_flag = "dynamo" in inspect.signature(torch.onnx.export).parameters
    errors = []
    if has_dynamo_flag:
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
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n, generator=g) * 0.1)


# Each build_NAME(batch) returns (module, input names, example inputs, output
# names): make_NAME exports it at batch 1 with its inputs, bench/gpu_bench.py
# runs it in PyTorch beside onyx.


def build_torchvision(name: str, batch: int = 1):
    import torch
    import torchvision

    ctor = {"resnet50": torchvision.models.resnet50, "mobilenet_v2": torchvision.models.mobilenet_v2}[name]
    model = ctor(weights=None).eval()
    randomize_batchnorm(model)
    return model, ["input"], (torch.randn(batch, 3, 224, 224),), ["logits"]


def make_torchvision(name: str, out: Path) -> str:
    model, names, args, outputs = build_torchvision(name)
    save_inputs(out.with_suffix(".inputs.npz"), names, args)
    return export(model, args, out, names, outputs)


def build_bert(batch: int = 1):
    import torch
    from transformers import BertConfig, BertModel

    config = BertConfig()  # bert-base: 12 layers, hidden 768, 12 heads, vocab 30522
    try:
        model = BertModel(config, add_pooling_layer=True, attn_implementation="eager")
    except TypeError:
        config._attn_implementation = "eager"
        model = BertModel(config)
    model.eval()

    class Wrapper(torch.nn.Module):
        """Plain tuple outputs instead of a ModelOutput."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            r = self.m(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids, return_dict=True)
            return r.last_hidden_state, r.pooler_output

    input_ids = torch.randint(0, config.vocab_size, (batch, SEQ), dtype=torch.int64)
    attention_mask = torch.ones(batch, SEQ, dtype=torch.int64)
    token_type_ids = torch.zeros(batch, SEQ, dtype=torch.int64)
    token_type_ids[:, SEQ // 2 :] = 1  # two segments, as for a sentence pair
    names = ["input_ids", "attention_mask", "token_type_ids"]
    return Wrapper(model), names, (input_ids, attention_mask, token_type_ids), ["last_hidden_state", "pooler_output"]


def make_bert(out: Path) -> str:
    model, names, args, outputs = build_bert()
    save_inputs(out.with_suffix(".inputs.npz"), names, args)
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


MODELS = {
    "resnet50": lambda out: make_torchvision("resnet50", out),
    "mobilenet_v2": lambda out: make_torchvision("mobilenet_v2", out),
    "bert_base": make_bert,
    "gpt2_decode": make_gpt2,
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=HERE / "models", help="output folder (default bench/zoo/models)")
    ap.add_argument("--only", nargs="*", choices=sorted(MODELS), help="build only these models")
    ap.add_argument("--force", action="store_true", help="rebuild models that already exist")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    import torch

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    args.out.mkdir(parents=True, exist_ok=True)
    failed = []
    for name in args.only or list(MODELS):
        out = args.out / f"{name}.onnx"
        if out.exists() and out.with_suffix(".inputs.npz").exists() and not args.force:
            print(f"{name}: exists ({out})")
            continue
        seed_everything(args.seed)
        t0 = time.perf_counter()
        try:
            how = MODELS[name](out)
        except Exception as e:  # noqa: BLE001 - build the others, report this one
            print(f"{name}: FAILED: {e}", file=sys.stderr)
            failed.append(name)
            continue
        import onnx

        onnx.checker.check_model(str(out))
        size = out.stat().st_size / 2**20
        print(f"{name}: {out} ({size:.1f} MiB, {how} exporter, opset {OPSET}, {time.perf_counter() - t0:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
