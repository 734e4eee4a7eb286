#!/usr/bin/env python3
"""Writes the ONNX backend conformance suite from the installed onnx package,
for machines without ../shared/onnx-backend-data:

    .venv/bin/python scripts/make_backend_data.py build/onnx-backend-data
    build/onyx conformance build/onnx-backend-data --expected tests/conformance/expected_failures.txt

The pip package no longer ships the node cases' files, only their
definitions (onnx/backend/test/case/node/*.py: a model and numpy inputs and
outputs per case). This runs those definitions and writes each case with
onnx's own writer (onnx.backend.test.cmd_tools, which on its own writes only
the model cases) as node/<case>/model.onnx and test_data_set_0/*.pb, then
copies the folders the package does ship (simple/, light/, pytorch-*/), so
OUT has the layout of ../shared/onnx-backend-data.

The cases are those of the installed onnx version, which may differ from
../shared's (a newer onnx adds cases). OUT/onnx-version records the version;
a second run with the same version does nothing.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import shutil
import sys
import time
import warnings
from pathlib import Path
from unittest import mock


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="folder to write (replaced when its onnx version differs)")
    args = parser.parse_args()

    out: Path = args.out
    stamp = out / "onnx-version"
    # The version from the package's metadata: importing onnx takes longer
    # than the whole check.
    version = importlib.metadata.version("onnx")
    if stamp.is_file() and stamp.read_text().strip() == version and (out / "node").is_dir():
        print(f"{out}: the suite of onnx {version} is already there")
        return 0

    import onnx.backend.test.case.node as node_cases
    from onnx.backend.test import cmd_tools

    start = time.monotonic()
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with warnings.catch_warnings():
        # Some definitions compute infinities and NaNs on purpose.
        warnings.simplefilter("ignore")
        cases = node_cases.collect_testcases()
        # cmd_tools' writer, given the node cases instead of the model cases.
        with mock.patch.object(cmd_tools.model_test, "collect_testcases", lambda: cases):
            cmd_tools.generate_data(argparse.Namespace(output=str(partial)))
    shipped = Path(cmd_tools.DATA_DIR)
    copied = []
    for folder in sorted(shipped.iterdir()) if shipped.is_dir() else []:
        # real/ names models to download (data.json), which the runner skips.
        if folder.is_dir() and folder.name not in ("node", "real"):
            shutil.copytree(folder, partial / folder.name)
            copied.append(folder.name)
    (partial / "onnx-version").write_text(version + "\n")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(partial, out)
    print(
        f"{out}: {len(cases)} node cases written from onnx {version}'s definitions"
        f"{' and ' + ', '.join(copied) + ' copied' if copied else ''} in {time.monotonic() - start:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
