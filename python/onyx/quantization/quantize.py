"""quantize_dynamic and quantize_static: graph rewrites over onnx protos.

Dynamic: constant float weights of MatMul/Gemm (and Conv when asked) become
integer initializers; activations are quantized at run time by
DynamicQuantizeLinear, multiplied by MatMulInteger/ConvInteger, and scaled back
to float with Cast and Mul (plain ONNX, which onnxruntime and onyx both run).

Static: ranges of the activations come from calibration. QDQ format puts a
QuantizeLinear/DequantizeLinear pair after every quantized activation and a
DequantizeLinear in front of every quantized constant. QOperator format keeps
quantized tensors as integers between QLinearConv, QLinearMatMul and the
com.microsoft QLinearAdd/Mul/Concat/GlobalAveragePool, and dequantizes only
where a float op reads them; ops with no QLinear form (Gemm, Relu, pooling
other than MaxPool...) read DequantizeLinear'd weights and activations."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .calibrate import CalibrationDataReader, create_calibrator
from .quant_utils import (CalibrationMethod, QuantFormat, QuantType, compute_scale_zp, ensure_opset, load_model,
                          np_type, qrange, quantize_array, save_model, unique_name)

# Inputs of each op that are quantized as activations (None: all of them).
_ACTIVATION_INPUTS = {
    "Conv": [0], "MatMul": [0, 1], "Gemm": [0, 1], "Add": [0, 1], "Mul": [0, 1], "Relu": [0], "Clip": [0],
    "LeakyRelu": [0], "Sigmoid": [0], "MaxPool": [0], "AveragePool": [0], "GlobalAveragePool": [0],
    "Concat": None, "Reshape": [0], "Flatten": [0], "Transpose": [0], "Squeeze": [0], "Unsqueeze": [0],
    "Softmax": [0],
}
STATIC_OP_TYPES = tuple(_ACTIVATION_INPUTS)
DYNAMIC_OP_TYPES = ("MatMul", "Gemm", "Conv")
_DEFAULT_DYNAMIC = ("MatMul", "Gemm")


def _weight_axis(node, index: int, shape) -> int | None:
    """The per-channel axis of a constant weight input, or None when the input is no weight."""
    if node.op_type == "Conv" and index == 1:
        return 0
    if node.op_type == "MatMul" and index == 1:
        return len(shape) - 1
    if node.op_type == "Gemm" and index == 1:
        trans_b = next((a.i for a in node.attribute if a.name == "transB"), 0)
        return 0 if trans_b else 1
    return None


class _Rewriter:
    def __init__(self, model: onnx.ModelProto):
        self.model = model
        g = model.graph
        self.graph_inputs = {i.name for i in g.input}
        self.inits = {t.name: t for t in g.initializer}
        self.consts = {n: numpy_helper.to_array(t) for n, t in self.inits.items() if n not in self.graph_inputs}
        self.taken = set(self.inits) | self.graph_inputs | {o.name for o in g.output}
        for i, node in enumerate(g.node):
            self.taken.update(node.input)
            self.taken.update(node.output)
        for i, node in enumerate(g.node):
            if not node.name:
                node.name = unique_name(self.taken, f"{node.op_type}_{i}")
            else:
                self.taken.add(node.name)
        self.new_inits: list = []
        self.weight_cache: dict = {}

    def name(self, base: str) -> str:
        return unique_name(self.taken, base)

    def add_init(self, base: str, array: np.ndarray) -> str:
        name = self.name(base)
        self.new_inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def float_const(self, name: str):
        value = self.consts.get(name)
        return value if value is not None and value.dtype == np.float32 else None

    def quantize_const(self, name: str, qtype: QuantType, axis: int | None, reduce_range: bool, symmetric: bool):
        """(codes, scale, zero point) initializer names and arrays for a float constant."""
        key = (name, qtype, axis, reduce_range, symmetric)
        if key in self.weight_cache:
            return self.weight_cache[key]
        w = self.consts[name]
        qmin, qmax = qrange(qtype, reduce_range, symmetric)
        if axis is None:
            scale, zero = compute_scale_zp(w.min() if w.size else 0.0, w.max() if w.size else 0.0, qmin, qmax,
                                           symmetric)
            codes = quantize_array(w, scale, zero, qmin, qmax, np_type(qtype))
        else:
            others = tuple(i for i in range(w.ndim) if i != axis)
            scale, zero = compute_scale_zp(w.min(axis=others), w.max(axis=others), qmin, qmax, symmetric)
            shape = [1] * w.ndim
            shape[axis] = -1
            codes = quantize_array(w, scale.reshape(shape), zero.reshape(shape), qmin, qmax, np_type(qtype))
        zero = zero.astype(np_type(qtype))
        out = (self.add_init(name + "_quantized", codes), self.add_init(name + "_scale", scale),
               self.add_init(name + "_zero_point", zero), codes, scale, zero)
        self.weight_cache[key] = out
        return out

    def finish(self, nodes) -> onnx.ModelProto:
        g = self.model.graph
        used = {i for n in nodes for i in n.input} | {o.name for o in g.output}
        kept = [t for t in g.initializer if t.name in used or t.name in self.graph_inputs]
        del g.initializer[:]
        g.initializer.extend(kept + [t for t in self.new_inits if t.name in used])
        del g.node[:]
        g.node.extend(nodes)
        ensure_opset(self.model, "", 13)
        if any(n.domain == "com.microsoft" for n in nodes):
            ensure_opset(self.model, "com.microsoft", 1)
        return self.model


def _select(model, op_types, supported, default, nodes_to_quantize, nodes_to_exclude):
    op_types = list(default if op_types is None else op_types)
    unknown = sorted(set(op_types) - set(supported))
    if unknown:
        raise ValueError(f"onyx.quantization cannot quantize op type(s) {unknown}; supported: {sorted(supported)}")
    include = None if nodes_to_quantize is None else set(nodes_to_quantize)
    exclude = set(nodes_to_exclude or ())
    present = {n.name for n in model.graph.node}
    missing = sorted((exclude | (include or set())) - present)
    if missing:
        warnings.warn(f"onyx.quantization: no node named {missing} in the model", stacklevel=3)
    return {n.name for n in model.graph.node
            if n.op_type in op_types and (include is None or n.name in include) and n.name not in exclude}


def _nodes_arg(nodes_to_quantize, nodes_to_include):
    if nodes_to_include is not None and nodes_to_quantize is not None:
        raise ValueError("give nodes_to_quantize or nodes_to_include, not both")
    return nodes_to_quantize if nodes_to_quantize is not None else nodes_to_include


# ---------------------------------------------------------------------------------------------- dynamic


def quantize_dynamic(model_input, model_output, op_types_to_quantize=None, per_channel=False, reduce_range=False,
                     weight_type=QuantType.QInt8, nodes_to_quantize=None, nodes_to_exclude=None,
                     use_external_data_format=False, extra_options=None, *, nodes_to_include=None):
    """Quantize the constant weights of MatMul/Gemm (and Conv when listed in
    op_types_to_quantize) and quantize their activations at run time. Writes
    model_output; returns the quantized ModelProto."""
    extra_options = dict(extra_options or {})
    model = load_model(model_input)
    np_type(weight_type)
    if weight_type not in (QuantType.QInt8, QuantType.QUInt8):
        raise ValueError(f"quantize_dynamic quantizes weights to QInt8 or QUInt8, not {weight_type.name}")
    symmetric = bool(extra_options.get("WeightSymmetric", weight_type == QuantType.QInt8))
    rw = _Rewriter(model)
    selected = _select(model, op_types_to_quantize, DYNAMIC_OP_TYPES, _DEFAULT_DYNAMIC,
                       _nodes_arg(nodes_to_quantize, nodes_to_include), nodes_to_exclude)
    activations: dict = {}  # float tensor -> (codes, scale, zero point) from DynamicQuantizeLinear
    nodes = []

    def dynamic(x):
        if x not in activations:
            names = (rw.name(x + "_quantized"), rw.name(x + "_scale"), rw.name(x + "_zero_point"))
            nodes.append(helper.make_node("DynamicQuantizeLinear", [x], list(names), name=rw.name(x + "_DynamicQuantize")))
            activations[x] = names
        return activations[x]

    for node in model.graph.node:
        if node.name not in selected or not _dynamic_node(rw, node, nodes, dynamic, weight_type, per_channel,
                                                          reduce_range, symmetric):
            nodes.append(node)
    save_model(rw.finish(nodes), model_output, use_external_data_format)
    return model


def _attr(node, name, default):
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def _dynamic_node(rw, node, nodes, dynamic, weight_type, per_channel, reduce_range, symmetric) -> bool:
    """Emit the integer form of node into nodes; False when it stays float."""
    op = node.op_type
    if len(node.input) < 2 or rw.float_const(node.input[1]) is None:
        return False
    w = rw.consts[node.input[1]]
    y = node.output[0]
    base = node.name
    if op == "MatMul":
        if w.ndim != 2:
            return False
        weight_name, axis = node.input[1], (1 if per_channel else None)
    elif op == "Gemm":
        if _attr(node, "transA", 0) or w.ndim != 2:
            return False
        weight_name = node.input[1]
        if _attr(node, "transB", 0):
            weight_name = rw.name(node.input[1] + "_transposed")
            rw.consts[weight_name] = np.ascontiguousarray(w.T)
        axis = 1 if per_channel else None
    elif op == "Conv":
        weight_name, axis = node.input[1], (0 if per_channel else None)
        # onnxruntime's ConvInteger takes one weight zero point: per-channel Conv weights are symmetric.
        symmetric = symmetric or per_channel
    else:
        return False
    q, s, zp, codes, scale, zero = rw.quantize_const(weight_name, weight_type, axis, reduce_range, symmetric)
    if axis is not None and np.all(zero == zero.flat[0]):
        zp = rw.add_init(weight_name + "_zero_point_scalar", zero.reshape(-1)[:1].reshape(()))
    xq, xs, xzp = dynamic(node.input[0])
    integer = rw.name(base + "_int32")
    if op == "Conv":
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        nodes.append(helper.make_node("ConvInteger", [xq, q, xzp, zp], [integer], name=rw.name(base + "_ConvInteger"),
                                      **attrs))
    else:
        nodes.append(helper.make_node("MatMulInteger", [xq, q, xzp, zp], [integer],
                                      name=rw.name(base + "_MatMulInteger")))
    as_float = rw.name(base + "_int32_float")
    nodes.append(helper.make_node("Cast", [integer], [as_float], to=TensorProto.FLOAT, name=rw.name(base + "_Cast")))
    if op == "Conv" and axis is not None:
        s = rw.add_init(base + "_weight_scale_channels", scale.reshape([-1] + [1] * (w.ndim - 2)))
    if op == "Gemm":
        alpha = float(_attr(node, "alpha", 1.0))
        if alpha != 1.0:
            s = rw.add_init(base + "_weight_scale_alpha", (scale * alpha).astype(np.float32))
    both = rw.name(base + "_scales")
    nodes.append(helper.make_node("Mul", [xs, s], [both], name=rw.name(base + "_ScaleMul")))
    bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
    if op == "Gemm" and bias is not None:
        beta = float(_attr(node, "beta", 1.0))
        if beta != 1.0:
            c = rw.float_const(bias)
            if c is None:
                return _undo(nodes, node)
            bias = rw.add_init(bias + "_beta", (c * beta).astype(np.float32))
    if op == "Conv" and bias is not None:
        c = rw.float_const(bias)
        if c is None:
            return _undo(nodes, node)
        bias = rw.add_init(bias + "_channels", c.reshape([-1] + [1] * (w.ndim - 2)))
    scaled = rw.name(base + "_scaled") if bias is not None else y
    nodes.append(helper.make_node("Mul", [as_float, both], [scaled], name=rw.name(base + "_OutputMul")))
    if bias is not None:
        nodes.append(helper.make_node("Add", [scaled, bias], [y], name=rw.name(base + "_BiasAdd")))
    return True


def _undo(nodes, node):
    raise NotImplementedError(f"quantize_dynamic: {node.op_type} node {node.name!r} has a bias that is no constant")


# ---------------------------------------------------------------------------------------------- static


def quantize_static(model_input, model_output, calibration_data_reader: CalibrationDataReader | None = None,
                    quant_format=QuantFormat.QDQ, op_types_to_quantize=None, per_channel=False, reduce_range=False,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, nodes_to_quantize=None,
                    nodes_to_exclude=None, use_external_data_format=False, calibrate_method=CalibrationMethod.MinMax,
                    calibration_providers=None, extra_options=None, calibration_cache_path=None, *,
                    nodes_to_include=None):
    """Calibrate activation ranges by running the model with onyx on the
    reader's batches, then write a QDQ or QOperator model to model_output.
    Returns the quantized ModelProto.

    extra_options: ActivationSymmetric, WeightSymmetric (bools),
    CalibPercentile, CalibNumBins, CalibNumQuantizedBins, ShowProgress."""
    extra_options = dict(extra_options or {})
    if calibration_data_reader is None:
        raise ValueError("quantize_static needs a calibration_data_reader")
    if isinstance(quant_format, str):
        quant_format = QuantFormat.from_string(quant_format)
    model = load_model(model_input)
    act_sym = bool(extra_options.get("ActivationSymmetric", False))
    w_sym = bool(extra_options.get("WeightSymmetric", weight_type in (QuantType.QInt8, QuantType.QInt16)))
    np_type(activation_type)
    np_type(weight_type)
    rw = _Rewriter(model)
    selected = _select(model, op_types_to_quantize, STATIC_OP_TYPES, STATIC_OP_TYPES,
                       _nodes_arg(nodes_to_quantize, nodes_to_include), nodes_to_exclude)
    float_tensors = _float_tensors(model)

    def is_activation(name):
        return bool(name) and name not in rw.consts and name in float_tensors

    wanted = []
    for node in model.graph.node:
        if node.name in selected:
            slots = _ACTIVATION_INPUTS[node.op_type]
            inputs = node.input if slots is None else [node.input[i] for i in slots if i < len(node.input)]
            wanted += [x for x in inputs if is_activation(x)]
            wanted += [y for y in node.output[:1] if is_activation(y)]
    wanted = list(dict.fromkeys(wanted))
    if calibration_cache_path is not None:
        warnings.warn("onyx.quantization ignores calibration_cache_path", stacklevel=2)
    calibrator = create_calibrator(model, wanted, calibrate_method, calibration_providers, extra_options,
                                   progress=bool(extra_options.get("ShowProgress", True)))
    calibrator.collect_data(calibration_data_reader)
    ranges = calibrator.compute_data()
    amin, amax = qrange(activation_type, False, act_sym)
    params = {}
    for name, (lo, hi) in ranges.items():
        scale, zero = compute_scale_zp(lo, hi, amin, amax, act_sym)
        params[name] = (np.float32(scale), np.asarray(zero).astype(np_type(activation_type)))
    settings = dict(activation_type=activation_type, weight_type=weight_type, per_channel=per_channel,
                    reduce_range=reduce_range, w_sym=w_sym, act_sym=act_sym)
    if quant_format == QuantFormat.QDQ:
        nodes = _qdq(rw, selected, params, settings)
    else:
        nodes = _qoperator(rw, selected, params, settings)
    save_model(rw.finish(nodes), model_output, use_external_data_format)
    return model


def _float_tensors(model) -> set:
    """Names of tensors whose inferred type is float32 (all tensors when inference says nothing)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - inference is a help here, not a requirement
        inferred = model
    g = inferred.graph
    types = {v.name: v.type.tensor_type.elem_type for v in list(g.input) + list(g.output) + list(g.value_info)}
    types.update({t.name: t.data_type for t in g.initializer})
    names = set(types)
    for n in g.node:
        names.update(n.output)
        names.update(n.input)
    return {n for n in names if types.get(n, TensorProto.FLOAT) in (TensorProto.FLOAT, 0)}


def _qdq(rw, selected, params, settings):
    nodes_in = list(rw.model.graph.node)
    head, body = [], []
    dq_cache: dict = {}

    def emit_dq(q, s, zp, axis):
        if q not in dq_cache:
            out = rw.name(q.replace("_quantized", "") + "_DequantizeLinear_Output")
            kw = {} if axis is None else {"axis": axis}
            head.append(helper.make_node("DequantizeLinear", [q, s, zp], [out], name=rw.name(out + "_node"), **kw))
            dq_cache[q] = out
        return dq_cache[q]

    # Activations with a Q/DQ pair: the inputs in quantized slots and the first output of selected nodes.
    qdq_tensors = []
    for node in nodes_in:
        if node.name not in selected:
            continue
        slots = _ACTIVATION_INPUTS[node.op_type]
        for i, x in enumerate(node.input):
            if (slots is None or i in slots) and x in params:
                qdq_tensors.append(x)
        if node.output and node.output[0] in params:
            qdq_tensors.append(node.output[0])
    qdq_tensors = list(dict.fromkeys(qdq_tensors))
    dequantized = {}
    pairs = {}
    for t in qdq_tensors:
        scale, zero = params[t]
        s = rw.add_init(t + "_scale", scale)
        zp = rw.add_init(t + "_zero_point", zero)
        q = rw.name(t + "_QuantizeLinear_Output")
        dq = rw.name(t + "_DequantizeLinear_Output")
        pairs[t] = [helper.make_node("QuantizeLinear", [t, s, zp], [q], name=rw.name(t + "_QuantizeLinear")),
                    helper.make_node("DequantizeLinear", [q, s, zp], [dq], name=rw.name(t + "_DequantizeLinear"))]
        dequantized[t] = dq
    for t in rw.graph_inputs:
        body += pairs.pop(t, [])
    for node in nodes_in:
        if node.name in selected:
            x0, w_info = node.input[0] if node.input else "", None
            for i, x in enumerate(node.input):
                if x in dequantized:
                    node.input[i] = dequantized[x]
                    continue
                w = rw.float_const(x)
                if w is None:
                    continue
                axis = _weight_axis(node, i, w.shape)
                if axis is not None:
                    if w.ndim < 2:
                        continue
                    use_axis = axis if settings["per_channel"] else None
                    w_info = rw.quantize_const(x, settings["weight_type"], use_axis, settings["reduce_range"],
                                               settings["w_sym"])
                    node.input[i] = emit_dq(w_info[0], w_info[1], w_info[2], use_axis)
                elif not (node.op_type in ("Conv", "Gemm") and i == 2):
                    # Any other float constant (an Add's operand): activation type, per tensor.
                    info = rw.quantize_const(x, settings["activation_type"], None, False, settings["act_sym"])
                    node.input[i] = emit_dq(info[0], info[1], info[2], None)
            b = rw.float_const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
            if node.op_type in ("Conv", "Gemm") and w_info is not None and x0 in params and b is not None \
                    and b.ndim == 1:
                # int32 bias at input scale times weight scale, zero point 0.
                scale = (np.float64(params[x0][0]) * w_info[4].astype(np.float64))
                scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
                codes = np.clip(np.rint(b.astype(np.float64) / scale), -2**31, 2**31 - 1).astype(np.int32)
                name = node.input[2]
                q = rw.add_init(name + "_quantized", codes)
                s = rw.add_init(name + "_scale", scale)
                zp = rw.add_init(name + "_zero_point", np.zeros(scale.shape, dtype=np.int32))
                node.input[2] = emit_dq(q, s, zp, None if scale.ndim == 0 else 0)
        else:
            for i, x in enumerate(node.input):
                # Unselected consumers of a quantized output read it dequantized, as the runtime would.
                if x in dequantized and _is_selected_output(x, nodes_in, selected):
                    node.input[i] = dequantized[x]
        body.append(node)
        for y in node.output:
            body += pairs.pop(y, [])
    # Graph outputs produced by selected nodes keep their float values (the Q/DQ sits beside them).
    return head + body


def _is_selected_output(name, nodes, selected):
    return any(n.name in selected and n.output and n.output[0] == name for n in nodes)


def _qoperator(rw, selected, params, settings):
    nodes_in = list(rw.model.graph.node)
    out = []
    quantized: dict = {}  # tensor -> (codes, scale name, zero point name, scale, zero point)
    floats = set(rw.graph_inputs) | set(rw.consts)
    qp_names: dict = {}

    def param_names(t):
        if t not in qp_names:
            scale, zero = params[t]
            qp_names[t] = (rw.add_init(t + "_scale", scale), rw.add_init(t + "_zero_point", zero))
        return qp_names[t]

    def get_q(t, const_axis=None, node=None, index=None):
        if t in quantized:
            return quantized[t]
        if rw.float_const(t) is not None:
            if node is not None and _weight_axis(node, index, rw.consts[t].shape) is not None:
                axis = _weight_axis(node, index, rw.consts[t].shape) if settings["per_channel"] else None
                q, s, zp, codes, scale, zero = rw.quantize_const(t, settings["weight_type"], axis,
                                                                 settings["reduce_range"], settings["w_sym"])
            else:
                q, s, zp, codes, scale, zero = rw.quantize_const(t, settings["activation_type"], None, False,
                                                                 settings["act_sym"])
            return (q, s, zp, scale, zero)
        if t not in params or t not in floats:
            return None
        s, zp = param_names(t)
        q = rw.name(t + "_quantized")
        out.append(helper.make_node("QuantizeLinear", [t, s, zp], [q], name=rw.name(t + "_QuantizeLinear")))
        quantized[t] = (q, s, zp, params[t][0], params[t][1])
        return quantized[t]

    def get_f(t):
        if t in floats or not t:
            return t
        q, s, zp, *_ = quantized[t]
        out.append(helper.make_node("DequantizeLinear", [q, s, zp], [t], name=rw.name(t + "_DequantizeLinear")))
        floats.add(t)
        return t

    for node in nodes_in:
        if node.name in selected and _qlinear(rw, node, params, settings, get_q, param_names, quantized, out):
            continue
        if node.name in selected:
            # No QLinear form: its constant weights still go through DequantizeLinear.
            for i, x in enumerate(node.input):
                w = rw.float_const(x)
                if w is not None and _weight_axis(node, i, w.shape) is not None and w.ndim >= 2:
                    axis = _weight_axis(node, i, w.shape) if settings["per_channel"] else None
                    q, s, zp, *_ = rw.quantize_const(x, settings["weight_type"], axis, settings["reduce_range"],
                                                     settings["w_sym"])
                    dq = rw.name(x + "_DequantizeLinear_Output")
                    kw = {} if axis is None else {"axis": axis}
                    out.append(helper.make_node("DequantizeLinear", [q, s, zp], [dq], name=rw.name(dq + "_node"), **kw))
                    node.input[i] = dq
                    floats.add(dq)
        for i, x in enumerate(node.input):
            node.input[i] = get_f(x)
        out.append(node)
        floats.update(node.output)
    for o in rw.model.graph.output:
        get_f(o.name)
    return out


def _qlinear(rw, node, params, settings, get_q, param_names, quantized, out) -> bool:
    op = node.op_type
    y = node.output[0] if node.output else ""
    if op == "MaxPool" and len(node.output) == 1:
        x = get_q(node.input[0])
        if x is None:
            return False
        q = rw.name(y + "_quantized")
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        out.append(helper.make_node("MaxPool", [x[0]], [q], name=node.name, **attrs))
        quantized[y] = (q,) + tuple(x[1:])
        return True
    if op not in ("Conv", "MatMul", "Add", "Mul", "GlobalAveragePool", "Concat") or y not in params:
        return False
    if op == "Conv" and len(node.input) > 2 and node.input[2] and rw.float_const(node.input[2]) is None:
        return False
    if op == "MatMul":
        w = rw.float_const(node.input[1])
        if w is not None and w.ndim != 2:
            return False
    ins = []
    for i, x in enumerate(node.input):
        qx = get_q(x, node=node, index=i) if not (op == "Conv" and i == 2) else None
        if qx is None and not (op == "Conv" and i == 2):
            return False
        ins.append(qx)
    ys, yzp = param_names(y)
    q = rw.name(y + "_quantized")
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    flat = lambda t: [t[0], t[1], t[2]]  # noqa: E731
    if op == "Conv":
        inputs = flat(ins[0]) + flat(ins[1]) + [ys, yzp]
        if len(node.input) > 2 and node.input[2]:
            w_scale = np.asarray(ins[1][3], dtype=np.float64)
            b = rw.consts[node.input[2]].astype(np.float64)
            scale = np.float64(ins[0][3]) * w_scale
            scale = np.where(scale > 0, scale, 1.0)
            inputs.append(rw.add_init(node.input[2] + "_quantized",
                                      np.clip(np.rint(b / scale), -2**31, 2**31 - 1).astype(np.int32)))
        new = helper.make_node("QLinearConv", inputs, [q], name=node.name, **attrs)
    elif op == "MatMul":
        new = helper.make_node("QLinearMatMul", flat(ins[0]) + flat(ins[1]) + [ys, yzp], [q], name=node.name)
    elif op in ("Add", "Mul"):
        new = helper.make_node("QLinear" + op, flat(ins[0]) + flat(ins[1]) + [ys, yzp], [q], name=node.name,
                               domain="com.microsoft")
    elif op == "GlobalAveragePool":
        new = helper.make_node("QLinearGlobalAveragePool", flat(ins[0]) + [ys, yzp], [q], name=node.name,
                               domain="com.microsoft", channels_last=0)
    else:  # Concat
        inputs = [ys, yzp]
        for t in ins:
            inputs += flat(t)
        new = helper.make_node("QLinearConcat", inputs, [q], name=node.name, domain="com.microsoft", **attrs)
    out.append(new)
    quantized[y] = (q, ys, yzp, params[y][0], params[y][1])
    return True
