"""quant_pre_process: onnx shape inference, then onyx's basic graph passes
(constant folding, redundant node removal, fusions that keep plain ONNX ops)
saved through SessionOptions.optimized_model_filepath."""

from __future__ import annotations

import tempfile
from pathlib import Path

import onnx

from .quant_utils import load_model, save_model


def quant_pre_process(input_model=None, output_model_path=None, skip_optimization=False, skip_onnx_shape=False,
                      skip_symbolic_shape=False, auto_merge=False, int_max=2**31 - 1, guess_output_rank=False,
                      verbose=0, save_as_external_data=False, all_tensors_to_one_file=False,
                      external_data_location=None, external_data_size_threshold=1024, **deprecated_kwargs):
    """Write a copy of input_model (a path or ModelProto) that is ready to
    quantize: optimized by onyx at ORT_ENABLE_BASIC unless skip_optimization,
    with inferred shapes unless skip_onnx_shape. skip_symbolic_shape and the
    other symbolic-inference arguments are accepted and ignored (onyx has no
    symbolic shape inference)."""
    if input_model is None:
        input_model = deprecated_kwargs.pop("input_model_path", None)
    if input_model is None or output_model_path is None:
        raise ValueError("quant_pre_process needs input_model and output_model_path")
    model = load_model(input_model)
    with tempfile.TemporaryDirectory() as folder:
        if not skip_optimization:
            import onyx

            optimized = Path(folder) / "optimized.onnx"
            options = onyx.SessionOptions()
            options.graph_optimization_level = onyx.GraphOptimizationLevel.ORT_ENABLE_BASIC
            options.optimized_model_filepath = str(optimized)
            source = Path(folder) / "input.onnx"
            onnx.save_model(model, str(source))
            onyx.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
            model = onnx.load(str(optimized))
        if not skip_onnx_shape:
            model = onnx.shape_inference.infer_shapes(model)
    save_model(model, output_model_path, save_as_external_data)
