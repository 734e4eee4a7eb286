"""python -m onyx.quantization {dynamic,static,nbits,preprocess} ...: the
quantizers from the command line. `static` calibrates on a folder of .npy
files (one batch each, fed to the model's single input) or .npz files (one
batch each, arrays named after the model's inputs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import onnx

from . import (CalibrationMethod, GPTQWeightOnlyQuantConfig, ListDataReader, MatMulNBitsQuantizer, QuantFormat,
               QuantType, quant_pre_process, quantize_dynamic, quantize_static)


def folder_reader(folder, model_path) -> ListDataReader:
    """Calibration batches from the .npy/.npz files of folder, in name order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SystemExit(f"error: no calibration folder at {str(folder)!r}")
    model = onnx.load(str(model_path), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    batches = []
    for path in sorted(folder.iterdir()):
        if path.suffix == ".npz":
            with np.load(path) as data:
                missing = set(inputs) - set(data.files)
                if missing:
                    raise SystemExit(f"error: {path.name} lacks input(s) {sorted(missing)}")
                batches.append({name: data[name] for name in inputs})
        elif path.suffix == ".npy":
            if len(inputs) != 1:
                raise SystemExit(f"error: the model has inputs {inputs}; give .npz files that name them")
            batches.append({inputs[0]: np.load(path)})
    if not batches:
        raise SystemExit(f"error: no .npy or .npz files in {str(folder)!r}")
    return ListDataReader(batches)


def _enum(kind):
    def parse(text):
        try:
            return kind[text]
        except KeyError:
            raise argparse.ArgumentTypeError(f"one of {[k.name for k in kind]}") from None
    return parse


def _split(text):
    return [t for t in text.split(",") if t] if text else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m onyx.quantization",
                                     description="Write quantized ONNX models (see docs/quantization.md).")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("input", help="float ONNX model")
        p.add_argument("output", help="where to write the quantized model")
        p.add_argument("--op-types", type=_split, help="comma-separated op types to quantize")
        p.add_argument("--exclude", type=_split, help="comma-separated node names to leave float")
        p.add_argument("--per-channel", action="store_true")
        p.add_argument("--reduce-range", action="store_true")
        p.add_argument("--weight-type", type=_enum(QuantType), default=QuantType.QInt8)

    p = sub.add_parser("dynamic", help="weights quantized ahead, activations at run time")
    common(p)
    p = sub.add_parser("static", help="calibrated activation ranges, QDQ or QOperator format")
    common(p)
    p.add_argument("--calibration-data", required=True, help="folder of .npy/.npz input batches")
    p.add_argument("--format", type=_enum(QuantFormat), default=QuantFormat.QDQ)
    p.add_argument("--activation-type", type=_enum(QuantType), default=QuantType.QUInt8)
    p.add_argument("--method", type=_enum(CalibrationMethod), default=CalibrationMethod.MinMax)
    p.add_argument("--percentile", type=float, default=99.999)
    p = sub.add_parser("nbits", help="4-bit weight-only MatMulNBits")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--block-size", type=int, default=32)
    p.add_argument("--symmetric", action="store_true")
    p.add_argument("--accuracy-level", type=int)
    p.add_argument("--exclude", type=_split)
    p.add_argument("--gptq-data", help="folder of .npy/.npz batches: quantize with GPTQ instead of rounding")
    p = sub.add_parser("preprocess", help="shape inference and onyx's basic optimizations")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--skip-optimization", action="store_true")
    p.add_argument("--skip-onnx-shape", action="store_true")
    args = parser.parse_args(argv)

    try:
        if args.command == "dynamic":
            quantize_dynamic(args.input, args.output, op_types_to_quantize=args.op_types, per_channel=args.per_channel,
                             reduce_range=args.reduce_range, weight_type=args.weight_type,
                             nodes_to_exclude=args.exclude)
        elif args.command == "static":
            reader = folder_reader(args.calibration_data, args.input)
            quantize_static(args.input, args.output, reader, quant_format=args.format,
                            op_types_to_quantize=args.op_types, per_channel=args.per_channel,
                            reduce_range=args.reduce_range, activation_type=args.activation_type,
                            weight_type=args.weight_type, nodes_to_exclude=args.exclude, calibrate_method=args.method,
                            extra_options={"CalibPercentile": args.percentile})
        elif args.command == "nbits":
            config = None
            if args.gptq_data:
                config = GPTQWeightOnlyQuantConfig(folder_reader(args.gptq_data, args.input), block_size=args.block_size)
            quantizer = MatMulNBitsQuantizer(args.input, block_size=args.block_size, is_symmetric=args.symmetric,
                                             accuracy_level=args.accuracy_level, nodes_to_exclude=args.exclude,
                                             algo_config=config)
            quantizer.process()
            quantizer.model.save_model_to_file(args.output)
        else:
            quant_pre_process(args.input, args.output, skip_optimization=args.skip_optimization,
                              skip_onnx_shape=args.skip_onnx_shape)
    except (FileNotFoundError, ValueError, NotImplementedError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
