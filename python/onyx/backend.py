"""onyx as an ONNX backend (onnx.backend.base.Backend), so the ONNX project's
backend test runner can drive it::

    import onnx.backend.test, onyx.backend
    globals().update(onnx.backend.test.BackendTest(onyx.backend, __name__).test_cases)

Functions at module level (prepare, run_model, run_node, supports_device,
is_compatible) are what the runner calls.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

import numpy as np
import onnx
import onnx.helper
import onnx.shape_inference
from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict

from .session import InferenceSession, RunOptions, SessionOptions


def _session_options(kwargs: dict[str, Any]) -> SessionOptions:
    # Keyword arguments that name a SessionOptions attribute set it; the rest
    # (e.g. the runner's rtol/atol) are not for the session.
    options = SessionOptions()
    for key, value in kwargs.items():
        if not key.startswith("_") and hasattr(options, key):
            setattr(options, key, value)
    return options


class OnyxBackendRep(BackendRep):
    """A prepared model: run(inputs) returns the outputs in the graph's order."""

    def __init__(self, session: InferenceSession) -> None:
        self._session = session
        self._input_names = [a.name for a in session.get_inputs()]
        self._initializer_names = [a.name for a in session.get_overridable_initializers()]
        self._output_names = [a.name for a in session.get_outputs()]

    @property
    def session(self) -> InferenceSession:
        return self._session

    def run(self, inputs: Any, **kwargs: Any) -> tuple[Any, ...]:
        """``inputs``: a list in the order of the graph's inputs, a dict of name
        to value, or one array for a one-input model."""
        if isinstance(inputs, dict):
            feeds = dict(inputs)
        else:
            if isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple)):
                inputs = [inputs]
            names = self._input_names
            if len(inputs) > len(names):
                # Values for overridable initializers follow the plain inputs.
                names = names + self._initializer_names
            if len(inputs) > len(names):
                raise ValueError(f"the model has {len(names)} inputs, got {len(inputs)} values")
            feeds = dict(zip(names, inputs))
        # The runner may pass scalars; InferenceSession.run refuses them, as
        # onnxruntime's does, so they become 0-d arrays here.
        scalars = (np.generic, bool, int, float, complex)
        feeds = {k: np.asarray(v) if isinstance(v, scalars) else v for k, v in feeds.items()}
        run_options = RunOptions()
        for key, value in kwargs.items():
            if hasattr(run_options, key):
                setattr(run_options, key, value)
        outputs = self._session.run(None, feeds, run_options)
        return namedtupledict("Outputs", self._output_names)(*outputs)


class OnyxBackend(Backend):
    """Runs ONNX models with onyx on the CPU."""

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        return cls.supports_device(device)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        try:
            return Device(device).type == DeviceType.CPU
        except Exception:  # an unknown device name
            return False

    @classmethod
    def prepare(cls, model: Any, device: str = "CPU", **kwargs: Any) -> OnyxBackendRep:
        """``model``: a ModelProto, serialized bytes, or a path."""
        if not cls.supports_device(device):
            raise RuntimeError(f"onyx.backend runs on the CPU only, not on '{device}'")
        options = _session_options(kwargs)
        if isinstance(model, onnx.ModelProto):
            data: Any = model.SerializeToString()
        elif isinstance(model, (bytes, bytearray, str, os.PathLike)):
            data = model
        else:
            raise TypeError(f"cannot prepare a model from {type(model).__name__}")
        return OnyxBackendRep(InferenceSession(data, options, providers=["CPUExecutionProvider"]))

    @classmethod
    def run_model(cls, model: Any, inputs: Any, device: str = "CPU", **kwargs: Any) -> tuple[Any, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(
        cls,
        node: onnx.NodeProto,
        inputs: Any,
        device: str = "CPU",
        outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None = None,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        """Runs one node: wraps it in a one-node model whose inputs are typed
        from the given arrays."""
        named = _named_inputs(node, inputs)
        model = _model_for_node(node, named, outputs_info, kwargs.pop("opset_version", None))
        return cls.prepare(model, device, **kwargs).run(dict(named))


def _list(inputs: Any) -> list:
    if isinstance(inputs, (list, tuple)):
        return list(inputs)
    return [inputs]


def _value_info(name: str, value: Any) -> onnx.ValueInfoProto:
    if isinstance(value, (list, tuple)):  # a sequence of tensors
        elem = np.asarray(value[0]) if value else np.zeros(0, np.float32)
        elem_type = onnx.helper.np_dtype_to_tensor_dtype(_storage_dtype(elem))
        return onnx.helper.make_tensor_sequence_value_info(name, elem_type, None)
    array = np.asarray(value)
    elem_type = onnx.helper.np_dtype_to_tensor_dtype(_storage_dtype(array))
    return onnx.helper.make_tensor_value_info(name, elem_type, list(array.shape))


def _storage_dtype(array: np.ndarray) -> np.dtype:
    return np.dtype(object) if array.dtype.kind in "OUS" else array.dtype


def _named_inputs(node: onnx.NodeProto, inputs: Any) -> list[tuple[str, Any]]:
    """Pairs the node's (non-empty) input names with the given values."""
    if isinstance(inputs, dict):
        return [(name, inputs[name]) for name in node.input if name and name in inputs]
    present = [name for name in node.input if name]
    return list(zip(present, _list(inputs)))


def _model_for_node(
    node: onnx.NodeProto,
    named: list[tuple[str, Any]],
    outputs_info: Sequence[tuple[np.dtype, tuple[int, ...]]] | None,
    opset_version: int | None,
) -> onnx.ModelProto:
    graph_inputs = [_value_info(name, value) for name, value in named]

    if outputs_info:
        graph_outputs = [
            onnx.helper.make_tensor_value_info(name, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), list(shape))
            for name, (dtype, shape) in zip(node.output, outputs_info)
            if name
        ]
    else:
        graph_outputs = [onnx.helper.make_empty_tensor_value_info(name) for name in node.output if name]

    opsets = [onnx.helper.make_opsetid("", opset_version or onnx.defs.onnx_opset_version())]
    if node.domain not in ("", "ai.onnx"):
        opsets.append(onnx.helper.make_opsetid(node.domain, 1 if node.domain != "ai.onnx.ml" else 3))
    graph = onnx.helper.make_graph([node], f"{node.op_type}_node", graph_inputs, graph_outputs)
    model = onnx.helper.make_model(graph, opset_imports=opsets, producer_name="onyx.backend.run_node")
    if not outputs_info:
        # Give the outputs the types shape inference finds, where it can.
        try:
            inferred = onnx.shape_inference.infer_shapes(model)
            types = {vi.name: vi for vi in inferred.graph.value_info}
            types.update({vi.name: vi for vi in inferred.graph.output})
            del model.graph.output[:]
            for name in node.output:
                if not name:
                    continue
                vi = types.get(name)
                if vi is not None and vi.type.WhichOneof("value") is not None:
                    model.graph.output.append(vi)
                else:
                    model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
        except Exception:  # shape inference is only a help here
            pass
    return model


prepare = OnyxBackend.prepare
run_model = OnyxBackend.run_model
run_node = OnyxBackend.run_node
supports_device = OnyxBackend.supports_device
is_compatible = OnyxBackend.is_compatible
