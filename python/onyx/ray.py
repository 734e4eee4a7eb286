"""Ray integration: batch inference over a Ray Data dataset with one onyx
session per actor (``OnyxPredictor``, ``map_batches``), and a Ray Serve
deployment that runs concurrent requests as one batch (``deployment``)::

    import ray
    import onyx.ray

    ds = ray.data.read_parquet("rows.parquet")  # columns "id" and "x"
    scored = onyx.ray.map_batches(ds, "model.onnx", batch_size=1024, concurrency=4, passthrough_columns=["id"])

    from ray import serve
    handle = serve.run(onyx.ray.deployment("model.onnx", max_batch_size=16))
    outputs = handle.remote({"x": rows}).result()  # {output name: array}

Ray is imported only by the functions that need it, so ``import onyx`` never
imports it and ``OnyxPredictor`` works as a plain callable where Ray is absent.
Every worker must be able to import onyx (``pip install`` it on each node) and
read the model: give a path every node can see, or the model's bytes.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
from collections import deque
from typing import Any, Mapping, Sequence

import numpy as np

from .session import InferenceSession, SessionOptions

# How many batch sizes a Serve replica remembers for ``batch_sizes()``.
_BATCH_HISTORY = 1000


def _absolute(model: str | os.PathLike | bytes) -> str | bytes:
    """A path made absolute on the driver: Ray workers do not run in the
    driver's working folder. Bytes are the model itself and stay as they are."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model)
    return os.path.abspath(os.fspath(model))


def _assigned_cpus() -> int:
    """The CPUs Ray reserved for this worker, or 0 outside Ray. onyx's own
    default (a thread per core) would oversubscribe a node that runs several
    actors, each of which Ray believes uses only its share."""
    ray = sys.modules.get("ray")  # a Ray worker has always imported ray
    if ray is None or not ray.is_initialized():
        return 0
    context = ray.get_runtime_context()
    # Only a worker (not the driver) has resources assigned to it.
    if getattr(getattr(context, "worker", None), "mode", None) != ray.WORKER_MODE:
        return 0
    cpus = context.get_assigned_resources().get("CPU", 0)
    return max(1, int(cpus)) if cpus else 0


def _create_session(
    model: str | os.PathLike | bytes,
    providers: Sequence[str | tuple[str, dict]] | None,
    intra_op_num_threads: int | None,
    session_options: Mapping[str, Any] | None,
) -> InferenceSession:
    """One session, its options built here from plain values: ``SessionOptions``
    itself cannot be pickled into an actor's constructor arguments."""
    options = SessionOptions()
    for name, value in (session_options or {}).items():
        if name == "config_entries":
            for key, entry in value.items():
                options.add_session_config_entry(key, entry)
        elif name.startswith("_") or not (
            isinstance(getattr(SessionOptions, name, None), property) or name in vars(options)
        ):
            raise ValueError(f"session_options names '{name}', which is not an onyx.SessionOptions option")
        else:
            setattr(options, name, value)
    if intra_op_num_threads is None and "intra_op_num_threads" not in (session_options or {}):
        intra_op_num_threads = _assigned_cpus()
    if intra_op_num_threads is not None:
        options.intra_op_num_threads = intra_op_num_threads
    return InferenceSession(model, options, providers=providers)


def _model_name(model: str | bytes) -> str:
    return f"'{model}'" if isinstance(model, str) else f"({len(model)} bytes)"


class OnyxPredictor:
    """A Ray Data UDF class for ``Dataset.map_batches`` with ``batch_format="numpy"``:
    each actor creates one ``onyx.InferenceSession`` when it starts and runs every
    batch it is given through it.

    A batch is a dict of column name to array, one row per element of dim 0.
    Each model input is fed the column of the same name, or the column
    ``input_map`` names for it (``{model input: column}``); other columns are
    ignored unless ``passthrough_columns`` names them, in which case they are
    copied to the result (an id column, to match results to rows). The result
    holds one column per model output (``output_names``, default all).

    ``session_options`` sets ``onyx.SessionOptions`` attributes by name
    (``{"graph_optimization_level": ..., "config_entries": {key: value}}``).
    ``intra_op_num_threads`` defaults to the CPUs Ray reserved for the actor.
    """

    def __init__(
        self,
        model: str | os.PathLike | bytes,
        *,
        providers: Sequence[str | tuple[str, dict]] | None = None,
        intra_op_num_threads: int | None = None,
        session_options: Mapping[str, Any] | None = None,
        input_map: Mapping[str, str] | None = None,
        output_names: Sequence[str] | None = None,
        passthrough_columns: Sequence[str] = (),
    ) -> None:
        self.model = _absolute(model)
        self.session = _create_session(self.model, providers, intra_op_num_threads, session_options)
        inputs = [arg.name for arg in self.session.get_inputs()]
        input_map = dict(input_map or {})
        unknown = [name for name in input_map if name not in inputs]
        if unknown:
            raise ValueError(
                f"input_map names {unknown}, which model {_model_name(self.model)} does not have as inputs; "
                f"its inputs are {inputs}"
            )
        # Model input -> the batch column it is fed from.
        self.columns = {name: input_map.get(name, name) for name in inputs}
        self.output_names = list(output_names) if output_names else [arg.name for arg in self.session.get_outputs()]
        self.passthrough_columns = list(passthrough_columns)
        clashes = sorted(set(self.passthrough_columns) & set(self.output_names))
        if clashes:
            raise ValueError(f"passthrough columns {clashes} have the names of model outputs; rename the columns")

    def __call__(self, batch: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        missing = [name for name in self.passthrough_columns if name not in batch]
        if missing:
            raise ValueError(f"passthrough columns {missing} are not in the batch, whose columns are {list(batch)}")
        feeds = _feeds(self.columns, batch, self.model, "batch")
        outputs = self.session.run(self.output_names, feeds)
        result = {name: np.asarray(batch[name]) for name in self.passthrough_columns}
        result.update(zip(self.output_names, outputs))
        return result


def _feeds(columns: Mapping[str, str], batch: Mapping[str, Any], model: str | bytes, what: str) -> dict[str, Any]:
    """The session feed from a batch or request, or a ValueError naming each
    model input whose column is missing and the columns there are."""
    missing = [(name, column) for name, column in columns.items() if column not in batch]
    if missing:
        wanted = ", ".join(
            f"'{name}'" if name == column else f"'{name}' (mapped to column '{column}')" for name, column in missing
        )
        raise ValueError(
            f"model {_model_name(model)}: the {what} has no column for input {wanted}; its columns are "
            f"{sorted(batch)}. Name the columns after the model inputs {list(columns)} or map them with "
            "input_map={model input: column}"
        )
    return {name: batch[column] for name, column in columns.items()}


def map_batches(
    dataset: Any,
    model: str | os.PathLike | bytes,
    *,
    batch_size: int = 1024,
    concurrency: int | tuple[int, int] = 1,
    num_cpus: float = 1,
    providers: Sequence[str | tuple[str, dict]] | None = None,
    intra_op_num_threads: int | None = None,
    session_options: Mapping[str, Any] | None = None,
    input_map: Mapping[str, str] | None = None,
    output_names: Sequence[str] | None = None,
    passthrough_columns: Sequence[str] = (),
    predictor: type = OnyxPredictor,
    **map_batches_options: Any,
) -> Any:
    """``dataset.map_batches`` through ``OnyxPredictor`` on a pool of
    ``concurrency`` actors (an int, or ``(min, max)`` for an autoscaling pool)
    of ``num_cpus`` each, every actor with one session; returns the new,
    lazy dataset of the output columns (and ``passthrough_columns``). The
    session arguments are ``OnyxPredictor``'s; ``predictor`` may be a subclass
    of it (to add pre- or post-processing); ``map_batches_options`` go to
    ``Dataset.map_batches`` as they are."""
    import ray
    import ray.data

    constructor_kwargs = dict(
        providers=providers,
        intra_op_num_threads=intra_op_num_threads,
        session_options=dict(session_options) if session_options else None,
        input_map=dict(input_map) if input_map else None,
        output_names=list(output_names) if output_names else None,
        passthrough_columns=list(passthrough_columns),
    )
    pool = _actor_pool_arguments(ray, dataset, concurrency)
    return dataset.map_batches(
        predictor,
        fn_constructor_args=(_absolute(model),),
        fn_constructor_kwargs=constructor_kwargs,
        batch_size=batch_size,
        batch_format="numpy",
        num_cpus=num_cpus,
        **pool,
        **map_batches_options,
    )


def _version(module: Any) -> tuple[int, int]:
    major, minor = (module.__version__.split(".") + ["0"])[:2]
    return int(major), int("".join(c for c in minor if c.isdigit()) or 0)


def _actor_pool_arguments(ray: Any, dataset: Any, concurrency: int | tuple[int, int]) -> dict[str, Any]:
    """How this Ray release asks ``map_batches`` for an actor pool: Ray 2.9 to
    2.50 take ``concurrency=`` (and deprecate ``compute=``); earlier releases
    and 2.51 on take ``compute=ActorPoolStrategy(...)`` (2.51 deprecates
    ``concurrency=``)."""
    takes_concurrency = "concurrency" in inspect.signature(dataset.map_batches).parameters
    if takes_concurrency and _version(ray) < (2, 51):
        return {"concurrency": concurrency}
    if isinstance(concurrency, tuple):
        low, high = concurrency
        return {"compute": ray.data.ActorPoolStrategy(min_size=low, max_size=high)}
    return {"compute": ray.data.ActorPoolStrategy(size=concurrency)}


def deployment(
    model: str | os.PathLike | bytes,
    *,
    max_batch_size: int = 8,
    batch_wait_timeout_s: float = 0.01,
    num_replicas: int = 1,
    name: str = "OnyxModel",
    ray_actor_options: Mapping[str, Any] | None = None,
    providers: Sequence[str | tuple[str, dict]] | None = None,
    intra_op_num_threads: int | None = None,
    session_options: Mapping[str, Any] | None = None,
    output_names: Sequence[str] | None = None,
    **deployment_options: Any,
) -> Any:
    """A Ray Serve application (a bound deployment, ready for ``serve.run``) of
    ``num_replicas`` replicas, each holding one session.

    A request is a dict of model input name to array whose dim 0 is rows;
    the reply is a dict of output name to the request's rows of that output.
    ``@serve.batch`` gathers up to ``max_batch_size`` concurrent requests
    (waiting at most ``batch_wait_timeout_s`` for more); requests whose inputs
    agree in dtype and in every dim but the first are concatenated along dim
    0, run once, and split back, so each output's dim 0 must be rows too. A
    request that fails (a missing input, a wrong dtype) fails alone. The
    replica's ``batch_sizes()`` method returns the number of requests in each
    recent batch.

    ``ray_actor_options`` (default one CPU) and ``deployment_options`` go to
    the deployment's ``options``; the session arguments are ``OnyxPredictor``'s.
    """
    from ray import serve

    model = _absolute(model)
    session_options = dict(session_options) if session_options else None
    output_names = list(output_names) if output_names else None

    # The class is made here so that @serve.batch takes this call's settings;
    # cloudpickle ships it to the replicas by value.
    @serve.deployment(name=name)
    class OnyxModel:
        def __init__(self) -> None:
            self.session = _create_session(model, providers, intra_op_num_threads, session_options)
            self.inputs = [arg.name for arg in self.session.get_inputs()]
            self.columns = {input_name: input_name for input_name in self.inputs}  # a request's keys are input names
            self.output_names = output_names or [arg.name for arg in self.session.get_outputs()]
            self._batch_sizes: deque[int] = deque(maxlen=_BATCH_HISTORY)

        async def __call__(self, request: Mapping[str, Any]) -> dict[str, np.ndarray]:
            # Checked here, before batching, so that a bad request fails alone.
            if not isinstance(request, Mapping):
                raise TypeError(
                    f"a request to {name} is a dict of model input name to array, got {type(request).__name__}"
                )
            feeds = {n: np.asarray(value) for n, value in _feeds(self.columns, request, model, "request").items()}
            rows = {input_name: value.shape[0] if value.ndim else None for input_name, value in feeds.items()}
            if None in rows.values() or len(set(rows.values())) != 1:
                raise ValueError(f"a request's inputs must all have the same number of rows in dim 0; got {rows}")
            result = await self._run_batch(feeds)
            if isinstance(result, BaseException):
                raise result
            return result

        @serve.batch(max_batch_size=max_batch_size, batch_wait_timeout_s=batch_wait_timeout_s)
        async def _run_batch(self, requests: list[dict[str, np.ndarray]]) -> list[Any]:
            self._batch_sizes.append(len(requests))
            # In a thread, so the replica keeps taking requests (the next batch) meanwhile.
            return await asyncio.to_thread(self._run_grouped, requests)

        def _run_grouped(self, requests: list[dict[str, np.ndarray]]) -> list[Any]:
            """One session run per group of requests that can be concatenated;
            each request's entry is its outputs or the exception its group raised."""
            groups: dict[tuple, list[int]] = {}
            for index, feeds in enumerate(requests):
                signature = tuple((n, feeds[n].dtype.str, feeds[n].shape[1:]) for n in self.inputs)
                groups.setdefault(signature, []).append(index)
            results: list[Any] = [None] * len(requests)
            for indices in groups.values():
                try:
                    for index, outputs in zip(indices, self._run_together([requests[i] for i in indices])):
                        results[index] = outputs
                except Exception as error:  # noqa: BLE001 - handed to each request of the group
                    for index in indices:
                        results[index] = error
            return results

        def _run_together(self, requests: list[dict[str, np.ndarray]]) -> list[dict[str, np.ndarray]]:
            if len(requests) == 1:
                return [dict(zip(self.output_names, self.session.run(self.output_names, requests[0])))]
            rows = [feeds[self.inputs[0]].shape[0] for feeds in requests]
            batch = {n: np.concatenate([feeds[n] for feeds in requests]) for n in self.inputs}
            outputs = self.session.run(self.output_names, batch)
            for output_name, output in zip(self.output_names, outputs):
                if np.ndim(output) == 0 or np.shape(output)[0] != sum(rows):
                    raise ValueError(
                        f"output '{output_name}' has shape {np.shape(output)}, whose dim 0 is not the batch's "
                        f"{sum(rows)} rows, so it cannot be split back into requests; serve this model with "
                        "max_batch_size=1"
                    )
            bounds = np.cumsum(rows)[:-1]
            split = [np.split(np.asarray(output), bounds) for output in outputs]
            return [dict(zip(self.output_names, parts)) for parts in zip(*split)]

        def batch_sizes(self) -> list[int]:
            """The number of requests in each recent batch, oldest first."""
            return list(self._batch_sizes)

    options: dict[str, Any] = {
        "num_replicas": num_replicas,
        "ray_actor_options": dict(ray_actor_options) if ray_actor_options is not None else {"num_cpus": 1},
    }
    # A replica must accept at least a batch of requests at once, and the next
    # batch's while one runs; Serve's own default (5 since Ray 2.32) would cap
    # every batch at 5. The option was max_concurrent_queries before Ray 2.10.
    limit_name = (
        "max_ongoing_requests"
        if "max_ongoing_requests" in inspect.signature(serve.deployment).parameters
        else "max_concurrent_queries"
    )
    options[limit_name] = 2 * max_batch_size
    options.update(deployment_options)
    return OnyxModel.options(**options).bind()
