"""InferenceSession, SessionOptions and RunOptions with onnxruntime's Python API.

Scripts written for onnxruntime run unchanged with ``import onyx as ort``.
Inputs are numpy arrays (borrowed without a copy when C-contiguous), outputs
are numpy arrays that share onyx's buffers.
"""

from __future__ import annotations

import os
import warnings
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from . import _onyx

GraphOptimizationLevel = _onyx.GraphOptimizationLevel
ExecutionMode = _onyx.ExecutionMode

OnyxError = _onyx.OnyxError
InvalidArgument = _onyx.InvalidArgument
InvalidGraph = _onyx.InvalidGraph
NotImplemented = _onyx.NotImplemented  # noqa: A001 - onnxruntime's name
Fail = _onyx.Fail

# onnxruntime's other names for the same failures.
InvalidModel = InvalidGraph
InvalidProtobuf = InvalidGraph
RuntimeException = Fail
EngineError = Fail


class NoSuchFile(InvalidArgument, FileNotFoundError):
    """The model path does not exist."""


_CPU = "CPUExecutionProvider"

# ONNX element type (TensorProto.DataType) of each numpy type kind onyx accepts.
_ONNX_TYPE_OF_NUMPY = {
    np.dtype(np.float32): 1,
    np.dtype(np.uint8): 2,
    np.dtype(np.int8): 3,
    np.dtype(np.uint16): 4,
    np.dtype(np.int16): 5,
    np.dtype(np.int32): 6,
    np.dtype(np.int64): 7,
    np.dtype(np.bool_): 9,
    np.dtype(np.float16): 10,
    np.dtype(np.float64): 11,
    np.dtype(np.uint32): 12,
    np.dtype(np.uint64): 13,
    np.dtype(np.complex64): 14,
    np.dtype(np.complex128): 15,
}
_STRING = 8
# Types numpy lacks, fed and returned as same-width integers (the package
# docstring says so too): bfloat16 <-> uint16, float8/float4 <-> uint8,
# int4/int2 <-> one int8 per element, uint4/uint2 <-> one uint8 per element.
_VIEW_TYPES = {
    16: np.dtype(np.uint16),
    17: np.dtype(np.uint8),
    18: np.dtype(np.uint8),
    19: np.dtype(np.uint8),
    20: np.dtype(np.uint8),
    21: np.dtype(np.uint8),
    22: np.dtype(np.int8),
    23: np.dtype(np.uint8),
    24: np.dtype(np.uint8),
    25: np.dtype(np.uint8),
    26: np.dtype(np.int8),
}


def get_available_providers() -> list[str]:
    """Names of the execution providers this build has, most preferred first."""
    return list(_onyx.available_providers())


def get_all_providers() -> list[str]:
    return get_available_providers()


def get_device() -> str:
    return "CPU"


_default_logger_severity = 2


def set_default_logger_severity(level: int) -> None:
    """Accepted for compatibility; onyx logs through its session options."""
    global _default_logger_severity
    _default_logger_severity = int(level)


def set_seed(seed: int) -> None:
    """Accepted for compatibility: onyx kernels are deterministic."""


class SessionOptions:
    """Options fixed when a session is created (onnxruntime's SessionOptions)."""

    def __init__(self) -> None:
        self._options = _onyx.SessionOptions()
        self.log_verbosity_level = 0
        self.use_deterministic_compute = False
        self.enable_mem_reuse = True
        self._free_dimension_overrides: dict[str, int] = {}

    def _proxy(field: str, doc: str):  # noqa: N805 - builds properties at class creation
        def get(self):
            return getattr(self._options, field)

        def set(self, value):
            setattr(self._options, field, value)

        return property(get, set, doc=doc)

    graph_optimization_level = _proxy("graph_optimization_level", "GraphOptimizationLevel of the graph passes")
    intra_op_num_threads = _proxy("intra_op_num_threads", "threads inside one op; 0 means one per core")
    inter_op_num_threads = _proxy("inter_op_num_threads", "threads across ops (ORT_PARALLEL); 0 means default")
    execution_mode = _proxy("execution_mode", "ExecutionMode.ORT_SEQUENTIAL or ORT_PARALLEL")
    enable_profiling = _proxy("enable_profiling", "write a Chrome-trace JSON of every run")
    profile_file_prefix = _proxy("profile_file_prefix", "prefix of the profile file name")
    log_severity_level = _proxy("log_severity_level", "0 verbose, 1 info, 2 warning, 3 error, 4 fatal")
    logid = _proxy("log_id", "a name for this session in log lines")
    optimized_model_filepath = _proxy("optimized_model_filepath", "save the optimized model here when set")
    enable_mem_pattern = _proxy("enable_mem_pattern", "plan memory once per input-shape signature")
    enable_cpu_mem_arena = _proxy("enable_cpu_mem_arena", "reuse host allocations through an arena")
    del _proxy

    def add_session_config_entry(self, key: str, value: str) -> None:
        entries = dict(self._options.config_entries)
        entries[str(key)] = str(value)
        self._options.config_entries = entries

    def get_session_config_entry(self, key: str) -> str:
        entries = self._options.config_entries
        if key not in entries:
            raise InvalidArgument(f"SessionOptions has no configuration entry '{key}'")
        return entries[key]

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        """Recorded as the config entry 'session.free_dimension_override.<name>'."""
        self._free_dimension_overrides[dim_name] = int(dim_value)
        self.add_session_config_entry(f"session.free_dimension_override.{dim_name}", str(int(dim_value)))

    def __repr__(self) -> str:
        return (
            f"SessionOptions(graph_optimization_level={self.graph_optimization_level}, "
            f"intra_op_num_threads={self.intra_op_num_threads}, execution_mode={self.execution_mode})"
        )


class RunOptions:
    """Options of one run (onnxruntime's RunOptions). Setting ``terminate`` from
    another thread stops a run in progress between two nodes."""

    def __init__(self) -> None:
        self._options = _onyx.RunOptions()
        self.log_verbosity_level = 0
        self.logid = ""
        self.only_execute_path_to_fetches = False
        self._config: dict[str, str] = {}

    @property
    def log_severity_level(self) -> int:
        return self._options.log_severity_level

    @log_severity_level.setter
    def log_severity_level(self, value: int) -> None:
        self._options.log_severity_level = value

    @property
    def run_tag(self) -> str:
        return self._options.run_tag

    @run_tag.setter
    def run_tag(self, value: str) -> None:
        self._options.run_tag = value

    @property
    def terminate(self) -> bool:
        return self._options.terminate

    @terminate.setter
    def terminate(self, value: bool) -> None:
        self._options.terminate = bool(value)

    def add_run_config_entry(self, key: str, value: str) -> None:
        self._config[str(key)] = str(value)

    def get_run_config_entry(self, key: str) -> str:
        if key not in self._config:
            raise InvalidArgument(f"RunOptions has no configuration entry '{key}'")
        return self._config[key]


class NodeArg:
    """Name, type string and shape of a model input or output."""

    __slots__ = ("name", "type", "shape", "_value_type")

    def __init__(self, meta: Any) -> None:
        self.name: str = meta.name
        self.type: str = meta.type
        self.shape: list = list(meta.shape)
        self._value_type = meta.value_type

    def __repr__(self) -> str:
        return f"NodeArg(name='{self.name}', type='{self.type}', shape={self.shape})"

    __str__ = __repr__


class ModelMetadata:
    """What the model file says about itself (onnxruntime's ModelMetadata)."""

    def __init__(self, meta: Any) -> None:
        self.producer_name: str = meta.producer_name
        self.graph_name: str = meta.graph_name
        self.domain: str = meta.domain
        self.description: str = meta.description
        self.graph_description: str = meta.graph_description
        self.version: int = meta.version
        self.custom_metadata_map: dict[str, str] = dict(meta.custom_metadata_map)

    def __repr__(self) -> str:
        return f"ModelMetadata(producer_name='{self.producer_name}', graph_name='{self.graph_name}')"


def _parse_providers(providers, provider_options) -> tuple[list[str], list[dict]]:
    """Accepts onnxruntime's forms: names, (name, options) pairs, and a
    separate list of option dicts."""
    if providers is None:
        return [], []
    if isinstance(providers, str):
        providers = [providers]
    names: list[str] = []
    options: list[dict] = []
    for item in providers:
        if isinstance(item, (tuple, list)):
            if len(item) != 2 or not isinstance(item[0], str) or not isinstance(item[1], Mapping):
                raise ValueError("a provider must be a name or a (name, options dict) pair")
            names.append(item[0])
            options.append({str(k): str(v) for k, v in item[1].items()})
        elif isinstance(item, str):
            names.append(item)
            options.append({})
        else:
            raise ValueError(f"a provider must be a name or a (name, options dict) pair, got {item!r}")
    if provider_options is not None:
        if len(provider_options) != len(names):
            raise ValueError("'providers' and 'provider_options' should be the same length if both are given")
        options = [{str(k): str(v) for k, v in o.items()} for o in provider_options]
    return names, options


class InferenceSession:
    """Loads a model once and runs it (onnxruntime's InferenceSession).

    ``path_or_bytes`` is a file path (str or os.PathLike) or the serialized
    model (bytes). ``run`` may be called from several threads at once.
    """

    def __init__(
        self,
        path_or_bytes: str | os.PathLike | bytes,
        sess_options: SessionOptions | None = None,
        providers: Sequence[str | tuple[str, dict]] | None = None,
        provider_options: Sequence[dict] | None = None,
        **kwargs: Any,
    ) -> None:
        self._sess_options = sess_options if sess_options is not None else SessionOptions()
        options = self._sess_options._options.__copy__()
        disabled = kwargs.pop("disabled_optimizers", None)
        if disabled:
            options.disabled_optimizers = list(disabled)
        if kwargs:
            warnings.warn(f"onyx.InferenceSession ignores the arguments {sorted(kwargs)}", stacklevel=2)

        names, opts = _parse_providers(providers, provider_options)
        available = set(get_available_providers())
        chosen: list[str] = []
        self._provider_options: dict[str, dict] = {}
        for name, o in zip(names, opts):
            if name not in available:
                warnings.warn(
                    f"Specified provider '{name}' is not in available provider names. "
                    f"Available providers: '{', '.join(get_available_providers())}'",
                    stacklevel=2,
                )
                continue
            chosen.append(name)
            self._provider_options[name] = o

        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_path = None
            self._sess = _onyx.InferenceSession.from_bytes(bytes(path_or_bytes), options, chosen)
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            path = os.fspath(path_or_bytes)
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if not os.path.exists(path):
                raise NoSuchFile(f"Load model from {path} failed: file does not exist")
            self._model_path = path
            self._sess = _onyx.InferenceSession.from_file(path, options, chosen)
        else:
            raise TypeError(
                f"Unable to load from type '{type(path_or_bytes).__name__}': expected a path (str, os.PathLike) or bytes"
            )

        self._inputs = [NodeArg(m) for m in self._sess.inputs]
        self._outputs = [NodeArg(m) for m in self._sess.outputs]
        self._overridable = [NodeArg(m) for m in self._sess.overridable_initializers]
        self._feedable = {a.name: a for a in self._inputs}
        self._feedable.update({a.name: a for a in self._overridable})
        self._output_names = [a.name for a in self._outputs]
        self._output_set = set(self._output_names)
        self._providers = list(self._sess.providers())
        for name in self._providers:
            self._provider_options.setdefault(name, {})
        self._default_run_options = RunOptions()

    # ---- metadata -------------------------------------------------------------

    def get_inputs(self) -> list[NodeArg]:
        return list(self._inputs)

    def get_outputs(self) -> list[NodeArg]:
        return list(self._outputs)

    def get_overridable_initializers(self) -> list[NodeArg]:
        return list(self._overridable)

    def get_modelmeta(self) -> ModelMetadata:
        return ModelMetadata(self._sess.metadata)

    def get_providers(self) -> list[str]:
        return list(self._providers)

    def get_provider_options(self) -> dict[str, dict]:
        return {name: dict(self._provider_options.get(name, {})) for name in self._providers}

    def get_session_options(self) -> SessionOptions:
        return self._sess_options

    def get_profiling_start_time_ns(self) -> int:
        return 0

    def end_profiling(self) -> str:
        return self._sess.end_profiling()

    def disable_fallback(self) -> None:
        """Accepted for compatibility: onyx always falls back to the CPU."""

    def enable_fallback(self) -> None:
        """Accepted for compatibility: onyx always falls back to the CPU."""

    # ---- running ----------------------------------------------------------------

    def run(
        self,
        output_names: Sequence[str] | None,
        input_feed: Mapping[str, Any],
        run_options: RunOptions | None = None,
    ) -> list:
        """Runs the model and returns the requested outputs in order
        (``output_names`` None or empty: every output)."""
        if not isinstance(input_feed, Mapping):
            raise TypeError(f"input_feed must be a dict of input name to value, got {type(input_feed).__name__}")
        names = list(output_names) if output_names else []
        for name in names:
            if name not in self._output_set:
                raise InvalidArgument(
                    f"Invalid output name: '{name}'; the model's outputs are {self._output_names}"
                )
        for arg in self._inputs:
            if arg.name not in input_feed:
                missing = [a.name for a in self._inputs if a.name not in input_feed]
                raise InvalidArgument(
                    f"Required inputs ({missing}) are missing from input feed ({list(input_feed)})."
                )
        feeds = []
        for name, value in input_feed.items():
            arg = self._feedable.get(name)
            if arg is None:
                raise InvalidArgument(
                    f"Invalid input name: '{name}'; the model's inputs are {[a.name for a in self._inputs]}"
                )
            feeds.append((name, _to_value(arg._value_type, value, arg.name)))
        options = (run_options if run_options is not None else self._default_run_options)._options
        return self._sess.run(names, feeds, options)

    def run_with_iobinding(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplemented("onyx has no IOBinding; use run()")


# ---- Python values -> onyx values ----------------------------------------------------


def _tensor_value(elem_type: int, value: Any, where: str):
    """A tensor feed, borrowing the numpy memory. The session checks the element
    type and shape against the model; here only types numpy lacks are mapped
    (a uint16 array feeds a bfloat16 input, see _VIEW_TYPES)."""
    array = value if isinstance(value, np.ndarray) else np.asarray(value)
    if array.dtype.kind in "OUS":
        return _onyx.Value.from_strings(array.ravel().tolist(), list(array.shape))
    if array.dtype not in _ONNX_TYPE_OF_NUMPY:
        raise InvalidArgument(f"input '{where}' has numpy type {array.dtype}, which has no ONNX equivalent")
    as_type = elem_type if elem_type in _VIEW_TYPES and _VIEW_TYPES[elem_type] == array.dtype else 0
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return _onyx.Value.from_numpy(array, as_type)


def _to_value(value_type: Any, value: Any, where: str):
    """Converts one Python feed to an onyx Value following the declared type."""
    if isinstance(value, _onyx.Value):
        return value
    kind = value_type.kind if value_type is not None else _onyx.KIND_TENSOR
    if kind == _onyx.KIND_OPTIONAL:
        inner = value_type.inner
        if value is None:
            return _onyx.Value.none(inner)
        return _to_value(inner, value, where).as_optional()
    if value is None:
        raise InvalidArgument(f"Input '{where}' is None but the model declares {value_type}")
    if kind == _onyx.KIND_SEQUENCE:
        if isinstance(value, np.ndarray) or not isinstance(value, Iterable) or isinstance(value, (str, bytes, dict)):
            raise InvalidArgument(f"Input '{where}' must be a list: the model declares {value_type}")
        inner = value_type.inner
        items = [_to_value(inner, item, f"{where}[{i}]") for i, item in enumerate(value)]
        return _onyx.Value.sequence(items, inner)
    if kind == _onyx.KIND_MAP:
        if not isinstance(value, Mapping):
            raise InvalidArgument(f"Input '{where}' must be a dict: the model declares {value_type}")
        key_type = value_type.key_type
        value_elem = value_type.inner.elem_type if value_type.inner is not None else 0
        keys = list(value.keys())
        values = list(value.values())
        if key_type == _STRING:
            key_value = _onyx.Value.from_strings([str(k) for k in keys], [len(keys)])
        else:
            key_value = _tensor_value(key_type, np.array(keys, dtype=_numpy_dtype(key_type)), where)
        if value_elem == _STRING:
            val_value = _onyx.Value.from_strings([str(v) for v in values], [len(values)])
        else:
            val_value = _tensor_value(value_elem, np.array(values, dtype=_numpy_dtype(value_elem)), where)
        return _onyx.Value.map(key_value, val_value)
    elem_type = value_type.elem_type if value_type is not None else 0
    return _tensor_value(elem_type, value, where)


def _numpy_dtype(elem_type: int) -> np.dtype | None:
    for dtype, t in _ONNX_TYPE_OF_NUMPY.items():
        if t == elem_type:
            return dtype
    return None
