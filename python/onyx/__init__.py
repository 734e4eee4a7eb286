"""onyx: an ONNX runtime. The API follows onnxruntime's, so existing scripts
work with ``import onyx as ort``::

    import numpy as np
    import onyx as ort

    session = ort.InferenceSession("model.onnx", providers=ort.get_available_providers())
    outputs = session.run(None, {"x": np.ones((1, 3), np.float32)})

Errors carry onnxruntime's exception classes (``onyx.capi.onnxruntime_pybind11_state``).

Element types numpy lacks (bfloat16, the float8 types, float4, int4/uint4,
int2/uint2) come back as ml_dtypes arrays, as onnx.numpy_helper makes them,
and are fed the same way. Their same-width integer views (bfloat16 as
uint16, float8/float4 as uint8, int4/uint4/int2/uint2 as one int8/uint8 per
element) are accepted as feeds too: the session reinterprets the integers as
the type the model declares.
"""

import os as _os

from . import _onyx, _types, capi
from .io_binding import IOBinding

# Outputs of types numpy lacks come back as ml_dtypes arrays.
_onyx._set_view_converter(_types.from_view)
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


def get_include() -> str:
    """The folder holding onyx's C and C++ headers (``onyx/onyx_c_api.h``,
    ``onyx/onyx_cxx_api.h``): compile with ``-I`` this folder."""
    return _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "include")


def get_library_dir() -> str:
    """The folder holding ``libonyx.so``: link with ``-L`` this folder and
    ``-lonyx``, and give the program an rpath (or ``LD_LIBRARY_PATH``) to it.
    In an installed wheel it is this package's folder; in a CMake build tree
    (``build/python/onyx``), the build folder."""
    package = _os.path.dirname(_os.path.abspath(__file__))
    for folder in (package, _os.path.dirname(_os.path.dirname(package))):
        if _os.path.exists(_os.path.join(folder, "libonyx.so")):
            return folder
    raise FileNotFoundError(f"libonyx.so is neither in {package} nor in its build folder")


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
    "get_include",
    "get_library_dir",
    "get_version_string",
    "set_default_logger_severity",
    "set_seed",
]
