"""One rank of a data-parallel run (tests/python/test_distributed.py starts it
under mpirun), or with --single the whole run in one process.

Trains a small MLP on the digits data for STEPS steps: in each step the
global batch of 2*B rows is split between the ranks (rank r takes rows
r*B/N..), so N ranks with batch B/N each take the same steps as one process
with batch B. Rank 0 (or the single process) writes the final weights and a checkpoint
with the optimizer state, and each rank its optimizer-state bytes, into OUT.
"""

import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from onyx.training import CheckpointState, Module, Optimizer, artifacts
from onyx.training import distributed

STEPS = 20
BATCH = 64


def forward_model():
    rng = np.random.default_rng(7)
    w1 = rng.normal(0, 0.2, (64, 32)).astype(np.float32)
    b1 = np.zeros(32, np.float32)
    w2 = rng.normal(0, 0.2, (32, 10)).astype(np.float32)
    b2 = np.zeros(10, np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["o"]),
        helper.make_node("Add", ["o", "b2"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
        [numpy_helper.from_array(a, n) for a, n in [(w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2")]],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def data():
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = np.eye(10, dtype=np.float32)[digits.target]
    return x, y


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--single", action="store_true")
    parser.add_argument("--zero", type=int, default=0)
    parser.add_argument("--die-at", type=int, default=-1, help="rank 1 kills itself at this step")
    parser.add_argument("--raise-at", type=int, default=-1, help="rank 1 raises at this step")
    args = parser.parse_args()

    if args.single:
        rank, size, comm = 0, 1, None
    else:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
        rank, size = comm.Get_rank(), comm.Get_size()
    folder = os.path.join(args.out, f"artifacts{rank}")
    artifacts.generate_artifacts(
        forward_model(),
        loss=artifacts.LossType.MSELoss,
        optimizer=artifacts.OptimType.AdamW,
        artifact_directory=folder,
    )
    state = CheckpointState.load_checkpoint(os.path.join(folder, "checkpoint"))
    module = Module(os.path.join(folder, "training_model.onnx"), state)
    path = os.path.join(folder, "optimizer_model.onnx")
    if args.single:
        optimizer = Optimizer(path, module)
    else:
        optimizer = distributed.DistributedOptimizer(path, module, comm=comm, zero_stage=args.zero)
    optimizer.set_learning_rate(0.01)
    x, y = data()
    share = BATCH // size
    for step in range(STEPS):
        rows = slice(step * BATCH + rank * share, step * BATCH + (rank + 1) * share)
        if rank == 1 and step == args.die_at:
            os.kill(os.getpid(), 9)
        if rank == 1 and step == args.raise_at:
            raise RuntimeError("rank 1 failed on purpose")
        module(x[rows], y[rows])
        optimizer.step()
        module.lazy_reset_grad()
    if not args.single and args.zero:
        optimizer.gather_optimizer_state()  # every rank: a collective
    if rank == 0:
        CheckpointState.save_checkpoint(state, os.path.join(args.out, "checkpoint"), include_optimizer_state=True)
        np.savez(os.path.join(args.out, "weights.npz"), **{n: state.parameters[n].data for n in state.parameters})
    if not args.single:
        with open(os.path.join(args.out, f"optimizer_bytes{rank}.txt"), "w") as f:
            f.write(str(optimizer.optimizer_state_bytes()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
