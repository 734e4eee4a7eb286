"""InferenceSession, SessionOptions and RunOptions with onnxruntime's Python API.

Scripts written for onnxruntime run unchanged with ``import onyx as ort``.
Inputs are numpy arrays (borrowed without a copy when C-contiguous) or lists
(converted to the input's declared type, as onnxruntime converts them);
outputs are numpy arrays that share onyx's buffers.

Errors are raised with onnxruntime's classes: ValueError for missing inputs,
RuntimeError for feeds that are not arrays or lists, and the classes of
``onyx.capi.onnxruntime_pybind11_state`` (InvalidArgument, Fail, ...) for what
the core refuses.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from . import _onyx
from ._types import ML_DTYPE_OF_ONNX_TYPE, ONNX_TYPE_OF_NUMPY, STRING, VIEW_TYPES, numpy_dtype_of, to_view
from .io_binding import IOBinding
from .ortvalue import OrtValue

GraphOptimizationLevel = _onyx.GraphOptimizationLevel
ExecutionMode = _onyx.ExecutionMode

# onnxruntime's exception classes (capi.onnxruntime_pybind11_state), each a
# direct subclass of OnyxError, itself a subclass of Exception.
OnyxError = _onyx.OnyxError
InvalidArgument = _onyx.InvalidArgument
InvalidGraph = _onyx.InvalidGraph
InvalidProtobuf = _onyx.InvalidProtobuf
NotImplemented = _onyx.NotImplemented  # noqa: A001 - onnxruntime's name
Fail = _onyx.Fail
NoSuchFile = _onyx.NoSuchFile
NoModel = _onyx.NoModel
EngineError = _onyx.EngineError
RuntimeException = _onyx.RuntimeException
ModelLoaded = _onyx.ModelLoaded
EPFail = _onyx.EPFail
# onyx's own name for InvalidGraph.
InvalidModel = InvalidGraph

_CPU = "CPUExecutionProvider"


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



def _str_arg(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    return value


def _int_arg(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    return int(value)


class SessionOptions:
    """Options fixed when a session is created (onnxruntime's SessionOptions)."""

    def __init__(self) -> None:
        self._options = _onyx.SessionOptions()
        self.log_verbosity_level = 0
        self.use_deterministic_compute = False
        self.enable_mem_reuse = True

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
            raise RuntimeError(f"SessionOptions has no configuration entry '{key}'")
        return entries[key]

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        """Every graph-input dimension whose dim_param is ``dim_name`` becomes
        ``dim_value`` before the graph is optimized: the inputs show the number
        and a feed of another size is refused. As in onnxruntime, the first
        value given for a name counts."""
        overrides = dict(self._options.free_dimension_overrides)
        overrides.setdefault(_str_arg(dim_name, "dim_name"), _int_arg(dim_value, "dim_value"))
        self._options.free_dimension_overrides = overrides

    def add_free_dimension_override_by_denotation(self, dim_denotation: str, dim_value: int) -> None:
        """The same for graph-input dimensions whose denotation (e.g.
        'DATA_BATCH') is ``dim_denotation``."""
        overrides = dict(self._options.free_dimension_overrides_by_denotation)
        overrides.setdefault(_str_arg(dim_denotation, "dim_denotation"), _int_arg(dim_value, "dim_value"))
        self._options.free_dimension_overrides_by_denotation = overrides

    def add_initializer(self, name: str, val: OrtValue | np.ndarray) -> None:
        """``val`` replaces the model's initializer ``name`` (same element type
        and shape) in every session made with these options. Its memory is
        shared, not copied: leave it unchanged while those sessions live."""
        _str_arg(name, "name")
        if isinstance(val, np.ndarray):
            val = OrtValue.ortvalue_from_numpy(val)
        if not isinstance(val, OrtValue):
            raise TypeError(f"add_initializer('{name}') takes an OrtValue or a numpy array, got {type(val).__name__}")
        if not val.is_tensor():
            raise TypeError(f"add_initializer('{name}') takes a tensor, got {val.data_type()}")
        self._options.set_initializer_override(name, val._value)

    def add_external_initializers(self, names: Sequence[str], ort_values: Sequence[OrtValue | np.ndarray]) -> None:
        """``add_initializer`` for each (name, value) pair."""
        names = list(names)
        values = list(ort_values)
        if len(names) != len(values):
            raise RuntimeError(f"add_external_initializers got {len(names)} names but {len(values)} values")
        for name, value in zip(names, values):
            self.add_initializer(name, value)

    def register_custom_ops_library(self, library_path: str) -> None:
        """Loads a shared library of custom operators (it exports
        ``RegisterCustomOps``, as onyx's C API describes) and makes its
        operators available to sessions created with these options. The
        library stays loaded for the rest of the process."""
        path = os.fspath(library_path)
        if not isinstance(path, str):
            raise TypeError(f"register_custom_ops_library takes a path, got {type(library_path).__name__}")
        self._options.register_custom_ops_library(path)

    def __repr__(self) -> str:
        return (
            f"SessionOptions(graph_optimization_level={self.graph_optimization_level}, "
            f"intra_op_num_threads={self.intra_op_num_threads}, execution_mode={self.execution_mode})"
        )


class RunOptions:
    """Options of one run (onnxruntime's RunOptions). Setting ``terminate`` from
    another thread stops a run in progress between two nodes (a Loop or Scan
    between two iterations) with a Fail error."""

    def __init__(self) -> None:
        self._options = _onyx.RunOptions()
        self._options.log_severity_level = -1
        self.log_verbosity_level = 0
        self.only_execute_path_to_fetches = False
        self._config: dict[str, str] = {}

    @property
    def log_severity_level(self) -> int:
        """-1: the session's level. At 0 (verbose) each run writes a line with
        its tag and duration to stderr."""
        return self._options.log_severity_level

    @log_severity_level.setter
    def log_severity_level(self, value: int) -> None:
        self._options.log_severity_level = _int_arg(value, "log_severity_level")

    @property
    def run_tag(self) -> str:
        """A name for the run in log lines (onnxruntime calls it logid)."""
        return self._options.run_tag

    @run_tag.setter
    def run_tag(self, value: str) -> None:
        self._options.run_tag = _str_arg(value, "run_tag")

    logid = run_tag

    @property
    def terminate(self) -> bool:
        return self._options.terminate

    @terminate.setter
    def terminate(self, value: bool) -> None:
        self._options.terminate = bool(value)

    def add_run_config_entry(self, key: str, value: str) -> None:
        self._config[_str_arg(key, "key")] = _str_arg(value, "value")

    def get_run_config_entry(self, key: str) -> str:
        if key not in self._config:
            raise RuntimeError(f"RunOptions has no configuration entry '{key}'")
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

    def __init__(self, meta: dict) -> None:
        self.producer_name: str = meta["producer_name"]
        self.graph_name: str = meta["graph_name"]
        self.domain: str = meta["domain"]
        self.description: str = meta["description"]
        self.graph_description: str = meta["graph_description"]
        self.version: int = meta["version"]
        self.custom_metadata_map: dict[str, str] = dict(meta["custom_metadata_map"])

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
            if provider_options is not None:
                raise ValueError("with 'provider_options', 'providers' must be names, not (name, options) pairs")
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
    A session made from bytes holds on to them, as onnxruntime's does, so that
    ``set_providers`` can create it again; a path costs no such memory.
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
        self._disabled_optimizers = kwargs.pop("disabled_optimizers", None)
        if kwargs:
            warnings.warn(f"onyx.InferenceSession ignores the arguments {sorted(kwargs)}", stacklevel=2)
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._model_path = None
            self._model_bytes = bytes(path_or_bytes)
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            path = os.fspath(path_or_bytes)
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if not os.path.exists(path):
                raise NoSuchFile(f"Load model from {path} failed: file does not exist")
            self._model_path = path
            self._model_bytes = None
        else:
            raise TypeError(
                f"Unable to load from type '{type(path_or_bytes).__name__}': expected a path (str, os.PathLike) or bytes"
            )
        self._default_run_options = RunOptions()
        self._create_session(providers, provider_options)

    def _create_session(self, providers, provider_options) -> None:
        """Creates the core session; replaces the current one only on success."""
        options = self._sess_options._options.__copy__()
        if self._disabled_optimizers:
            options.disabled_optimizers = list(self._disabled_optimizers)
        names, opts = _parse_providers(providers, provider_options)
        # Asking which providers there are loads every provider library (a
        # GPU driver stack can add hundreds of MiB and a few tenths of a
        # second): only done when the list names more than the CPU.
        available = set(get_available_providers()) if any(n != _CPU for n in names) else {_CPU}
        chosen: dict[str, dict] = {}
        for name, o in zip(names, opts):
            if name in chosen:
                warnings.warn(f"provider '{name}' is listed twice; the second is ignored", stacklevel=3)
            elif name not in available:
                warnings.warn(
                    f"Specified provider '{name}' is not in available provider names. "
                    f"Available providers: '{', '.join(get_available_providers())}'",
                    stacklevel=3,
                )
            else:
                chosen[name] = o
        # Each provider's own options reach it through the core's options
        # (an unknown key or a bad value is the provider's error). Not the
        # CPU's: onnxruntime's Python API accepts and ignores what it is given
        # (e.g. arena_extend_strategy="kSameAsRequested"), which the core's
        # arena keys would refuse.
        options.provider_options = {name: o for name, o in chosen.items() if o and name != _CPU}
        if self._model_path is None:
            sess = _onyx.InferenceSession.from_bytes(self._model_bytes, options, list(chosen))
        else:
            sess = _onyx.InferenceSession.from_file(self._model_path, options, list(chosen))

        self._sess = sess
        self._inputs = [NodeArg(m) for m in sess.inputs]
        self._outputs = [NodeArg(m) for m in sess.outputs]
        self._overridable = [NodeArg(m) for m in sess.overridable_initializers]
        self._feedable = {a.name: a for a in self._inputs}
        self._feedable.update({a.name: a for a in self._overridable})
        self._output_names = [a.name for a in self._outputs]
        self._output_set = set(self._output_names)
        # What the per-run feed check needs, worked out once: the inputs a
        # feed must have, and the numpy dtype of each tensor input whose
        # arrays go to the core as they are (no view type, no strings).
        self._required = [a.name for a in self._inputs if a._value_type.kind != _onyx.KIND_OPTIONAL]
        self._has_optional = len(self._required) != len(self._inputs)
        self._plain_dtypes = {}
        for arg in self._inputs + self._overridable:
            vt = arg._value_type
            if vt.kind == _onyx.KIND_TENSOR and vt.elem_type != STRING and vt.elem_type not in VIEW_TYPES:
                dtype = numpy_dtype_of(vt.elem_type)
                if dtype is not None:
                    self._plain_dtypes[arg.name] = np.dtype(dtype)
        self._providers = list(sess.providers())
        # The options each provider was given; the CPU provider takes none and,
        # as in onnxruntime, reports none.
        # Providers that report their options (defaults included) report
        # those; the rest report what they were given.
        reported = sess.provider_options()
        self._provider_options = {
            name: ({} if name == _CPU else dict(reported.get(name) or chosen.get(name, {})))
            for name in self._providers
        }

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

    def set_providers(
        self,
        providers: Sequence[str | tuple[str, dict]] | None = None,
        provider_options: Sequence[dict] | None = None,
    ) -> None:
        """Creates the session again from the same model and options with
        these providers (None: the default ones)."""
        self._create_session(providers, provider_options)

    def get_session_options(self) -> SessionOptions:
        return self._sess_options

    def get_profiling_start_time_ns(self) -> int:
        """When profiling started (at session creation), in ns since the epoch;
        0 when profiling is off. Profile timestamps count microseconds from it."""
        return self._sess.profiling_start_time_ns()

    def get_memory_profile(self) -> dict:
        """Host memory this session's runs have held (onyx's own): the peak and
        current bytes in use of its CPU memory arena (intermediate values, and
        outputs not yet released; weights not counted), -1 each without an
        arena (``enable_cpu_mem_arena`` off)."""
        peak, in_use = self._sess.memory_profile()
        return {"peak_bytes": peak, "in_use_bytes": in_use}

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
        feeds = self._feeds(input_feed)
        names = self._output_list(output_names)
        return self._execute(names, feeds, run_options, as_values=False)

    def run_with_ort_values(
        self,
        output_names: Sequence[str] | None,
        input_dict_ort_values: Mapping[str, OrtValue],
        run_options: RunOptions | None = None,
    ) -> list[OrtValue]:
        """``run`` with OrtValue feeds, returning OrtValues."""
        if not isinstance(input_dict_ort_values, Mapping):
            kind = type(input_dict_ort_values).__name__
            raise TypeError(f"the feed must be a dict of input name to OrtValue, got {kind}")
        for name, value in input_dict_ort_values.items():
            if not isinstance(value, OrtValue):
                raise TypeError(
                    f"run_with_ort_values feeds OrtValues; input '{name}' is {type(value).__name__} "
                    "(make one with OrtValue.ortvalue_from_numpy)"
                )
        feeds = self._feeds(input_dict_ort_values)
        names = self._output_list(output_names)
        return [OrtValue(v) for v in self._execute(names, feeds, run_options, as_values=True)]

    def run_async(
        self,
        output_names: Sequence[str] | None,
        input_feed: Mapping[str, Any],
        callback: Callable[[list, Any, str], None],
        user_data: Any,
        run_options: RunOptions | None = None,
    ) -> None:
        """Starts the run on another thread and returns; the thread then calls
        ``callback(outputs, user_data, error)``: the outputs and '' on success,
        [] and the error message on failure. Missing inputs and feeds that
        cannot be converted raise here, as in ``run``."""
        if not callable(callback):
            raise TypeError(f"callback must be callable as callback(outputs, user_data, error), got {callback!r}")
        names = list(output_names) if output_names else []
        failure = None
        feeds: list = []
        try:
            feeds = self._feeds(input_feed)
            self._output_list(names)
        except OnyxError as error:  # names the model lacks: reported to the callback, as onnxruntime does
            failure = str(error)

        def work() -> None:
            outputs: list = []
            error = failure
            if error is None:
                try:
                    outputs = self._execute(names, feeds, run_options, as_values=False)
                    error = ""
                except Exception as caught:  # noqa: BLE001 - every failure goes to the callback
                    error = str(caught)
            callback(outputs, user_data, error)

        threading.Thread(target=work, name="onyx-run-async").start()

    def io_binding(self) -> IOBinding:
        """An IOBinding for this session (host or device memory)."""
        return IOBinding(self)

    def run_with_iobinding(self, iobinding: IOBinding, run_options: RunOptions | None = None) -> None:
        """Runs with the binding's inputs where they are; its outputs are then
        in ``iobinding.get_outputs()``, in the memory bound to them (a
        device's stays there). Failures raise RuntimeError, as onnxruntime's do."""
        if not isinstance(iobinding, IOBinding):
            raise TypeError(f"run_with_iobinding takes an IOBinding, got {type(iobinding).__name__}")
        if iobinding._session is not self:
            raise RuntimeError("this IOBinding was made by another session (use session.io_binding())")
        targets = list(iobinding._outputs.values())
        if not targets:
            raise RuntimeError("the run has no outputs: bind at least one with IOBinding.bind_output")
        binding = iobinding._core_binding(self._omitted_optional_inputs(iobinding._inputs))
        options = self._run_options(run_options)
        try:
            values = self._timed(options, lambda: self._sess.run_with_binding(binding, options._options))
        except OnyxError as error:
            raise RuntimeError(f"the run failed: {error}") from error
        # An output bound to an OrtValue was written into it: the caller's object is the result.
        iobinding._results = [
            target if isinstance(target, OrtValue) else OrtValue(value) for target, value in zip(targets, values)
        ]

    # ---- helpers ------------------------------------------------------------------

    def _output_list(self, output_names: Sequence[str] | None) -> list[str]:
        names = list(output_names) if output_names else []
        for name in names:
            if name not in self._output_set:
                raise InvalidArgument(f"Invalid output name: '{name}'; the model's outputs are {self._output_names}")
        return names

    def _omitted_optional_inputs(self, given: Mapping[str, Any]) -> list:
        """Empty values for the optional-typed inputs the caller left out."""
        return [
            (arg.name, _onyx.Value.none(arg._value_type.inner))
            for arg in self._inputs
            if arg.name not in given and arg._value_type.kind == _onyx.KIND_OPTIONAL
        ]

    def _feeds(self, input_feed: Mapping[str, Any]) -> list:
        """The feed as core values, checked as onnxruntime checks it: missing
        inputs (optional-typed ones may be left out) raise ValueError."""
        if type(input_feed) is not dict and not isinstance(input_feed, Mapping):
            raise TypeError(f"input_feed must be a dict of input name to value, got {type(input_feed).__name__}")
        for required in self._required:
            if required not in input_feed:
                missing = [name for name in self._required if name not in input_feed]
                raise ValueError(f"inputs {missing} are required, but the feed only has {list(input_feed)}")
        feeds = []
        plain = self._plain_dtypes
        for name, value in input_feed.items():
            # The common case first: a contiguous array of the declared type
            # is borrowed as it is.
            dtype = plain.get(name)
            if dtype is not None and type(value) is np.ndarray and value.dtype == dtype and value.flags.c_contiguous:
                feeds.append((name, _onyx.Value.from_numpy(value)))
                continue
            arg = self._feedable.get(name)
            if arg is None:
                raise InvalidArgument(
                    f"Invalid input name: '{name}'; the model's inputs are {[a.name for a in self._inputs]}"
                )
            feeds.append((name, _to_value(arg._value_type, value, arg.name)))
        if self._has_optional:
            feeds += self._omitted_optional_inputs(input_feed)
        return feeds

    def _run_options(self, run_options: RunOptions | None) -> RunOptions:
        if run_options is None:
            return self._default_run_options
        if not isinstance(run_options, RunOptions):
            raise TypeError(f"run_options must be a RunOptions, got {type(run_options).__name__}")
        return run_options

    def _timed(self, run_options: RunOptions, run: Callable[[], Any]) -> Any:
        """Calls `run`; at verbose severity, logs how long it took."""
        severity = run_options.log_severity_level
        if severity < 0:
            severity = self._sess_options.log_severity_level
        if severity > 0:
            return run()
        start = time.perf_counter()
        outputs = run()
        if severity <= 0:
            tag = f" '{run_options.run_tag}'" if run_options.run_tag else ""
            print(f"onyx verbose: run{tag} took {(time.perf_counter() - start) * 1e3:.3f} ms", file=sys.stderr)
        return outputs

    def _execute(self, names: list[str], feeds: list, run_options: RunOptions | None, as_values: bool) -> list:
        options = self._run_options(run_options)
        run = self._sess.run_values if as_values else self._sess.run
        return self._timed(options, lambda: run(names, feeds, options._options))


# ---- Python values -> onyx values ----------------------------------------------------


def _array_from_list(value_type: Any, elem_type: int, value: list, where: str) -> np.ndarray:
    """A list feed as numpy makes it with the input's declared type, as
    onnxruntime converts lists (floats for an int64 input are truncated)."""
    if elem_type == STRING:
        dtype = np.dtype(object)
    elif elem_type in ML_DTYPE_OF_ONNX_TYPE:
        dtype = ML_DTYPE_OF_ONNX_TYPE[elem_type]
    elif elem_type in VIEW_TYPES:
        raise RuntimeError(
            f"input '{where}' is {value_type}, which numpy has no type for: feed a numpy array of "
            f"{VIEW_TYPES[elem_type]} holding its bits instead of a list"
        )
    else:
        dtype = numpy_dtype_of(elem_type)  # None (numpy's choice) when the model does not say
    try:
        return np.array(value, dtype=dtype)
    except (ValueError, TypeError, OverflowError) as error:
        raise RuntimeError(f"input '{where}': cannot make a {value_type} from this list ({error})") from None


def _tensor_value(value_type: Any, value: Any, where: str):
    """A tensor feed, borrowing numpy memory. The session checks the element
    type and shape against the model; here only types numpy lacks are mapped
    (an ml_dtypes array, or its integer view: a uint16 array feeds a bfloat16
    input, see VIEW_TYPES)."""
    elem_type = value_type.elem_type if value_type is not None else 0
    if isinstance(value, np.ndarray):
        array = value
    elif isinstance(value, list):
        array = _array_from_list(value_type, elem_type, value, where)
    elif isinstance(value, Mapping):
        raise InvalidArgument(f"input '{where}' is a dict (an ONNX map), but the model declares {value_type}")
    else:
        # onnxruntime refuses scalars, tuples and strings too.
        raise RuntimeError(f"input '{where}' must be a numpy array or a list, got {type(value).__name__}")
    if array.dtype.kind in "OUS":
        return _onyx.Value.from_strings(array.ravel().tolist(), list(array.shape))
    array, ml_type = to_view(array)
    if ml_type:
        return _onyx.Value.from_numpy(array, ml_type)
    if array.dtype not in ONNX_TYPE_OF_NUMPY:
        raise InvalidArgument(f"input '{where}' has numpy type {array.dtype}, which has no ONNX equivalent")
    as_type = elem_type if elem_type in VIEW_TYPES and VIEW_TYPES[elem_type] == array.dtype else 0
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return _onyx.Value.from_numpy(array, as_type)


def _to_value(value_type: Any, value: Any, where: str):
    """Converts one Python feed to an onyx Value following the declared type."""
    if isinstance(value, OrtValue):
        return value._value
    if isinstance(value, _onyx.Value):
        return value
    kind = value_type.kind if value_type is not None else _onyx.KIND_TENSOR
    if kind == _onyx.KIND_OPTIONAL:
        inner = value_type.inner
        if value is None:
            return _onyx.Value.none(inner)
        return _to_value(inner, value, where).as_optional()
    if value is None:
        # onnxruntime fails in the first node that reads it, with Fail.
        raise Fail(f"input '{where}' is None, but the model declares {value_type} (None is for optional inputs)")
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
        if key_type == STRING:
            key_value = _onyx.Value.from_strings([str(k) for k in keys], [len(keys)])
        else:
            key_value = _onyx.Value.from_numpy(np.array(keys, dtype=numpy_dtype_of(key_type)))
        if value_elem == STRING:
            val_value = _onyx.Value.from_strings([str(v) for v in values], [len(values)])
        else:
            val_value = _onyx.Value.from_numpy(np.array(values, dtype=numpy_dtype_of(value_elem)))
        return _onyx.Value.map(key_value, val_value)
    return _tensor_value(value_type, value, where)
