"""onnxruntime's ``capi`` package, for scripts that import from it. The
exception classes are in ``onyx.capi.onnxruntime_pybind11_state`` (and here,
as ``from onyx.capi import Fail``)."""

from . import onnxruntime_pybind11_state
from .onnxruntime_pybind11_state import *  # noqa: F401,F403
from .onnxruntime_pybind11_state import __all__ as _state_names

__all__ = ["onnxruntime_pybind11_state", *_state_names]
