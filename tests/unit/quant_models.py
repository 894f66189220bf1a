"""Quantized real models for the pass tests: light models with seeded random
weights, quantized by onnxruntime (QDQ and QOperator formats)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import version_converter

from tests.unit.models import light_model, model_inputs


def float_model(name: str, seed: int = 0, opset: int = 13) -> onnx.ModelProto:
    """`light_<name>.onnx` with seeded random weights (tests.unit.models),
    converted to an opset the quantizer accepts."""
    model = light_model(f"light_{name}.onnx", seed)
    model.ir_version = max(model.ir_version, 7)  # initializers need not be graph inputs
    inits = {t.name for t in model.graph.initializer}
    real = [i for i in model.graph.input if i.name not in inits and not i.name.endswith("__SHAPE")]
    del model.graph.input[:]
    model.graph.input.extend(real)
    return version_converter.convert_version(model, opset)


def quantized(model: onnx.ModelProto, fmt: str, path: Path, seed: int = 1) -> onnx.ModelProto:
    """`model` quantized by onnxruntime's static quantizer, in "qdq" or
    "qoperator" format, calibrated on a few seeded random inputs."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Reader(CalibrationDataReader):
        def __init__(self) -> None:
            rng = np.random.default_rng(seed)
            shapes = {k: v.shape for k, v in model_inputs(model, {}).items()}
            # Image-like calibration data in [0, 1); the tests feed N(0, 1), so
            # the saturating clamps are exercised too.
            self.batches = iter(
                [{k: rng.random(s, dtype=np.float32) for k, s in shapes.items()} for _ in range(4)]
            )

        def get_next(self) -> dict | None:
            return next(self.batches, None)

    src = path.with_suffix(".float.onnx")
    onnx.save(model, str(src))
    quantize_static(
        str(src),
        str(path),
        Reader(),
        quant_format=QuantFormat.QDQ if fmt == "qdq" else QuantFormat.QOperator,
        activation_type=QuantType.QUInt8,
        weight_type=QuantType.QInt8,
        per_channel=fmt == "qdq",
        # A quantized 1000-way softmax is mostly exact zeros at 1/255 steps:
        # compare the classifier's float probabilities instead.
        nodes_to_exclude=[n.name for n in model.graph.node if n.op_type == "Softmax"],
    )
    return onnx.load(str(path))


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b) + 1e-30))
