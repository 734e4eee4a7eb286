"""onnxruntime.training.api's classes over onyx.InferenceSession.

CheckpointState holds the parameters (numpy arrays), their gradients, the
optimizer state and a property bag; Module runs the training model (or the
eval model) with the parameters fed as inputs and accumulates the gradients
in place; Optimizer runs the optimizer model and writes the updated
parameters and moments back into the state; LinearLRScheduler sets the
learning rate per step. A checkpoint saved with include_optimizer_state=True
holds everything a killed run needs to resume: parameters, moments, step
count, learning rate and the user's properties.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Iterator

import numpy as np

from .. import session as _session
from . import checkpoint as _checkpoint
from .artifacts import DEFAULT_LEARNING_RATE, METADATA_KEY


class Parameter:
    """One parameter of a CheckpointState: ``data``, ``grad`` (None until a
    training step computed one), ``requires_grad`` and ``name``."""

    def __init__(self, state: "CheckpointState", name: str):
        self._state = state
        self.name = name

    @property
    def data(self) -> np.ndarray:
        return self._state._params[self.name]

    @data.setter
    def data(self, value) -> None:
        self._state._set_param(self.name, value)

    @property
    def grad(self) -> np.ndarray | None:
        if self._state._grad_reset:
            return None
        return self._state._grads.get(self.name)

    @property
    def requires_grad(self) -> bool:
        return self._state._requires_grad[self.name]

    def __repr__(self) -> str:
        a = self.data
        return f"Parameter(name={self.name!r}, shape={list(a.shape)}, dtype={a.dtype}, requires_grad={self.requires_grad})"


class Parameters:
    """``state.parameters[name]`` is a Parameter; ``state.parameters[name] = array``
    sets its value (same shape and dtype)."""

    def __init__(self, state: "CheckpointState"):
        self._state = state

    def __getitem__(self, name: str) -> Parameter:
        if name not in self._state._params:
            raise KeyError(f"the checkpoint has no parameter '{name}'")
        return Parameter(self._state, name)

    def __setitem__(self, name: str, value) -> None:
        if name not in self._state._params:
            raise KeyError(f"the checkpoint has no parameter '{name}'")
        self._state._set_param(name, value)

    def __contains__(self, name) -> bool:
        return name in self._state._params

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._state._params))

    def __len__(self) -> int:
        return len(self._state._params)

    def keys(self):
        return list(self._state._params)

    def items(self):
        return [(n, Parameter(self._state, n)) for n in self._state._params]

    def __repr__(self) -> str:
        return f"Parameters({list(self._state._params)})"


class Properties:
    """The checkpoint's property bag: str keys, int / float / str values."""

    def __init__(self, state: "CheckpointState"):
        self._state = state

    def __getitem__(self, name: str):
        if name not in self._state._properties:
            raise KeyError(f"the checkpoint has no property '{name}'")
        return self._state._properties[name]

    def __setitem__(self, name: str, value) -> None:
        if not isinstance(name, str):
            raise TypeError(f"property names are str, got {type(name).__name__}")
        _checkpoint._property_type(name, value)
        self._state._properties[name] = value

    def __delitem__(self, name: str) -> None:
        del self._state._properties[name]

    def __contains__(self, name) -> bool:
        return name in self._state._properties

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._state._properties))

    def __len__(self) -> int:
        return len(self._state._properties)

    def get(self, name, default=None):
        return self._state._properties.get(name, default)

    def __repr__(self) -> str:
        return f"Properties({self._state._properties!r})"


class CheckpointState:
    """The training state: parameters, gradients, optimizer state, properties."""

    def __init__(self, parameters=None, requires_grad=None, optimizer=None, properties=None):
        self._params: dict[str, np.ndarray] = dict(parameters or {})
        self._requires_grad: dict[str, bool] = {n: bool((requires_grad or {}).get(n, True)) for n in self._params}
        self._grads: dict[str, np.ndarray] = {}
        # lazy_reset_grad: the next training step writes the gradients instead of adding.
        self._grad_reset = True
        # None, or {"step": int, "learning_rate": float, "states": {param: {key: array}}}
        self._optimizer = optimizer
        self._properties: dict = dict(properties or {})
        self.parameters = Parameters(self)
        self.properties = Properties(self)

    @staticmethod
    def load_checkpoint(checkpoint_uri) -> "CheckpointState":
        params, requires_grad, optimizer, properties = _checkpoint.read(checkpoint_uri)
        return CheckpointState(params, requires_grad, optimizer, properties)

    @staticmethod
    def save_checkpoint(state: "CheckpointState", checkpoint_uri, include_optimizer_state: bool = False) -> None:
        optimizer = state._optimizer if include_optimizer_state else None
        _checkpoint.write(checkpoint_uri, state._params, state._requires_grad, optimizer, state._properties)

    def _set_param(self, name: str, value) -> None:
        current = self._params[name]
        value = np.asarray(value)
        if value.shape != current.shape:
            raise ValueError(f"parameter '{name}' has shape {list(current.shape)}, got {list(value.shape)}")
        self._params[name] = np.array(value, dtype=current.dtype, copy=True)

    def __repr__(self) -> str:
        step = self._optimizer["step"] if self._optimizer else None
        return f"CheckpointState({len(self._params)} parameters, optimizer step {step}, {len(self._properties)} properties)"


def _model_path(uri, what: str) -> str:
    if not isinstance(uri, (str, bytes, os.PathLike)):
        raise TypeError(f"{what} must be a path, got {type(uri).__name__}")
    path = os.fsdecode(uri)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{what}: no model file at '{path}'")
    return path


def _metadata(session, path: str, kind: str) -> dict:
    text = session.get_modelmeta().custom_metadata_map.get(METADATA_KEY)
    if text is None:
        raise ValueError(f"'{path}' is not a {kind} model written by onyx.training.artifacts.generate_artifacts "
                         f"(no '{METADATA_KEY}' metadata)")
    return json.loads(text)


def _session_for(path: str, session_options, device: str):
    if device not in ("cpu", "CPU"):
        raise ValueError(f"onyx.training runs on device 'cpu'; got '{device}'")
    return _session.InferenceSession(path, sess_options=session_options, providers=["CPUExecutionProvider"])


class Module:
    """Runs the training model (train mode) or the eval model (eval mode).

    ``module(*inputs)`` takes the model's user inputs in order (the forward
    model's inputs, then the loss target) and returns the loss, or a list of
    the loss and the additional outputs. In train mode the gradients add up
    in the state until lazy_reset_grad(); the parameters are fed from the
    state without a copy."""

    training: bool

    def __init__(self, train_model_uri, state: CheckpointState, eval_model_uri=None, device: str = "cpu",
                 session_options=None) -> None:
        if not isinstance(state, CheckpointState):
            raise TypeError(f"Module needs a CheckpointState, got {type(state).__name__}")
        self._state = state
        self._device = device
        self._session_options = session_options
        self._train_path = _model_path(train_model_uri, "Module train_model_uri")
        self._eval_path = _model_path(eval_model_uri, "Module eval_model_uri") if eval_model_uri is not None else None
        self._train = _session_for(self._train_path, session_options, device)
        self._train_meta = _metadata(self._train, self._train_path, "training")
        self._eval = None
        self._eval_meta = None
        if self._eval_path is not None:
            self._eval = _session_for(self._eval_path, session_options, device)
            self._eval_meta = _metadata(self._eval, self._eval_path, "eval")
        for name in self._train_meta["parameters"] + self._train_meta["state"]:
            if name not in state._params:
                raise ValueError(f"the checkpoint has no parameter '{name}', which the training model '{self._train_path}' "
                                 "takes: were the model and the checkpoint written together?")
        self._train_io = self._io(self._train, self._train_meta)
        self._eval_io = self._io(self._eval, self._eval_meta) if self._eval is not None else None
        self.training = True

    def _io(self, session, meta):
        params = set(meta["parameters"]) | set(meta["state"])
        inputs = [i.name for i in session.get_inputs()]
        user_inputs = [n for n in inputs if n not in params]
        param_inputs = [n for n in inputs if n in params]
        outputs = [o.name for o in session.get_outputs()]
        grads = [(meta["gradients"][p], p) for p in meta["parameters"] if meta["gradients"].get(p) in outputs]
        updates = [(o, s) for o, s in meta["state_updates"].items() if o in outputs]
        return {"user_inputs": user_inputs, "param_inputs": param_inputs, "user_outputs": meta["user_outputs"],
                "grads": grads, "updates": updates,
                "run_outputs": meta["user_outputs"] + [g for g, _ in grads] + [o for o, _ in updates]}

    def train(self, mode: bool = True) -> "Module":
        self.training = bool(mode)
        return self

    def eval(self) -> "Module":
        if self._eval is None:
            raise RuntimeError("Module.eval(): the module has no eval model (pass eval_model_uri)")
        return self.train(False)

    def __call__(self, *user_inputs):
        io = self._train_io if self.training else self._eval_io
        if io is None:
            raise RuntimeError("Module: eval mode needs an eval model (pass eval_model_uri)")
        if len(user_inputs) != len(io["user_inputs"]):
            raise ValueError(f"Module takes {len(io['user_inputs'])} inputs ({', '.join(io['user_inputs'])}), "
                             f"got {len(user_inputs)}")
        feeds = dict(zip(io["user_inputs"], user_inputs))
        params = self._state._params
        for name in io["param_inputs"]:
            feeds[name] = params[name]
        session = self._train if self.training else self._eval
        results = session.run(io["run_outputs"], feeds)
        n_user = len(io["user_outputs"])
        if self.training:
            grads = self._state._grads
            reset = self._state._grad_reset
            for (out, param), value in zip(io["grads"], results[n_user:]):
                current = grads.get(param)
                if reset or current is None:
                    # The run's fresh output buffer becomes the accumulator: no copy.
                    grads[param] = value if value.flags.writeable and value.flags.c_contiguous else value.copy()
                else:
                    np.add(current, value, out=current)
            self._state._grad_reset = False
            for (out, stat), value in zip(io["updates"], results[n_user + len(io["grads"]):]):
                params[stat] = value
        user = results[:n_user]
        return user[0] if len(user) == 1 else user

    def lazy_reset_grad(self) -> None:
        """The next training step writes the gradients instead of adding to them."""
        self._state._grad_reset = True

    def _trainable(self, trainable_only: bool):
        names = self._train_meta["parameters"]
        if not trainable_only:
            names = list(self._state._params)
        return names

    def get_parameters_size(self, trainable_only: bool = True) -> int:
        return int(sum(self._state._params[n].size for n in self._trainable(trainable_only)))

    def get_contiguous_parameters(self, trainable_only: bool = False) -> np.ndarray:
        """The parameters flattened into one float32 array, in checkpoint order."""
        names = self._trainable(trainable_only)
        if not names:
            return np.zeros(0, np.float32)
        return np.concatenate([self._state._params[n].astype(np.float32, copy=False).ravel() for n in names])

    def copy_buffer_to_parameters(self, buffer, trainable_only: bool = True) -> None:
        names = self._trainable(trainable_only)
        buffer = np.asarray(buffer).ravel()
        if buffer.size != self.get_parameters_size(trainable_only):
            raise ValueError(f"the buffer holds {buffer.size} values; the parameters need "
                             f"{self.get_parameters_size(trainable_only)}")
        at = 0
        for n in names:
            p = self._state._params[n]
            self._state._params[n] = buffer[at:at + p.size].reshape(p.shape).astype(p.dtype, copy=True)
            at += p.size

    def input_names(self) -> list:
        io = self._train_io if self.training else self._eval_io
        return list(io["user_inputs"])

    def output_names(self) -> list:
        io = self._train_io if self.training else self._eval_io
        return list(io["user_outputs"])

    def export_model_for_inferencing(self, inference_model_uri, graph_output_names) -> None:
        """Writes the forward model that computes graph_output_names, with the
        current parameters as initializers (no loss, no gradients, no
        training inputs); onnxruntime runs it."""
        import onnx
        from onnx import helper, numpy_helper

        names = [graph_output_names] if isinstance(graph_output_names, str) else list(graph_output_names)
        if not names:
            raise ValueError("export_model_for_inferencing needs at least one graph output name")
        source = onnx.load(self._eval_path or self._train_path)
        graph = source.graph
        meta = json.loads({p.key: p.value for p in source.metadata_props}[METADATA_KEY])
        produced = {}
        for node in graph.node:
            for o in node.output:
                if o:
                    produced[o] = node
        inputs = {i.name: i for i in graph.input}
        inits = {t.name for t in graph.initializer}
        for name in names:
            if name not in produced and name not in inputs and name not in inits:
                raise ValueError(f"export_model_for_inferencing: '{name}' is not a value of the model")
            if name in (meta["loss"],):
                raise ValueError(f"export_model_for_inferencing: '{name}' is the loss, which needs the target")
        # Keep the nodes the outputs need (walking back).
        needed, stack, keep = set(), list(names), set()
        while stack:
            v = stack.pop()
            if v in needed:
                continue
            needed.add(v)
            node = produced.get(v)
            if node is not None and id(node) not in keep:
                keep.add(id(node))
                stack += [i for i in node.input if i]
                for a in node.attribute:  # values a subgraph reads from the outer scope
                    for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                        stack += [i for n in sub.node for i in n.input if i]
        nodes = []
        for node in graph.node:
            if id(node) not in keep:
                continue
            node = copy.deepcopy(node)
            if node.op_type == "BatchNormalization" and node.domain in ("", "ai.onnx"):
                for a in list(node.attribute):
                    if a.name == "training_mode":
                        node.attribute.remove(a)
                del node.output[1:]
            nodes.append(node)
        params = set(meta["parameters"]) | set(meta["state"])
        new_inputs = [copy.deepcopy(i) for i in graph.input if i.name in needed and i.name not in params]
        if meta["target"] in needed:
            raise ValueError("export_model_for_inferencing: the outputs depend on the loss target "
                             f"'{meta['target']}'")
        initializers = [copy.deepcopy(t) for t in graph.initializer if t.name in needed]
        for name in params:
            if name in needed:
                initializers.append(numpy_helper.from_array(np.asarray(self._state._params[name]), name))
        infos = {vi.name: vi for vi in list(graph.value_info) + list(graph.output) + list(graph.input)}
        try:
            inferred = onnx.shape_inference.infer_shapes(source)
            infos.update({vi.name: vi for vi in list(inferred.graph.value_info) + list(inferred.graph.output)})
        except Exception:  # noqa: BLE001 - outputs then go out untyped
            pass
        outputs = [copy.deepcopy(infos[n]) if n in infos else helper.make_empty_tensor_value_info(n) for n in names]
        value_info = [copy.deepcopy(vi) for vi in graph.value_info if vi.name in needed and vi.name not in names]
        out_graph = helper.make_graph(nodes, graph.name.replace("_eval", "").replace("_training", ""), new_inputs,
                                      outputs, initializer=initializers, value_info=value_info)
        opsets = [copy.deepcopy(o) for o in source.opset_import if o.domain != "ai.onnx.preview.training"]
        model = helper.make_model(out_graph, opset_imports=opsets, producer_name="onyx.training")
        model.ir_version = source.ir_version
        props = {p.key: p.value for p in source.metadata_props if p.key != METADATA_KEY}
        if props:
            helper.set_model_props(model, props)
        path = os.fsdecode(inference_model_uri)
        temp = f"{path}.tmp-{os.getpid()}"
        onnx.save(model, temp)
        os.replace(temp, path)


class Optimizer:
    """Runs the optimizer model over the module's parameters and gradients."""

    def __init__(self, optimizer_uri, module: Module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"Optimizer needs a Module, got {type(module).__name__}")
        path = _model_path(optimizer_uri, "Optimizer optimizer_uri")
        self._module = module
        self._state = module._state
        self._session = _session_for(path, module._session_options, module._device)
        meta = _metadata(self._session, path, "optimizer")
        self._params = meta["parameters"]
        self._moments = meta["states"]
        trainable = set(module._train_meta["parameters"])
        for p in self._params:
            if p not in trainable:
                raise ValueError(f"the optimizer model updates '{p}', which the training model does not train")
        state = self._state
        if state._optimizer is None:
            state._optimizer = {"step": 0, "learning_rate": float(meta.get("default_learning_rate", DEFAULT_LEARNING_RATE)),
                                "states": {}}
        moments = state._optimizer["states"]
        for p in self._params:
            for key in self._moments:
                if key not in moments.setdefault(p, {}):
                    moments[p][key] = np.zeros_like(state._params[p])
        self._outputs = []
        for p in self._params:
            self._outputs += [f"{p}.updated"] + [f"{p}.{k}.updated" for k in self._moments]

    def step(self) -> None:
        """Applies one update with the gradients accumulated since lazy_reset_grad()."""
        state = self._state
        opt = state._optimizer
        step = opt["step"] + 1
        feeds = {"learning_rate": np.array(opt["learning_rate"], np.float32), "step": np.array(step, np.int64)}
        for p in self._params:
            grad = None if state._grad_reset else state._grads.get(p)
            if grad is None:
                raise RuntimeError(f"Optimizer.step(): no gradient for '{p}'; run a training step (module(...)) first")
            feeds[p] = state._params[p]
            feeds[f"{p}_grad"] = grad
            for key in self._moments:
                feeds[f"{p}.{key}"] = opt["states"][p][key]
        results = self._session.run(self._outputs, feeds)
        at = 0
        for p in self._params:
            state._params[p] = results[at]
            at += 1
            for key in self._moments:
                opt["states"][p][key] = results[at]
                at += 1
        opt["step"] = step

    def set_learning_rate(self, learning_rate: float) -> None:
        self._state._optimizer["learning_rate"] = float(learning_rate)

    def get_learning_rate(self) -> float:
        return float(self._state._optimizer["learning_rate"])

    @property
    def step_count(self) -> int:
        return int(self._state._optimizer["step"])


class LinearLRScheduler:
    """Warms the learning rate up linearly from 0 to initial_lr over
    warmup_step_count steps, then decays it linearly to 0 at
    total_step_count. It counts from the optimizer's step count, so a run
    resumed from a checkpoint continues the schedule where it stopped."""

    def __init__(self, optimizer: Optimizer, warmup_step_count: int, total_step_count: int, initial_lr: float) -> None:
        if warmup_step_count < 0 or total_step_count < warmup_step_count:
            raise ValueError("LinearLRScheduler needs 0 <= warmup_step_count <= total_step_count")
        self._optimizer = optimizer
        self._warmup = int(warmup_step_count)
        self._total = int(total_step_count)
        self._initial = float(initial_lr)
        self._count = optimizer.step_count
        optimizer.set_learning_rate(self._lr(self._count))

    def _lr(self, count: int) -> float:
        if count < self._warmup:
            return self._initial * count / max(1, self._warmup)
        return self._initial * max(0.0, (self._total - count) / max(1, self._total - self._warmup))

    def step(self) -> None:
        self._count += 1
        self._optimizer.set_learning_rate(self._lr(self._count))
