"""The `onyx` command as a user meets it: every subcommand answers --help,
a bad command line is refused (exit 2, one line naming the argument) before
any model is loaded or any file written, output folders are created, and
`python -m onyx` is the same program."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from bindings_util import onyx_command
from helpers import add_relu_model
from onnx import numpy_helper

import onyx
import onyx.__main__ as onyx_main

# Each subcommand and what its help must name: its arguments and options.
COMMANDS = {
    "run": ["MODEL", "--input", "--output-dir", "--threads", "--seed", "--profile"],
    "inspect": ["MODEL"],
    "bench": ["MODEL", "--input", "--threads", "--seed", "--runs", "--warmup", "--profile"],
    "optimize": ["IN", "OUT", "--level", "--stats"],
    "conformance": [
        "DIR",
        "--filter",
        "--expected",
        "--report",
        "--timeout",
        "--jobs",
        "--compare",
        "--function-bodies",
        "--providers",
        "--verbose",
    ],
    "serve": [
        "MODEL_REPOSITORY",
        "--host",
        "--port",
        "--http-threads",
        "--max-request-mb",
        "--max-queue-size",
        "--default-max-batch-size",
        "--threads",
        "--providers",
        "--model-control-mode",
        "--load-model",
        "--verbose",
    ],
    "operators": [],
    "version": ["--verbose"],
}

X = np.array([[1.0, -2.0, 3.0], [-0.5, 0.25, -4.0]], np.float32)
B = np.array([0.5, -1.0, 2.0], np.float32)  # add_relu_model's initializer


@pytest.fixture(scope="module")
def program() -> Path:
    """The build tree's `onyx` (PYTHONPATH=build/python), else the installed one."""
    return onyx_command()


def onyx_cli(program: Path, *args) -> subprocess.CompletedProcess:
    return subprocess.run([str(program), *map(str, args)], capture_output=True, text=True, timeout=120)


def python_m_onyx(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    command = [sys.executable, "-m", "onyx", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    """A model, a file that is no model (loading it fails with exit 1), its
    input as .npy, one conformance case, and `out`, which a refused command
    must not create."""
    model = tmp_path / "m.onnx"
    onnx.save(add_relu_model(), str(model))
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"this is not an onnx model")
    x = tmp_path / "x.npy"
    np.save(x, X)
    case = tmp_path / "cases" / "test_add_relu"
    data = case / "test_data_set_0"
    data.mkdir(parents=True)
    onnx.save(add_relu_model(), str(case / "model.onnx"))
    (data / "input_0.pb").write_bytes(numpy_helper.from_array(X, "X").SerializeToString())
    (data / "output_0.pb").write_bytes(numpy_helper.from_array(np.maximum(X + B, 0), "Y").SerializeToString())
    (data / "output_1.pb").write_bytes(numpy_helper.from_array(X * 2, "Z").SerializeToString())
    return {
        "tmp": tmp_path,
        "model": model,
        "junk": junk,
        "x": x,
        "cases": tmp_path / "cases",
        "missing": tmp_path / "missing",
        "out": tmp_path / "out",
    }


# --help


@pytest.mark.parametrize("flag", ["--help", "-h"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_subcommand_answers_help(program, command, flag):
    done = onyx_cli(program, command, flag)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.startswith(f"usage: onyx {command}")
    for name in [*COMMANDS[command], "--help"]:
        assert name in done.stdout, f"`onyx {command} --help` does not mention {name}"
    example = re.split(r"\nexamples?:\n", done.stdout, maxsplit=1)
    assert len(example) == 2 and example[1].lstrip().startswith(f"onyx {command}"), done.stdout


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_command_shows_the_same_help(program, command):
    done = onyx_cli(program, "help", command)
    assert done.returncode == 0, done.stderr
    assert done.stdout == onyx_cli(program, command, "--help").stdout


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["help"]])
def test_top_level_help_lists_every_command(program, args):
    done = onyx_cli(program, *args)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: onyx <command>")
    for command in COMMANDS:
        assert f"\n  {command} " in done.stdout, f"`onyx {args[0]}` does not list {command}"


def test_help_wins_over_a_mistake_before_it(program, files):
    done = onyx_cli(program, "run", files["junk"], "--bogus", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: onyx run MODEL")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "no command given"),
        (["frobnicate"], "unknown command 'frobnicate'"),
        (["help", "frobnicate"], "unknown command 'frobnicate'"),
        (["help", "run", "extra"], "unexpected argument 'extra'"),
    ],
)
def test_bad_command_is_a_usage_error(program, args, message):
    done = onyx_cli(program, *args)
    assert done.returncode == 2
    assert message in done.stderr
    assert done.stdout == ""


# Bad arguments: exit 2, the argument named, nothing done. The model given is
# `junk`, which fails to load (exit 1), so exit 2 shows that the arguments
# were refused before loading; the extra arguments point outputs into `out`,
# which must not appear.
BAD_ARGUMENTS = [
    (["run", "{junk}", "--bogus"], ["unknown option '--bogus'"]),
    (["run", "{junk}", "-t"], ["-t expects N after it"]),
    (["run", "{junk}", "--threads", "four"], ["--threads expects a whole number from 0 to", "got 'four'"]),
    (["run", "{junk}", "--threads=2x"], ["--threads expects a whole number", "got '2x'"]),
    (["run", "{junk}", "--seed", "-1"], ["--seed expects a whole number", "got '-1'"]),
    (["run", "{junk}", "--input", "X"], ["--input expects NAME=FILE.npy, got 'X'"]),
    (["run", "{junk}", "--input", "X={x}", "-i", "X={x}"], ["-i gives input 'X' a second time"]),
    (["run", "{junk}", "--input", "X={missing}.npy"], ["--input X '", "missing.npy' does not exist"]),
    (["run", "{missing}"], ["MODEL '", "missing' does not exist"]),
    (["run", "{tmp}"], ["MODEL '", "' is a folder, expected a file"]),
    (["run"], ["missing MODEL"]),
    (["run", "{junk}", "extra.onnx"], ["unexpected argument 'extra.onnx' (onyx run takes MODEL)"]),
    (["run", "{junk}", "--runs", "3"], ["unknown option '--runs'"]),
    (["bench", "{junk}", "--runs", "0"], ["--runs expects a whole number from 1 to", "got '0'"]),
    (["bench", "{junk}", "--warmup", "-3"], ["--warmup expects a whole number from 0 to", "got '-3'"]),
    (["bench", "{junk}", "--output-dir", "{out}"], ["unknown option '--output-dir'"]),
    (["bench", "{missing}"], ["MODEL '", "does not exist"]),
    (["inspect"], ["missing MODEL"]),
    (["inspect", "{junk}", "{junk}"], ["unexpected argument '", "(onyx inspect takes MODEL)"]),
    (["inspect", "{missing}"], ["MODEL '", "does not exist"]),
    (["inspect", "{junk}", "--stats"], ["unknown option '--stats'"]),
    (["optimize", "{junk}"], ["missing OUT"]),
    (["optimize", "{junk}", "{out}/m.onnx", "--level", "max"], ["--level expects disable, basic, extended", "'max'"]),
    (["optimize", "{junk}", "{out}/m.onnx", "--stats=yes"], ["--stats takes no value"]),
    (["optimize", "{missing}", "{out}/m.onnx"], ["IN '", "does not exist"]),
    (["optimize", "{junk}", "{out}/m.onnx", "{out}/n.onnx"], ["unexpected argument", "(onyx optimize takes IN and OUT)"]),
    (["conformance", "{cases}", "--jobs", "0"], ["--jobs expects a whole number from 1 to 256, got '0'"]),
    (["conformance", "{cases}", "--timeout", "soon"], ["--timeout expects a whole number", "'soon'"]),
    (["conformance", "{cases}", "--compare", "tensorflow"], ["--compare knows only 'onnxruntime'"]),
    (["conformance", "{cases}", "--providers", "NoSuchExecutionProvider"], ["unknown provider 'NoSuchExecutionProvider'"]),
    (["conformance", "{cases}", "--expected", "{missing}.txt"], ["--expected '", "does not exist"]),
    (["conformance", "{missing}"], ["DIR '", "does not exist"]),
    (["conformance", "{junk}"], ["DIR '", "is not a folder"]),
    (["conformance", "{cases}", "{cases}"], ["unexpected argument"]),
    (["operators", "extra"], ["unexpected argument 'extra' (onyx operators takes no arguments)"]),
    (["version", "--bogus"], ["unknown option '--bogus'"]),
]
# Arguments that would write into `out` had the command run.
OUTPUTS = {"run": ["--output-dir", "{out}/npy", "--profile", "{out}/trace"], "conformance": ["--report", "{out}/r.txt"]}


@pytest.mark.parametrize(("args", "messages"), BAD_ARGUMENTS, ids=[" ".join(a) for a, _ in BAD_ARGUMENTS])
def test_bad_arguments_are_refused_before_any_work(program, files, args, messages):
    command = [args[0], *OUTPUTS.get(args[0], []), *args[1:]]
    command = [a.format(**files) for a in command]
    done = onyx_cli(program, *command)
    assert done.returncode == 2, f"onyx {' '.join(command)}: exit {done.returncode}\n{done.stdout}{done.stderr}"
    first_line = done.stderr.splitlines()[0]
    assert first_line.startswith(f"onyx {args[0]}: error: "), done.stderr
    for message in messages:
        assert message.format(**files) in first_line
    assert f"onyx {args[0]} --help" in done.stderr
    assert done.stdout == ""
    assert not files["out"].exists()


def test_the_junk_model_fails_only_once_loaded(program, files):
    """The control of the test above: with good arguments, junk fails to load (exit 1)."""
    done = onyx_cli(program, "run", files["junk"], "-t", "1")
    assert done.returncode == 1
    assert done.stderr.startswith("onyx run: error: ")


# Output folders


def test_run_creates_output_and_profile_folders(program, files):
    out = files["tmp"] / "a" / "b"
    profile = files["tmp"] / "p" / "q"
    done = onyx_cli(program, "run", files["model"], "--input", f"X={files['x']}", "-o", out, "--profile", profile / "trace")
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(out / "Y.npy"), np.maximum(X + B, 0))
    np.testing.assert_allclose(np.load(out / "Z.npy"), X * 2)
    traces = list(profile.glob("trace_*.json"))
    assert len(traces) == 1 and traces[0].stat().st_size > 0
    assert f"profile written to {traces[0]}" in done.stdout


def test_bench_profile_splits_a_run_by_op_type_and_overhead(program, tmp_path):
    """`onyx bench --profile`: each op type's own time per run (an If's body
    counted once, under its own ops, not again in the If) and the time
    between kernels, as shares of the unprofiled run; no trace is left."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 64])
    then_graph = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["t"]), helper.make_node("Sigmoid", ["t"], ["then_y"])],
        "then", [], [helper.make_tensor_value_info("then_y", TensorProto.FLOAT, [64, 64])])
    else_graph = helper.make_graph([helper.make_node("Neg", ["x"], ["else_y"])], "else", [],
                                   [helper.make_tensor_value_info("else_y", TensorProto.FLOAT, [64, 64])])
    graph = helper.make_graph(
        [helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         helper.make_node("Greater", ["s", "zero"], ["c"]),
         helper.make_node("If", ["c"], ["y"], then_branch=then_graph, else_branch=else_graph)],
        "g", [x], [y], [numpy_helper.from_array(np.array(0, np.float32), "zero")])
    model = tmp_path / "if.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(model))
    before = set(Path(tempfile.gettempdir()).glob("onyx_bench_*"))
    done = onyx_cli(program, "bench", model, "-t", "1", "-r", "50", "--warmup", "2", "--profile")
    assert done.returncode == 0, done.stderr
    split = done.stdout.split("time per run by op type", 1)[1]
    rows = {}
    for line in split.splitlines()[2:]:
        name, rest = line[:30].strip(), line[30:].split()
        rows[name] = (float(rest[0]), float(rest[1].rstrip("%")))
    # x is random in [0, 1): ReduceSum > 0, so the then-branch runs.
    assert {"ReduceSum", "Greater", "If", "Relu", "Sigmoid", "overhead (between kernels)"} <= set(rows), split
    assert "Neg" not in rows
    assert all(ms >= 0 for ms, _ in rows.values())
    assert set(Path(tempfile.gettempdir()).glob("onyx_bench_*")) == before


def test_optimize_creates_the_folder_of_out(program, files):
    out = files["tmp"] / "o" / "p" / "m.onnx"
    done = onyx_cli(program, "optimize", files["model"], out, "--level", "basic")
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}" in done.stdout
    (y, z) = onyx.InferenceSession(str(out)).run(None, {"X": X})
    np.testing.assert_allclose(y, np.maximum(X + B, 0))
    np.testing.assert_allclose(z, X * 2)


def test_conformance_creates_the_folder_of_the_report(program, files):
    report = files["tmp"] / "r" / "s" / "report.txt"
    done = onyx_cli(program, "conformance", files["cases"], "--report", report, "--jobs", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 0 failed, of 1 cases" in report.read_text()


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (["run", "{model}", "--output-dir", "{blocker}/sub"], "--output-dir"),
        (["run", "{model}", "--profile", "{blocker}/sub/trace"], "--profile"),
        (["optimize", "{model}", "{blocker}/m.onnx"], "OUT"),
        (["conformance", "{cases}", "--report", "{blocker}/r.txt"], "--report"),
    ],
)
def test_a_folder_that_cannot_be_created_is_a_clear_error(program, files, args, what):
    blocker = files["tmp"] / "blocker"
    blocker.write_text("a file where a folder should go")
    command = [a.format(blocker=blocker, **files) for a in args]
    done = onyx_cli(program, *command)
    assert done.returncode == 1
    assert done.stderr.startswith(f"onyx {args[0]}: error: cannot create folder '{blocker}"), done.stderr
    assert f"for {what}:" in done.stderr
    assert done.stdout == ""  # before the model was loaded or a case run


# python -m onyx


@pytest.mark.parametrize(
    "args",
    [["version"], ["--version"], ["--help"], [], ["help", "bench"], ["run", "{missing}"], ["inspect", "{model}"]],
)
def test_python_dash_m_onyx_is_the_same_program(program, files, args):
    args = [a.format(**files) for a in args]
    ours = python_m_onyx(*args)
    theirs = onyx_cli(program, *args)
    assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)


def test_python_dash_m_onyx_version(program):
    done = python_m_onyx("version")
    assert done.returncode == 0
    assert done.stdout == f"onyx {onyx.__version__}\n"
    verbose = python_m_onyx("version", "--verbose")
    # This process may have registered the test device's providers (other
    # test modules do); a fresh process has the build's own.
    registered_here = {"TestCompilerExecutionProvider", "TestDeviceExecutionProvider"}
    build_providers = [p for p in onyx.get_available_providers() if p not in registered_here]
    assert verbose.stdout.splitlines()[1] == "providers: " + ", ".join(build_providers)


def test_python_dash_m_onyx_writes_outputs(files):
    out = files["tmp"] / "py" / "out"
    done = python_m_onyx("run", files["model"], "--input", f"X={files['x']}", "--output-dir", out)
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(np.load(out / "Z.npy"), X * 2)


def test_python_finds_the_program_of_its_own_build(program):
    found = onyx_main.find_command()
    assert found is not None
    assert found.resolve() == program.resolve()


def test_python_says_where_it_looked_when_the_program_is_missing(tmp_path, monkeypatch, capsys):
    nowhere = tmp_path / "nowhere" / "onyx"
    monkeypatch.setattr(onyx_main, "command_candidates", lambda: [nowhere])
    assert onyx_main.main(["version"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("onyx: error: cannot find the onyx program")
    assert str(nowhere) in err
