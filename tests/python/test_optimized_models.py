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
    optimized_in_onyx = onyx.InferenceSession(path, options)
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
