"""Finds the onyx package for the tests: installed (pip install .), on
PYTHONPATH (e.g. PYTHONPATH=build-py/python), or else in a build tree's
python/ folder (build/python first, then any build-*/python)."""

import glob
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _find_onyx() -> None:
    try:
        import onyx  # noqa: F401

        return
    except ImportError:
        pass
    candidates = [os.path.join(_ROOT, "build", "python")]
    candidates += sorted(glob.glob(os.path.join(_ROOT, "build-*", "python")))
    for folder in candidates:
        if glob.glob(os.path.join(folder, "onyx", "_onyx*")):
            sys.path.insert(0, folder)
            for name in [m for m in sys.modules if m == "onyx" or m.startswith("onyx.")]:
                del sys.modules[name]
            return


_find_onyx()
