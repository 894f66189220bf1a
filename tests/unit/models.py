"""Real test models with seeded random weights.

- The nine `light_*` models of the onnx wheel build their weights with
  ConstantOfShape (every weight 0.02), which makes outputs degenerate; here
  each such weight becomes an initializer of seeded random values.
- `tests/models/*.onnx` were exported with torch.onnx.export
  (tests/models/export_torch_models.py) with their weights stripped; here
  every stripped initializer is refilled.

Values are scaled by the consumer's role (He-style for conv/matmul weights,
positive variances for BatchNormalization, ~1 for norm scales), so deep
networks keep activations in a sane range.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from tests.unit.conftest import LIGHT_DIR

MODELS_DIR = Path(__file__).parent.parent / "models"
TORCH_MODELS = ["resnet18", "mobilenet_v2", "bert_encoder"]


def _consumers(graph: onnx.GraphProto) -> dict[str, list[tuple[onnx.NodeProto, int]]]:
    users: dict[str, list[tuple[onnx.NodeProto, int]]] = {}
    for node in graph.node:
        for i, name in enumerate(node.input):
            users.setdefault(name, []).append((node, i))
    # Look through Identity nodes (torch exports route weights through them).
    for node in graph.node:
        if node.op_type == "Identity" and node.output[0] in users:
            users.setdefault(node.input[0], []).extend(users[node.output[0]])
    return users


def _random_value(
    shape: tuple[int, ...], role: tuple[str, int] | None, rng: np.random.Generator
) -> np.ndarray:
    op, index = role or ("", -1)
    fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else max(shape[0] if shape else 1, 1)
    if op in ("Conv", "ConvTranspose") and index == 1:
        return rng.normal(0, np.sqrt(2.0 / fan_in), shape)
    if op == "BatchNormalization":
        if index in (1, 4):  # scale, variance: positive
            return rng.uniform(0.5, 1.5, shape)
        return rng.normal(0, 0.1, shape)
    if op == "LayerNormalization" and index == 1:
        return rng.uniform(0.8, 1.2, shape)
    if op in ("Gemm", "MatMul") and index == 1:
        k = shape[0] if op == "MatMul" or len(shape) < 2 else shape[1]
        return rng.normal(0, np.sqrt(1.0 / max(k, 1)), shape)
    if op == "Gather" and index == 0:
        return rng.normal(0, 0.5, shape)
    return rng.normal(0, 0.1, shape)


def randomize_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """A copy of `model` whose generated/stripped weights are seeded random."""
    model = onnx.ModelProto.FromString(model.SerializeToString())
    g = model.graph
    rng = np.random.default_rng(seed)
    users = _consumers(g)
    inits = {t.name: t for t in g.initializer}

    def role(name: str) -> tuple[str, int] | None:
        for node, i in users.get(name, []):
            if node.op_type != "Identity":
                return node.op_type, i
        return None

    # Light models: ConstantOfShape(shape initializer) -> random initializer.
    keep = []
    for node in g.node:
        if node.op_type == "ConstantOfShape" and node.input[0] in inits:
            shape = tuple(int(d) for d in numpy_helper.to_array(inits[node.input[0]]))
            value = _random_value(shape, role(node.output[0]), rng).astype(np.float32)
            g.initializer.append(numpy_helper.from_array(value, node.output[0]))
        else:
            keep.append(node)
    del g.node[:]
    g.node.extend(keep)
    # Torch exports: refill stripped initializers.
    for t in g.initializer:
        if t.doc_string == "vknn:stripped":
            shape = tuple(int(d) for d in t.dims)
            dtype = onnx.helper.tensor_dtype_to_np_dtype(t.data_type)
            value = _random_value(shape, role(t.name), rng).astype(dtype)
            t.CopyFrom(numpy_helper.from_array(value, t.name))
    # Drop now-unused shape initializers.
    used = {i for n in g.node for i in n.input} | {o.name for o in g.output}
    alive = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(alive)
    # Old (IR < 4) models also list initializers as graph inputs: keep only real inputs.
    names = {t.name for t in alive}
    real = [vi for vi in g.input if vi.name not in names and vi.name in used]
    del g.input[:]
    g.input.extend(real)
    model.ir_version = max(model.ir_version, 4)
    return model


def light_model(name: str, seed: int = 0) -> onnx.ModelProto:
    return randomize_weights(onnx.load(str(LIGHT_DIR / name)), seed)


def torch_model(name: str, seed: int = 0) -> onnx.ModelProto:
    return randomize_weights(onnx.load(str(MODELS_DIR / f"{name}.onnx")), seed)


def model_inputs(
    model: onnx.ModelProto, dims: dict[str, int], seed: int = 1
) -> dict[str, np.ndarray]:
    """Seeded inputs for the model's declared inputs (symbolic dims from `dims`,
    batch 1); integer inputs are token ids below 1000."""
    rng = np.random.default_rng(seed)
    inits = {t.name for t in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        tt = vi.type.tensor_type
        shape = tuple(
            d.dim_value if d.HasField("dim_value") else dims.get(d.dim_param, 1)
            for d in tt.shape.dim
        )
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)
        if np.dtype(dtype).kind == "f":
            feeds[vi.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[vi.name] = rng.integers(0, 1000, shape).astype(dtype)
    return feeds


def cosine_and_error(ref: np.ndarray, out: np.ndarray) -> tuple[float, float, float]:
    """(cosine similarity, max abs error, max |ref|)."""
    a = np.asarray(ref, np.float64).ravel()
    b = np.asarray(out, np.float64).ravel()
    denom = np.linalg.norm(a) * np.linalg.norm(b)
    cos = float(a @ b / denom) if denom else float(np.array_equal(a, b))
    return cos, float(np.max(np.abs(a - b))), float(np.max(np.abs(a)))
