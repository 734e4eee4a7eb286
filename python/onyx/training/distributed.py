"""Data-parallel training over MPI processes (mpi4py).

Each process (rank) runs the same Module on its own slice of every batch;
before each optimizer step the gradients are summed over the ranks and
divided by the rank count, so with a loss that averages over the batch, N
ranks of batch B take exactly the steps one process takes with batch N*B::

    from mpi4py import MPI
    from onyx.training import distributed
    optimizer = distributed.DistributedOptimizer("out/optimizer_model.onnx", module, zero_stage=1)
    for x, y in my_slice_of_each_batch:
        module(x, y)
        optimizer.step()            # all-reduce, update, (ZeRO-1: share the updated weights)
        module.lazy_reset_grad()

Run it with ``mpirun -np 2 python -m mpi4py train.py``: with ``-m mpi4py`` an
uncaught exception in one rank aborts the whole job instead of leaving the
others waiting in a collective, and mpirun ends the job, naming the rank,
when a process dies.

ZeRO stage 1 (``zero_stage=1``) shards the optimizer state: the trainable
parameters, concatenated, are cut into N equal slices; each rank keeps the
moments of its slice only, updates that slice, and the ranks then gather the
updated slices. Each rank's optimizer memory falls to 1/N of it
(``optimizer_state_bytes()``).
"""

from __future__ import annotations

import os

import numpy as np

from . import api as _api


def _world(comm):
    if comm is not None:
        return comm
    try:
        from mpi4py import MPI
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError(
            "onyx.training.distributed needs mpi4py (pip install mpi4py, with OpenMPI's libopenmpi-dev)"
        ) from error
    return MPI.COMM_WORLD


def allreduce_gradients(module: "_api.Module", comm=None, average: bool = True) -> None:
    """Sums (and with ``average``, averages) the module's accumulated gradients
    over every rank, in place, in one message through one flat buffer."""
    comm = _world(comm)
    state = module._state
    names = module._train_meta["parameters"]
    if state._grad_reset or any(state._grads.get(n) is None for n in names):
        raise RuntimeError("allreduce_gradients: run a training step (module(...)) on every rank first")
    grads = [state._grads[n] for n in names]
    dtypes = {g.dtype for g in grads}
    if len(dtypes) != 1:
        raise TypeError(f"allreduce_gradients: the gradients have several element types ({sorted(map(str, dtypes))})")
    flat = np.concatenate([g.ravel() for g in grads])
    from mpi4py import MPI

    comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)
    if average:
        flat /= comm.Get_size()
    at = 0
    for name, g in zip(names, grads):
        # Copy back into the module's own buffers: they are the accumulators.
        g.reshape(-1)[...] = flat[at : at + g.size]
        at += g.size


def _shard_bounds(total: int, ranks: int) -> list:
    """[lo, hi) of each rank's slice of a flat buffer of ``total`` elements."""
    base, extra = divmod(total, ranks)
    bounds, lo = [], 0
    for r in range(ranks):
        hi = lo + base + (1 if r < extra else 0)
        bounds.append((lo, hi))
        lo = hi
    return bounds


class DistributedOptimizer:
    """An Optimizer that all-reduces the gradients over the ranks of ``comm``
    (MPI.COMM_WORLD by default) before each step. ``zero_stage=1`` shards the
    optimizer state across the ranks (see the module's doc)."""

    def __init__(self, optimizer_uri, module: "_api.Module", comm=None, zero_stage: int = 0) -> None:
        if zero_stage not in (0, 1):
            raise ValueError(f"DistributedOptimizer: zero_stage must be 0 or 1, got {zero_stage}")
        self._comm = _world(comm)
        self._module = module
        self._zero = zero_stage
        rank, size = self._comm.Get_rank(), self._comm.Get_size()
        self._check_same_parameters()
        if zero_stage == 0:
            self._optimizer = _api.Optimizer(optimizer_uri, module)
            return
        # ZeRO-1: the trainable parameters, concatenated, are cut into one
        # contiguous slice per rank. The optimizer's update is element-wise,
        # so each rank runs it on its slice alone (an optimizer model of one
        # flat parameter) and keeps the moments of that slice only.
        import onnx

        from .. import session as _session
        from . import artifacts as _artifacts

        meta = _api._metadata(_session.InferenceSession(os.fspath(optimizer_uri)), os.fspath(optimizer_uri), "optimizer")
        names = module._train_meta["parameters"]
        dtypes = {module._state._params[n].dtype for n in names}
        if len(dtypes) != 1:
            raise TypeError("DistributedOptimizer(zero_stage=1): the parameters must share one element type")
        self._dtype = dtypes.pop()
        self._moment_keys = meta["states"]
        total = sum(int(module._state._params[n].size) for n in names)
        self._bounds = _shard_bounds(total, size)
        lo, hi = self._bounds[rank]
        elem = onnx.helper.np_dtype_to_tensor_dtype(self._dtype)
        shard_model = _artifacts.optimizer_model(
            _artifacts.OptimType[meta["optimizer"]], [("shard", elem)], meta.get("hyperparameters") or None
        )
        self._optimizer = _session.InferenceSession(shard_model.SerializeToString(), providers=["CPUExecutionProvider"])
        self._moments = {k: np.zeros(hi - lo, self._dtype) for k in self._moment_keys}
        state = module._state
        if state._optimizer is None:
            state._optimizer = {
                "step": 0,
                "learning_rate": float(meta.get("default_learning_rate", _api.DEFAULT_LEARNING_RATE)),
                "states": {},
            }
        # Moments from a checkpoint (written after gather_optimizer_state())
        # are taken for this rank's slice, and the whole copies dropped: that
        # is the memory ZeRO-1 saves.
        saved = state._optimizer["states"]
        if all(n in saved for n in names) and names:
            for k in self._moment_keys:
                self._moments[k][...] = np.concatenate([saved[n][k].ravel() for n in names])[lo:hi]
        state._optimizer["states"] = {}

    def _check_same_parameters(self) -> None:
        names = self._module._train_meta["parameters"]
        shapes = [(n, list(self._module._state._params[n].shape)) for n in names]
        everyone = self._comm.allgather(shapes)
        for r, theirs in enumerate(everyone):
            if theirs != shapes:
                raise ValueError(
                    f"DistributedOptimizer: rank {r} trains other parameters than rank {self._comm.Get_rank()}; "
                    "every rank must load the same training model"
                )

    def _flat_parameters(self) -> np.ndarray:
        params = self._module._state._params
        return np.concatenate([params[n].ravel() for n in self._module._train_meta["parameters"]])

    def _allgather(self, part: np.ndarray) -> np.ndarray:
        """Every rank's slice, joined into the whole flat buffer on every rank."""
        counts = [hi - lo for lo, hi in self._bounds]
        whole = np.empty(sum(counts), self._dtype)
        self._comm.Allgatherv(np.ascontiguousarray(part), [whole, counts])
        return whole

    def step(self) -> None:
        allreduce_gradients(self._module, self._comm)
        if self._zero == 0:
            self._optimizer.step()
            return
        state = self._module._state
        names = self._module._train_meta["parameters"]
        opt = state._optimizer
        lo, hi = self._bounds[self._comm.Get_rank()]
        grads = np.concatenate([state._grads[n].ravel() for n in names])
        feeds = {
            "learning_rate": np.array(opt["learning_rate"], np.float32),
            "step": np.array(opt["step"] + 1, np.int64),
            "shard": self._flat_parameters()[lo:hi],
            "shard_grad": grads[lo:hi],
        }
        for k, m in self._moments.items():
            feeds[f"shard.{k}"] = m
        outputs = ["shard.updated"] + [f"shard.{k}.updated" for k in self._moment_keys]
        results = self._optimizer.run(outputs, feeds)
        for k, value in zip(self._moment_keys, results[1:]):
            self._moments[k] = value
        whole = self._allgather(results[0])
        at = 0
        for n in names:
            current = state._params[n]
            state._params[n] = whole[at : at + current.size].reshape(current.shape).copy()
            at += current.size
        opt["step"] += 1

    def gather_optimizer_state(self) -> None:
        """ZeRO-1: puts every parameter's whole moments into the state on every
        rank, so that CheckpointState.save_checkpoint(..., include_optimizer_state=True)
        writes a checkpoint any rank count can resume from. They stay until the
        next DistributedOptimizer is made from the state."""
        if self._zero == 0:
            return
        state = self._module._state
        states = {}
        for k, m in self._moments.items():
            whole = self._allgather(m)
            at = 0
            for n in self._module._train_meta["parameters"]:
                size = state._params[n].size
                states.setdefault(n, {})[k] = whole[at : at + size].reshape(state._params[n].shape).copy()
                at += size
        state._optimizer["states"] = states

    def set_learning_rate(self, learning_rate: float) -> None:
        self._module._state._optimizer["learning_rate"] = float(learning_rate)

    def get_learning_rate(self) -> float:
        return float(self._module._state._optimizer["learning_rate"])

    @property
    def step_count(self) -> int:
        return int(self._module._state._optimizer["step"])

    def optimizer_state_bytes(self) -> int:
        """Bytes of optimizer state (moments) this rank holds."""
        if self._zero == 1:
            return int(sum(m.nbytes for m in self._moments.values()))
        opt = self._module._state._optimizer or {"states": {}}
        return int(sum(a.nbytes for moments in opt["states"].values() for a in moments.values()))
