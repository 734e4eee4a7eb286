"""onyx.quantization: tools that write quantized ONNX models, called like
onnxruntime.quantization (pure Python over onnx and numpy; calibration runs
the float model in onyx). See docs/quantization.md."""

from .calibrate import (CalibraterBase, CalibrationDataReader, HistogramCalibrater, ListDataReader,
                        MinMaxCalibrater, create_calibrator)
from .matmul_nbits_quantizer import (DefaultWeightOnlyQuantConfig, GPTQWeightOnlyQuantConfig, MatMulNBitsQuantizer,
                                     RTNWeightOnlyQuantConfig)
from .preprocess import quant_pre_process
from .quant_utils import CalibrationMethod, QuantFormat, QuantType
from .quantize import quantize_dynamic, quantize_static

__all__ = [
    "CalibraterBase", "CalibrationDataReader", "CalibrationMethod", "DefaultWeightOnlyQuantConfig",
    "GPTQWeightOnlyQuantConfig", "HistogramCalibrater", "ListDataReader", "MatMulNBitsQuantizer", "MinMaxCalibrater",
    "QuantFormat", "QuantType", "RTNWeightOnlyQuantConfig", "create_calibrator", "quant_pre_process",
    "quantize_dynamic", "quantize_static",
]
