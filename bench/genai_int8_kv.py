"""The int8 KV cache against the float cache on a small trained decoder,
left to generate freely: greedy tokens of each, position by position, over
128 new tokens per prompt.

A random-weight model is no judge of this: its logits are nearly flat, so
any rounding flips a near-tie and the two sequences part for good. This
script trains a small Llama-style decoder (grouped-query attention, RoPE,
RMSNorm, SwiGLU) with PyTorch on the license texts every Debian system has
in /usr/share/common-licenses, exports it with `python -m
onyx.genai.builder -p fp32`, and generates from prompts cut from those texts
and from prompts it never saw.

Two measures, over 128 new tokens per prompt. Teacher-forced: both caches
read the same history (the float cache's tokens), and a step counts when
both pick the same next token; this is the cache's own accuracy. Free-running:
each reads its own earlier choices, and a position counts when the tokens
there are equal; after the first step where the two differ (a near-tie the
cache's rounding tips the other way) the sequences continue differently, so
this measure mostly says how early the first near-tie comes. Each flip is
printed with the float logits' margin between the top two tokens and the
largest difference between the two caches' logits.

    python bench/genai_int8_kv.py [--work bench/genai-models/trained-tiny]
        [--steps 1500] [--new-tokens 128] [--prompts 12] [--threads 2]

Needs torch, transformers and tokenizers (scripts/setup.sh --with-torch).
The trained folder is kept in --work and reused on the next run (--retrain
trains again). Prints each prompt's agreement and the total.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import time

import numpy as np

CORPUS_GLOB = "/usr/share/common-licenses/*"
UNSEEN_PROMPTS = [
    "The small boat left the harbour before dawn, and the fishermen",
    "A runtime reads the model, plans its memory, and then",
    "Permission to use this recipe for bread is granted to anyone who",
    "def main():\n    for line in open(path):\n",
]


def corpus_text() -> str:
    files = sorted(f for f in glob.glob(CORPUS_GLOB) if os.path.isfile(f))
    if not files:
        sys.exit(f"genai_int8_kv: no files match {CORPUS_GLOB}; this script trains on Debian's license texts")
    return "\n\n".join(open(f, encoding="utf-8", errors="replace").read() for f in files)


def train(work: str, steps: int, threads: int) -> str:
    """Trains the decoder into work/hf (config.json, model.safetensors, tokenizer files)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM

    hf = os.path.join(work, "hf")
    os.makedirs(hf, exist_ok=True)
    text = corpus_text()
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(
        text.split("\n\n"),
        trainers.BpeTrainer(vocab_size=1024, special_tokens=["<|endoftext|>"],
                            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    tokenizer.save(os.path.join(hf, "tokenizer.json"))
    with open(os.path.join(hf, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<|endoftext|>",
                   "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "add_prefix_space": False,
                   "clean_up_tokenization_spaces": False}, f, indent=2)
    ids = np.array(tokenizer.encode(text).ids, np.int64)

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    config = LlamaConfig(vocab_size=tokenizer.get_vocab_size(), hidden_size=128, intermediate_size=384,
                         num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=512, rms_norm_eps=1e-5, rope_theta=10000.0,
                         tie_word_embeddings=False, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    model = LlamaForCausalLM(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=2e-3, total_steps=steps, pct_start=0.1)
    rng = np.random.default_rng(0)
    window, batch = 64, 16
    start = time.perf_counter()
    for step in range(steps):
        offsets = rng.integers(0, len(ids) - window, batch)
        x = torch.from_numpy(np.stack([ids[o:o + window] for o in offsets]))
        loss = model(input_ids=x, labels=x).loss  # the model shifts the labels: position t predicts t + 1
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        if step % 50 == 0 or step == steps - 1:
            print(f"  step {step:4d}  loss {loss.item():.3f}  ({time.perf_counter() - start:.0f} s)", flush=True)
    model.save_pretrained(hf, safe_serialization=True)
    return hf


def build(hf: str, out: str) -> None:
    subprocess.run([sys.executable, "-m", "onyx.genai.builder", "-i", hf, "-o", out, "-p", "fp32"], check=True,
                   stdout=subprocess.DEVNULL)


def greedy(oxg, model, tokens: list[int], new_tokens: int) -> list[int]:
    """Free-running greedy tokens: each model reads its own earlier choices."""
    params = oxg.GeneratorParams(model)
    params.set_search_options(max_length=len(tokens) + new_tokens, do_sample=False)
    generator = oxg.Generator(model, params)
    generator.append_tokens(np.array(tokens, np.int32))
    while not generator.is_done():
        generator.generate_next_token()
    return list(generator.get_sequence(0))[len(tokens):]


def teacher_forced(oxg, full, int8, tokens: list[int], new_tokens: int) -> tuple[int, list[tuple[int, float, float]]]:
    """Steps at which both caches, fed the same history (the float cache's
    greedy tokens), pick the same token; and for each step where they do not,
    (step, the float logits' top-1 minus top-2 margin, the largest logit
    difference between the two)."""
    generators = []
    for model in (full, int8):
        params = oxg.GeneratorParams(model)
        params.set_search_options(max_length=len(tokens) + new_tokens + 1)
        generators.append(oxg.Generator(model, params))
        generators[-1].append_tokens(np.array(tokens, np.int32))
    same, flips = 0, []
    for step in range(new_tokens):
        reference, quantized = (np.asarray(g.get_logits(), np.float32).reshape(-1) for g in generators)
        if reference.argmax() == quantized.argmax():
            same += 1
        else:
            top2 = np.sort(reference)[-2:]
            flips.append((step, float(top2[1] - top2[0]), float(np.abs(reference - quantized).max())))
        for g in generators:
            g.append_tokens(np.array([reference.argmax()], np.int32))
    return same, flips


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=os.path.join(os.path.dirname(__file__), "genai-models", "trained-tiny"))
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--prompts", type=int, default=12, help="prompts cut from the training text")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--retrain", action="store_true")
    args = parser.parse_args()

    import onyx.genai as oxg

    hf = os.path.join(args.work, "hf")
    if args.retrain or not os.path.isfile(os.path.join(hf, "model.safetensors")):
        print(f"training the decoder ({args.steps} steps) into {hf}")
        train(args.work, args.steps, args.threads)
    folder = os.path.join(args.work, "onyx-fp32")
    if args.retrain or not os.path.isfile(os.path.join(folder, "genai_config.json")):
        build(hf, folder)

    threads = {"session_options": {"intra_op_num_threads": args.threads}}
    config = oxg.Config(folder)
    config.overlay({"model": {"decoder": threads}})
    full = oxg.Model(config)
    config = oxg.Config(folder)
    config.overlay({"model": {"decoder": {**threads, "kv_cache_type": "int8"}}})
    int8 = oxg.Model(config)
    tokenizer = oxg.Tokenizer(full)

    text = corpus_text()
    rng = np.random.default_rng(7)
    prompts = []
    for offset in rng.integers(0, len(text) - 400, args.prompts):
        start = text.find(" ", int(offset)) + 1
        prompts.append(("seen", text[start:start + 160]))
    prompts += [("unseen", p) for p in UNSEEN_PROMPTS]

    total = free_total = forced_total = 0
    print(f"{'prompt':>6} {'kind':>6} {'tokens':>6} {'free-running same':>17} {'first diff':>10} "
          f"{'teacher-forced same':>19}  flips (step: float margin / largest logit difference)")
    for i, (kind, prompt) in enumerate(prompts):
        tokens = list(tokenizer.encode(prompt))
        a = greedy(oxg, full, tokens, args.new_tokens)
        b = greedy(oxg, int8, tokens, args.new_tokens)
        free = sum(int(x == y) for x, y in zip(a, b))
        first = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), None)
        forced, flips = teacher_forced(oxg, full, int8, tokens, args.new_tokens)
        total += len(a)
        free_total += free
        forced_total += forced
        detail = ", ".join(f"{step}: {margin:.3f}/{diff:.3f}" for step, margin, diff in flips)
        print(f"{i:>6} {kind:>6} {len(a):>6} {free:>17} {'-' if first is None else first:>10} {forced:>19}  {detail}")
    ratio = int8.kv_cache_bytes(1, 512) / full.kv_cache_bytes(1, 512)
    print(f"int8 cache ({ratio:.2f}x the float cache's bytes) against the float cache, {total} greedy steps:")
    print(f"  teacher-forced: {forced_total} equal ({100.0 * forced_total / total:.1f}%)")
    print(f"  free-running:   {free_total} equal at the same position ({100.0 * free_total / total:.1f}%)")


if __name__ == "__main__":
    main()
