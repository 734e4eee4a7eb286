"""Training artifacts from a forward ONNX model, with the signature of
onnxruntime.training.artifacts.generate_artifacts.

The files (``prefix`` before each name):

* ``training_model.onnx``: the forward graph, a loss, and one
  ai.onnx.preview.training Gradient node that onyx expands into the backward
  graph when a session is created. Trainable parameters are graph inputs
  (fed by onyx.training.api.Module each step); frozen and non-float
  initializers stay initializers. Inputs: the model's own inputs, the loss's
  target (``labels`` for CrossEntropyLoss, ``target`` otherwise), the
  trainable parameters, then the BatchNormalization running statistics.
  Outputs: ``loss``, the additional outputs, one ``<param>_grad`` per
  trainable parameter, then the BatchNormalization nodes' updated running
  statistics (those nodes run with training_mode=1).
* ``eval_model.onnx``: the same without the Gradient node, BatchNormalization
  in inference mode; outputs ``loss`` and the additional outputs.
* ``optimizer_model.onnx``: one AdamW or SGD update per parameter in plain
  ONNX ops (it runs in onnxruntime as well).
* ``checkpoint``: the parameters in onyx's checkpoint format (checkpoint.py).

Each model records in its metadata (key ``onyx.training``, JSON) which of
its inputs and outputs are which, for the Module and Optimizer classes.
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from enum import Enum

import numpy as np

from . import checkpoint as _checkpoint

TRAINING_DOMAIN = "ai.onnx.preview.training"
METADATA_KEY = "onyx.training"
OPTIMIZER_OPSET = 17
OPTIMIZER_IR_VERSION = 8

# AdamW's hyperparameters, those of torch.optim.AdamW.
ADAMW_DEFAULTS = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "weight_decay": 0.01}
DEFAULT_LEARNING_RATE = 1e-3


class LossType(Enum):
    """The loss to add to the training model (``loss`` of generate_artifacts)."""

    MSELoss = 1
    CrossEntropyLoss = 2
    BCEWithLogitsLoss = 3
    L1Loss = 4


class OptimType(Enum):
    """The optimizer the optimizer model applies (``optimizer`` of generate_artifacts)."""

    AdamW = 1
    SGD = 2


def _onnx():
    try:
        import onnx
    except ImportError as error:  # pragma: no cover - onnx is in the test requirements
        raise ImportError("onyx.training.artifacts needs the onnx package (pip install onnx)") from error
    return onnx


def _float_types():
    from onnx import TensorProto

    return {TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.BFLOAT16}


def _load(model):
    onnx = _onnx()
    if isinstance(model, onnx.ModelProto):
        return copy.deepcopy(model)
    if isinstance(model, (str, bytes, os.PathLike)):
        path = os.fsdecode(model)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"generate_artifacts: no model file at '{path}'")
        return onnx.load(path)
    raise TypeError(f"generate_artifacts: model must be an onnx.ModelProto or a path, got {type(model).__name__}")


def _type_name(elem_type: int) -> str:
    from onnx import TensorProto

    return TensorProto.DataType.Name(elem_type)


class _Namer:
    """Fresh value names that do not collide with the model's."""

    def __init__(self, graph):
        self.used = {i.name for i in graph.input} | {o.name for o in graph.output}
        self.used |= {t.name for t in graph.initializer}
        for node in graph.node:
            self.used |= set(node.input) | set(node.output)

    def __call__(self, base: str) -> str:
        name, k = base, 0
        while name in self.used:
            k += 1
            name = f"{base}_{k}"
        self.used.add(name)
        return name


def _value_infos(model) -> dict:
    """Every value's ValueInfoProto that shape inference finds (or the graph states)."""
    onnx = _onnx()
    infos = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - a model onnx cannot infer is still trainable; types come from the graph
        inferred = model
    graph = inferred.graph
    for vi in list(graph.value_info) + list(graph.input) + list(graph.output):
        infos[vi.name] = vi
    return infos


def _loss_nodes(loss_type: LossType, prediction: str, info, namer):
    """Nodes computing a scalar loss from `prediction`; returns (nodes, target ValueInfo, loss name)."""
    from onnx import TensorProto, helper

    elem = info.type.tensor_type.elem_type
    shape = info.type.tensor_type.shape if info.type.tensor_type.HasField("shape") else None
    dims = None
    if shape is not None:
        dims = [d.dim_param if d.dim_param else (d.dim_value if d.HasField("dim_value") else None) for d in shape.dim]
    loss = namer("loss")
    n = lambda base: namer(f"{loss}/{base}")  # noqa: E731
    nodes = []
    if loss_type is LossType.CrossEntropyLoss:
        target = namer("labels")
        label_dims = None if dims is None else [dims[0]] + dims[2:]
        target_info = helper.make_tensor_value_info(target, TensorProto.INT64, label_dims)
        nodes.append(helper.make_node("SoftmaxCrossEntropyLoss", [prediction, target], [loss], reduction="mean"))
        return nodes, target_info, loss
    target = namer("target")
    target_info = helper.make_tensor_value_info(target, elem, dims)
    if loss_type is LossType.MSELoss:
        d, sq = n("diff"), n("squared")
        nodes += [
            helper.make_node("Sub", [prediction, target], [d]),
            helper.make_node("Mul", [d, d], [sq]),
            helper.make_node("ReduceMean", [sq], [loss], keepdims=0),
        ]
    elif loss_type is LossType.L1Loss:
        d, a = n("diff"), n("abs")
        nodes += [
            helper.make_node("Sub", [prediction, target], [d]),
            helper.make_node("Abs", [d], [a]),
            helper.make_node("ReduceMean", [a], [loss], keepdims=0),
        ]
    elif loss_type is LossType.BCEWithLogitsLoss:
        # -(t log sigmoid(x) + (1 - t) log(1 - sigmoid(x))) = softplus(x) - t x, mean over elements.
        sp, tx, e = n("softplus"), n("target_x"), n("elementwise")
        nodes += [
            helper.make_node("Softplus", [prediction], [sp]),
            helper.make_node("Mul", [target, prediction], [tx]),
            helper.make_node("Sub", [sp, tx], [e]),
            helper.make_node("ReduceMean", [e], [loss], keepdims=0),
        ]
    else:  # pragma: no cover - loss_kind refuses the rest
        raise ValueError(f"generate_artifacts: unknown loss {loss_type!r}")
    return nodes, target_info, loss


def loss_kind(loss) -> LossType:
    if isinstance(loss, LossType):
        return loss
    if isinstance(loss, str) and loss in LossType.__members__:
        return LossType[loss]
    raise ValueError(
        f"generate_artifacts: loss must be one of {', '.join('LossType.' + k for k in LossType.__members__)}; "
        f"got {loss!r} (custom onnxblock losses are not supported)"
    )


def optim_kind(optimizer) -> OptimType:
    if isinstance(optimizer, OptimType):
        return optimizer
    if isinstance(optimizer, str) and optimizer in OptimType.__members__:
        return OptimType[optimizer]
    raise ValueError(f"generate_artifacts: optimizer must be OptimType.AdamW or OptimType.SGD, got {optimizer!r}")


def _tensor_info(name, tensor):
    from onnx import helper

    return helper.make_tensor_value_info(name, tensor.data_type, list(tensor.dims))


def generate_artifacts(
    model,
    requires_grad=None,
    frozen_params=None,
    loss=None,
    optimizer=None,
    artifact_directory=None,
    prefix: str = "",
    ort_format: bool = False,
    custom_op_library=None,
    additional_output_names=None,
    nominal_checkpoint: bool = False,
    loss_input_names=None,
    bn_training: bool = True,
) -> None:
    """Writes training_model.onnx, eval_model.onnx, optimizer_model.onnx and
    checkpoint into ``artifact_directory`` (the current folder when None).

    requires_grad: initializer names to train (None: every float initializer
    not in frozen_params and not a BatchNormalization running statistic).
    frozen_params: initializers kept constant. loss: a LossType applied to the
    first graph output (or ``loss_input_names[0]``). optimizer: an OptimType
    (None: no optimizer model). additional_output_names: forward values the
    training and eval models output after the loss. bn_training: run
    BatchNormalization in training mode in the training model, its running
    statistics updated by Module.
    """
    onnx = _onnx()
    from onnx import TensorProto, helper, numpy_helper

    if ort_format:
        warnings.warn("generate_artifacts: onyx writes ONNX files only; ort_format=True is ignored", stacklevel=2)
    if custom_op_library is not None:
        raise ValueError("generate_artifacts: custom_op_library is not supported by onyx's artifact generator")
    if loss is None:
        raise ValueError("generate_artifacts: a loss is needed (loss=LossType.MSELoss, CrossEntropyLoss, ...)")
    loss_type = loss_kind(loss)
    optim_type = optim_kind(optimizer) if optimizer is not None else None

    model = _load(model)
    graph = model.graph
    if any(n.domain == TRAINING_DOMAIN for n in graph.node):
        raise ValueError("generate_artifacts: the model already holds ai.onnx.preview.training nodes")
    initializers = {t.name: t for t in graph.initializer}
    float_types = _float_types()

    def check_names(names, what):
        for name in names:
            if name not in initializers:
                known = ", ".join(list(initializers)[:10]) or "none"
                raise ValueError(
                    f"generate_artifacts: {what} names '{name}', which is not an initializer of the model "
                    f"(initializers: {known}{', ...' if len(initializers) > 10 else ''})"
                )

    frozen = list(frozen_params or [])
    check_names(frozen, "frozen_params")
    bn_stats = []
    for node in graph.node:
        if node.op_type == "BatchNormalization" and node.domain in ("", "ai.onnx"):
            bn_stats += [x for x in node.input[3:5] if x in initializers]
    if requires_grad is None:
        trainable = [
            t.name for t in graph.initializer
            if t.data_type in float_types and t.name not in frozen and t.name not in bn_stats
        ]
    else:
        trainable = list(dict.fromkeys(requires_grad))
        check_names(trainable, "requires_grad")
        both = [p for p in trainable if p in frozen]
        if both:
            raise ValueError(f"generate_artifacts: '{both[0]}' is in both requires_grad and frozen_params")
        for name in trainable:
            if initializers[name].data_type not in float_types:
                raise ValueError(
                    f"generate_artifacts: requires_grad names '{name}', a {_type_name(initializers[name].data_type)} "
                    "initializer; only float parameters can be trained"
                )
            if name in bn_stats:
                raise ValueError(f"generate_artifacts: '{name}' is a BatchNormalization running statistic, "
                                 "which is updated, not trained")
    if not trainable:
        raise ValueError("generate_artifacts: no parameter to train (requires_grad is empty or every float "
                         "initializer is frozen)")
    state_names = [s for s in dict.fromkeys(bn_stats) if s not in frozen]

    infos = _value_infos(model)
    graph_inputs = [i for i in graph.input if i.name not in initializers]
    loss_inputs = list(loss_input_names) if loss_input_names else [graph.output[0].name]
    if len(loss_inputs) != 1:
        raise ValueError(f"generate_artifacts: {loss_type.name} takes one model output, got {loss_inputs}")
    prediction = loss_inputs[0]
    if prediction not in infos:
        produced = {o for n in graph.node for o in n.output}
        if prediction not in produced:
            raise ValueError(f"generate_artifacts: loss input '{prediction}' is not a value of the model")
        raise ValueError(f"generate_artifacts: the type of loss input '{prediction}' is unknown (shape inference "
                         "could not find it)")
    pred_info = infos[prediction]
    elem = pred_info.type.tensor_type.elem_type
    if elem not in float_types:
        raise ValueError(
            f"generate_artifacts: {loss_type.name} needs a float model output, but '{prediction}' is "
            f"{_type_name(elem) if elem else 'not a tensor'}"
        )
    additional = list(additional_output_names or [])
    for name in additional:
        if name not in infos:
            raise ValueError(f"generate_artifacts: additional output '{name}' is not a value of the model")

    namer = _Namer(graph)
    loss_nodes, target_info, loss_name = _loss_nodes(loss_type, prediction, pred_info, namer)
    grad_names = {}
    for p in trainable:
        grad = f"{p}_grad"
        if grad in namer.used:
            raise ValueError(f"generate_artifacts: the model already has a value named '{grad}'")
        namer.used.add(grad)
        grad_names[p] = grad

    param_inputs = [_tensor_info(p, initializers[p]) for p in trainable + state_names]
    kept_inits = [t for t in graph.initializer if t.name not in trainable and t.name not in state_names]
    scalar_loss = helper.make_tensor_value_info(loss_name, elem, [])
    extra_outputs = [infos[n] for n in additional]

    def opsets(training: bool):
        imports = [copy.deepcopy(o) for o in model.opset_import if o.domain != TRAINING_DOMAIN]
        if training:
            imports.append(helper.make_opsetid(TRAINING_DOMAIN, 1))
        return imports

    def forward_nodes(training: bool):
        nodes, updates = [], {}
        for node in graph.node:
            node = copy.deepcopy(node)
            if training and bn_training and node.op_type == "BatchNormalization" and node.domain in ("", "ai.onnx"):
                for a in list(node.attribute):
                    if a.name == "training_mode":
                        node.attribute.remove(a)
                node.attribute.append(helper.make_attribute("training_mode", 1))
                del node.output[1:]
                for stat in node.input[3:5]:
                    out = namer(f"{stat}_updated") if stat in state_names else ""
                    node.output.append(out)
                    if out:
                        updates[out] = stat
            nodes.append(node)
        return nodes, updates

    def make_model(nodes, outputs, name, training):
        g = helper.make_graph(
            nodes, name, graph_inputs + [target_info] + param_inputs, outputs,
            initializer=kept_inits, value_info=list(graph.value_info),
        )
        m = helper.make_model(g, opset_imports=opsets(training), producer_name="onyx.training")
        m.ir_version = model.ir_version
        for p in model.metadata_props:
            m.metadata_props.append(copy.deepcopy(p))
        return m

    # The training model.
    nodes, updates = forward_nodes(True)
    nodes += copy.deepcopy(loss_nodes)
    nodes.append(helper.make_node("Gradient", trainable, [grad_names[p] for p in trainable], domain=TRAINING_DOMAIN,
                                  xs=trainable, y=loss_name, name="Gradient"))
    outputs = [scalar_loss] + extra_outputs + [_tensor_info(grad_names[p], initializers[p]) for p in trainable]
    outputs += [_tensor_info(out, initializers[stat]) for out, stat in updates.items()]
    training_model = make_model(nodes, outputs, f"{graph.name}_training", True)
    meta = {
        "kind": "training", "loss": loss_name, "target": target_info.name, "user_outputs": [loss_name] + additional,
        "parameters": trainable, "state": state_names, "gradients": grad_names, "state_updates": updates,
        "loss_type": loss_type.name, "prediction": prediction,
    }
    helper.set_model_props(training_model, {**{p.key: p.value for p in model.metadata_props},
                                            METADATA_KEY: json.dumps(meta)})

    # The eval model.
    nodes, _ = forward_nodes(False)
    nodes += copy.deepcopy(loss_nodes)
    eval_model = make_model(nodes, [scalar_loss] + extra_outputs, f"{graph.name}_eval", False)
    helper.set_model_props(eval_model, {**{p.key: p.value for p in model.metadata_props},
                                        METADATA_KEY: json.dumps({**meta, "kind": "eval", "gradients": {},
                                                                  "state_updates": {}})})

    folder = os.fspath(artifact_directory) if artifact_directory is not None else os.getcwd()
    os.makedirs(folder, exist_ok=True)
    onnx.save(training_model, os.path.join(folder, f"{prefix}training_model.onnx"))
    onnx.save(eval_model, os.path.join(folder, f"{prefix}eval_model.onnx"))
    if optim_type is not None:
        params = [(p, initializers[p].data_type, list(initializers[p].dims)) for p in trainable]
        onnx.save(optimizer_model(optim_type, params), os.path.join(folder, f"{prefix}optimizer_model.onnx"))
    parameters = {}
    for p in trainable + state_names:
        array = numpy_helper.to_array(initializers[p])
        parameters[p] = np.zeros_like(array) if nominal_checkpoint else np.require(array, requirements="C")
    _checkpoint.write(
        os.path.join(folder, f"{prefix}checkpoint"), parameters, {p: p in trainable for p in parameters}, None, {}
    )


def optimizer_model(optim_type: OptimType, params, hyperparameters=None):
    """The optimizer model for params [(name, onnx elem type[, dims])]. Inputs:
    learning_rate (float scalar), step (int64 scalar: the step being taken,
    1 for the first), then per parameter `p`, `p_grad` and (AdamW)
    `p.exp_avg`, `p.exp_avg_sq`. Outputs per parameter: `p.updated` and
    (AdamW) `p.exp_avg.updated`, `p.exp_avg_sq.updated`."""
    from onnx import TensorProto, helper
    from onnx.helper import tensor_dtype_to_np_dtype

    optim_type = optim_kind(optim_type)
    hp = {**ADAMW_DEFAULTS, **(hyperparameters or {})}
    inputs = [
        helper.make_tensor_value_info("learning_rate", TensorProto.FLOAT, []),
        helper.make_tensor_value_info("step", TensorProto.INT64, []),
    ]
    outputs, nodes, inits = [], [], []
    per_type: dict = {}
    states = ["exp_avg", "exp_avg_sq"] if optim_type is OptimType.AdamW else []

    def const(name, value, elem):
        inits.append(helper.make_tensor(name, elem, [], [value]))
        return name

    def shared(elem):
        """Scalars every parameter of one element type uses."""
        if elem in per_type:
            return per_type[elem]
        t = TensorProto.DataType.Name(elem).lower()
        s = {}
        if elem == TensorProto.FLOAT:
            s["lr"] = "learning_rate"
        else:
            s["lr"] = f"lr_{t}"
            nodes.append(helper.make_node("Cast", ["learning_rate"], [s["lr"]], to=elem))
        if optim_type is OptimType.AdamW:
            step = f"step_{t}"
            nodes.append(helper.make_node("Cast", ["step"], [step], to=elem))
            one = const(f"one_{t}", 1.0, elem)
            b1, b2 = const(f"beta1_{t}", hp["beta1"], elem), const(f"beta2_{t}", hp["beta2"], elem)
            s["b1"], s["b2"] = b1, b2
            s["1-b1"] = const(f"one_minus_beta1_{t}", 1.0 - hp["beta1"], elem)
            s["1-b2"] = const(f"one_minus_beta2_{t}", 1.0 - hp["beta2"], elem)
            s["eps"] = const(f"epsilon_{t}", hp["epsilon"], elem)
            wd = const(f"weight_decay_{t}", hp["weight_decay"], elem)
            names = {k: f"{k}_{t}" for k in ("b1_pow", "b2_pow", "bc1", "bc2", "sqrt_bc2", "lr_wd", "decay",
                                             "step_size")}
            nodes.extend([
                helper.make_node("Pow", [b1, step], [names["b1_pow"]]),
                helper.make_node("Pow", [b2, step], [names["b2_pow"]]),
                helper.make_node("Sub", [one, names["b1_pow"]], [names["bc1"]]),
                helper.make_node("Sub", [one, names["b2_pow"]], [names["bc2"]]),
                helper.make_node("Sqrt", [names["bc2"]], [names["sqrt_bc2"]]),
                helper.make_node("Mul", [s["lr"], wd], [names["lr_wd"]]),
                helper.make_node("Sub", [one, names["lr_wd"]], [names["decay"]]),
                helper.make_node("Div", [s["lr"], names["bc1"]], [names["step_size"]]),
            ])
            s.update(sqrt_bc2=names["sqrt_bc2"], decay=names["decay"], step_size=names["step_size"])
        per_type[elem] = s
        return s

    for p, elem, *rest in params:
        np.dtype(tensor_dtype_to_np_dtype(elem))  # a type numpy knows
        dims = list(rest[0]) if rest else None
        tensor = lambda name: helper.make_tensor_value_info(name, elem, dims)  # noqa: E731
        s = shared(elem)
        g = f"{p}_grad"
        inputs += [tensor(p), tensor(g)]
        new = f"{p}.updated"
        if optim_type is OptimType.SGD:
            d = f"{p}.delta"
            nodes += [helper.make_node("Mul", [s["lr"], g], [d]), helper.make_node("Sub", [p, d], [new])]
            outputs.append(tensor(new))
            continue
        m, v = f"{p}.exp_avg", f"{p}.exp_avg_sq"
        inputs += [tensor(m), tensor(v)]
        k = lambda suffix: f"{p}.{suffix}"  # noqa: E731
        m_new, v_new = f"{m}.updated", f"{v}.updated"
        nodes += [
            # Decoupled weight decay: p * (1 - lr * wd).
            helper.make_node("Mul", [p, s["decay"]], [k("decayed")]),
            # m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2.
            helper.make_node("Mul", [s["b1"], m], [k("m_old")]),
            helper.make_node("Mul", [s["1-b1"], g], [k("m_g")]),
            helper.make_node("Add", [k("m_old"), k("m_g")], [m_new]),
            helper.make_node("Mul", [g, g], [k("g2")]),
            helper.make_node("Mul", [s["b2"], v], [k("v_old")]),
            helper.make_node("Mul", [s["1-b2"], k("g2")], [k("v_g")]),
            helper.make_node("Add", [k("v_old"), k("v_g")], [v_new]),
            # p -= lr / bc1 * m / (sqrt(v) / sqrt(bc2) + eps), as torch.optim.AdamW.
            helper.make_node("Sqrt", [v_new], [k("sqrt_v")]),
            helper.make_node("Div", [k("sqrt_v"), s["sqrt_bc2"]], [k("sqrt_v_hat")]),
            helper.make_node("Add", [k("sqrt_v_hat"), s["eps"]], [k("denom")]),
            helper.make_node("Div", [m_new, k("denom")], [k("ratio")]),
            helper.make_node("Mul", [s["step_size"], k("ratio")], [k("delta")]),
            helper.make_node("Sub", [k("decayed"), k("delta")], [new]),
        ]
        outputs += [tensor(n) for n in (new, m_new, v_new)]

    graph = helper.make_graph(nodes, f"{optim_type.name}_optimizer", inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPTIMIZER_OPSET)],
                              producer_name="onyx.training")
    model.ir_version = OPTIMIZER_IR_VERSION
    meta = {"kind": "optimizer", "optimizer": optim_type.name, "parameters": [p[0] for p in params],
            "states": states, "hyperparameters": hp if optim_type is OptimType.AdamW else {},
            "default_learning_rate": DEFAULT_LEARNING_RATE}
    helper.set_model_props(model, {METADATA_KEY: json.dumps(meta)})
    return model
