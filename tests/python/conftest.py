"""Finds the onyx package for the tests: installed (pip install .), on
PYTHONPATH (e.g. PYTHONPATH=build-py/python), or else in a build tree's
python/ folder (build/python first, then any build-*/python).

``--providers A,B`` makes every session that names no providers use those
(the simulated TestDeviceExecutionProvider and TestCompilerExecutionProvider
are registered when named), so the whole suite runs through them."""

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


def pytest_addoption(parser):
    parser.addoption(
        "--providers",
        default="",
        help="comma-separated execution providers for sessions that name none (e.g. "
        "TestDeviceExecutionProvider,CPUExecutionProvider)",
    )


def pytest_configure(config):
    names = [n for n in config.getoption("--providers").split(",") if n]
    if not names:
        return
    import onyx

    if any(n.startswith("Test") for n in names):
        onyx._onyx._register_testing_providers()
    original = onyx.InferenceSession.__init__

    def with_default_providers(self, path_or_bytes, sess_options=None, providers=None, *args, **kwargs):
        if providers is None:
            providers = list(names)
        original(self, path_or_bytes, sess_options, providers, *args, **kwargs)

    onyx.InferenceSession.__init__ = with_default_providers
