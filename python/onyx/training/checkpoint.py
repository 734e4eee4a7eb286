"""onyx's checkpoint file: parameters, optimizer state and a property bag in
one file.

Layout (little-endian)::

    8 bytes   magic b"ONYXCKPT"
    4 bytes   format version (uint32, 1)
    4 bytes   reserved (0)
    8 bytes   header length H (uint64)
    H bytes   header: UTF-8 JSON (below)
    ...       padding to a multiple of 64, then the tensors' raw bytes, each
              starting at a multiple of 64 from the start of the data section

The header::

    {"parameters": [{"name", "dtype", "shape", "offset", "nbytes", "requires_grad"}, ...],
     "optimizer": null | {"step": int, "learning_rate": float,
                          "states": [{"param", "key", "dtype", "shape", "offset", "nbytes"}, ...]},
     "properties": {name: {"type": "int" | "float" | "str", "value": ...}}}

``dtype`` is numpy's dtype string ("<f4"). Offsets count from the start of the
data section. A file is written to a temporary name beside the target,
fsynced, and renamed over it (os.replace), so a process killed while saving
leaves the previous checkpoint whole.
"""

from __future__ import annotations

import json
import os
import struct

import numpy as np

MAGIC = b"ONYXCKPT"
VERSION = 1
ALIGN = 64


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def write(path, parameters, requires_grad, optimizer, properties) -> None:
    """parameters: dict name -> array; requires_grad: dict name -> bool;
    optimizer: None or {"step", "learning_rate", "states": {param: {key: array}}};
    properties: dict name -> int | float | str."""
    blobs: list[np.ndarray] = []
    offset = 0

    def place(array: np.ndarray) -> dict:
        nonlocal offset
        array = np.require(array, requirements="C")  # keeps 0-d arrays 0-d, as ascontiguousarray does not
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        entry = {"dtype": array.dtype.str, "shape": list(array.shape), "offset": offset, "nbytes": array.nbytes}
        blobs.append((offset, array))
        offset = _align(offset + array.nbytes)
        return entry

    header: dict = {"parameters": [], "optimizer": None, "properties": {}}
    for name, array in parameters.items():
        entry = {"name": name, **place(array), "requires_grad": bool(requires_grad.get(name, False))}
        header["parameters"].append(entry)
    if optimizer is not None:
        states = []
        for param, moments in optimizer.get("states", {}).items():
            for key, array in moments.items():
                states.append({"param": param, "key": key, **place(array)})
        header["optimizer"] = {
            "step": int(optimizer.get("step", 0)),
            "learning_rate": float(optimizer.get("learning_rate", 0.0)),
            "states": states,
        }
    for name, value in properties.items():
        kind = _property_type(name, value)
        header["properties"][name] = {"type": kind, "value": {"int": int, "float": float, "str": str}[kind](value)}

    text = json.dumps(header).encode("utf-8")
    prefix = MAGIC + struct.pack("<IIQ", VERSION, 0, len(text)) + text
    data_start = _align(len(prefix))

    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    temp = os.path.join(folder, f".{os.path.basename(path)}.tmp-{os.getpid()}")
    try:
        with open(temp, "wb") as f:
            f.write(prefix)
            f.write(b"\0" * (data_start - len(prefix)))
            written = 0
            for at, array in blobs:
                f.write(b"\0" * (at - written))
                f.write(memoryview(array).cast("B") if array.nbytes else b"")
                written = at + array.nbytes
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.remove(temp)
        raise
    try:  # the rename itself survives a power cut once the folder is synced
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError:
        pass


def _property_type(name: str, value) -> str:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, str, np.integer, np.floating)):
        raise TypeError(f"checkpoint property '{name}' must be an int, float or str, got {type(value).__name__}")
    if isinstance(value, str):
        return "str"
    return "int" if isinstance(value, (int, np.integer)) else "float"


def read(path):
    """Returns (parameters, requires_grad, optimizer, properties) as write takes
    them. The arrays are writable views of one buffer read from the file."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no checkpoint file at '{path}'")
    with open(path, "rb") as f:
        raw = bytearray(f.read())
    if len(raw) < 24 or raw[:8] != MAGIC:
        raise ValueError(f"'{path}' is not an onyx checkpoint (no ONYXCKPT magic)")
    version, _, header_len = struct.unpack_from("<IIQ", raw, 8)
    if version != VERSION:
        raise ValueError(f"'{path}' is an onyx checkpoint of format version {version}; this onyx reads version {VERSION}")
    if 24 + header_len > len(raw):
        raise ValueError(f"'{path}' is truncated (its header runs past the end of the file)")
    header = json.loads(bytes(raw[24 : 24 + header_len]).decode("utf-8"))
    data_start = _align(24 + header_len)
    buffer = memoryview(raw)

    def array(entry) -> np.ndarray:
        start = data_start + entry["offset"]
        if start + entry["nbytes"] > len(raw):
            raise ValueError(f"'{path}' is truncated (a tensor runs past the end of the file)")
        dtype = np.dtype(entry["dtype"])
        count = entry["nbytes"] // dtype.itemsize
        return np.frombuffer(buffer, dtype=dtype, count=count, offset=start).reshape(entry["shape"])

    parameters, requires_grad = {}, {}
    for entry in header["parameters"]:
        parameters[entry["name"]] = array(entry)
        requires_grad[entry["name"]] = bool(entry["requires_grad"])
    optimizer = None
    if header.get("optimizer") is not None:
        opt = header["optimizer"]
        states: dict = {}
        for entry in opt["states"]:
            states.setdefault(entry["param"], {})[entry["key"]] = array(entry)
        optimizer = {"step": int(opt["step"]), "learning_rate": float(opt["learning_rate"]), "states": states}
    casts = {"int": int, "float": float, "str": str}
    properties = {name: casts[p["type"]](p["value"]) for name, p in header.get("properties", {}).items()}
    return parameters, requires_grad, optimizer, properties
