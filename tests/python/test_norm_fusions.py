"""RMSNorm (LLaMA / T5 style) fuses into SimplifiedLayerNormalization (an
onnxruntime contrib op of the ONNX domain), and a residual Add before it into
SkipSimplifiedLayerNormalization; the saved model runs in onnxruntime and
both engines match the unfused model."""
import collections

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx

ort = pytest.importorskip("onnxruntime")


def rms_block(prefix, x, out, gamma, nodes, inits, rsqrt="reciprocal"):
    inits.append(numpy_helper.from_array(gamma, prefix + "gamma"))
    nodes += [
        helper.make_node("Pow", [x, "two"], [prefix + "sq"]),
        helper.make_node("ReduceMean", [prefix + "sq", "axes"], [prefix + "var"], keepdims=1),
        helper.make_node("Add", [prefix + "var", "eps"], [prefix + "ve"]),
        helper.make_node("Sqrt", [prefix + "ve"], [prefix + "sd"]),
    ]
    if rsqrt == "reciprocal":
        nodes += [helper.make_node("Reciprocal", [prefix + "sd"], [prefix + "inv"]),
                  helper.make_node("Mul", [x, prefix + "inv"], [prefix + "n"])]
    else:
        nodes += [helper.make_node("Div", [x, prefix + "sd"], [prefix + "n"])]
    nodes.append(helper.make_node("Mul", [prefix + "gamma", prefix + "n"], [out]))


def llama_like(hidden=64):
    rng = np.random.default_rng(3)
    nodes, inits = [], [
        numpy_helper.from_array(np.array(2.0, np.float32), "two"),
        numpy_helper.from_array(np.array(1e-6, np.float32), "eps"),
        numpy_helper.from_array(np.array([-1], np.int64), "axes"),
        numpy_helper.from_array((rng.standard_normal((hidden, hidden)) * 0.1).astype(np.float32), "w"),
    ]
    rms_block("a_", "x", "h", (rng.random(hidden) + 0.5).astype(np.float32), nodes, inits)
    nodes += [helper.make_node("MatMul", ["h", "w"], ["m"]), helper.make_node("Add", ["x", "m"], ["r"])]
    rms_block("b_", "r", "y", (rng.random(hidden) + 0.5).astype(np.float32), nodes, inits, rsqrt="div")
    graph = helper.make_graph(nodes, "llama_like", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, hidden])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5, hidden])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_rms_norm_fusions_run_in_both_engines(tmp_path):
    path = str(tmp_path / "llama_like.onnx")
    onnx.save(llama_like(), path)
    x = np.random.default_rng(4).standard_normal((2, 5, 64)).astype(np.float32)
    disabled = ort.SessionOptions()
    disabled.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    expected = ort.InferenceSession(path, disabled, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]

    saved = str(tmp_path / "optimized.onnx")
    options = onyx.SessionOptions()
    options.optimized_model_filepath = saved
    # The fusions are the CPU provider's passes.
    got = onyx.InferenceSession(path, options, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    ops = collections.Counter((n.domain, n.op_type) for n in onnx.load(saved).graph.node)
    assert ops[("", "SimplifiedLayerNormalization")] == 1
    assert ops[("com.microsoft", "SkipSimplifiedLayerNormalization")] == 1
    assert sum(ops.values()) == 3  # the two norms and the MatMul
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
    in_ort = ort.InferenceSession(saved, disabled, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(in_ort, expected, rtol=1e-4, atol=1e-5)


def test_zoo_bert_embeddings_and_layers_fuse(tmp_path):
    """The zoo's BERT-base: embeddings into EmbedLayerNormalization, each layer
    into Attention, SkipLayerNormalization and BiasGelu; onnxruntime runs the
    saved model and matches the original."""
    import os
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "zoo", "models", "bert_base.onnx")
    if not os.path.exists(path):
        pytest.skip("bench/zoo/models/bert_base.onnx is absent (python3 bench/zoo/make_zoo.py builds it)")
    feeds = dict(np.load(path.replace(".onnx", ".inputs.npz")))
    disabled = ort.SessionOptions()
    disabled.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    expected = ort.InferenceSession(path, disabled, providers=["CPUExecutionProvider"]).run(None, feeds)
    saved = str(tmp_path / "bert_optimized.onnx")
    options = onyx.SessionOptions()
    options.optimized_model_filepath = saved
    got = onyx.InferenceSession(path, options, providers=["CPUExecutionProvider"]).run(None, feeds)
    ops = collections.Counter((n.domain, n.op_type) for n in onnx.load(saved).graph.node)
    assert ops[("com.microsoft", "EmbedLayerNormalization")] == 1
    assert ops[("com.microsoft", "Attention")] == 12
    assert ops[("com.microsoft", "BiasGelu")] == 12
    assert ops[("com.microsoft", "SkipLayerNormalization")] == 24
    assert sum(ops.values()) * 5 <= len(onnx.load(path).graph.node)
    in_ort = ort.InferenceSession(saved, disabled, providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, o, e in zip(got, in_ort, expected):
        np.testing.assert_allclose(g, e, rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(o, e, rtol=1e-3, atol=1e-4)
