"""The exception classes under the module path onnxruntime scripts import them
from: ``from onnxruntime.capi.onnxruntime_pybind11_state import Fail`` becomes
``from onyx.capi.onnxruntime_pybind11_state import Fail``.

As in onnxruntime, each is a direct subclass of one common base (OnyxError,
an Exception, not a RuntimeError), so an ``except`` clause for one class
catches what it catches with onnxruntime.
"""

from .._onyx import (  # noqa: F401
    EngineError,
    EPFail,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    ModelLoaded,
    NoModel,
    NoSuchFile,
    NotImplemented,
    OnyxError,
    RuntimeException,
)

__all__ = [
    "EPFail",
    "EngineError",
    "Fail",
    "InvalidArgument",
    "InvalidGraph",
    "InvalidProtobuf",
    "ModelLoaded",
    "NoModel",
    "NoSuchFile",
    "NotImplemented",
    "OnyxError",
    "RuntimeException",
]
