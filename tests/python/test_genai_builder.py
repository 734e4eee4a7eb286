"""python -m onyx.genai.builder: the folders it writes run in onnxruntime,
onyx and onnxruntime-genai alike; with torch and transformers installed, its
logits and greedy tokens equal transformers' own; and models written by
onnxruntime-genai's builder run in onyx unchanged."""

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest

import onyx
from genai_models import ARCHS, build_tiny_model, decode_loop, empty_past, tiny_config, write_config

ort = pytest.importorskip("onnxruntime")

PROMPT = [1, 17, 99, 3, 250, 7, 42]


def _with_accuracy_level(folder, level):
    """A copy of the folder's model.onnx whose MatMulNBits nodes have this accuracy_level (its path)."""
    model = onnx.load(os.path.join(folder, "model.onnx"))
    for node in model.graph.node:
        if node.op_type == "MatMulNBits":
            for attr in node.attribute:
                if attr.name == "accuracy_level":
                    attr.i = level
            if not any(a.name == "accuracy_level" for a in node.attribute):
                node.attribute.append(onnx.helper.make_attribute("accuracy_level", level))
    path = os.path.join(folder, f"model-accuracy{level}.onnx")
    onnx.save(model, path)
    return path


def _check_int4(folder, ref_session, onyx_session, label):
    """int4 logits of onyx against onnxruntime's, on onnxruntime's greedy tokens.

    With accuracy_level 0 (float activations) the two must agree as float
    models do. At accuracy_level 4 each runtime rounds the activations to
    int8 per block, and that rounding is discontinuous: an upstream
    difference of 5e-7 (a normalization summed in another order) moves one
    value across a rounding boundary, one int8 step, and a random model
    amplifies it layer by layer (seen: a 0.05 difference after the first
    projection, 0.6 in the logits, on a CPU where onnxruntime's kernels take
    another path). So there each runtime is measured against the
    float-activation logits, and onyx's distance must stay within twice
    onnxruntime's: a wrong graph or kernel lands far outside that."""
    tokens, ref = decode_loop(ref_session, folder, PROMPT, 6)
    exact_path = _with_accuracy_level(folder, 0)
    _, exact = decode_loop(ort.InferenceSession(exact_path, providers=["CPUExecutionProvider"]), folder, PROMPT, 6,
                           forced=tokens)
    _, onyx_exact = decode_loop(onyx.InferenceSession(exact_path), folder, PROMPT, 6, forced=tokens)
    _, got = decode_loop(onyx_session, folder, PROMPT, 6, forced=tokens)
    scale = max(float(np.abs(r).max()) for r in exact)
    for step, (e, g) in enumerate(zip(exact, onyx_exact)):
        assert np.abs(e - g).max() <= 1e-4 * max(scale, 1.0), f"{label} accuracy_level 0 step {step}"
    theirs = max(float(np.abs(e - r).max()) for e, r in zip(exact, ref))
    ours = max(float(np.abs(e - g).max()) for e, g in zip(exact, got))
    assert ours <= 2 * theirs + 1e-4 * scale, (
        f"{label}: onyx's int8-activation logits are {ours} from the float-activation ones, onnxruntime's {theirs}")


def _sessions(folder):
    path = os.path.join(folder, "model.onnx")
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]), onyx.InferenceSession(path)


def _onyx_env():
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(onyx.__file__)))
    env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _run_builder(*args):
    return subprocess.run([sys.executable, "-m", "onyx.genai.builder", *args], capture_output=True, text=True,
                          env=_onyx_env(), timeout=300)


# ---------------------------------------------------------------------------
# Without torch


@pytest.mark.parametrize("precision", ["fp32", "fp16", "int4"])
@pytest.mark.parametrize("arch", ARCHS)
def test_onyx_matches_onnxruntime(tmp_path, arch, precision):
    folder = build_tiny_model(tmp_path, arch, precision)
    ref_session, onyx_session = _sessions(folder)
    if precision == "int4":
        _check_int4(folder, ref_session, onyx_session, f"{arch} int4")
        return
    tokens, ref = decode_loop(ref_session, folder, PROMPT, 6)
    _, got = decode_loop(onyx_session, folder, PROMPT, 6, forced=tokens)
    scale = max(float(np.abs(r).max()) for r in ref)
    tol = {"fp32": 1e-4 * max(scale, 1.0), "fp16": 1e-2 * scale}[precision]
    for step, (r, g) in enumerate(zip(ref, got)):
        assert np.abs(r - g).max() <= tol, f"{arch} {precision} step {step}: max diff {np.abs(r - g).max()} > {tol}"


def test_graph_interface(tmp_path):
    folder = build_tiny_model(tmp_path, "qwen2", "int4")
    model = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
    ops = {n.op_type for n in model.graph.node}
    assert {"GroupQueryAttention", "MatMulNBits", "SimplifiedLayerNormalization",
            "SkipSimplifiedLayerNormalization"} <= ops and "MatMul" not in ops
    gqa = [n for n in model.graph.node if n.op_type == "GroupQueryAttention"]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in gqa[0].attribute}
    assert attrs["do_rotary"] == 1 and attrs["num_heads"] == 4 and attrs["kv_num_heads"] == 2
    nbits = [n for n in model.graph.node if n.op_type == "MatMulNBits"][0]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in nbits.attribute}
    assert (attrs["bits"], attrs["block_size"], attrs["accuracy_level"]) == (4, 32, 4) and len(nbits.input) == 3
    names = [i.name for i in model.graph.input]
    assert names == ["input_ids", "attention_mask", "past_key_values.0.key", "past_key_values.0.value",
                     "past_key_values.1.key", "past_key_values.1.value"]
    assert [o.name for o in model.graph.output] == ["logits", "present.0.key", "present.0.value", "present.1.key",
                                                    "present.1.value"]
    with open(os.path.join(folder, "genai_config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    assert cfg["model"]["type"] == "qwen2" and cfg["search"]["past_present_share_buffer"] is True
    assert cfg["model"]["decoder"]["inputs"]["past_key_names"] == "past_key_values.%d.key"


def test_gpt2_has_no_rotary_and_full_kv_heads(tmp_path):
    folder = build_tiny_model(tmp_path, "gpt2", "fp32")
    model = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
    gqa = [n for n in model.graph.node if n.op_type == "GroupQueryAttention"][0]
    attrs = {a.name: onnx.helper.get_attribute_value(a) for a in gqa.attribute}
    assert attrs["do_rotary"] == 0 and attrs["num_heads"] == attrs["kv_num_heads"] == 4
    assert {"LayerNormalization", "SkipLayerNormalization", "FastGelu"} <= {n.op_type for n in model.graph.node}


def test_extra_options(tmp_path):
    folder = build_tiny_model(tmp_path, "llama", "int4",
                              extra_options={"int4_block_size": "16", "int4_accuracy_level": "0",
                                             "exclude_lm_head": "true"})
    model = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
    nbits = [n for n in model.graph.node if n.op_type == "MatMulNBits"]
    assert all({a.name: a.i for a in n.attribute}["block_size"] == 16 for n in nbits)
    assert all({a.name: a.i for a in n.attribute}["accuracy_level"] == 0 for n in nbits)
    assert model.graph.output[0].name == "hidden_states"
    ref_session, onyx_session = _sessions(folder)
    feeds = {"input_ids": np.array([PROMPT], np.int64), "attention_mask": np.ones((1, len(PROMPT)), np.int64),
             **empty_past(ref_session, folder)}
    ref, got = ref_session.run(["hidden_states"], feeds)[0], onyx_session.run(["hidden_states"], feeds)[0]
    np.testing.assert_allclose(got, ref, atol=1e-4 * max(1.0, float(np.abs(ref).max())))


@pytest.mark.parametrize("symmetric", ["true", "false"])
def test_int4_tied_embeddings_share_the_4bit_table(tmp_path, symmetric):
    """Tied embeddings at int4 are stored once, in 4 bits: the lookup is a
    GatherBlockQuantized over the lm_head's MatMulNBits table (symmetric, and
    with zero points), and onyx's logits agree with onnxruntime's."""
    folder = build_tiny_model(tmp_path, "qwen2", "int4", extra_options={"int4_is_symmetric": symmetric})
    model = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
    ops = [n.op_type for n in model.graph.node]
    assert "GatherBlockQuantized" in ops and "Gather" not in [n.op_type for n in model.graph.node
                                                               if "embed_tokens" in n.name]
    floats = [i for i in model.graph.initializer if i.data_type == onnx.TensorProto.FLOAT]
    assert all(list(i.dims) != [512, 64] for i in floats), "a float [vocab, hidden] table is still stored"
    # The same model with float activations (accuracy_level 0) is the exact
    # result of the 4-bit weights; int8 activations (level 4) move both
    # runtimes' logits away from it by rounding, each its own way: onyx's
    # distance from it must be of the size of onnxruntime's.
    exact_path = os.path.join(folder, "model_level0.onnx")
    level0 = onnx.load(os.path.join(folder, "model.onnx"))
    for node in level0.graph.node:
        for attr in node.attribute:
            if attr.name == "accuracy_level":
                attr.i = 0
    onnx.save(level0, exact_path)
    exact_session = ort.InferenceSession(exact_path, providers=["CPUExecutionProvider"])
    ref_session, onyx_session = _sessions(folder)
    tokens, exact = decode_loop(exact_session, folder, PROMPT, 4)
    _, ref = decode_loop(ref_session, folder, PROMPT, 4, forced=tokens)
    _, got = decode_loop(onyx_session, folder, PROMPT, 4, forced=tokens)
    scale = max(float(np.abs(e).max()) for e in exact)
    for step, (e, r, g) in enumerate(zip(exact, ref, got)):
        ort_error, onyx_error = float(np.abs(r - e).max()), float(np.abs(g - e).max())
        assert onyx_error <= 1.5 * ort_error + 1e-3 * scale, f"step {step}: onyx {onyx_error}, onnxruntime {ort_error}"


@pytest.mark.parametrize("precision", ["fp32", "int4"])
@pytest.mark.parametrize("arch", ["gpt2", "qwen2", "llama"])
def test_onnxruntime_genai_generates_the_decode_loop_tokens(tmp_path, arch, precision):
    og = pytest.importorskip("onnxruntime_genai")
    folder = build_tiny_model(tmp_path, arch, precision, eos_token_id=0)
    steps = 24
    tokens, _ = decode_loop(ort.InferenceSession(os.path.join(folder, "model.onnx")), folder, PROMPT, steps)
    if 0 in tokens:  # the loop runs on past eos; og stops there
        tokens = tokens[:tokens.index(0) + 1]
    model = og.Model(folder)
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(PROMPT) + steps, do_sample=False)
    generator = og.Generator(model, params)
    generator.append_tokens([PROMPT])
    while not generator.is_done():
        generator.generate_next_token()
    generated = list(generator.get_sequence(0))[len(PROMPT):]
    assert generated == tokens


def test_trained_tokenizer_loads_in_onnxruntime_genai(tmp_path):
    og = pytest.importorskip("onnxruntime_genai")
    tokenizers = pytest.importorskip("tokenizers")
    folder = build_tiny_model(tmp_path, "llama", "fp32")
    reference = tokenizers.Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    assert reference.get_vocab_size() <= 512
    assert reference.id_to_token(1) == "<|begin_of_text|>" and reference.id_to_token(2) == "<|endoftext|>"
    tokenizer = og.Tokenizer(og.Model(folder))
    text = "The boat left the harbour at 7:45, and the cat slept."
    ids = list(tokenizer.encode(text))
    assert ids == reference.encode(text).ids
    assert tokenizer.decode(ids) == text


def test_builder_command_line(tmp_path):
    source = write_config(str(tmp_path / "src"), tiny_config("mistral"))
    out = tmp_path / "out"
    result = _run_builder("-i", source, "-o", str(out), "-p", "int4", "-e", "cpu",
                          "--extra_options", "int4_block_size=32", "int4_accuracy_level=4")
    assert result.returncode == 0, result.stderr
    assert "random weights" in result.stderr and "nothing is downloaded" in result.stderr
    assert {"model.onnx", "model.onnx.data", "genai_config.json", "tokenizer.json",
            "tokenizer_config.json"} <= set(os.listdir(out))


@pytest.mark.parametrize("args, message", [
    (["-p", "int3"], "invalid choice: 'int3'"),
    (["-p", "fp32", "--extra_options", "int4_block_size=33"], "int4_block_size 33"),
    (["-p", "fp32", "--extra_options", "nonsense=1"], "unknown option 'nonsense'"),
    (["-p", "fp32", "-e", "cuda"], "invalid choice: 'cuda'"),
])
def test_builder_option_errors(tmp_path, args, message):
    source = write_config(str(tmp_path / "src"), tiny_config("llama"))
    result = _run_builder("-i", source, "-o", str(tmp_path / "out"), *args)
    assert result.returncode != 0 and message in result.stderr and "Traceback" not in result.stderr


def test_builder_input_errors(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _run_builder("-i", str(empty), "-o", str(tmp_path / "out"), "-p", "fp32")
    assert result.returncode != 0 and "no config.json" in result.stderr and "Traceback" not in result.stderr

    bert = write_config(str(tmp_path / "bert"), {"architectures": ["BertForMaskedLM"], "model_type": "bert"})
    result = _run_builder("-i", bert, "-o", str(tmp_path / "out"), "-p", "fp32")
    assert result.returncode != 0 and "BertForMaskedLM" in result.stderr and "not supported" in result.stderr
    assert "Traceback" not in result.stderr

    result = _run_builder("-m", "nobody/no-such-model", "-o", str(tmp_path / "out"), "-p", "fp32",
                          "-c", str(tmp_path / "cache"))
    assert result.returncode != 0 and "not in the local Hugging Face cache" in result.stderr
    assert "Traceback" not in result.stderr

    broken = write_config(str(tmp_path / "broken"), {k: v for k, v in tiny_config("llama").items()
                                                     if k != "num_attention_heads"})
    result = _run_builder("-i", broken, "-o", str(tmp_path / "out"), "-p", "fp32")
    assert result.returncode != 0 and "num_attention_heads" in result.stderr and "Traceback" not in result.stderr


def test_model_name_resolves_from_local_cache(tmp_path):
    snapshot = tmp_path / "cache" / "models--someone--tiny-llama" / "snapshots" / "abc123"
    write_config(str(snapshot), tiny_config("llama"))
    refs = tmp_path / "cache" / "models--someone--tiny-llama" / "refs"
    refs.mkdir(parents=True)
    (refs / "main").write_text("abc123")
    out = tmp_path / "out"
    result = _run_builder("-m", "someone/tiny-llama", "-c", str(tmp_path / "cache"), "-o", str(out), "-p", "fp32")
    assert result.returncode == 0, result.stderr
    assert os.path.isfile(out / "model.onnx")


# ---------------------------------------------------------------------------
# With torch and transformers


def _transformers():
    try:
        import torch
        import transformers
    except ImportError as e:
        pytest.skip(f"needs torch and transformers ({e}); CI installs neither")
    return torch, transformers


def _hf_model(arch, torch, transformers):
    """A seeded random transformers model with decisive logits (initializer_range 0.2) and nonzero biases."""
    torch.manual_seed(0)
    common = dict(vocab_size=512, initializer_range=0.2, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    if arch == "gpt2":
        config = transformers.GPT2Config(n_embd=64, n_layer=2, n_head=4, n_positions=256, **common)
        model = transformers.GPT2LMHeadModel(config)
    else:
        kwargs = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=256, **common)
        if arch == "llama":
            model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
                rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                              "original_max_position_embeddings": 64}, rope_theta=500000.0, **kwargs))
        else:
            model = transformers.Qwen2ForCausalLM(transformers.Qwen2Config(tie_word_embeddings=True, **kwargs))
    with torch.no_grad():  # transformers starts biases and norms at 0 and 1: make them matter
        for name, p in model.named_parameters():
            if name.endswith("bias") or "norm" in name or "ln_" in name:
                p.add_(torch.randn_like(p) * 0.1)
    return model.eval()


@pytest.mark.parametrize("arch", ["gpt2", "llama", "qwen2"])
def test_matches_transformers(tmp_path, arch):
    torch, transformers = _transformers()
    model = _hf_model(arch, torch, transformers)
    source = str(tmp_path / "hf")
    model.save_pretrained(source)
    out = str(tmp_path / "onnx")
    result = _run_builder("-i", source, "-o", out, "-p", "fp32")
    assert result.returncode == 0, result.stderr
    session = ort.InferenceSession(os.path.join(out, "model.onnx"))
    tokens, logits = decode_loop(session, out, PROMPT, 8)
    with torch.no_grad():
        ids = torch.tensor([PROMPT + tokens])
        ref = model(ids).logits[0].numpy()
    for step, got in enumerate(logits):
        np.testing.assert_allclose(got, ref[len(PROMPT) - 1 + step], atol=1e-4, rtol=1e-4,
                                   err_msg=f"{arch} decode step {step}")
    new = 128
    generated, _ = decode_loop(session, out, PROMPT, new)
    # No stop token, so that generate() neither stops at eos nor (with min_new_tokens) masks it.
    model.generation_config.eos_token_id = None
    with torch.no_grad():
        expected = model.generate(torch.tensor([PROMPT]), attention_mask=torch.ones(1, len(PROMPT), dtype=torch.long),
                                  max_new_tokens=new, do_sample=False)[0, len(PROMPT):].tolist()
    assert len(expected) == new and generated == expected
    # onyx.genai's generator on the same folder: the same 128 tokens, with
    # end-of-sequence out of the way as in generate() above (an eos id that
    # transformers never chose).
    import onyx.genai as oxg

    config_path = os.path.join(out, "genai_config.json")
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    config["model"]["eos_token_id"] = min(set(range(512)) - set(expected) - set(PROMPT))
    with open(config_path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    genai_model = oxg.Model(out)
    params = oxg.GeneratorParams(genai_model)
    params.set_search_options(max_length=len(PROMPT) + new)
    generator = oxg.Generator(genai_model, params)
    generator.append_tokens(np.array(PROMPT, np.int32))
    while not generator.is_done():
        generator.generate_next_token()
    assert [int(t) for t in generator.get_sequence(0)[len(PROMPT):]] == expected


def _onnxruntime_genai_builder(source, out, precision):
    result = subprocess.run([sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", source, "-o", out,
                             "-p", precision, "-e", "cpu", "-c", os.path.join(out, "..", "og-cache")],
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        pytest.fail(f"onnxruntime-genai's builder failed: {result.stderr[-2000:]}")


@pytest.mark.parametrize("precision", ["fp32", "int4"])
def test_onnxruntime_genai_builder_models_run_in_onyx(tmp_path, precision):
    torch, transformers = _transformers()
    pytest.importorskip("onnxruntime_genai")
    # Qwen2: onnxruntime-genai's builder also loads the tokenizer, and its Llama path wants sentencepiece.
    model = _hf_model("qwen2", torch, transformers)
    source = str(tmp_path / "hf")
    model.save_pretrained(source)
    out = str(tmp_path / f"og-{precision}")
    _onnxruntime_genai_builder(source, out, precision)
    ref_session, onyx_session = _sessions(out)
    if precision == "int4":
        _check_int4(out, ref_session, onyx_session, "onnxruntime-genai's int4 qwen2")
        return
    tokens, ref = decode_loop(ref_session, out, PROMPT, 6)
    _, got = decode_loop(onyx_session, out, PROMPT, 6, forced=tokens)
    scale = max(float(np.abs(r).max()) for r in ref)
    tol = 1e-4 * max(scale, 1.0)
    for step, (r, g) in enumerate(zip(ref, got)):
        assert np.abs(r - g).max() <= tol, f"{precision} step {step}: max diff {np.abs(r - g).max()} > {tol}"
