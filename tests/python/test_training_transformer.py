"""A small transformer classifier trained with onyx.training, then fine-tuned
on a second task with its embeddings frozen; the exported inference model
gives onnxruntime the same predictions. Also gradient checkpointing on a
6-layer transformer: the same losses in less memory.

The model is written with onnx.helper (token embedding and positions,
pre-norm self-attention with two heads, a Gelu feed-forward block, mean
pooling and a linear head), the way exporters write attention: MatMul,
Reshape/Transpose, Softmax."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.training import CheckpointState, Module, Optimizer, artifacts

VOCAB, SEQ, DIM, HEADS, FFN = 8, 8, 32, 2, 64
OPSET = 20


def _transformer(layers=1, classes=2, seed=0):
    rng = np.random.default_rng(seed)
    inits = []

    def param(name, shape, scale=None):
        scale = scale if scale is not None else 1.0 / np.sqrt(shape[0])
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(name, values, dtype=np.int64):
        inits.append(numpy_helper.from_array(np.array(values, dtype), name))
        return name

    def zeros(name, shape):
        inits.append(numpy_helper.from_array(np.zeros(shape, np.float32), name))
        return name

    def ones(name, shape):
        inits.append(numpy_helper.from_array(np.ones(shape, np.float32), name))
        return name

    nodes = []
    node = lambda op, ins, outs, **kw: nodes.append(helper.make_node(op, ins, outs, **kw))  # noqa: E731
    node("Gather", [param("embed.tokens", [VOCAB, DIM], 0.5), "ids"], ["tok"])
    node("Add", ["tok", param("embed.positions", [SEQ, DIM], 0.5)], ["h0"])
    dh = DIM // HEADS
    split_shape = const("split_shape", [0, SEQ, HEADS, dh])
    merge_shape = const("merge_shape", [0, SEQ, DIM])
    scale = inits.append(numpy_helper.from_array(np.array(1.0 / np.sqrt(dh), np.float32), "scale")) or "scale"
    h = "h0"
    for i in range(layers):
        p = f"layer{i}."
        node("LayerNormalization", [h, ones(p + "ln1.scale", [DIM]), zeros(p + "ln1.bias", [DIM])], [p + "n1"], axis=-1)
        heads = {}
        for which in "qkv":
            node("MatMul", [p + "n1", param(p + which + ".weight", [DIM, DIM])], [p + which + "_mm"])
            node("Add", [p + which + "_mm", zeros(p + which + ".bias", [DIM])], [p + which])
            node("Reshape", [p + which, split_shape], [p + which + "_split"])
            perm = [0, 2, 3, 1] if which == "k" else [0, 2, 1, 3]
            node("Transpose", [p + which + "_split"], [p + which + "_heads"], perm=perm)
            heads[which] = p + which + "_heads"
        node("MatMul", [heads["q"], heads["k"]], [p + "scores_raw"])
        node("Mul", [p + "scores_raw", scale], [p + "scores"])
        node("Softmax", [p + "scores"], [p + "probs"], axis=-1)
        node("MatMul", [p + "probs", heads["v"]], [p + "ctx_heads"])
        node("Transpose", [p + "ctx_heads"], [p + "ctx_t"], perm=[0, 2, 1, 3])
        node("Reshape", [p + "ctx_t", merge_shape], [p + "ctx"])
        node("MatMul", [p + "ctx", param(p + "out.weight", [DIM, DIM])], [p + "attn_mm"])
        node("Add", [p + "attn_mm", zeros(p + "out.bias", [DIM])], [p + "attn"])
        node("Add", [h, p + "attn"], [p + "r1"])
        node("LayerNormalization", [p + "r1", ones(p + "ln2.scale", [DIM]), zeros(p + "ln2.bias", [DIM])], [p + "n2"])
        node("MatMul", [p + "n2", param(p + "ffn1.weight", [DIM, FFN])], [p + "f1_mm"])
        node("Add", [p + "f1_mm", zeros(p + "ffn1.bias", [FFN])], [p + "f1"])
        node("Gelu", [p + "f1"], [p + "g"])
        node("MatMul", [p + "g", param(p + "ffn2.weight", [FFN, DIM])], [p + "f2_mm"])
        node("Add", [p + "f2_mm", zeros(p + "ffn2.bias", [DIM])], [p + "f2"])
        node("Add", [p + "r1", p + "f2"], [p + "out"])
        h = p + "out"
    node("ReduceMean", [h, const("seq_axis", [1])], ["pooled"], keepdims=0)
    node("Gemm", ["pooled", param("head.weight", [DIM, classes]), zeros("head.bias", [classes])], ["logits"])
    graph = helper.make_graph(
        nodes,
        "tiny_transformer",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", SEQ])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", classes])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 9
    return model


def _task(kind, count, seed):
    """Token sequences and labels. "majority": are there more 1s than 2s?
    "order": does the first 3 come before the first 4?"""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, VOCAB, size=(count, SEQ))
    if kind == "majority":
        labels = ((ids == 1).sum(1) > (ids == 2).sum(1)).astype(np.int64)
    else:
        ids[(ids == 3) | (ids == 4)] = 0
        for row in ids:  # one 3 and one 4, at random places
            a, b = rng.choice(SEQ, 2, replace=False)
            row[a], row[b] = 3, 4
        labels = (np.argmax(ids == 3, axis=1) < np.argmax(ids == 4, axis=1)).astype(np.int64)
    return ids.astype(np.int64), labels


def _train(folder, kind, steps, lr, seed, frozen=()):
    state = CheckpointState.load_checkpoint(str(folder / "checkpoint"))
    module = Module(str(folder / "training_model.onnx"), state, str(folder / "eval_model.onnx"))
    optimizer = Optimizer(str(folder / "optimizer_model.onnx"), module)
    optimizer.set_learning_rate(lr)
    ids, labels = _task(kind, steps * 32, seed)
    for step in range(steps):
        rows = slice(step * 32, (step + 1) * 32)
        module(ids[rows], labels[rows])
        optimizer.step()
        module.lazy_reset_grad()
    return state, module


def _accuracy(module, kind, seed):
    ids, labels = _task(kind, 512, seed)
    module.eval()
    loss, logits = module(ids, labels)
    module.train()
    return float((np.argmax(logits, 1) == labels).mean()), logits


def _with_weights(model, state):
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for t in model.graph.initializer:
        if t.name in state.parameters:
            t.CopyFrom(numpy_helper.from_array(state.parameters[t.name].data, t.name))
    return model


def test_train_then_fine_tune_a_transformer_classifier(tmp_path):
    base = tmp_path / "base"
    model = _transformer()
    artifacts.generate_artifacts(
        model,
        loss=artifacts.LossType.CrossEntropyLoss,
        optimizer=artifacts.OptimType.AdamW,
        artifact_directory=str(base),
        additional_output_names=["logits"],
    )
    state, module = _train(base, "majority", steps=150, lr=3e-3, seed=1)
    accuracy, _ = _accuracy(module, "majority", seed=2)
    assert accuracy >= 0.85, accuracy

    # Fine-tune: the trained weights, a fresh head, the embeddings frozen.
    tuned = tmp_path / "tuned"
    pretrained = _with_weights(model, state)
    fresh_head = _transformer(seed=5)
    for t in pretrained.graph.initializer:
        if t.name.startswith("head."):
            t.CopyFrom(next(i for i in fresh_head.graph.initializer if i.name == t.name))
    frozen = ["embed.tokens", "embed.positions"]
    artifacts.generate_artifacts(
        pretrained,
        frozen_params=frozen,
        loss=artifacts.LossType.CrossEntropyLoss,
        optimizer=artifacts.OptimType.AdamW,
        artifact_directory=str(tuned),
        additional_output_names=["logits"],
    )
    before, _ = _accuracy(
        Module(str(tuned / "training_model.onnx"), CheckpointState.load_checkpoint(str(tuned / "checkpoint")),
               str(tuned / "eval_model.onnx")),
        "order",
        seed=4,
    )
    state2, module2 = _train(tuned, "order", steps=150, lr=3e-3, seed=3)
    after, logits = _accuracy(module2, "order", seed=4)
    assert after >= 0.85 and after > before + 0.2, (before, after)
    # Frozen parameters are inputs no more: they stayed as they were.
    assert all(name not in state2.parameters for name in frozen)

    # The exported model predicts in onnxruntime what the module predicts.
    import onnxruntime

    exported = tmp_path / "inference.onnx"
    module2.export_model_for_inferencing(str(exported), ["logits"])
    ids, _ = _task("order", 512, seed=4)
    ort_logits = onnxruntime.InferenceSession(str(exported), providers=["CPUExecutionProvider"]).run(
        None, {"ids": ids}
    )[0]
    np.testing.assert_allclose(ort_logits, logits, rtol=1e-4, atol=1e-4)


def _six_layer_training_model():
    model = _transformer(layers=6)
    nodes = list(model.graph.node)
    params = [t.name for t in model.graph.initializer if t.data_type == TensorProto.FLOAT and t.name != "scale"]
    nodes += [
        helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"]),
        helper.make_node(
            "Gradient", params, [p + "_grad" for p in params], domain="ai.onnx.preview.training", xs=params, y="loss"
        ),
    ]
    inputs = list(model.graph.input) + [helper.make_tensor_value_info("labels", TensorProto.INT64, ["N"])]
    values = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    inputs += [helper.make_tensor_value_info(p, TensorProto.FLOAT, values[p].shape) for p in params]
    inits = [t for t in model.graph.initializer if t.name not in params]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ["loss"] + [p + "_grad" for p in params]]
    graph = helper.make_graph(nodes, "train6", inputs, outputs, initializer=inits)
    training = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid("ai.onnx.preview.training", 1)]
    )
    ids, labels = _task("majority", 64, seed=0)
    feeds = {"ids": ids, "labels": labels, **{p: values[p] for p in params}}
    return training.SerializeToString(), feeds


@pytest.mark.parametrize("recompute", ["all", "cheap"])
def test_recompute_on_a_six_layer_transformer(recompute):
    model, feeds = _six_layer_training_model()
    peaks, results = [], []
    for entry in [None, recompute]:
        options = onyx.SessionOptions()
        options.enable_mem_pattern = False
        if entry:
            options.add_session_config_entry("onyx.training.recompute", entry)
        session = onyx.InferenceSession(model, options, providers=["CPUExecutionProvider"])  # the CPU arena's profile
        results.append(session.run(None, feeds))
        peaks.append(session.get_memory_profile()["peak_bytes"])
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-5)
    for a, e in zip(results[1][1:], results[0][1:]):
        np.testing.assert_allclose(a, e, rtol=1e-4, atol=1e-6)
    assert peaks[1] <= 0.6 * peaks[0], peaks
