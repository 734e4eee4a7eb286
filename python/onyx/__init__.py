"""onyx: an ONNX runtime. The API follows onnxruntime's, so existing scripts
work with ``import onyx as ort``::

    import numpy as np
    import onyx as ort

    session = ort.InferenceSession("model.onnx", providers=ort.get_available_providers())
    outputs = session.run(None, {"x": np.ones((1, 3), np.float32)})

Errors carry onnxruntime's exception classes (``onyx.capi.onnxruntime_pybind11_state``).

Element types numpy lacks are shown through same-width integer views:
bfloat16 as uint16, float8/float4 as uint8, int4/uint4/int2/uint2 as one
int8/uint8 per element. Feed such inputs the same way (the session
reinterprets the integers as the type the model declares).
"""

from . import _onyx, capi
from .io_binding import IOBinding
from .ortvalue import OrtDevice, OrtValue
from .session import (
    EngineError,
    EPFail,
    ExecutionMode,
    Fail,
    GraphOptimizationLevel,
    InferenceSession,
    InvalidArgument,
    InvalidGraph,
    InvalidModel,
    InvalidProtobuf,
    ModelLoaded,
    ModelMetadata,
    NodeArg,
    NoModel,
    NoSuchFile,
    NotImplemented,  # noqa: A004 - onnxruntime's name
    OnyxError,
    RunOptions,
    RuntimeException,
    SessionOptions,
    get_all_providers,
    get_available_providers,
    get_device,
    set_default_logger_severity,
    set_seed,
)

__version__ = _onyx.version()
version = __version__


def get_version_string() -> str:
    return __version__


def get_build_info() -> str:
    return f"onyx {__version__}, providers: {', '.join(get_available_providers())}"


__all__ = [
    "EPFail",
    "EngineError",
    "ExecutionMode",
    "Fail",
    "GraphOptimizationLevel",
    "IOBinding",
    "InferenceSession",
    "InvalidArgument",
    "InvalidGraph",
    "InvalidModel",
    "InvalidProtobuf",
    "ModelLoaded",
    "ModelMetadata",
    "NoModel",
    "NoSuchFile",
    "NodeArg",
    "NotImplemented",
    "OnyxError",
    "OrtDevice",
    "OrtValue",
    "RunOptions",
    "RuntimeException",
    "SessionOptions",
    "__version__",
    "get_all_providers",
    "get_available_providers",
    "get_build_info",
    "get_device",
    "get_version_string",
    "set_default_logger_severity",
    "set_seed",
]
