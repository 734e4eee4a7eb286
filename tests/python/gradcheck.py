"""Checks onyx's gradient rules against float64 central finite differences.

``check_gradient(nodes, feeds, wrt)`` builds a model of the forward nodes,
projects every float output of the last node (or ``outputs``) onto a fixed
random tensor and sums, so y = sum_k <out_k, r_k> is a scalar whose gradient
exercises the whole Jacobian, and adds a Gradient node (ai.onnx.preview.training)
for dy/dx over the inputs named in ``wrt``. onyx runs it; the oracle is the
same forward graph evaluated in float64 by onnx's ReferenceEvaluator, nudged
one element at a time. The comparison is relative to the largest gradient
magnitude: max|onyx - fd| <= rtol * max(max|fd|, 1e-3).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

import onyx

OPSET = 21

_FLOATS = (np.float32, np.float64)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _dtype_of(array: np.ndarray) -> int:
    return helper.np_dtype_to_tensor_dtype(array.dtype)


def _forward_output_shapes(nodes, feeds, initializers, opset):
    graph = helper.make_graph(
        nodes,
        "shapes",
        [helper.make_tensor_value_info(n, _dtype_of(v), v.shape) for n, v in feeds.items()],
        [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for n in nodes for o in n.output if o],
        initializer=list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    results = ReferenceEvaluator(model).run(None, feeds)
    names = [o for n in nodes for o in n.output if o]
    return {n: np.asarray(r) for n, r in zip(names, results)}


def _model(nodes, feeds, initializers, outputs, opset, extra_opsets=()):
    inputs = [helper.make_tensor_value_info(n, _dtype_of(v), v.shape) for n, v in feeds.items()]
    outs = [helper.make_tensor_value_info(o, TensorProto.UNDEFINED, None) for o in outputs]
    graph = helper.make_graph(nodes, "gradcheck", inputs, outs, initializer=list(initializers))
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in extra_opsets]
    return helper.make_model(graph, opset_imports=opsets)


def _cast_feeds(feeds, dtype):
    return {n: (v.astype(dtype) if v.dtype in _FLOATS else v) for n, v in feeds.items()}


def _cast_init(t, dtype):
    arr = numpy_helper.to_array(t)
    if arr.dtype in _FLOATS:
        arr = arr.astype(dtype)
    return numpy_helper.from_array(arr, t.name)


def check_gradient(
    nodes,
    feeds: dict,
    wrt,
    outputs=None,
    initializers=(),
    opset: int = OPSET,
    rtol: float = 1e-3,
    eps: float = 1e-6,
    dtype=np.float64,
    extra_opsets=(),
    seed: int = 0,
):
    """Returns onyx's gradients (a dict by input name) after checking them."""
    nodes = _as_list(nodes)
    wrt = _as_list(wrt)
    feeds64 = _cast_feeds(feeds, np.float64)
    inits64 = [_cast_init(t, np.float64) for t in initializers]
    if outputs is None:
        outputs = [o for o in nodes[-1].output if o]
    shapes = _forward_output_shapes(nodes, feeds64, inits64, opset)
    rng = np.random.default_rng(seed)
    proj = {o: rng.uniform(-1.0, 1.0, size=shapes[o].shape) for o in outputs}
    proj_nodes, parts = [], []
    for k, name in enumerate(outputs):
        proj_nodes.append(helper.make_node("Mul", [name, f"_r{k}"], [f"_p{k}"]))
        proj_nodes.append(helper.make_node("ReduceSum", [f"_p{k}"], [f"_s{k}"], keepdims=0))
        parts.append(f"_s{k}")
    y = parts[0]
    for k, part in enumerate(parts[1:]):
        proj_nodes.append(helper.make_node("Add", [y, part], [f"_y{k}"]))
        y = f"_y{k}"

    def proj_inits(dt):
        return [numpy_helper.from_array(proj[o].astype(dt), f"_r{k}") for k, o in enumerate(outputs)]

    # The oracle: y in float64, central differences.
    forward = _model(nodes + proj_nodes, feeds64, inits64 + proj_inits(np.float64), [y], opset)
    evaluator = ReferenceEvaluator(forward)

    def f(values):
        return float(np.asarray(evaluator.run(None, values)[0]))

    expected = {}
    for name in wrt:
        base = feeds64[name]
        grad = np.zeros_like(base)
        flat = base.reshape(-1)
        for i in range(flat.size):
            plus = dict(feeds64)
            minus = dict(feeds64)
            p = flat.copy()
            p[i] += eps
            m = flat.copy()
            m[i] -= eps
            plus[name] = p.reshape(base.shape)
            minus[name] = m.reshape(base.shape)
            grad.reshape(-1)[i] = (f(plus) - f(minus)) / (2 * eps)
        expected[name] = grad

    # onyx: the same graph plus a Gradient node, run in `dtype`.
    run_feeds = _cast_feeds(feeds, dtype)
    run_inits = [_cast_init(t, dtype) for t in initializers] + proj_inits(dtype)
    grads = [f"_d_{n}" for n in wrt]
    gradient = helper.make_node("Gradient", list(wrt), grads, domain="ai.onnx.preview.training", xs=list(wrt), y=y)
    training = _model(
        nodes + proj_nodes + [gradient],
        run_feeds,
        run_inits,
        [y] + grads,
        opset,
        extra_opsets=[("ai.onnx.preview.training", 1), *extra_opsets],
    )
    session = onyx.InferenceSession(training.SerializeToString())
    results = session.run(None, run_feeds)
    actual = dict(zip(wrt, results[1:]))
    for name in wrt:
        a = np.asarray(actual[name], dtype=np.float64)
        e = expected[name]
        assert a.shape == e.shape, f"d/d{name}: shape {a.shape}, expected {e.shape}"
        scale = max(float(np.max(np.abs(e))) if e.size else 0.0, 1e-3)
        err = float(np.max(np.abs(a - e))) if e.size else 0.0
        assert err <= rtol * scale, (
            f"d/d{name}: max error {err:.3g} against finite differences (scale {scale:.3g}, rtol {rtol})\n"
            f"onyx:\n{a}\nfinite differences:\n{e}"
        )
    return actual
