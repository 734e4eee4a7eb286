"""The real models of ../shared/models run through onyx and onnxruntime on
the same seeded random inputs must agree within 1e-4 absolute plus 1e-3
relative to each output's largest magnitude."""

import os

import numpy as np
import onnxruntime
import pytest

import onyx
from helpers import MODELS_DIR, assert_close

# Symbolic dimensions get small values; integer inputs a valid range.
SYMBOL_VALUES = {"batch_size": 2, "batch": 2, "max_seq_len_in_batch": 7, "None": 1}
INT_RANGES = {
    # TFBertForQuestionAnswering: vocab 20, two token types, mask of ones and zeros.
    ("TFBertForQuestionAnswering", "input_ids"): (0, 20),
    ("TFBertForQuestionAnswering", "token_type_ids"): (0, 2),
    ("TFBertForQuestionAnswering", "attention_mask"): (1, 2),
    # bert_toy_optimized: a vocabulary of 99 (its prediction width).
    ("bert_toy_optimized", "input_ids"): (0, 99),
    ("bert_toy_optimized", "token_type_ids"): (0, 2),
    ("bert_toy_optimized", "input_mask"): (1, 2),
}
MODELS = ["mnist", "squeezenet_tensor_input", "TFBertForQuestionAnswering", "bert_toy_optimized", "fns-candy"]

_NUMPY_OF = {
    "tensor(float)": np.float32,
    "tensor(double)": np.float64,
    "tensor(int32)": np.int32,
    "tensor(int64)": np.int64,
}


def random_feeds(model_name, session):
    rng = np.random.default_rng(1234)
    feeds = {}
    for arg in session.get_inputs():
        shape = [d if isinstance(d, int) else SYMBOL_VALUES.get(str(d), 1) for d in arg.shape]
        dtype = _NUMPY_OF[arg.type]
        if np.issubdtype(dtype, np.integer):
            low, high = INT_RANGES.get((model_name, arg.name), (0, 2))
            feeds[arg.name] = rng.integers(low, high, size=shape).astype(dtype)
        else:
            feeds[arg.name] = rng.random(size=shape, dtype=np.float32).astype(dtype)
    return feeds


@pytest.mark.parametrize("model_name", MODELS)
def test_model_matches_onnxruntime(model_name):
    path = os.path.join(MODELS_DIR, model_name + ".onnx")
    if not os.path.exists(path):
        pytest.skip(f"{path} not found: the real models live in ../shared/models (set ONYX_MODELS_DIR)")
    ours = onyx.InferenceSession(path)
    ref = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    assert [(a.name, a.type, a.shape) for a in ours.get_inputs()] == [(a.name, a.type, a.shape) for a in ref.get_inputs()]
    assert [(a.name, a.type) for a in ours.get_outputs()] == [(a.name, a.type) for a in ref.get_outputs()]
    feeds = random_feeds(model_name, ref)
    got = ours.run(None, feeds)
    want = ref.run(None, feeds)
    assert len(got) == len(want)
    for arg, a, b in zip(ref.get_outputs(), got, want):
        assert_close(a, b, f"{model_name} output '{arg.name}'")


def test_squeezenet_label_and_zipmap():
    path = os.path.join(MODELS_DIR, "squeezenet_tensor_input.onnx")
    if not os.path.exists(path):
        pytest.skip(f"{path} not found")
    session = onyx.InferenceSession(path)
    feeds = random_feeds("squeezenet_tensor_input", session)
    label, loss = session.run(None, feeds)
    assert label.dtype == object and isinstance(label.flat[0], str)
    assert isinstance(loss, list) and isinstance(loss[0], dict)
    best = max(loss[0], key=loss[0].get)
    assert label.flat[0] == best
