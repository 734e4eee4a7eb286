"""onyx.genai against onnxruntime-genai on the same tiny model folder:
greedy, batches of prompts of different lengths, sampling, beam search,
rewind_to, the int8 cache's size, and the errors."""

import json
import os
import shutil

import numpy as np
import pytest

from genai_fixtures import BUILDERS, make_tiny_folder
from genai_models import tiny_config, write_config

og = pytest.importorskip("onnxruntime_genai")
import onyx.genai as oxg  # noqa: E402

PROMPTS = ["Hello world", "Once upon a time there was"]


@pytest.fixture(scope="module", params=BUILDERS)
def folder(request, tmp_path_factory):
    return make_tiny_folder(tmp_path_factory.mktemp("genai"), request.param)


def generate(api, folder, tokens, batch_size=1, model=None, **options):
    model = model or api.Model(str(folder))
    params = api.GeneratorParams(model)
    params.set_search_options(batch_size=batch_size, **options)
    generator = api.Generator(model, params)
    generator.append_tokens(tokens)
    while not generator.is_done():
        generator.generate_next_token()
    count = batch_size * options.get("num_return_sequences", 1)
    return [list(generator.get_sequence(i)) for i in range(count)]


def encode(folder, text):
    return oxg.Tokenizer(oxg.Model(str(folder))).encode(text)


def test_tokenizer_matches_onnxruntime_genai(folder):
    ours = oxg.Tokenizer(oxg.Model(str(folder)))
    theirs = og.Tokenizer(og.Model(str(folder)))
    for text in PROMPTS + ["The lazy dog, thank you!"]:
        assert list(ours.encode(text)) == list(theirs.encode(text))
        assert ours.decode(ours.encode(text)) == theirs.decode(theirs.encode(text))


def test_greedy_matches_onnxruntime_genai(folder):
    for text in PROMPTS:
        tokens = encode(folder, text)
        ours = generate(oxg, folder, tokens, max_length=len(tokens) + 64)
        theirs = generate(og, folder, tokens, max_length=len(tokens) + 64)
        assert len(ours[0]) == len(tokens) + 64
        assert ours == theirs


def test_unshared_cache_matches(folder):
    config = oxg.Config(str(folder))
    config.overlay(json.dumps({"search": {"past_present_share_buffer": False}}))
    tokens = encode(folder, PROMPTS[1])
    ours = generate(oxg, folder, tokens, model=oxg.Model(config), max_length=len(tokens) + 64)
    theirs = generate(og, folder, tokens, max_length=len(tokens) + 64)
    assert ours == theirs


def test_batch_of_different_lengths_equals_each_alone(folder):
    tokenizer = oxg.Tokenizer(oxg.Model(str(folder)))
    rows = [tokenizer.encode(t) for t in PROMPTS]
    assert len(rows[0]) != len(rows[1])
    batch = tokenizer.encode_batch(PROMPTS)
    new_tokens = 40
    max_length = max(len(r) for r in rows) + new_tokens
    together = generate(oxg, folder, batch, batch_size=2, max_length=max_length)
    for row, sequence in zip(rows, together):
        # Every row gets the same number of new tokens (the batch stops at its longest row's max_length).
        alone = generate(og, folder, row, max_length=len(row) + new_tokens)[0]
        assert sequence == alone
    # Left padding gives the same sequences.
    left = np.full_like(batch, 0)
    for i, r in enumerate(rows):
        left[i, batch.shape[1] - len(r):] = r
    assert generate(oxg, folder, left, batch_size=2, max_length=max_length) == together


def test_sampling_is_reproducible_and_top_k_1_is_greedy(folder):
    tokens = encode(folder, PROMPTS[0])
    options = dict(max_length=len(tokens) + 32, do_sample=True, top_k=20, top_p=0.9, temperature=0.8)
    first = generate(oxg, folder, tokens, random_seed=7, **options)
    assert first == generate(oxg, folder, tokens, random_seed=7, **options)
    assert first != generate(oxg, folder, tokens, random_seed=8, **options)
    greedy = generate(oxg, folder, tokens, max_length=len(tokens) + 32)
    assert generate(oxg, folder, tokens, max_length=len(tokens) + 32, do_sample=True, top_k=1, random_seed=3) == greedy


def test_repetition_penalty_matches_onnxruntime_genai(folder):
    tokens = encode(folder, PROMPTS[1])
    options = dict(max_length=len(tokens) + 48, repetition_penalty=1.5)
    assert generate(oxg, folder, tokens, **options) == generate(og, folder, tokens, **options)


def test_beam_search_matches_onnxruntime_genai(folder):
    tokens = encode(folder, PROMPTS[0])
    options = dict(max_length=len(tokens) + 16, num_beams=4, num_return_sequences=2, length_penalty=1.0)
    ours = generate(oxg, folder, tokens, **options)
    theirs = generate(og, folder, tokens, **options)
    # og pads a hypothesis that ended early; compare the tokens before padding.
    assert [s[: len(t)] for s, t in zip(ours, theirs)] == [t[: len(s)] for s, t in zip(ours, theirs)]
    assert ours[0][: len(tokens)] == list(tokens)


def test_rewind_then_regenerate_equals_fresh(folder):
    model = oxg.Model(str(folder))
    tokens = encode(folder, PROMPTS[1])
    params = oxg.GeneratorParams(model)
    params.set_search_options(max_length=len(tokens) + 40)
    generator = oxg.Generator(model, params)
    generator.append_tokens(tokens[:3])
    for _ in range(10):
        generator.generate_next_token()
    generator.rewind_to(3)
    assert list(generator.get_sequence(0)) == list(tokens[:3])
    generator.append_tokens(tokens[3:])
    while not generator.is_done():
        generator.generate_next_token()
    assert list(generator.get_sequence(0)) == generate(og, folder, tokens, max_length=len(tokens) + 40)[0]


def test_turns_keep_the_cache(folder):
    # As `onyx chat`: a second turn appended after generating equals one run of the whole text.
    model = oxg.Model(str(folder))
    first, second = encode(folder, PROMPTS[0]), encode(folder, PROMPTS[1])
    params = oxg.GeneratorParams(model)
    params.set_search_options(max_length=80)
    generator = oxg.Generator(model, params)
    generator.append_tokens(first)
    for _ in range(5):
        generator.generate_next_token()
    generator.append_tokens(second)
    for _ in range(10):
        generator.generate_next_token()
    whole = list(generator.get_sequence(0))
    prefix = whole[: len(first) + 5 + len(second)]
    assert generate(og, folder, np.array(prefix, np.int32), max_length=len(prefix) + 10)[0] == whole


def test_logits_match_onnxruntime_genai(folder):
    tokens = encode(folder, PROMPTS[0])
    ours = oxg.Generator(oxg.Model(str(folder)), oxg.GeneratorParams(oxg.Model(str(folder))))
    model = og.Model(str(folder))
    theirs = og.Generator(model, og.GeneratorParams(model))
    ours.append_tokens(tokens)
    theirs.append_tokens(tokens)
    np.testing.assert_allclose(ours.get_logits(), theirs.get_logits(), rtol=1e-4, atol=1e-4)


def test_int8_cache_halves_the_cache(folder):
    config = oxg.Config(str(folder))
    config.overlay({"model": {"decoder": {"kv_cache_type": "int8"}}})
    int8 = oxg.Model(config)
    full = oxg.Model(str(folder))
    assert int8.kv_cache_bytes(1, 160) * 2 <= full.kv_cache_bytes(1, 160)
    tokens = encode(folder, PROMPTS[1])
    assert len(generate(oxg, folder, tokens, model=int8, max_length=len(tokens) + 16)[0]) == len(tokens) + 16


def _realistic_attention_folder(root):
    """A tiny random Llama whose q/k projections have std 0.1: attention
    scores of the size trained models have (the fixtures' 0.5 gives scores
    in the tens, a saturated softmax that flips on any rounding)."""
    from safetensors.numpy import save_file

    from onyx.genai import builder

    source = write_config(str(root / "config"), tiny_config("llama", pad_token_id=0))
    weights = builder.random_weights(builder.read_config(source), 0)
    for name in weights:
        if "q_proj" in name or "k_proj" in name:
            weights[name] *= np.float32(0.1 / 0.5)
    save_file(weights, os.path.join(source, "model.safetensors"))
    out = str(root / "model")
    builder.build(source, out, "fp32", log=lambda message: None)
    return out


def test_int8_cache_keeps_the_greedy_tokens(tmp_path):
    """Each of 128 greedy steps picks the same token from the int8 cache's
    logits as from the float cache's, on at least 95% of the steps. Both read
    the same history (the float cache's tokens), so one flipped near-tie of a
    random model does not send the rest of the sequence elsewhere."""
    folder = _realistic_attention_folder(tmp_path)
    config = oxg.Config(folder)
    config.overlay({"model": {"decoder": {"kv_cache_type": "int8"}}})
    tokens = encode(folder, PROMPTS[1])
    generators = []
    for model in (oxg.Model(folder), oxg.Model(config)):
        params = oxg.GeneratorParams(model)
        params.set_search_options(max_length=len(tokens) + 129)
        generators.append(oxg.Generator(model, params))
        generators[-1].append_tokens(tokens)
    same = 0
    for _ in range(128):
        reference, quantized = (np.asarray(g.get_logits()).reshape(-1) for g in generators)
        same += int(reference.argmax() == quantized.argmax())
        for g in generators:
            g.append_tokens(np.array([reference.argmax()], np.int32))
    assert same >= 0.95 * 128, f"{same} of 128 steps agree"


def test_errors_name_what_is_wrong(folder, tmp_path):
    with pytest.raises(RuntimeError, match="does not exist"):
        oxg.Model(str(tmp_path / "missing"))
    with pytest.raises(RuntimeError, match="no genai_config.json"):
        oxg.Model(str(tmp_path))
    broken = tmp_path / "broken"
    shutil.copytree(folder, broken)
    config = json.loads((broken / "genai_config.json").read_text())
    del config["model"]["decoder"]["num_hidden_layers"]
    (broken / "genai_config.json").write_text(json.dumps(config))
    with pytest.raises(RuntimeError, match=r"genai_config.json: model.decoder.num_hidden_layers: the key is missing"):
        oxg.Model(str(broken))
    config["model"]["decoder"]["num_hidden_layers"] = "two"
    (broken / "genai_config.json").write_text(json.dumps(config))
    with pytest.raises(RuntimeError, match=r"model.decoder.num_hidden_layers: expected an integer"):
        oxg.Model(str(broken))
    config["model"]["decoder"]["num_hidden_layers"] = 2
    config["model"]["decoder"]["filename"] = "nothere.onnx"
    (broken / "genai_config.json").write_text(json.dumps(config))
    with pytest.raises(RuntimeError, match="model.decoder.filename: 'nothere.onnx' is not a file"):
        oxg.Model(str(broken))
    config["model"]["decoder"]["filename"] = "model.onnx"
    config["model"]["decoder"]["inputs"]["past_key_names"] = "past.%d.k"
    (broken / "genai_config.json").write_text(json.dumps(config))
    with pytest.raises(RuntimeError, match="has no input 'past.0.k'"):
        oxg.Model(str(broken))
    model = oxg.Model(str(folder))
    params = oxg.GeneratorParams(model)
    params.set_search_options(max_length=8)
    generator = oxg.Generator(model, params)
    with pytest.raises(RuntimeError, match="more than max_length 8"):
        generator.append_tokens(np.arange(3, 13, dtype=np.int32))
    with pytest.raises(RuntimeError, match="unknown search option 'top_q'"):
        params.set_search_options(top_q=0.5)
