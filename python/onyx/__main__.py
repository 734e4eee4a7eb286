"""`python -m onyx ARGS` is the `onyx` command: it runs the C++ program that
comes with this package, so the subcommands, their output and their exit
codes are the same (`python -m onyx --help` lists them; a model's inputs and
outputs are `python -m onyx inspect MODEL`)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

_NAME = "onyx.exe" if os.name == "nt" else "onyx"


def command_candidates() -> list[Path]:
    """Where the `onyx` program may be, in the order looked at."""
    package = Path(__file__).resolve().parent
    candidates = []
    # A CMake build tree (PYTHONPATH=build/python): the package is copied to
    # build/python/onyx and the program is build/onyx.
    build = package.parent.parent
    if (build / "CMakeCache.txt").is_file():
        candidates.append(build / _NAME)
    # An installed wheel puts the program in the scripts folder of the
    # environment the package went into: PREFIX/bin beside
    # PREFIX/lib/pythonX.Y/site-packages/onyx (a venv, --prefix, --user) ...
    if len(package.parents) > 3:
        candidates.append(package.parents[3] / "bin" / _NAME)
    # ... which is also sysconfig's scripts path for the usual schemes.
    candidates.append(Path(sysconfig.get_path("scripts")) / _NAME)
    try:
        candidates.append(Path(sysconfig.get_path("scripts", f"{os.name}_user")) / _NAME)
    except KeyError:
        pass
    unique = []
    for c in candidates:
        if c not in unique:
            unique.append(c)
    return unique


def find_command() -> Path | None:
    for candidate in command_candidates():
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def main(argv: list[str]) -> int:
    program = find_command()
    if program is None:
        looked = "\n".join(f"  {c}" for c in command_candidates())
        print(
            "onyx: error: cannot find the onyx program that comes with this package; looked at:\n"
            f"{looked}\n"
            "Reinstall the package (pip install .) or build the tree (ninja -C build).",
            file=sys.stderr,
        )
        return 1
    if os.name == "posix":
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(program, [str(program), *argv])  # does not return
    return subprocess.call([str(program), *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
