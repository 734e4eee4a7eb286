"""The exception classes under the module name onnxruntime scripts import them
from (``from onnxruntime.capi.onnxruntime_pybind11_state import Fail``): with
onyx, ``from onyx.capi import Fail``. Every one is a RuntimeError."""

from .session import (  # noqa: F401
    EngineError,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidModel,
    InvalidProtobuf,
    NoSuchFile,
    NotImplemented,
    OnyxError,
    RuntimeException,
)

import sys as _sys

# onnxruntime keeps these in capi.onnxruntime_pybind11_state; same names here.
onnxruntime_pybind11_state = _sys.modules[__name__]
