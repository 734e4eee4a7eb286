"""Data-parallel training over MPI (onyx.training.distributed): `mpirun -np 2`
takes the same steps as one process with twice the batch, with and without
ZeRO-1, and a rank that dies ends the job with an error instead of a hang.
The ranks run tests/python/mpi/data_parallel.py."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "mpi", "data_parallel.py")


def _env():
    import onyx

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(os.path.dirname(onyx.__file__)), env.get("PYTHONPATH", "")])
    # CI runs as root; OpenMPI asks for both of these before it agrees to.
    env["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    env["OMP_NUM_THREADS"] = "1"
    return env


def _mpirun(out, *args, timeout=180):
    mpirun = shutil.which("mpirun")
    assert mpirun, "mpirun is missing: scripts/setup.sh installs OpenMPI (openmpi-bin)"
    command = [mpirun, "-np", "2", "--oversubscribe", sys.executable, "-m", "mpi4py", SCRIPT, "--out", str(out), *args]
    return subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def single_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("single")
    subprocess.run([sys.executable, SCRIPT, "--single", "--out", str(out)], env=_env(), check=True, timeout=180)
    return out


@pytest.fixture(scope="module")
def single(single_run):
    return dict(np.load(single_run / "weights.npz"))


@pytest.mark.parametrize("zero", [0, 1])
def test_two_ranks_take_the_steps_of_one_process_with_twice_the_batch(single, tmp_path, zero):
    run = _mpirun(tmp_path, "--zero", str(zero))
    assert run.returncode == 0, run.stdout + run.stderr
    weights = dict(np.load(tmp_path / "weights.npz"))
    assert sorted(weights) == sorted(single)
    for name, expected in single.items():
        np.testing.assert_allclose(weights[name], expected, rtol=1e-5, atol=1e-6, err_msg=name)
        # Training moved the weights: the comparison is not of two initial states.
        assert np.abs(expected).sum() > 0
    bytes_per_rank = [int((tmp_path / f"optimizer_bytes{r}.txt").read_text()) for r in range(2)]
    whole = sum(a.size for a in single.values()) * 4 * 2  # AdamW: two float32 moments per weight
    if zero == 0:
        assert bytes_per_rank == [whole, whole]
    else:
        # Each rank holds half of the moments.
        assert bytes_per_rank == [whole // 2, whole // 2]


def test_a_rank_that_dies_ends_the_job_with_an_error(tmp_path):
    run = _mpirun(tmp_path, "--die-at", "5")
    assert run.returncode != 0
    assert "rank 1" in run.stdout + run.stderr
    assert not (tmp_path / "weights.npz").exists()


def test_a_rank_that_raises_aborts_the_others(tmp_path):
    run = _mpirun(tmp_path, "--raise-at", "5")
    assert run.returncode != 0
    assert "rank 1 failed on purpose" in run.stdout + run.stderr
    assert not (tmp_path / "weights.npz").exists()


def test_zero1_checkpoint_holds_the_whole_optimizer_state(single_run, tmp_path):
    from onyx.training import CheckpointState

    run = _mpirun(tmp_path, "--zero", "1")
    assert run.returncode == 0, run.stdout + run.stderr
    sharded = CheckpointState.load_checkpoint(str(tmp_path / "checkpoint"))._optimizer
    whole = CheckpointState.load_checkpoint(str(single_run / "checkpoint"))._optimizer
    assert sharded["step"] == whole["step"] == 20
    assert sorted(sharded["states"]) == sorted(whole["states"])
    for name, moments in whole["states"].items():
        for key, expected in moments.items():
            np.testing.assert_allclose(sharded["states"][name][key], expected, rtol=1e-5, atol=1e-8, err_msg=name + key)
