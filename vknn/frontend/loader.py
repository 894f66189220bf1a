"""Reading ONNX files safely.

A model is user input: a truncated download, a non-ONNX file or an external
data location pointing outside the model's folder must give a one-line error
naming the file, never a protobuf traceback and never a read of a file the
model has no business reading.
"""

from __future__ import annotations

import os
import stat
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
    return load_model_bytes(read_model_bytes(path), str(path))


MAX_MODEL_BYTES = 2**31
"""protobuf's own limit on one message (larger weights live in external data)."""


def read_model_bytes(path: Path) -> bytes:
    """The bytes of a model file: a regular file of at most MAX_MODEL_BYTES,
    opened without blocking, so a FIFO, /dev/zero or a directory is a
    one-line error instead of a hang or an endless read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise ModelLoadError(f"{path}: no such file") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        raise ModelLoadError(f"{path}: cannot read ({_strerror(e)})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ModelLoadError(f"{path}: is a directory, not an ONNX file")
        if not stat.S_ISREG(st.st_mode):
            raise ModelLoadError(
                f"{path}: not a regular file (a FIFO or device?), not an ONNX file"
            )
        if st.st_size > MAX_MODEL_BYTES:
            raise ModelLoadError(
                f"{path}: {st.st_size} bytes is larger than an ONNX file can be (2 GiB; "
                "larger weights belong in external data)"
            )
        try:
            with os.fdopen(fd, "rb", closefd=False) as f:
                return f.read(st.st_size + 1)[:MAX_MODEL_BYTES]  # not read(huge): it allocates
        except OSError as e:
            raise ModelLoadError(f"{path}: cannot read ({_strerror(e)})") from None
    finally:
        os.close(fd)


def _strerror(e: BaseException) -> str:
    return getattr(e, "strerror", None) or _one_line(e)


def _read_exact(fd: int, offset: int, nbytes: int, path: Path) -> bytearray:
    """`nbytes` at `offset` of an open file, copied: a weight is fixed once
    read, whatever happens to the file later (an mmap would change with it,
    and SIGBUS when it is truncated)."""
    buf = bytearray(nbytes)
    view, done = memoryview(buf), 0
    try:
        while done < nbytes:
            n = os.preadv(fd, [view[done:]], offset + done)
            if n == 0:
                raise ModelLoadError(f"{path}: the file shrank while it was read")
            done += n
    except OSError as e:
        raise ModelLoadError(f"{path}: cannot read ({_strerror(e)})") from None
    return buf


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
    """The file behind an external-data `location`, refused unless it is a
    regular file inside the model's folder (no absolute paths, `..`, symlinks
    out, FIFOs or devices). Decided from the path alone (lstat/readlink):
    nothing is opened here."""
    where = f"initializer '{tensor_name}': external data location {location!r}"
    if not location:
        raise ModelLoadError(f"{where} is empty")
    if "\0" in location:
        raise ModelLoadError(f"{where} contains a NUL byte")
    if os.path.isabs(location) or location.startswith(("/", "\\")) or ":" in location[:3]:
        raise ModelLoadError(
            f"{where} is an absolute path; it must be relative to the model's folder"
        )
    try:
        base = base_dir.resolve()
        target = (base / location).resolve()
    except (OSError, RuntimeError, ValueError) as e:  # a symlink loop, a bad name
        raise ModelLoadError(f"{where} cannot be resolved ({_strerror(e)})") from None
    if target != base and base not in target.parents:
        raise ModelLoadError(f"{where} escapes the model's folder {base}")
    try:
        st = os.stat(target, follow_symlinks=False)
    except OSError:
        raise ModelLoadError(f"{where} does not exist in {base}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ModelLoadError(f"{where} is not a regular file (a directory, FIFO or device)")
    return target


def _external_int(info: dict[str, str], key: str, default: int, where: str) -> int:
    text = info.get(key, "")
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ModelLoadError(f"{where}: external data {key} {text!r} is not an integer") from None
    if value < 0:
        raise ModelLoadError(f"{where}: external data {key} {value} is negative")
    return value


def open_regular(path: Path, where: str) -> int:
    """A read-only descriptor of `path`, refused unless it is (still) a
    regular file: opened without following a last symlink and without
    blocking, so a file swapped for a FIFO or a link after the check neither
    hangs nor leads out of the folder."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise ModelLoadError(f"{where}: cannot open {path.name} ({_strerror(e)})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ModelLoadError(f"{where}: {path.name} is not a regular file")
    return fd


def external_tensor_loader(tensor: TensorProto, base_dir: Path):
    """Check an external initializer now; return a loader that reads (copies) it later."""
    from onnx.helper import tensor_dtype_to_np_dtype

    where = f"initializer '{tensor.name}'"
    info = _external_info(tensor)
    path = resolve_external_path(info.get("location", ""), base_dir, tensor.name)
    offset = _external_int(info, "offset", 0, where)
    try:
        dtype = np.dtype(tensor_dtype_to_np_dtype(tensor.data_type))
    except (KeyError, TypeError, ValueError):
        raise ModelLoadError(f"{where}: unknown data type {tensor.data_type}") from None
    shape = tuple(int(d) for d in tensor.dims)
    if any(d < 0 for d in shape):
        raise ModelLoadError(f"{where}: negative dimension in {list(shape)}")
    count = int(np.prod(shape, dtype=object)) if shape else 1
    nbytes = count * dtype.itemsize
    length = _external_int(info, "length", nbytes, where)
    size = os.stat(path, follow_symlinks=False).st_size
    if length < nbytes or offset + nbytes > size:
        raise ModelLoadError(
            f"{where}: external data in '{path.name}' is truncated "
            f"(needs {nbytes} bytes at offset {offset}, file has {size})"
        )

    def load() -> np.ndarray:
        fd = open_regular(path, where)
        try:
            buf = _read_exact(fd, offset, nbytes, path)
        finally:
            os.close(fd)
        return np.frombuffer(buf, dtype=dtype.newbyteorder("<"), count=count).reshape(shape)

    return load
