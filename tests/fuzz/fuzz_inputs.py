"""Fuzz VKNN with hostile inputs: mutated ONNX models, external data,
`.vxm` files, model caches and CLI options (docs/security.md).

    python tests/fuzz/fuzz_inputs.py --cases 2000 --seed 1 [--backends cpu] [--jobs 2]
    python tests/fuzz/fuzz_inputs.py --seed 1 --only 137      # one case, in-process, verbose

Seeds are built here: a small CNN, an MLP with external data and a graph of
shape ops (onnx.helper, no torch), the `.vxm` files `vknn compile` makes of
them, and the model caches sessions write. Each case derives a mutant from
one seed with its own RNG (`--seed`, case index: reproducible alone) —
byte flips, truncation, chunk edits; protobuf field edits (attributes, dims,
dtypes, op types, node inputs/outputs, opsets, initializers); hostile
external data (locations out of the folder, FIFOs, symlinks, bad offsets);
msgpack type changes, field swaps and deletions in `.vxm` files (content
hash recomputed, so the mutant reaches program validation) and caches
(MAC kept: must be discarded; or recomputed with the user's secret:
exercises decoding of a trusted file); random CLI options — and runs it in
a child process forked from this one (nothing but imports done before the
fork: no Vulkan device in the parent) under a memory limit (RLIMIT_AS) and a
time limit (killed past --timeout).

Outcomes: ok; error (a one-line VknnError, or a CLI's one `error:` line);
and the defects: traceback (any other exception, or an error of several
lines), memory (MemoryError), crash (the child died of a signal or exited
without a report), hang (killed at the time limit), wrong (a damaged cache
was not discarded, or the Vulkan and CPU backends disagree on a model both
ran). Exit status 1 when any defect was found.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

DEFECTS = ("traceback", "memory", "crash", "hang", "wrong")
OUTCOMES = ("ok", "error", *DEFECTS)
FAMILIES = {  # family -> weight
    "onnx_bytes": 20,
    "onnx_proto": 30,
    "external": 10,
    "vxm": 18,
    "cache": 12,
    "cli": 10,
}

# -- seeds ---------------------------------------------------------------------------


def _seed_models(folder: Path) -> dict[str, Path]:
    """The seed ONNX models (onnx.helper): name -> model path (own folder each)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def arr(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    def save(name: str, nodes, inputs, outputs, inits, external: bool = False) -> Path:  # type: ignore[no-untyped-def]
        d = folder / name
        d.mkdir(parents=True)
        graph = helper.make_graph(nodes, name, inputs, outputs, inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        path = d / "model.onnx"
        if external:
            onnx.save_model(model, path, save_as_external_data=True,
                            all_tensors_to_one_file=True, location="weights.bin",
                            size_threshold=0)  # fmt: skip
        else:
            onnx.save_model(model, path)
        return path

    f32 = TensorProto.FLOAT
    cnn = save(
        "cnn",
        [
            helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c1"], ["r1"]),
            helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
            helper.make_node("Conv", ["p1", "w2"], ["c2"], strides=[1, 1]),
            helper.make_node("GlobalAveragePool", ["c2"], ["g"]),
            helper.make_node("Flatten", ["g"], ["f"]),
            helper.make_node("Gemm", ["f", "wf", "bf"], ["l"], transB=1),
            helper.make_node("Softmax", ["l"], ["y"], axis=1),
        ],
        [helper.make_tensor_value_info("x", f32, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", f32, [1, 5])],
        [
            arr("w1", 8, 3, 3, 3),
            arr("b1", 8),
            arr("w2", 8, 8, 3, 3),
            arr("wf", 5, 8),
            arr("bf", 5),
        ],  # fmt: skip
    )
    mlp = save(
        "mlp_ext",
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"]),
            helper.make_node("Add", ["h", "b1"], ["hb"]),
            helper.make_node("Relu", ["hb"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", f32, ["N", 16])],
        [helper.make_tensor_value_info("y", f32, ["N", 4])],
        [arr("w1", 16, 32), arr("b1", 32), arr("w2", 32, 4)],
        external=True,
    )
    idx = numpy_helper.from_array(np.array([2, 0, 1], np.int64), "idx")
    shp = numpy_helper.from_array(np.array([3, 4], np.int64), "shp")
    starts = numpy_helper.from_array(np.array([1], np.int64), "st")
    ends = numpy_helper.from_array(np.array([3], np.int64), "en")
    shape_ops = save(
        "shape_ops",
        [
            helper.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
            helper.make_node("Gather", ["t", "idx"], ["g"], axis=1),
            helper.make_node("Concat", ["g", "g"], ["c"], axis=2),
            helper.make_node("Reshape", ["c", "shp"], ["r"]),
            helper.make_node("Slice", ["r", "st", "en", "ax"], ["s"]),
            helper.make_node("ReduceMean", ["s"], ["m"], axes=[1], keepdims=1),
            helper.make_node("Sub", ["r", "m"], ["d"]),
            helper.make_node("Tanh", ["d"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", f32, [1, 2, 3])],
        [helper.make_tensor_value_info("y", f32, [3, 4])],
        [idx, shp, starts, ends, numpy_helper.from_array(np.array([1], np.int64), "ax")],
    )
    return {"cnn": cnn, "mlp_ext": mlp, "shape_ops": shape_ops}


def _compile_vxm(model: Path, out: Path, backends: str) -> None:
    from vknn.tools.cli import main as vknn_main

    argv = ["compile", str(model), "-o", str(out), "--backends", backends, "--dims", "N=2"]
    with contextlib.redirect_stdout(io.StringIO()):
        rc = vknn_main(argv)
    if rc != 0 or not out.exists():
        raise RuntimeError(f"seed .vxm {out} not built")


def _in_child(fn, timeout: float = 300.0) -> Any:  # type: ignore[no-untyped-def]
    """fn() in a forked child (the parent must never open a Vulkan device); its JSON result."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = json.dumps(fn()).encode()
        except BaseException:
            out = json.dumps({"error": traceback.format_exc()}).encode()
        os.write(w, out)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    result = json.loads(data or b"null")
    if isinstance(result, dict) and "error" in result:
        raise RuntimeError(result["error"])
    return result


class Corpus:
    """Seed files, their reference outputs and clean caches, in one folder."""

    def __init__(self, root: Path, backends: tuple[str, ...]) -> None:
        self.root = root
        self.backends = backends
        self.models = _seed_models(root / "models")
        self.vxm: dict[str, Path] = {}
        for name, path in self.models.items():
            for b in ("cpu", *(["vulkan,cpu"] if "vulkan" in backends else [])):
                out = root / "vxm" / f"{name}.{b.split(',')[0]}.vxm"
                out.parent.mkdir(exist_ok=True)
                _in_child(lambda p=path, o=out, b=b: _compile_vxm(p, o, b))  # threads: not here
                self.vxm[out.stem] = out
        # Clean caches and reference outputs, written by sessions in children.
        self.caches: dict[str, Path] = {}
        self.reference: dict[str, dict[str, list[Any]]] = {}
        for name, path in self.models.items():
            for b in backends:
                cache = root / "caches" / f"{name}.{b}.vkcache"
                cache.parent.mkdir(exist_ok=True)
                bk = _config_backends(b)
                ref = _in_child(lambda p=path, c=cache, bk=bk: _session_outputs(p, bk, str(c)))
                self.caches[cache.stem] = cache
                self.reference[cache.stem] = ref


def _config_backends(b: str) -> tuple[str, ...]:
    return ("cpu",) if b == "cpu" else ("vulkan", "cpu")


def _feeds(session: Any) -> dict[str, Any]:
    import numpy as np

    rng = np.random.default_rng(7)
    feeds = {}
    for spec in session.inputs:
        shape = tuple(2 if not isinstance(d, int) or d < 0 else min(d, 64) for d in spec.dims)
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "f":
            feeds[spec.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype == np.bool_:
            feeds[spec.name] = rng.random(shape) < 0.5
        else:
            feeds[spec.name] = rng.integers(0, 3, shape).astype(dtype)
    return feeds


def _session_outputs(model: Path | bytes, backends: tuple[str, ...], cache: str) -> dict:  # type: ignore[type-arg]
    import vknn

    cfg = vknn.Config(backends=backends, cache_file=cache, dims={"N": 2})
    s = vknn.Session(model, cfg)
    try:
        out = s.run(_feeds(s))
    finally:
        s.close()
    return {k: v.tolist() for k, v in out.items()}


# -- mutations -------------------------------------------------------------------------

INTERESTING_INTS = [0, 1, -1, 2, 3, 7, 255, 256, -128, 1 << 15, 1 << 16, (1 << 31) - 1,
                    -(1 << 31), 1 << 32, 1 << 40, -(1 << 62), (1 << 63) - 1]  # fmt: skip
INTERESTING_FLOATS = [0.0, -0.0, 1e-45, -1.0, 1e38, float("inf"), float("-inf"), float("nan")]


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    if not b:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    for _ in range(rng.choice((1, 1, 1, 2, 4, 16))):
        op = rng.randrange(7)
        i = rng.randrange(len(b))
        if op == 0:
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[i] = rng.choice((0, 0xFF, 0x7F, 0x80, rng.randrange(256)))
        elif op == 2:
            return bytes(b[: rng.randrange(len(b))])
        elif op == 3:
            j = min(len(b), i + rng.randrange(1, 64))
            del b[i:j]
        elif op == 4:
            j = min(len(b), i + rng.randrange(1, 64))
            b[i:i] = b[i:j]
        elif op == 5:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        else:
            j = rng.randrange(len(b))
            n = min(rng.randrange(1, 32), len(b) - max(i, j))
            b[i : i + n], b[j : j + n] = b[j : j + n], b[i : i + n]
        if not b:
            break
    return bytes(b)


def mutate_proto(rng: random.Random, model: Any) -> str:
    """Edit one or two fields of an onnx ModelProto in place; say what."""
    from onnx import AttributeProto, TensorProto

    g = model.graph
    what = []
    for _ in range(rng.choice((1, 1, 2))):
        op = rng.randrange(16)
        nodes = list(g.node)
        node = rng.choice(nodes) if nodes else None
        names = [o for n in nodes for o in n.output] + [i.name for i in g.input]
        names += [t.name for t in g.initializer]
        if op == 0 and node is not None and node.attribute:
            a = rng.choice(node.attribute)
            if a.type == AttributeProto.INT:
                a.i = rng.choice(INTERESTING_INTS)
            elif a.type == AttributeProto.INTS and a.ints:
                k = rng.randrange(len(a.ints))
                choice = rng.randrange(3)
                if choice == 0:
                    a.ints[k] = rng.choice(INTERESTING_INTS)
                elif choice == 1:
                    del a.ints[k]
                else:
                    a.ints.append(rng.choice(INTERESTING_INTS))
            elif a.type == AttributeProto.FLOAT:
                a.f = rng.choice(INTERESTING_FLOATS)
            else:
                a.type = rng.choice((AttributeProto.STRING, AttributeProto.FLOATS, 99))
            what.append(f"attr {node.op_type}.{a.name}")
        elif op == 1 and node is not None:
            name = rng.choice(("stride", "axis", "kernel_shape", "perm", "pads", "junk"))
            node.attribute.add(name=name, type=AttributeProto.INT, i=rng.choice(INTERESTING_INTS))
            what.append(f"add attr {name} to {node.op_type}")
        elif op == 2 and node is not None and node.attribute:
            del node.attribute[rng.randrange(len(node.attribute))]
            what.append(f"drop attr of {node.op_type}")
        elif op == 3 and node is not None:
            node.op_type = rng.choice(
                (
                    "Conv",
                    "Relu",
                    "MatMul",
                    "Gather",
                    "Reshape",
                    "Softmax",
                    "Add",
                    "NoSuchOp",
                    "Loop",
                    "Concat",
                    "Cast",
                    "Where",
                )
            )
            what.append(f"op_type -> {node.op_type}")
        elif op == 4 and node is not None and node.input:
            k = rng.randrange(len(node.input))
            node.input[k] = rng.choice([*names, "", "nonexistent"])
            what.append(f"input of {node.op_type}")
        elif op == 5 and node is not None:
            if node.input and rng.random() < 0.5:
                del node.input[rng.randrange(len(node.input))]
            else:
                node.input.append(rng.choice(names))
            what.append(f"input count of {node.op_type}")
        elif op == 6 and node is not None and len(nodes) > 1:
            other = rng.choice(nodes)
            node.output[0] = other.output[0]
            what.append("duplicate output")
        elif op == 7 and nodes:
            del g.node[rng.randrange(len(nodes))]
            what.append("drop node")
        elif op == 8 and len(nodes) > 1:
            i, j = rng.randrange(len(nodes)), rng.randrange(len(nodes))
            a, b = g.node[i].SerializeToString(), g.node[j].SerializeToString()
            g.node[i].ParseFromString(b)
            g.node[j].ParseFromString(a)
            what.append("swap nodes")
        elif op == 9 and g.input:
            vi = rng.choice(g.input)
            vi.type.tensor_type.elem_type = rng.choice((0, 2, 6, 7, 9, 10, 11, 16, 30, 99))
            what.append("input elem_type")
        elif op == 10 and g.input:
            vi = rng.choice(g.input)
            dims = vi.type.tensor_type.shape.dim
            if dims:
                d = rng.choice(dims)
                if rng.random() < 0.3:
                    d.dim_param = rng.choice(("N", "seq", "", "a b"))
                else:
                    d.dim_value = rng.choice((0, 1, 2, 5, 1 << 20, 1 << 40, -1, -7))
            else:
                vi.type.tensor_type.shape.dim.add().dim_value = 3
            what.append("input dim")
        elif op == 11 and g.initializer:
            t = rng.choice(g.initializer)
            if t.dims and rng.random() < 0.6:
                t.dims[rng.randrange(len(t.dims))] = rng.choice((0, 1, -1, 3, 1 << 20, 1 << 40))
            else:
                t.data_type = rng.choice((TensorProto.INT64, TensorProto.FLOAT16, TensorProto.BOOL,
                                          TensorProto.STRING, 0, 40))  # fmt: skip
            what.append(f"initializer {t.name}")
        elif op == 12 and g.initializer:
            t = rng.choice(g.initializer)
            if t.raw_data:
                t.raw_data = t.raw_data[: rng.randrange(len(t.raw_data))]
            elif t.float_data:
                del t.float_data[rng.randrange(len(t.float_data)) :]
            elif t.int64_data:
                del t.int64_data[rng.randrange(len(t.int64_data)) :]
            what.append(f"initializer {t.name} data cut")
        elif op == 13:
            for imp in model.opset_import:
                imp.version = rng.choice((1, 6, 7, 11, 13, 17, 18, 21, 99))
            what.append("opset")
        elif op == 14 and g.output:
            o = rng.choice(g.output)
            o.name = rng.choice([*names, "nowhere"])
            what.append("output name")
        else:
            model.ir_version = rng.choice((0, 1, 3, 7, 8, 10, 99))
            what.append("ir_version")
    return ", ".join(what) or "nothing"


def _msgpack_paths(obj: Any, path: tuple = ()) -> list[tuple]:  # type: ignore[type-arg]
    out = [path]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _msgpack_paths(v, (*path, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _msgpack_paths(v, (*path, i))
    return out


def _get(obj: Any, path: tuple) -> Any:  # type: ignore[type-arg]
    for k in path:
        obj = obj[k]
    return obj


def _set(obj: Any, path: tuple, value: Any) -> Any:  # type: ignore[type-arg]
    if not path:
        return value
    _get(obj, path[:-1])[path[-1]] = value
    return obj


def mutate_tree(rng: random.Random, obj: Any, skip: tuple[str, ...] = ()) -> tuple[Any, str]:
    """One msgpack-level edit: a value replaced (another type, an interesting
    number), a list cut/duplicated/emptied, a key dropped, two values swapped."""
    paths = [p for p in _msgpack_paths(obj) if p and p[0] not in skip]
    path = rng.choice(paths)
    value = _get(obj, path)
    op = rng.randrange(9)
    if op == 0 or (op <= 2 and isinstance(value, int) and not isinstance(value, bool)):
        if isinstance(value, int) and not isinstance(value, bool):
            new: Any = rng.choice([*INTERESTING_INTS, value + 1, value - 1, value * 2])
        elif isinstance(value, float):
            new = rng.choice(INTERESTING_FLOATS)
        else:
            new = rng.choice(INTERESTING_INTS)
        obj = _set(obj, path, new)
        return obj, f"{path}: number -> {new!r}"
    if op == 1:
        new = rng.choice([None, True, "x", b"\x00" * 4, [], {}, 1.5, [1, 2, 3], {"k": 1}, -1])
        obj = _set(obj, path, new)
        return obj, f"{path}: {type(value).__name__} -> {type(new).__name__}"
    if op == 2 and isinstance(value, bytes):
        choice = rng.randrange(3)
        new = value[: rng.randrange(len(value) + 1)] if choice == 0 else (
            mutate_bytes(rng, value) if choice == 1 else value + value)  # fmt: skip
        obj = _set(obj, path, new)
        return obj, f"{path}: bytes edited"
    if op in (3, 4) and isinstance(value, list) and value:
        choice = rng.randrange(4)
        if choice == 0:
            del value[rng.randrange(len(value))]
        elif choice == 1:
            value.append(rng.choice(value))
        elif choice == 2:
            value.clear()
        else:
            i, j = rng.randrange(len(value)), rng.randrange(len(value))
            value[i], value[j] = value[j], value[i]
        return obj, f"{path}: list edit {choice}"
    if op == 5 and isinstance(value, dict) and value:
        k = rng.choice(list(value))
        del value[k]
        return obj, f"{path}: key {k!r} dropped"
    if op == 6:
        same = [p for p in paths if type(_get(obj, p)) is type(value) and p != path
                and not (p[: len(path)] == path or path[: len(p)] == p)]  # fmt: skip
        if same:
            other = rng.choice(same)
            a, b = _get(obj, path), _get(obj, other)
            obj = _set(obj, path, b)
            obj = _set(obj, other, a)
            return obj, f"swap {path} <-> {other}"
    if isinstance(value, str):
        new = rng.choice(["", "x" * 300, "\x00", "high", "vulkan", "cpu", "const", "fp16"])
        obj = _set(obj, path, new)
        return obj, f"{path}: str -> {new!r}"
    if isinstance(value, int) and not isinstance(value, bool):
        obj = _set(obj, path, value + rng.choice((-1, 1, 4, -4, 1 << 20)))
        return obj, f"{path}: off by some"
    return mutate_tree(rng, obj, skip)


def rehash_vxm(fields: dict[str, Any]) -> bytes:
    """A .vxm with these fields (in order) and a content hash that matches them."""
    import hashlib

    import msgpack

    packer = msgpack.Packer(use_bin_type=True)
    items = [(k, v) for k, v in fields.items() if k != "content_hash"]
    body = packer.pack_map_header(len(items) + 1) + b"".join(
        packer.pack(k) + packer.pack(v) for k, v in items
    )
    return body + packer.pack("content_hash") + packer.pack(hashlib.sha256(body).hexdigest())


# -- running one case ------------------------------------------------------------------


class CaseResult(dict):  # type: ignore[type-arg]
    pass


def _classify_exception(e: BaseException) -> tuple[str, str]:
    from vknn.errors import VknnError

    if isinstance(e, VknnError):
        text = str(e)
        if "\n" in text.strip() or not text.strip():
            return "traceback", f"multi-line or empty {type(e).__name__}: {text[:300]!r}"
        return "error", text[:300]
    if isinstance(e, MemoryError):
        return "memory", f"MemoryError {str(e)[:200]}"
    tb = traceback.extract_tb(e.__traceback__)
    where = f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"
    return "traceback", f"{type(e).__name__} at {where}: {' '.join(str(e).split())[:250]}"


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    import numpy as np

    if set(a) != set(b):
        return False
    for k in a:
        x, y = np.asarray(a[k]), np.asarray(b[k])
        if x.shape != y.shape:
            return False
        if x.dtype.kind == "f" or y.dtype.kind == "f":
            xf, yf = x.astype(np.float64), y.astype(np.float64)
            big = np.isfinite(xf) & (np.abs(xf) > 1e30)  # fp32 overflow: inf vs big
            if not np.allclose(xf[~big], yf[~big], rtol=2e-3, atol=2e-3, equal_nan=True):
                return False
        elif not np.array_equal(x, y):
            return False
    return True


def _run_model(model: Path | bytes, backends: tuple[str, ...], cache: str = "off") -> dict:  # type: ignore[type-arg]
    import vknn

    cfg = vknn.Config(backends=backends, cache_file=cache, dims={"N": 2})
    s = vknn.Session(model, cfg)
    try:
        return s.run(_feeds(s))
    finally:
        s.close()


def _run_onnx(path: Path, backend: str) -> tuple[str, str]:
    out = _run_model(path, _config_backends(backend))
    if backend == "cpu":
        return "ok", ""
    try:
        ref = _run_model(path, ("cpu",))
    except Exception as e:  # the CPU refuses what Vulkan ran: not comparable
        return "ok", f"cpu refused: {type(e).__name__}"
    if not _same(out, ref):
        return "wrong", "vulkan and cpu backends disagree"
    return "ok", ""


def run_case(corpus: Corpus, seed: int, index: int, work: Path) -> CaseResult:
    """Build case `index` and run it (in the calling process)."""
    import numpy as np

    rng = random.Random(f"{seed}:{index}")
    family = rng.choices(list(FAMILIES), weights=list(FAMILIES.values()))[0]
    backend = rng.choice(corpus.backends)
    r = CaseResult(index=index, family=family, backend=backend, what="")
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            outcome, detail = _build_and_run(corpus, rng, family, backend, work, r)
    except BaseException as e:  # noqa: BLE001  (classified)
        outcome, detail = _classify_exception(e)
        if os.environ.get("FUZZ_VERBOSE"):
            traceback.print_exc()
    warnings = [ln for ln in stderr.getvalue().splitlines() if ln.strip()]
    if any(ln.startswith("Traceback") for ln in warnings):
        outcome, detail = "traceback", "a traceback on stderr: " + warnings[-1][:200]
    r.update(outcome=outcome, detail=detail)
    del np
    return r


def _build_and_run(corpus: Corpus, rng: random.Random, family: str, backend: str, work: Path,
                   r: CaseResult) -> tuple[str, str]:  # fmt: skip
    import msgpack
    import onnx

    name = "mlp_ext" if family == "external" else rng.choice(sorted(corpus.models))
    seed_model = corpus.models[name]
    if family in ("onnx_bytes", "onnx_proto", "external"):
        folder = work / "m"
        shutil.copytree(seed_model.parent, folder)
        path = folder / "model.onnx"
        if family == "onnx_bytes":
            path.write_bytes(mutate_bytes(rng, path.read_bytes()))
            r["what"] = f"{name}: bytes"
        elif family == "onnx_proto":
            model = onnx.load(path, load_external_data=False)
            r["what"] = f"{name}: " + mutate_proto(rng, model)
            path.write_bytes(model.SerializeToString())
        else:
            r["what"] = _mutate_external(rng, path, folder)
        return _run_onnx(path, backend)
    if family == "vxm":
        keys = [k for k in corpus.vxm if k.endswith("." + backend.split(",")[0])] or list(
            corpus.vxm
        )
        src = corpus.vxm[rng.choice(sorted(keys))]
        data = src.read_bytes()
        path = work / "m.vxm"
        if rng.random() < 0.25:
            path.write_bytes(mutate_bytes(rng, data))
            r["what"] = f"{src.name}: bytes"
        else:
            fields = msgpack.unpackb(data, raw=False, strict_map_key=False)
            for _ in range(rng.choice((1, 1, 2, 3))):
                fields, what = mutate_tree(rng, fields, skip=("content_hash",))
            r["what"] = f"{src.name}: {what}"
            path.write_bytes(rehash_vxm(fields) if isinstance(fields, dict) else b"")
        _run_model(path, _config_backends(backend))
        return "ok", ""  # a .vxm's author decides its answers: only crashes are defects
    if family == "cache":
        return _cache_case(corpus, rng, name, backend, work, r)
    return _cli_case(corpus, rng, name, seed_model, work, r)


def _mutate_external(rng: random.Random, path: Path, folder: Path) -> str:
    import onnx

    model = onnx.load(path, load_external_data=False)
    ext = [t for t in model.graph.initializer if t.external_data]
    if not ext:  # a seed without external data: make one tensor external
        return "no external data"
    t = rng.choice(ext)
    entries = {e.key: e for e in t.external_data}
    op = rng.randrange(10)
    weights = folder / "weights.bin"
    what = ""
    if op == 0:
        loc = rng.choice(
            (
                "../x.bin",
                "/etc/passwd",
                "/dev/zero",
                "sub/../../x.bin",
                "",
                "weights.bin\x00x",
                "./weights.bin",
                "nope.bin",
                "C:/w.bin",
                ".",
            )
        )
        entries["location"].value = loc
        what = f"location {loc!r}"
    elif op == 1:
        key = rng.choice(("offset", "length"))
        val = rng.choice(("abc", "-1", "99999999999", "1e3", "", "0x10", " 4", "3"))
        if key in entries:
            entries[key].value = val
        else:
            t.external_data.add(key=key, value=val)
        what = f"{key} {val!r}"
    elif op == 2:
        data = weights.read_bytes()
        weights.write_bytes(data[: rng.randrange(len(data) + 1)])
        what = "weights truncated"
    elif op == 3:
        weights.unlink()
        os.mkfifo(weights)
        what = "weights a FIFO"
    elif op == 4:
        weights.unlink()
        os.symlink(rng.choice(("/dev/zero", "/etc/passwd", str(folder.parent / "x.bin"))), weights)
        (folder.parent / "x.bin").write_bytes(os.urandom(4096))
        what = "weights a symlink out"
    elif op == 5:
        weights.unlink()
        weights.mkdir()
        what = "weights a directory"
    elif op == 6:
        weights.write_bytes(b"")
        what = "weights empty"
    elif op == 7:
        t.dims[0] = rng.choice((0, 1 << 40, -3))
        what = "external tensor dims"
    elif op == 8:
        t.data_type = rng.choice((0, 8, 40, onnx.TensorProto.INT64))
        what = "external tensor dtype"
    else:
        sub = folder / "sub"
        sub.mkdir()
        os.symlink("..", sub / "up")
        entries["location"].value = "sub/up/../weights.bin"
        what = "location through a symlink"
    path.write_bytes(model.SerializeToString())
    return f"external {t.name}: {what}"


def _cache_case(corpus: Corpus, rng: random.Random, name: str, backend: str, work: Path,
                r: CaseResult) -> tuple[str, str]:  # fmt: skip
    import msgpack

    from vknn.runtime.user_cache import mac

    key = f"{name}.{backend}"
    cache = work / "c.vkcache"
    data = corpus.caches[key].read_bytes()
    remac = False
    op = rng.randrange(4)
    if op == 0:
        cache.write_bytes(mutate_bytes(rng, data))
        r["what"] = f"{key}: bytes"
    else:
        outer = msgpack.unpackb(data, raw=False)
        body = msgpack.unpackb(outer["payload"], raw=False, strict_map_key=False)
        body, what = mutate_tree(rng, body)
        payload = msgpack.packb(body, use_bin_type=True)
        remac = op >= 2  # as if this user's VKNN had written it: exercises decoding
        outer["payload"] = payload
        if remac:
            outer["mac"] = mac(payload).hex()
        cache.write_bytes(msgpack.packb(outer, use_bin_type=True))
        r["what"] = f"{key}: payload {what}" + (" (MAC recomputed)" if remac else "")
    out = _run_model(corpus.models[name], _config_backends(backend), str(cache))
    ref = corpus.reference[key]
    if not remac and not _same(out, ref):
        return "wrong", "a damaged cache changed the outputs"
    return "ok", ""


def _cli_case(corpus: Corpus, rng: random.Random, name: str, model: Path, work: Path,
              r: CaseResult) -> tuple[str, str]:  # fmt: skip
    from vknn.tools.cli import main as vknn_main
    from vknn.tools.vknn_opt import main as opt_main

    junk = ["", "x", "=", "a=", "=1", "x=1x", "x=-1", "x=1x3x8x8", "N=2", "N=-5", "N=abc",
            'a="1', "{", "}", ",,", "x=99999999999x99999999", "\x00", "é", "x=0"]  # fmt: skip
    target = rng.choice([str(model), str(work / "missing.onnx"), "/dev/null", str(work),
                         *[str(p) for p in corpus.vxm.values()]])  # fmt: skip
    tool = rng.choice(("compile", "run", "opt"))
    if tool == "opt":
        pipe = rng.choice(["", ",,", "infer-shapes{", "infer-shapes{dims=", "nosuch",
                           "const-fold,dce", "infer-shapes{dims=\"N=2\"}", "dce{x=1}"])  # fmt: skip
        argv = ["-p", pipe, target] if rng.random() < 0.7 else ["--pipeline", rng.choice(
            ("standard", "vkd", "nosuch", "")), target]  # fmt: skip
    else:
        argv = [tool, target]
        opts = {
            "compile": ["--pipeline", "--shapes", "--dims", "--target", "--backends",
                        "--disable-vk-ops", "--bucket", "-o"],
            "run": ["--input", "--shapes", "--dims", "--backends", "--seed", "--precision",
                    "--disable-vk-ops"],
        }[tool]  # fmt: skip
        for _ in range(rng.randrange(1, 4)):
            opt = rng.choice(opts)
            if opt == "-o":
                val = str(work / rng.choice(("o.vxm", "o.txt", "o.mlir", "nodir/o.vxm")))
            elif opt == "--input":
                val = rng.choice(("x=/missing.npy", f"x={work}", "x=/dev/null", "=",
                                  f"nosuch={work}/a.npy", f"x={work}/obj.npy"))  # fmt: skip
            elif opt == "--target":
                val = rng.choice(("generic", "lavapipe", "nvidia", "nosuch", "/etc/passwd", ""))
            elif opt == "--backends":
                val = rng.choice(("cpu", "vulkan,cpu", "gpu", ",", ""))
            elif opt == "--seed":
                val = rng.choice(("1", "-1", "x"))
            elif opt == "--precision":
                val = rng.choice(("high", "low", "bad"))
            else:
                val = rng.choice(junk)
            argv += [opt, val]
        if "--backends" not in argv:
            argv += ["--backends", "cpu"]
    import numpy as np

    np.save(work / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    r["what"] = f"{'vknn-opt' if tool == 'opt' else 'vknn'} {argv!r}"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            rc = (opt_main if tool == "opt" else vknn_main)(argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
    lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
    lines = [ln for ln in lines if "model cache" not in ln]
    if rc in (0, None):
        return "ok", ""
    if any("Traceback" in ln for ln in lines) or any("internal error" in ln for ln in lines):
        return "traceback", (lines[-1] if lines else "")[:300]
    errors = [ln for ln in lines if ": error:" in ln]
    if len(errors) == 1:
        return "error", errors[0][:300]
    return "traceback", f"exit {rc} without one error line: {lines[-3:]!r}"[:300]


# -- the driver ------------------------------------------------------------------------


def _child(corpus: Corpus, seed: int, index: int, work: Path, w: int, mem: int) -> None:
    os.setpgrp()
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    result = run_case(corpus, seed, index, work)
    os.write(w, json.dumps(result).encode())
    os._exit(0)


def run_cases(corpus: Corpus, seed: int, indices: list[int], jobs: int, timeout: float,
              mem: int, log: Any) -> list[CaseResult]:  # fmt: skip
    results: list[CaseResult] = []
    pending = list(reversed(indices))
    running: dict[int, tuple[int, int, float, Path, bytearray]] = {}  # pid -> (i, fd, t0, dir, buf)
    while pending or running:
        while pending and len(running) < jobs:
            i = pending.pop()
            work = Path(tempfile.mkdtemp(prefix=f"case{i}-", dir=corpus.root / "work"))
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                try:
                    _child(corpus, seed, i, work, w, mem)
                finally:
                    os._exit(3)
            os.close(w)
            running[pid] = (i, r, time.monotonic(), work, bytearray())
        fds = {v[1]: pid for pid, v in running.items()}
        ready, _, _ = select.select(list(fds), [], [], 0.2)
        for fd in ready:
            chunk = os.read(fd, 1 << 16)
            running[fds[fd]][4].extend(chunk)
        now = time.monotonic()
        for pid in list(running):
            i, fd, t0, work, buf = running[pid]
            done, status = os.waitpid(pid, os.WNOHANG)
            if done == 0 and now - t0 <= timeout:
                continue
            if done == 0:  # past the time limit: a hang
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                res = CaseResult(
                    index=i,
                    family="?",
                    backend="?",
                    what="",
                    outcome="hang",
                    detail=f"killed after {timeout:.0f} s",
                )
            else:
                while True:
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        break
                    buf.extend(chunk)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)  # anything the case left behind
                try:
                    res = CaseResult(json.loads(buf))
                except ValueError:
                    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
                    res = CaseResult(index=i, family="?", backend="?", what="", outcome="crash",
                                     detail=f"signal {sig}" if sig else
                                     f"exit {os.WEXITSTATUS(status)} without a report")  # fmt: skip
            if res["family"] == "?":  # say what the case was (rebuilt from its seed, cheaply)
                rng = random.Random(f"{seed}:{i}")
                res["family"] = rng.choices(list(FAMILIES), weights=list(FAMILIES.values()))[0]
            os.close(fd)
            shutil.rmtree(work, ignore_errors=True)
            del running[pid]
            results.append(res)
            log.write(json.dumps(res) + "\n")
            log.flush()
    return results


def summary(results: list[CaseResult]) -> str:
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for r in results:
        table[r["family"]][r["outcome"]] += 1
        table["total"][r["outcome"]] += 1
    cols = OUTCOMES
    lines = ["| family | cases | " + " | ".join(cols) + " |",
             "|---|---:|" + "---:|" * len(cols)]  # fmt: skip
    for fam in [*FAMILIES, "total"]:
        c = table.get(fam, Counter())
        lines.append(f"| {fam} | {sum(c.values())} | " + " | ".join(str(c[o]) for o in cols) + " |")
    return "\n".join(lines)


def build_corpus(backends: tuple[str, ...], root: Path | None = None) -> Corpus:
    root = root or Path(tempfile.mkdtemp(prefix="vknn-fuzz-"))
    (root / "work").mkdir(parents=True, exist_ok=True)
    return Corpus(root, backends)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start", type=int, default=0, help="first case index")
    p.add_argument("--backends", default="cpu", help="cpu and/or vulkan, comma-separated")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per case")
    p.add_argument("--mem-gb", type=float, default=4.0, help="address-space limit per case")
    p.add_argument("--only", type=int, help="run this one case in-process, verbosely")
    p.add_argument("--log", type=Path, help="append one JSON line per case here")
    args = p.parse_args(argv)
    backends = tuple(b.strip() for b in args.backends.split(",") if b.strip())
    os.environ.setdefault("VKNN_CACHE_DIR", tempfile.mkdtemp(prefix="vknn-fuzz-home-"))
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    t0 = time.time()
    corpus = build_corpus(backends)
    try:
        if args.only is not None:
            os.environ["FUZZ_VERBOSE"] = "1"
            work = Path(tempfile.mkdtemp(dir=corpus.root / "work"))
            res = run_case(corpus, args.seed, args.only, work)
            print(json.dumps(res, indent=1))
            return 0
        log = open(args.log, "a") if args.log else open(os.devnull, "w")  # noqa: SIM115
        with log:
            indices = list(range(args.start, args.start + args.cases))
            results = run_cases(corpus, args.seed, indices, args.jobs, args.timeout,
                                int(args.mem_gb * (1 << 30)), log)  # fmt: skip
    finally:
        shutil.rmtree(corpus.root, ignore_errors=True)
    print(f"fuzz_inputs: seed {args.seed}, cases {args.start}..{args.start + args.cases - 1}, "
          f"backends {','.join(backends)}, {time.time() - t0:.0f} s")  # fmt: skip
    print(summary(results))
    bad = [r for r in results if r["outcome"] in DEFECTS]
    for r in bad:
        print(f"  {r['outcome']:9s} case {r['index']} [{r['family']}] {r['what'][:120]} :: "
              f"{r['detail'][:200]}")  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
