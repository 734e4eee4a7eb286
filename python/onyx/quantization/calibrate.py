"""Calibration: run the float model with onyx on a reader's batches and keep,
for each tensor asked for, the range the quantizer maps onto integers.

MinMax keeps the smallest and largest value seen. Entropy and Percentile
build a histogram of |x| (2048 bins, widened as batches arrive) and pick a
clipping threshold T: Percentile the value below which the given percentage
of |x| lies, Entropy the T whose 128-level quantization of the clipped
histogram is closest to it in KL divergence. Both give (-T, T), or (0, T)
for a tensor that was never negative."""

from __future__ import annotations

import abc
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

from .quant_utils import CalibrationMethod


class CalibrationDataReader(metaclass=abc.ABCMeta):
    """Feeds calibration batches: get_next() returns a {input name: array}
    dict, then None when the data is spent; rewind() starts over."""

    @abc.abstractmethod
    def get_next(self) -> dict | None:
        raise NotImplementedError

    def rewind(self) -> None:
        raise NotImplementedError(f"{type(self).__name__} cannot rewind")

    def __iter__(self):
        return self

    def __next__(self):
        batch = self.get_next()
        if batch is None:
            raise StopIteration
        return batch

    def set_range(self, start_index: int, end_index: int) -> None:
        raise NotImplementedError


class ListDataReader(CalibrationDataReader):
    """Batches from a list of feed dicts."""

    def __init__(self, batches):
        self.batches = list(batches)
        self.index = 0

    def __len__(self) -> int:
        return len(self.batches)

    def get_next(self):
        if self.index >= len(self.batches):
            return None
        self.index += 1
        return self.batches[self.index - 1]

    def rewind(self) -> None:
        self.index = 0


class _Progress:
    """A one-line text bar on stderr; a plain counter when the total is unknown."""

    def __init__(self, label: str, total: int | None, enabled: bool = True):
        self.label, self.total, self.enabled, self.done = label, total, enabled and sys.stderr is not None, 0

    def step(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self.total:
            filled = int(30 * self.done / self.total)
            sys.stderr.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total}")
        else:
            sys.stderr.write(f"\r{self.label}: {self.done} batches")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self.done:
            sys.stderr.write("\n")
            sys.stderr.flush()


def augment_model(model: onnx.ModelProto, tensors) -> onnx.ModelProto:
    """A copy of model whose graph also outputs each of tensors (float32)."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    present = {o.name for o in out.graph.output}
    for name in tensors:
        if name not in present:
            out.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
            present.add(name)
    return out


def run_model_collect(model: onnx.ModelProto, tensors, reader, providers=None, progress: bool = True):
    """Yields {tensor: array} for each batch the reader gives, running the
    model (augmented to output tensors) in an onyx session."""
    import onyx

    augmented = augment_model(model, tensors)
    session = onyx.InferenceSession(augmented.SerializeToString(), providers=providers)
    names = [o.name for o in session.get_outputs()]
    wanted = set(tensors)
    total = len(reader) if hasattr(reader, "__len__") else None
    bar = _Progress("calibrating", total, progress)
    try:
        while True:
            batch = reader.get_next()
            if batch is None:
                break
            values = session.run(None, batch)
            bar.step()
            yield {n: np.asarray(v) for n, v in zip(names, values) if n in wanted}
    finally:
        bar.close()


class _Histogram:
    """A histogram of |x| on [0, top], rebinned when a larger value comes."""

    def __init__(self, bins: int):
        self.bins, self.counts, self.top, self.negative = bins, None, 0.0, False

    def add(self, values: np.ndarray) -> None:
        values = np.asarray(values, dtype=np.float32).ravel()
        if values.size == 0:
            return
        self.negative |= bool((values < 0).any())
        values = np.abs(values)
        peak = float(values.max())
        if self.counts is None:
            self.top = peak if peak > 0 else 1e-8
            self.counts = np.zeros(self.bins, dtype=np.float64)
        elif peak > self.top:
            # Move the old counts into the wider bins by their centers.
            centers = (np.arange(self.bins) + 0.5) * (self.top / self.bins)
            wider = np.histogram(centers, bins=self.bins, range=(0.0, peak), weights=self.counts)[0]
            self.counts, self.top = wider, peak
        self.counts += np.histogram(values, bins=self.bins, range=(0.0, self.top))[0]


def _kl_threshold(counts: np.ndarray, top: float, levels: int = 128) -> float:
    bins = len(counts)
    width = top / bins
    best, best_i = np.inf, bins
    for i in range(levels, bins + 1, max(1, bins // 256)):
        p = counts[:i].copy()
        p[-1] += counts[i:].sum()
        if p.sum() == 0:
            continue
        nonzero = p > 0
        # Merge the i bins into `levels` groups, then spread each group's mass
        # evenly over its nonzero bins.
        edges = np.linspace(0, i, levels + 1).astype(int)
        q = np.zeros(i)
        for a, b in zip(edges[:-1], edges[1:]):
            if b <= a:
                continue
            mask = nonzero[a:b]
            n = mask.sum()
            if n:
                q[a:b][mask] = p[a:b].sum() / n
        pn = p[nonzero] / p.sum()
        qn = q[nonzero] / q.sum()
        kl = float(np.sum(pn * np.log(pn / np.maximum(qn, 1e-12))))
        if kl < best:
            best, best_i = kl, i
    return best_i * width


class CalibraterBase:
    """Collects ranges for tensors over the reader's batches; compute_data()
    returns {tensor: (rmin, rmax)}."""

    def __init__(self, model, tensors, providers=None, progress: bool = True):
        self.model, self.tensors, self.providers, self.progress = model, list(tensors), providers, progress

    def collect_data(self, reader) -> None:
        for values in run_model_collect(self.model, self.tensors, reader, self.providers, self.progress):
            for name, value in values.items():
                if value.dtype.kind == "f" and value.size:
                    self.add(name, value)

    def add(self, name: str, value: np.ndarray) -> None:
        raise NotImplementedError

    def compute_data(self) -> dict:
        raise NotImplementedError


class MinMaxCalibrater(CalibraterBase):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ranges: dict = {}

    def add(self, name, value):
        lo, hi = float(value.min()), float(value.max())
        if name in self.ranges:
            old = self.ranges[name]
            lo, hi = min(lo, old[0]), max(hi, old[1])
        self.ranges[name] = (lo, hi)

    def compute_data(self):
        return dict(self.ranges)


class HistogramCalibrater(CalibraterBase):
    def __init__(self, *args, method=CalibrationMethod.Entropy, num_bins: int = 2048, percentile: float = 99.999,
                 num_quantized_bins: int = 128, **kwargs):
        super().__init__(*args, **kwargs)
        if not 0 < percentile <= 100:
            raise ValueError(f"percentile must be in (0, 100], not {percentile}")
        self.method, self.num_bins, self.percentile, self.levels = method, num_bins, percentile, num_quantized_bins
        self.histograms: dict = {}

    def add(self, name, value):
        self.histograms.setdefault(name, _Histogram(self.num_bins)).add(value)

    def compute_data(self):
        out = {}
        for name, h in self.histograms.items():
            if h.counts is None:
                continue
            if self.method == CalibrationMethod.Percentile:
                cdf = np.cumsum(h.counts) / h.counts.sum()
                i = int(np.searchsorted(cdf, self.percentile / 100.0))
                threshold = min(i + 1, h.bins) * h.top / h.bins
            else:
                threshold = _kl_threshold(h.counts, h.top, self.levels)
            out[name] = (-threshold if h.negative else 0.0, threshold)
        return out


def create_calibrator(model, tensors, calibrate_method=CalibrationMethod.MinMax, providers=None,
                      extra_options=None, progress: bool = True) -> CalibraterBase:
    extra_options = extra_options or {}
    if calibrate_method == CalibrationMethod.MinMax:
        return MinMaxCalibrater(model, tensors, providers, progress)
    if calibrate_method in (CalibrationMethod.Entropy, CalibrationMethod.Percentile):
        return HistogramCalibrater(model, tensors, providers, progress, method=calibrate_method,
                                   num_bins=int(extra_options.get("CalibNumBins", 2048 if calibrate_method ==
                                                                  CalibrationMethod.Percentile else 512)),
                                   percentile=float(extra_options.get("CalibPercentile", 99.999)),
                                   num_quantized_bins=int(extra_options.get("CalibNumQuantizedBins", 128)))
    raise ValueError(f"onyx.quantization does not implement calibration method {calibrate_method}")
