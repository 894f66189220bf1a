"""Reading ONNX files safely.

A model is user input: a truncated download, a non-ONNX file or an external
data location pointing outside the model's folder must give a one-line error
naming the file, never a protobuf traceback and never a read of a file the
model has no business reading.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import ModelProto, TensorProto

from vknn.errors import ModelLoadError

OLDEST_OPSET = 7
NEWEST_OPSET = onnx.defs.onnx_opset_version()


def load_model_file(path: str | os.PathLike[str]) -> ModelProto:
    """Parse and sanity-check an ONNX file. External data is *not* read here:
    `external_tensor_loader` reads it lazily, after checking its location."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ModelLoadError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ModelLoadError(f"{path}: is a directory, not an ONNX file") from None
    except OSError as e:
        raise ModelLoadError(f"{path}: cannot read ({e.strerror})") from None
    return load_model_bytes(data, str(path))


def load_model_bytes(data: bytes, name: str = "<bytes>") -> ModelProto:
    if not data:
        raise ModelLoadError(f"{name}: empty file, not an ONNX model")
    model = ModelProto()
    try:
        model.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise ModelLoadError(
            f"{name}: not a valid ONNX model (truncated or not protobuf: {_one_line(e)})"
        ) from None
    check_model_structure(model, name)
    return model


def check_model_structure(model: ModelProto, name: str) -> None:
    """Cheap structural checks that catch garbage which protobuf happens to accept."""
    if model.ir_version <= 0 or not model.HasField("graph"):
        raise ModelLoadError(f"{name}: not a valid ONNX model (no IR version or no graph)")
    if not model.graph.output:
        raise ModelLoadError(f"{name}: the graph declares no outputs (truncated model?)")
    opset = default_opset(model)
    if opset < OLDEST_OPSET:
        raise ModelLoadError(
            f"{name}: opset {opset} is older than the oldest supported ({OLDEST_OPSET}); "
            "convert it with onnx.version_converter"
        )
    if opset > NEWEST_OPSET:
        raise ModelLoadError(
            f"{name}: opset {opset} is newer than this onnx package knows ({NEWEST_OPSET})"
        )
    known = {i.name for i in model.graph.input} | {i.name for i in model.graph.initializer}
    for node in model.graph.node:
        known.update(node.output)
    for out in model.graph.output:
        if out.name not in known:
            raise ModelLoadError(
                f"{name}: graph output '{out.name}' is produced by no node (truncated model?)"
            )


def default_opset(model: ModelProto) -> int:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            return imp.version
    if not model.opset_import:
        return 1  # IR v1/v2 models predate opset_import
    return NEWEST_OPSET


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split()) or type(e).__name__


def _external_info(tensor: TensorProto) -> dict[str, str]:
    return {e.key: e.value for e in tensor.external_data}


def resolve_external_path(location: str, base_dir: Path, tensor_name: str) -> Path:
    """The file behind an external-data `location`, refused unless it lies
    inside the model's folder (no absolute paths, `..`, or symlinks out)."""
    where = f"initializer '{tensor_name}': external data location '{location}'"
    if not location:
        raise ModelLoadError(f"{where} is empty")
    if os.path.isabs(location) or location.startswith(("/", "\\")) or ":" in location[:3]:
        raise ModelLoadError(
            f"{where} is an absolute path; it must be relative to the model's folder"
        )
    base = base_dir.resolve()
    target = (base / location).resolve()
    if target != base and base not in target.parents:
        raise ModelLoadError(f"{where} escapes the model's folder {base}")
    if not target.is_file():
        raise ModelLoadError(f"{where} does not exist in {base}")
    return target


def external_tensor_loader(tensor: TensorProto, base_dir: Path):
    """Check an external initializer now; return a loader that maps it later."""
    from onnx.helper import tensor_dtype_to_np_dtype

    info = _external_info(tensor)
    path = resolve_external_path(info.get("location", ""), base_dir, tensor.name)
    offset = int(info.get("offset", 0) or 0)
    dtype = np.dtype(tensor_dtype_to_np_dtype(tensor.data_type))
    shape = tuple(int(d) for d in tensor.dims)
    count = int(np.prod(shape)) if shape else 1
    nbytes = count * dtype.itemsize
    length = int(info.get("length", nbytes) or nbytes)
    size = path.stat().st_size
    if length < nbytes or offset < 0 or offset + nbytes > size:
        raise ModelLoadError(
            f"initializer '{tensor.name}': external data in '{path.name}' is truncated "
            f"(needs {nbytes} bytes at offset {offset}, file has {size})"
        )

    def load() -> np.ndarray:
        with open(path, "rb") as f:
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        return np.frombuffer(mm, dtype=dtype.newbyteorder("<"), count=count, offset=offset).reshape(
            shape
        )

    return load
