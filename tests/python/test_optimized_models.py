"""Saved optimized models (SessionOptions.optimized_model_filepath) load in
onyx and in onnxruntime and give the outputs of the original model."""
import os

import numpy as np
import pytest

import onyx
from helpers import MODELS_DIR

ort = pytest.importorskip("onnxruntime")


def int_feeds(session, rng):
    feeds = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        dtype = np.int32 if i.type == "tensor(int32)" else np.int64
        feeds[i.name] = rng.integers(0, 2, shape).astype(dtype)
    return feeds


@pytest.mark.parametrize("name", ["TFBertForQuestionAnswering.onnx", "bert_toy_optimized.onnx"])
def test_saved_optimized_model_matches_in_both_runtimes(tmp_path, name):
    path = os.path.join(MODELS_DIR, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} not found: the real models live in ../shared/models")
    saved = str(tmp_path / "optimized.onnx")
    options = onyx.SessionOptions()
    options.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.optimized_model_filepath = saved
    # Saved as the CPU provider's passes leave it.
    optimized_in_onyx = onyx.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    reference = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feeds = int_feeds(reference, np.random.default_rng(0))
    expected = reference.run(None, feeds)

    assert os.path.exists(saved)
    saved_in_ort = ort.InferenceSession(saved, providers=["CPUExecutionProvider"])
    saved_in_onyx = onyx.InferenceSession(saved)
    for got in (optimized_in_onyx.run(None, feeds), saved_in_ort.run(None, feeds), saved_in_onyx.run(None, feeds)):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-3, atol=1e-4)
    # The extended level fused the layers: far fewer nodes were saved.
    import onnx
    assert len(onnx.load(saved).graph.node) < len(onnx.load(path).graph.node)


def _attention_layer_model(seq, past):
    """One self-attention layer written out as transformers exports it: Q/K/V
    projections, heads split by Reshape+Transpose, an additive [B, 1, S, T]
    mask shared by the heads (built from attention_mask), Softmax, heads
    merged; with `past`, key/value caches concatenated (a decode step)."""
    from onnx import TensorProto, helper, numpy_helper

    batch, hidden, heads = 2, 32, 4
    head = hidden // heads
    total = past + seq
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(np.array([batch, seq, heads, head], np.int64), "split_shape"),
             numpy_helper.from_array(np.array([batch, seq, hidden], np.int64), "merge_shape"),
             numpy_helper.from_array(np.array(1.0 / np.sqrt(head), np.float32), "scale")]
    nodes = []
    for p in "qkv":
        inits.append(numpy_helper.from_array((rng.standard_normal((hidden, hidden)) * 0.2).astype(np.float32), f"w_{p}"))
        inits.append(numpy_helper.from_array(rng.standard_normal(hidden).astype(np.float32), f"b_{p}"))
        nodes += [helper.make_node("MatMul", ["x", f"w_{p}"], [f"{p}_mm"]),
                  helper.make_node("Add", [f"{p}_mm", f"b_{p}"], [f"{p}_proj"]),
                  helper.make_node("Reshape", [f"{p}_proj", "split_shape"], [f"{p}_split"]),
                  helper.make_node("Transpose", [f"{p}_split"], [f"{p}_heads"], perm=[0, 2, 1, 3])]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, seq, hidden]),
              helper.make_tensor_value_info("mask", TensorProto.FLOAT, [batch, 1, seq, total])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, seq, hidden])]
    key, value = "k_heads", "v_heads"
    if past:
        for p in ("key", "value"):
            inputs.append(helper.make_tensor_value_info(f"past_{p}", TensorProto.FLOAT, [batch, heads, past, head]))
            outputs.append(helper.make_tensor_value_info(f"present_{p}", TensorProto.FLOAT, [batch, heads, total, head]))
            nodes.append(helper.make_node("Concat", [f"past_{p}", f"{p[0]}_heads"], [f"present_{p}"], axis=2))
        key, value = "present_key", "present_value"
    nodes += [helper.make_node("Transpose", [key], ["k_t"], perm=[0, 1, 3, 2]),
              helper.make_node("MatMul", ["q_heads", "k_t"], ["scores"]),
              helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
              helper.make_node("Add", ["scaled", "mask"], ["masked"]),
              helper.make_node("Softmax", ["masked"], ["probs"], axis=-1),
              helper.make_node("MatMul", ["probs", value], ["context"]),
              helper.make_node("Transpose", ["context"], ["context_t"], perm=[0, 2, 1, 3]),
              helper.make_node("Reshape", ["context_t", "merge_shape"], ["y"])]
    model = helper.make_model(helper.make_graph(nodes, "layer", inputs, outputs, initializer=inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    mask = np.where(rng.random((batch, 1, seq, total)) > 0.2, 0.0, -10000.0).astype(np.float32)
    mask[..., 0] = 0.0
    feeds = {"x": rng.standard_normal((batch, seq, hidden)).astype(np.float32), "mask": mask}
    if past:
        feeds["past_key"] = rng.standard_normal((batch, heads, past, head)).astype(np.float32)
        feeds["past_value"] = rng.standard_normal((batch, heads, past, head)).astype(np.float32)
    return model.SerializeToString(), feeds


@pytest.mark.parametrize("seq,past,fused_op", [(6, 0, "Attention"), (1, 5, "MultiHeadAttention")])
def test_shared_mask_attention_fuses_and_runs_in_onnxruntime(tmp_path, seq, past, fused_op):
    """The [B, 1, S, T] mask of transformers exports: a prompt becomes one
    Attention (attention_bias broadcast over heads), a decode step one
    MultiHeadAttention with past and present; onnxruntime runs both."""
    import onnx

    model, feeds = _attention_layer_model(seq, past)
    saved = str(tmp_path / "optimized.onnx")
    options = onyx.SessionOptions()
    options.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.optimized_model_filepath = saved
    fused = onyx.InferenceSession(model, options, providers=["CPUExecutionProvider"]).run(None, feeds)
    ops = [n.op_type for n in onnx.load(saved).graph.node]
    assert ops.count(fused_op) == 1 and "Softmax" not in ops, ops
    if fused_op == "Attention":
        assert ops == ["Attention"], ops  # the projections are inside it
    expected = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, feeds)
    in_ort = ort.InferenceSession(saved, providers=["CPUExecutionProvider"]).run(None, feeds)
    for got in (fused, in_ort):
        for g, e in zip(got, expected):
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)
