#!/usr/bin/env python3
"""Writes a BERT-base encoder (12 layers, hidden 768, 12 heads, intermediate
3072, vocabulary 30522) as ONNX with the onnx package alone, for machines
without torch: seeded random weights, opset 17 (LayerNormalization), GELU
through Erf, the inputs of transformers' BertModel export (input_ids,
attention_mask, token_type_ids, int64, [batch, sequence] symbolic) and its
feed beside it (batch 1, 128 tokens), as bench/zoo/make_zoo.py does.

    python3 bench/zoo/make_bert_onnx.py [--out bench/zoo/models] [--layers 12]

writes bench/zoo/models/bert_base_onnx.onnx and bert_base_onnx.inputs.npz.
"""

import argparse
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(layers: int, hidden: int = 768, heads: int = 12, inter: int = 3072, vocab: int = 30522, seed: int = 0):
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def weight(name, shape, scale=0.02):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def const(name, array):
        inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(op, inputs, name, **attrs):
        nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        return name

    def layer_norm(x, prefix):
        g = const(prefix + ".gamma", np.ones(hidden, np.float32))
        b = const(prefix + ".beta", np.zeros(hidden, np.float32))
        return node("LayerNormalization", [x, g, b], prefix + ".out", axis=-1, epsilon=1e-12)

    def dense(x, prefix, n_in, n_out):
        m = node("MatMul", [x, weight(prefix + ".W", (n_in, n_out))], prefix + ".mm")
        return node("Add", [m, const(prefix + ".b", np.zeros(n_out, np.float32))], prefix + ".out")

    head = hidden // heads
    const("shape_heads", np.array([0, 0, heads, head], np.int64))
    const("shape_hidden", np.array([0, 0, hidden], np.int64))
    const("sqrt_head", np.array(np.sqrt(head), np.float32))
    const("one", np.array(1.0, np.float32))
    const("half", np.array(0.5, np.float32))
    const("sqrt2", np.array(np.sqrt(2.0), np.float32))
    const("neg_big", np.array(-10000.0, np.float32))
    const("axes_1_2", np.array([1, 2], np.int64))

    words = node("Gather", [weight("word_embeddings", (vocab, hidden)), "input_ids"], "emb.words")
    types = node("Gather", [weight("type_embeddings", (2, hidden)), "token_type_ids"], "emb.types")
    seq = node("Shape", ["input_ids"], "emb.shape", start=1, end=2)
    seq_scalar = node("Squeeze", [seq], "emb.seq")
    const("zero_i", np.array(0, np.int64))
    const("one_i", np.array(1, np.int64))
    positions = node("Range", ["zero_i", seq_scalar, "one_i"], "emb.positions")
    pos = node("Gather", [weight("position_embeddings", (512, hidden)), positions], "emb.pos")
    x = node("Add", [node("Add", [words, types], "emb.sum1"), pos], "emb.sum2")
    x = layer_norm(x, "emb.ln")

    mask = node("Unsqueeze", ["attention_mask", "axes_1_2"], "mask.unsq")
    mask = node("Cast", [mask], "mask.float", to=TensorProto.FLOAT)
    mask = node("Mul", [node("Sub", ["one", mask], "mask.inv"), "neg_big"], "mask.bias")

    for i in range(layers):
        p = f"l{i}"

        def split_heads(t, name):
            r = node("Reshape", [t, "shape_heads"], name + ".r")
            return node("Transpose", [r], name + ".t", perm=[0, 2, 1, 3])

        q = split_heads(dense(x, p + ".q", hidden, hidden), p + ".qh")
        k = node("Transpose", [node("Reshape", [dense(x, p + ".k", hidden, hidden), "shape_heads"], p + ".kr")],
                 p + ".kt", perm=[0, 2, 3, 1])
        v = split_heads(dense(x, p + ".v", hidden, hidden), p + ".vh")
        scores = node("Div", [node("MatMul", [q, k], p + ".qk"), "sqrt_head"], p + ".scaled")
        probs = node("Softmax", [node("Add", [scores, mask], p + ".masked")], p + ".probs", axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, v], p + ".ctx")], p + ".ctxt", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, "shape_hidden"], p + ".ctxr")
        attn = dense(ctx, p + ".o", hidden, hidden)
        x = layer_norm(node("Add", [attn, x], p + ".res1"), p + ".ln1")
        h = dense(x, p + ".i", hidden, inter)
        erf = node("Erf", [node("Div", [h, "sqrt2"], p + ".gd")], p + ".erf")
        gelu = node("Mul", [node("Mul", [h, node("Add", [erf, "one"], p + ".e1")], p + ".hm"), "half"], p + ".gelu")
        out = dense(gelu, p + ".d", inter, hidden)
        x = layer_norm(node("Add", [out, x], p + ".res2"), p + ".ln2")

    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"]))
    dims = ["batch", "sequence"]
    graph = helper.make_graph(
        nodes,
        "bert_base",
        [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in ("input_ids", "attention_mask", "token_type_ids")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "sequence", hidden])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="make_bert_onnx")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "models")
    ap.add_argument("--layers", type=int, default=12)
    # Not bert_base: that name is make_zoo.py's torch export, whose exact
    # structure tests/python/test_norm_fusions.py checks.
    ap.add_argument("--name", default="bert_base_onnx")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    onnx.save(build(args.layers), args.out / f"{args.name}.onnx")
    rng = np.random.default_rng(1)
    np.savez(
        args.out / f"{args.name}.inputs.npz",
        input_ids=rng.integers(0, 30522, (1, 128), dtype=np.int64),
        attention_mask=np.ones((1, 128), np.int64),
        token_type_ids=np.zeros((1, 128), np.int64),
    )
    print(f"wrote {args.out / (args.name + '.onnx')}")


if __name__ == "__main__":
    main()
