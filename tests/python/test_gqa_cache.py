"""GroupQueryAttention's KV cache against onnxruntime's kernel (the same node):
prompts and decoding steps, with and without a past buffer, rotary on and
off, batches with different lengths, local windows, GQA group 7 (14 heads
over 2 kv heads, head 64), prompts up to 1024; the cache bound as both past
and present through IOBinding and appended to in place; and onyx's int8
PER_TOKEN cache, within a bound derived from its quantization error."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onyx

ort = pytest.importorskip("onnxruntime")

INPUTS = ["query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length", "cos_cache",
          "sin_cache"]


def gqa_model(heads, kv_heads, *, rotary=False, window=-1, quant=None, cache_type=TensorProto.FLOAT):
    names = INPUTS if rotary else INPUTS[:7]
    types = {"seqlens_k": TensorProto.INT32, "total_sequence_length": TensorProto.INT32, "past_key": cache_type,
             "past_value": cache_type}
    ranks = {"query": 3, "key": 3, "value": 3, "past_key": 4, "past_value": 4, "seqlens_k": 1,
             "total_sequence_length": 0, "cos_cache": 2, "sin_cache": 2}
    attrs = dict(num_heads=heads, kv_num_heads=kv_heads, local_window_size=window, do_rotary=int(rotary))
    if quant:
        attrs.update(k_quant_type=quant, v_quant_type=quant)
    node = helper.make_node("GroupQueryAttention", names, ["output", "present_key", "present_value"],
                            domain="com.microsoft", name="gqa", **attrs)
    graph = helper.make_graph(
        [node], "gqa",
        [helper.make_tensor_value_info(n, types.get(n, TensorProto.FLOAT), [None] * ranks[n]) for n in names],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("present_key", cache_type, None),
         helper.make_tensor_value_info("present_value", cache_type, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return model.SerializeToString()


def ort_session(model):
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def rotary_tables(max_len, head):
    inv = 1.0 / 10000 ** (np.arange(0, head, 2, dtype=np.float64) / head)
    angles = np.outer(np.arange(max_len), inv)
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def make_feeds(rng, batch, seq, heads, kv_heads, head, capacity, seqlens, total, rotary):
    """New tokens of `seq` rows, a past buffer of `capacity` rows (None: no
    past input), and the lengths."""
    feeds = {
        "query": rng.standard_normal((batch, seq, heads * head)).astype(np.float32),
        "key": rng.standard_normal((batch, seq, kv_heads * head)).astype(np.float32),
        "value": rng.standard_normal((batch, seq, kv_heads * head)).astype(np.float32),
        "seqlens_k": np.array(seqlens, np.int32),
        "total_sequence_length": np.array(total, np.int32),
    }
    if capacity is not None:
        feeds["past_key"] = rng.standard_normal((batch, kv_heads, capacity, head)).astype(np.float32)
        feeds["past_value"] = rng.standard_normal((batch, kv_heads, capacity, head)).astype(np.float32)
    if rotary:
        feeds["cos_cache"], feeds["sin_cache"] = rotary_tables(max(capacity or 0, total) + 8, head)
    return feeds


def run_both(model, feeds):
    if "past_key" not in feeds:  # the past inputs are omitted: named by ""
        proto = onnx.load_from_string(model)
        node = proto.graph.node[0]
        node.input[3] = node.input[4] = ""
        kept = [i for i in proto.graph.input if i.name not in ("past_key", "past_value")]
        del proto.graph.input[:]
        proto.graph.input.extend(kept)
        model = proto.SerializeToString()
    return onyx.InferenceSession(model).run(None, feeds), ort_session(model).run(None, feeds)


def assert_matches(got, want, seqlens, tol=2e-4):
    np.testing.assert_allclose(got[0], want[0], rtol=tol, atol=tol)
    for i in (1, 2):
        assert got[i].shape == want[i].shape
        for b, n in enumerate(seqlens):  # rows past the valid ones are not specified
            np.testing.assert_allclose(got[i][b, :, : n + 1], want[i][b, :, : n + 1], rtol=tol, atol=tol)


GROUP7 = dict(heads=14, kv_heads=2, head=64)


@pytest.mark.parametrize("seq", [1, 17, 128, 1024])
@pytest.mark.parametrize("rotary", [False, True])
@pytest.mark.parametrize("with_past", [False, True])
def test_prompt_matches_onnxruntime(seq, rotary, with_past):
    rng = np.random.default_rng(seq)
    capacity = seq + 16 if with_past else None
    feeds = make_feeds(rng, 1, seq, GROUP7["heads"], GROUP7["kv_heads"], GROUP7["head"], capacity, [seq - 1], seq,
                       rotary)
    model = gqa_model(GROUP7["heads"], GROUP7["kv_heads"], rotary=rotary)
    got, want = run_both(model, feeds)
    assert_matches(got, want, [seq - 1])


@pytest.mark.parametrize("past", [5, 128, 511])
@pytest.mark.parametrize("rotary", [False, True])
@pytest.mark.parametrize("window", [-1, 64])
def test_decode_matches_onnxruntime(past, rotary, window):
    rng = np.random.default_rng(past)
    capacity = 600
    # Batch 2 with different lengths: the second sequence is shorter.
    seqlens = [past, max(past // 2, 1)]
    feeds = make_feeds(rng, 2, 1, GROUP7["heads"], GROUP7["kv_heads"], GROUP7["head"], capacity, seqlens, past + 1,
                       rotary)
    model = gqa_model(GROUP7["heads"], GROUP7["kv_heads"], rotary=rotary, window=window)
    got, want = run_both(model, feeds)
    assert_matches(got, want, seqlens)


@pytest.mark.parametrize("window", [-1, 50])
def test_chunk_after_a_past_matches_onnxruntime(window):
    """Several new tokens after cached ones (chunked prefill): the blocked
    path with queries that start past row 0."""
    rng = np.random.default_rng(5)
    past, seq = 300, 100
    feeds = make_feeds(rng, 1, seq, GROUP7["heads"], GROUP7["kv_heads"], GROUP7["head"], 512, [past + seq - 1],
                       past + seq, True)
    got, want = run_both(gqa_model(GROUP7["heads"], GROUP7["kv_heads"], rotary=True, window=window), feeds)
    assert_matches(got, want, [past + seq - 1])


def test_shared_buffer_through_iobinding_appends_in_place():
    """past_key/present_key bound to one OrtValue (onnxruntime-genai's
    past_present_share_buffer): decoding steps append to it in place and match
    onnxruntime's steps over a plain cache."""
    rng = np.random.default_rng(7)
    heads, kv_heads, head, capacity, prompt = 14, 2, 64, 48, 9
    model = gqa_model(heads, kv_heads, rotary=True)
    session, reference = onyx.InferenceSession(model), ort_session(model)
    cos, sin = rotary_tables(capacity, head)
    cache_k = np.full((1, kv_heads, capacity, head), 3.0, np.float32)  # 3.0: rows never written
    cache_v = np.full_like(cache_k, 3.0)
    k_value = onyx.OrtValue.ortvalue_from_numpy(cache_k)
    v_value = onyx.OrtValue.ortvalue_from_numpy(cache_v)
    ref_k, ref_v = np.zeros_like(cache_k), np.zeros_like(cache_v)
    length = 0
    for step, seq in enumerate([prompt, 1, 1, 1]):
        feeds = {
            "query": rng.standard_normal((1, seq, heads * head)).astype(np.float32),
            "key": rng.standard_normal((1, seq, kv_heads * head)).astype(np.float32),
            "value": rng.standard_normal((1, seq, kv_heads * head)).astype(np.float32),
            "seqlens_k": np.array([length + seq - 1], np.int32),
            "total_sequence_length": np.array(length + seq, np.int32),
            "cos_cache": cos, "sin_cache": sin,
        }
        want, ref_k, ref_v = reference.run(None, {**feeds, "past_key": ref_k, "past_value": ref_v})
        binding = session.io_binding()
        for name, array in feeds.items():
            binding.bind_cpu_input(name, array)
        binding.bind_ortvalue_input("past_key", k_value)
        binding.bind_ortvalue_input("past_value", v_value)
        binding.bind_output("output")
        binding.bind_ortvalue_output("present_key", k_value)
        binding.bind_ortvalue_output("present_value", v_value)
        session.run_with_iobinding(binding)
        got = binding.copy_outputs_to_cpu()[0]
        length += seq
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-4, err_msg=f"step {step}")
        # The caller's arrays hold the cache: the valid rows match onnxruntime's
        # present, the others were never touched (a copy would have zeroed them).
        np.testing.assert_allclose(cache_k[:, :, :length], ref_k[:, :, :length], rtol=2e-4, atol=2e-4)
        np.testing.assert_allclose(cache_v[:, :, :length], ref_v[:, :, :length], rtol=2e-4, atol=2e-4)
        assert np.all(cache_k[:, :, length:] == 3.0) and np.all(cache_v[:, :, length:] == 3.0)


def quantize_rows(x):
    """onyx's PER_TOKEN rows: int8 values then the float32 scale's 4 bytes."""
    scale = (np.abs(x).max(axis=-1, keepdims=True) / 127).astype(np.float32)
    q = np.clip(np.round(np.divide(x, scale, out=np.zeros_like(x), where=scale > 0)), -127, 127).astype(np.int8)
    return np.concatenate([q, scale.view(np.int8).reshape(*x.shape[:-1], 4)], axis=-1)


def dequantize_rows(rows):
    head = rows.shape[-1] - 4
    scale = np.ascontiguousarray(rows[..., head:]).view(np.float32)
    return rows[..., :head].astype(np.float32) * scale


@pytest.mark.parametrize("seq", [1, 64])
def test_int8_cache_within_its_quantization_error(seq):
    rng = np.random.default_rng(11 + seq)
    heads, kv_heads, head, capacity, past = 14, 2, 64, 300, 200
    # onnxruntime takes several new tokens after a past for batch 1 only.
    pasts = [past, past // 3] if seq == 1 else [past]
    feeds = make_feeds(rng, len(pasts), seq, heads, kv_heads, head, capacity, [p + seq - 1 for p in pasts],
                       past + seq, rotary=True)
    float_out, _, _ = ort_session(gqa_model(heads, kv_heads, rotary=True)).run(None, feeds)
    int8_model = gqa_model(heads, kv_heads, rotary=True, quant="PER_TOKEN", cache_type=TensorProto.INT8)
    int8_feeds = dict(feeds, past_key=quantize_rows(feeds["past_key"]), past_value=quantize_rows(feeds["past_value"]))
    out, present_k, present_v = onyx.InferenceSession(int8_model).run(None, int8_feeds)
    assert present_k.dtype == np.int8 and present_k.shape == (len(pasts), kv_heads, capacity, head + 4)
    assert present_k.nbytes <= 0.3 * feeds["past_key"].nbytes
    # The past rows are kept as given; the new ones are onyx's quantization
    # of the rotated keys (onnxruntime's float present) and of the values.
    _, float_k, float_v = ort_session(gqa_model(heads, kv_heads, rotary=True)).run(None, feeds)
    for b, rows in enumerate(pasts):
        np.testing.assert_array_equal(present_k[b, :, :rows], int8_feeds["past_key"][b, :, :rows])
        new_k = dequantize_rows(present_k[b, :, rows:rows + seq])
        new_v = dequantize_rows(present_v[b, :, rows:rows + seq])
        step_k = np.abs(float_k[b, :, rows:rows + seq]).max(axis=-1, keepdims=True) / 127
        step_v = np.abs(float_v[b, :, rows:rows + seq]).max(axis=-1, keepdims=True) / 127
        assert np.all(np.abs(new_k - float_k[b, :, rows:rows + seq]) <= step_k * 0.5 + 1e-6)
        assert np.all(np.abs(new_v - float_v[b, :, rows:rows + seq]) <= step_v * 0.5 + 1e-6)
    # The bound: each key element moves by at most half its row's step, so a
    # score q.k * scale moves by eps <= scale * sum|q| * max step / 2; logits
    # within eps change the softmax weights by at most exp(2 eps) - 1 in L1,
    # and each value element moves by at most half its row's step.
    scale = 1 / np.sqrt(head)
    # Rotating a pair (a, b) gives |a cos - b sin| + |b cos + a sin| <= sqrt(2) (|a| + |b|).
    q = np.abs(feeds["query"]).reshape(len(pasts), seq, heads, head).sum(-1) * np.sqrt(2)
    k_step = np.abs(float_k).max() / 127 / 2
    v_step = np.abs(float_v).max() / 127 / 2
    eps = scale * q.max() * k_step
    bound = (np.exp(2 * eps) - 1) * np.abs(float_v).max() + v_step
    error = np.abs(out - float_out).max()
    assert error <= bound, f"int8 cache error {error} exceeds its bound {bound}"
    assert error > 0  # the int8 cache is really quantized


def test_int8_cache_errors_name_the_expected_layout():
    heads, kv_heads, head = 4, 2, 16
    model = gqa_model(heads, kv_heads, quant="PER_TOKEN", cache_type=TensorProto.INT8)
    rng = np.random.default_rng(3)
    feeds = make_feeds(rng, 1, 1, heads, kv_heads, head, 8, [4], 5, rotary=False)
    feeds["past_key"] = feeds["past_value"] = np.zeros((1, kv_heads, 8, head), np.int8)
    with pytest.raises(Exception, match=r"\+ 4 bytes"):
        onyx.InferenceSession(model).run(None, feeds)
