"""The compiled program the runtime replays: the schema of a serialized `vkd`
module (ADR 0008), decoded and validated in full before anything runs.

`vknn.serialize.module_to_program` writes it (from the compiler's final
`vkd` module); `.vxm` files and model caches carry it (msgpack). A program
is untrusted input when it comes from a file: `Program.decode` checks every
field's type, every index (kernel, arena, weight, array, host value, slot),
every byte range against its arena, every binding count and push size
against its kernel, every upload/download size against its shape and
dtype, and every CPU op against the numpy oracle, and raises
`ProgramError` naming the first problem; nothing here trusts a number it
did not check. SPIR-V is checked separately (`spirv_check.py`).

Layout of the data (all plain msgpack types):

    format, precision, target {Target fields}, compiled_for {Target fields}
    kernels   [{name, shader, variant, local_size [x,y,z], writes [bool],
                push_size, spec [[id, "i"|"f", value]], spirv bytes}]
    weights   [bytes]                    device bytes of constants and tables
    arrays    [encoded ndarray]          host constants of CPU segments
    buckets   [{name, inputs [{name, shape, dtype, value}], outputs [...],
                values, nodes [[node, backend, reason]], segments [...]}]
    vulkan segment  {kind "vulkan", inputs [value], outputs [value],
                     arenas [{memory, size}], weights [[arena, offset, weight]],
                     uploads [{input, arena, offset, nbytes, shape, dtype, storage}],
                     commands [...], downloads [{arena, offset, nbytes, shape, dtype, storage}]}
      commands: ["dispatch", kernel, [[arena, offset, size]...], push bytes,
                 [gx, gy, gz], label, nodes, kind]
                ["copy", [arena, offset], [arena, offset], size]
                ["barrier", src stage bits, dst stage bits, [[arena, offset, size]...]]
    cpu segment     {kind "cpu", inputs, outputs, slots, arg_slots, out_slots,
                     constants [[slot, array]], specs [[slot, name, shape, dtype]], steps}
    const segment   {kind "const", value, array}   (a constant returned as it is)

This module imports no xDSL and no compiler code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from vknn.errors import VknnError
from vknn.runtime.codec import PlanCodecError, decode_array, decode_step
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target

FORMAT_VERSION = 2
MEMORIES = ("device", "const", "staging", "readback")
STAGE_COMPUTE, STAGE_TRANSFER, STAGE_HOST = 1, 2, 4
DTYPES = (
    "float32", "float16", "float64", "int8", "uint8", "int16", "uint16", "int32", "uint32",
    "int64", "uint64", "bool",
)  # fmt: skip
STORAGE_DTYPES = ("float32", "float16", "int32", "int64")
MAX_VALUES = 1 << 24


class ProgramError(VknnError):
    """A compiled program that is malformed or inconsistent."""


@dataclass(frozen=True)
class Kernel:
    name: str
    shader: str
    variant: str
    local_size: tuple[int, int, int]
    writes: tuple[bool, ...]
    push_size: int
    spec: tuple[tuple[int, str, int | float], ...]
    spirv: bytes


@dataclass(frozen=True)
class Range:
    arena: int
    offset: int
    size: int


@dataclass(frozen=True)
class Transfer:
    """An upload (host -> device) or download (device -> host) of one tensor."""

    input: int
    """Upload: the index of the segment input it writes (-1 for downloads)."""
    arena: int
    offset: int
    nbytes: int
    shape: tuple[int, ...]
    dtype: str
    storage: str


@dataclass(frozen=True)
class DispatchCmd:
    kernel: int
    bindings: tuple[Range, ...]
    push: bytes
    groups: tuple[int, int, int]
    label: str
    nodes: str
    kind: str


@dataclass(frozen=True)
class CopyCmd:
    src: Range
    dst: Range


@dataclass(frozen=True)
class BarrierCmd:
    src: int
    dst: int
    buffers: tuple[Range, ...]


Command = DispatchCmd | CopyCmd | BarrierCmd


@dataclass(frozen=True)
class VulkanSegment:
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    arenas: tuple[tuple[str, int], ...]
    weights: tuple[tuple[int, int, int], ...]
    uploads: tuple[Transfer, ...]
    commands: tuple[Command, ...]
    downloads: tuple[Transfer, ...]

    @property
    def dispatches(self) -> int:
        return sum(isinstance(c, DispatchCmd) for c in self.commands)


@dataclass(frozen=True)
class CpuSegment:
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    slots: int
    arg_slots: tuple[int, ...]
    out_slots: tuple[int, ...]
    constants: tuple[tuple[int, int], ...]
    specs: dict[int, TensorSpec]
    steps: tuple[Step, ...]


@dataclass(frozen=True)
class ConstSegment:
    value: int
    array: int
    inputs: tuple[int, ...] = ()
    outputs: tuple[int, ...] = ()


Segment = VulkanSegment | CpuSegment | ConstSegment


@dataclass(frozen=True)
class IO:
    name: str
    shape: tuple[int, ...]
    dtype: str
    value: int


@dataclass(frozen=True)
class Bucket:
    name: str
    inputs: tuple[IO, ...]
    outputs: tuple[IO, ...]
    values: int
    segments: tuple[Segment, ...]
    nodes: tuple[tuple[str, str, str], ...]

    @property
    def key(self) -> tuple[tuple[int, ...], ...]:
        return tuple(io.shape for io in self.inputs)


@dataclass(frozen=True)
class Program:
    precision: str
    target: Target
    compiled_for: Target
    kernels: tuple[Kernel, ...]
    weights: tuple[Weight, ...]
    arrays: tuple[np.ndarray, ...]
    buckets: tuple[Bucket, ...]
    metadata: dict[str, Any]

    @property
    def dispatches(self) -> int:
        """Dispatches of the first bucket (what `vknn run --profile` counts)."""
        return sum(s.dispatches for s in self.buckets[0].segments if isinstance(s, VulkanSegment))

    @classmethod
    def decode(cls, d: Any) -> Program:
        """A validated program from its plain data (module docstring)."""
        try:
            return _decode(d)
        except ProgramError:
            raise
        except (
            PlanCodecError, ValueError, TypeError, KeyError, IndexError, OverflowError,
            AttributeError,
        ) as e:  # fmt: skip
            raise ProgramError(f"malformed program ({type(e).__name__}: {e})") from None


# -- checking helpers ----------------------------------------------------------


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise ProgramError(what)


def _map(d: Any, where: str, keys: tuple[str, ...]) -> dict[str, Any]:
    _need(isinstance(d, dict), f"{where} is not a map")
    missing = [k for k in keys if k not in d]
    _need(not missing, f"{where} lacks {', '.join(missing)}")
    return d


def _int(v: Any, where: str, lo: int = 0, hi: int = 1 << 62) -> int:
    _need(isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi,
          f"{where} must be an integer in [{lo}, {hi}], got {v!r}")  # fmt: skip
    return int(v)


def _list(v: Any, where: str, limit: int = 1 << 24) -> list[Any]:
    _need(isinstance(v, list | tuple) and len(v) <= limit, f"{where} must be a list")
    return list(v)


def _str(v: Any, where: str) -> str:
    _need(isinstance(v, str) and len(v) < 1 << 16, f"{where} must be a string")
    return v


def _shape(v: Any, where: str) -> tuple[int, ...]:
    dims = tuple(_int(x, f"{where} dim", 0, 1 << 40) for x in _list(v, where, 16))
    _need(math.prod(dims) < 1 << 40, f"{where} has too many elements")
    return dims


def _dtype(v: Any, where: str, allowed: tuple[str, ...] = DTYPES) -> str:
    _need(v in allowed, f"{where}: unknown dtype {v!r}")
    return str(v)


# -- decoding --------------------------------------------------------------------


def _decode(d: Any) -> Program:
    d = _map(d, "program", ("format", "precision", "target", "kernels", "weights", "arrays",
                            "buckets"))  # fmt: skip
    _need(d["format"] == FORMAT_VERSION,
          f"program format {d['format']!r} (this VKNN reads {FORMAT_VERSION})")  # fmt: skip
    precision = _str(d["precision"], "precision")
    _need(precision in ("high", "normal", "low"), f"unknown precision {precision!r}")
    target = Target.from_dict(d["target"])
    compiled_for = Target.from_dict(d.get("compiled_for", d["target"]))
    kernels = tuple(_kernel(k, i) for i, k in enumerate(_list(d["kernels"], "kernels", 1 << 16)))
    check_kernel_limits(kernels, target)
    weights = tuple(_weight(w, i) for i, w in enumerate(_list(d["weights"], "weights")))
    arrays = tuple(_array(a, i) for i, a in enumerate(_list(d["arrays"], "arrays")))
    buckets = tuple(
        _bucket(b, i, kernels, weights, arrays)
        for i, b in enumerate(_list(d["buckets"], "buckets", 4096))
    )
    _need(bool(buckets), "a program needs at least one bucket")
    check_dispatch_limits(buckets, target)
    keys = [b.key for b in buckets]
    _need(len(set(keys)) == len(keys), "two buckets serve the same input shapes")
    first = buckets[0]
    for b in buckets[1:]:
        _need([i.name for i in b.inputs] == [i.name for i in first.inputs]
              and [o.name for o in b.outputs] == [o.name for o in first.outputs],
              f"bucket {b.name} has other inputs or outputs than {first.name}")  # fmt: skip
    meta = _metadata(d.get("metadata") or {}, first)
    return Program(precision, target, compiled_for, kernels, weights, arrays, buckets, meta)


def _metadata(meta: Any, first: Bucket) -> dict[str, Any]:
    """The declared inputs and outputs a session reads (names, dims, dtypes)
    must be well formed and name the buckets' tensors with their dtypes."""
    _need(isinstance(meta, dict), "metadata is not a map")
    for role, ios in (("inputs", first.inputs), ("outputs", first.outputs)):
        if role not in meta:
            continue
        entries = _list(meta[role], f"metadata {role}", 1 << 16)
        _need(len(entries) == len(ios), f"metadata {role}: {len(entries)} for {len(ios)} tensors")
        for e, io in zip(entries, ios, strict=True):
            w = f"metadata {role} entry"
            e = _map(e, w, ("name", "dims", "dtype"))
            _need(e["name"] == io.name, f"{w} {e['name']!r} is not the program's {io.name!r}")
            _dtype(e["dtype"], f"{w} {io.name!r}")
            # Inputs are checked against the declared dtype before upload.
            _need(role == "outputs" or e["dtype"] == io.dtype,
                  f"{w} {io.name!r}: dtype {e['dtype']!r}, the program reads "
                  f"{io.dtype!r}")  # fmt: skip
            if e["dims"] is not None:
                for x in _list(e["dims"], f"{w} dims", 16):
                    _need(x is None or isinstance(x, str) and len(x) < 256
                          or isinstance(x, int) and not isinstance(x, bool) and 0 <= x < 1 << 40,
                          f"{w} {io.name!r}: bad dim {x!r}")  # fmt: skip
    return meta


def _kernel(k: Any, i: int) -> Kernel:
    w = f"kernel {i}"
    k = _map(k, w, ("name", "shader", "variant", "local_size", "writes", "push_size", "spec",
                    "spirv"))  # fmt: skip
    local = tuple(_int(x, f"{w} local_size", 1, 1 << 16) for x in _list(k["local_size"], w, 3))
    _need(len(local) == 3, f"{w}: local_size has 3 values")
    writes = tuple(bool(x) for x in _list(k["writes"], w, 64))
    _need(all(isinstance(x, bool) for x in k["writes"]) and writes, f"{w}: writes are bools")
    push = _int(k["push_size"], f"{w} push_size", 0, 4096)
    _need(push % 4 == 0, f"{w}: push size {push} is not a multiple of 4")
    spec = []
    for s in _list(k["spec"], f"{w} spec", 64):
        s = _list(s, f"{w} spec entry", 3)
        _need(len(s) == 3 and s[1] in ("i", "f"), f"{w}: a spec entry is [id, i|f, value]")
        cid = _int(s[0], f"{w} spec id", 1, 1 << 20)
        if s[1] == "i":
            val: int | float = _int(s[2], f"{w} spec value", -(1 << 31), (1 << 32) - 1)
        else:
            _need(isinstance(s[2], float | int), f"{w}: spec value")
            val = float(s[2])
        spec.append((cid, s[1], val))
    spirv = k["spirv"]
    _need(isinstance(spirv, bytes) and len(spirv) % 4 == 0 and len(spirv) >= 20,
          f"{w}: SPIR-V is not a word stream")  # fmt: skip
    _need(spirv[:4] == b"\x03\x02\x23\x07", f"{w}: SPIR-V has no magic number")
    variant = _dtype(k["variant"], w, ("fp32", "fp16"))
    name, shader = _str(k["name"], w), _str(k["shader"], w)
    return Kernel(name, shader, variant, local, writes, push, tuple(spec), spirv)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Splat:
    """A weight whose every element is one value: `size` bytes of `element` repeated."""

    element: bytes
    size: int

    def __len__(self) -> int:
        return self.size


Weight = bytes | Splat


def _weight(w: Any, i: int) -> Weight:
    if isinstance(w, dict):
        _map(w, f"weight {i}", ("splat", "size"))
        e = w["splat"]
        size = _int(w["size"], f"weight {i} size", 1, 1 << 40)
        _need(isinstance(e, bytes) and e and size % len(e) == 0,
              f"weight {i}: a splat's element must divide its size")  # fmt: skip
        return Splat(e, size)
    _need(isinstance(w, bytes), f"weight {i} is not bytes")
    return w


def _array(a: Any, i: int) -> np.ndarray:
    _map(a, f"array {i}", ())
    return decode_array(a)


def _range(v: Any, where: str, arenas: tuple[tuple[str, int], ...]) -> Range:
    v = _list(v, where, 3)
    _need(len(v) == 3, f"{where}: a range is [arena, offset, size]")
    a = _int(v[0], f"{where} arena", 0, len(arenas) - 1)
    off = _int(v[1], f"{where} offset")
    size = _int(v[2], f"{where} size", 1)
    _need(off + size <= arenas[a][1],
          f"{where}: bytes [{off}, {off + size}) are past arena {a}'s {arenas[a][1]}")  # fmt: skip
    return Range(a, off, size)


def _transfer(t: Any, where: str, arenas: tuple[tuple[str, int], ...], n_inputs: int) -> Transfer:
    t = _map(t, where, ("arena", "offset", "nbytes", "shape", "dtype", "storage"))
    shape = _shape(t["shape"], f"{where} shape")
    dtype = _dtype(t["dtype"], where)
    storage = _dtype(t["storage"], where, STORAGE_DTYPES)
    r = _range([t["arena"], t["offset"], t["nbytes"]], where, arenas)
    need = max(4, np.dtype(storage).itemsize * math.prod(shape))
    _need(r.size == need or (r.size > need and math.prod(shape) == 0),
          f"{where}: {r.size} bytes for a {storage} tensor of shape {list(shape)}")  # fmt: skip
    _need(arenas[r.arena][0] in ("device", "staging", "readback"),
          f"{where}: the host cannot map a {arenas[r.arena][0]} arena")  # fmt: skip
    inp = -1
    if "input" in t:
        inp = _int(t["input"], f"{where} input", 0, max(0, n_inputs - 1))
    return Transfer(inp, r.arena, r.offset, r.size, shape, dtype, storage)


def _vulkan(s: dict[str, Any], w: str, kernels: tuple[Kernel, ...],
            weights: tuple[bytes, ...]) -> VulkanSegment:  # fmt: skip
    s = _map(s, w, ("inputs", "outputs", "arenas", "weights", "uploads", "commands", "downloads"))
    arenas = []
    for j, a in enumerate(_list(s["arenas"], f"{w} arenas", 16)):
        a = _map(a, f"{w} arena {j}", ("memory", "size"))
        _need(a["memory"] in MEMORIES, f"{w} arena {j}: unknown memory {a['memory']!r}")
        arenas.append((str(a["memory"]), _int(a["size"], f"{w} arena {j} size", 0, 1 << 44)))
    arenas_t = tuple(arenas)
    placed = []
    for j, p in enumerate(_list(s["weights"], f"{w} weights")):
        p = _list(p, f"{w} weight {j}", 3)
        _need(len(p) == 3, f"{w} weight {j}: [arena, offset, weight]")
        wi = _int(p[2], f"{w} weight {j} index", 0, len(weights) - 1)
        r = _range([p[0], p[1], max(1, len(weights[wi]))], f"{w} weight {j}", arenas_t)
        _need(arenas_t[r.arena][0] == "const", f"{w} weight {j}: weights live in a const arena")
        placed.append((r.arena, r.offset, wi))
    inputs = tuple(_int(v, f"{w} input", 0, MAX_VALUES) for v in _list(s["inputs"], w))
    outputs = tuple(_int(v, f"{w} output", 0, MAX_VALUES) for v in _list(s["outputs"], w))
    uploads = tuple(
        _transfer(u, f"{w} upload {j}", arenas_t, len(inputs))
        for j, u in enumerate(_list(s["uploads"], w))
    )
    downloads = tuple(
        _transfer(u, f"{w} download {j}", arenas_t, 0)
        for j, u in enumerate(_list(s["downloads"], w))
    )
    _need(
        len(downloads) == len(outputs),
        f"{w}: {len(downloads)} downloads for {len(outputs)} outputs",
    )
    commands: list[Command] = []
    for j, c in enumerate(_list(s["commands"], f"{w} commands")):
        cw = f"{w} command {j}"
        c = _list(c, cw, 8)
        _need(bool(c) and c[0] in ("dispatch", "copy", "barrier"), f"{cw}: unknown command")
        if c[0] == "dispatch":
            _need(len(c) == 8, f"{cw}: a dispatch has 8 fields")
            k = _int(c[1], f"{cw} kernel", 0, len(kernels) - 1)
            binds = tuple(_range(b, f"{cw} binding", arenas_t) for b in _list(c[2], cw, 64))
            _need(len(binds) == len(kernels[k].writes),
                  f"{cw}: {len(binds)} bindings for kernel {kernels[k].name} with "
                  f"{len(kernels[k].writes)}")  # fmt: skip
            _need(isinstance(c[3], bytes) and len(c[3]) == kernels[k].push_size,
                  f"{cw}: push constants are not {kernels[k].push_size} bytes")  # fmt: skip
            groups = tuple(_int(g, f"{cw} groups", 1, (1 << 31) - 1) for g in _list(c[4], cw, 3))
            _need(len(groups) == 3, f"{cw}: 3 group counts")
            for b, writes in zip(binds, kernels[k].writes, strict=True):
                _need(not (writes and arenas_t[b.arena][0] == "staging"),
                      f"{cw}: a kernel writes a staging arena")  # fmt: skip
            label, nodes, kind = _str(c[5], cw), _str(c[6], cw), _str(c[7], cw)
            commands.append(DispatchCmd(k, binds, c[3], groups, label, nodes, kind))  # type: ignore[arg-type]
        elif c[0] == "copy":
            _need(len(c) == 4, f"{cw}: a copy has 4 fields")
            size = _int(c[3], f"{cw} size", 1)
            src = _list(c[1], cw, 2)
            dst = _list(c[2], cw, 2)
            _need(len(src) == 2 and len(dst) == 2, f"{cw}: copy ends are [arena, offset]")
            commands.append(CopyCmd(_range([*src, size], cw, arenas_t),
                                    _range([*dst, size], cw, arenas_t)))  # fmt: skip
        else:
            _need(len(c) == 4, f"{cw}: a barrier has 4 fields")
            src = _int(c[1], f"{cw} src", 1, 7)
            dst = _int(c[2], f"{cw} dst", 1, 7)
            bufs = tuple(_range(b, f"{cw} buffer", arenas_t) for b in _list(c[3], cw, 1 << 16))
            commands.append(BarrierCmd(src, dst, bufs))
    seg = VulkanSegment(inputs, outputs, arenas_t, tuple(placed), uploads, tuple(commands),
                        downloads)  # fmt: skip
    check_barriers(seg, kernels, w)
    return seg


def _cpu(s: dict[str, Any], w: str, arrays: tuple[np.ndarray, ...]) -> CpuSegment:
    from vknn.oracle import has_kernel

    s = _map(s, w, ("inputs", "outputs", "slots", "arg_slots", "out_slots", "constants",
                    "specs", "steps"))  # fmt: skip
    slots = _int(s["slots"], f"{w} slots", 0, MAX_VALUES)
    hi = max(0, slots - 1)
    arg_slots = tuple(_int(v, f"{w} arg slot", 0, hi) for v in _list(s["arg_slots"], w))
    out_slots = tuple(_int(v, f"{w} out slot", 0, hi) for v in _list(s["out_slots"], w))
    inputs = tuple(_int(v, f"{w} input", 0, MAX_VALUES) for v in _list(s["inputs"], w))
    outputs = tuple(_int(v, f"{w} output", 0, MAX_VALUES) for v in _list(s["outputs"], w))
    _need(len(inputs) == len(arg_slots) and len(outputs) == len(out_slots),
          f"{w}: inputs/outputs and their slots differ in count")  # fmt: skip
    constants = []
    for c in _list(s["constants"], w):
        c = _list(c, w, 2)
        _need(len(c) == 2, f"{w}: a constant is [slot, array]")
        constants.append((_int(c[0], f"{w} constant slot", 0, hi),
                          _int(c[1], f"{w} constant array", 0, len(arrays) - 1)))  # fmt: skip
    specs = {}
    for e in _list(s["specs"], w):
        e = _list(e, w, 4)
        _need(len(e) == 4, f"{w}: a spec is [slot, name, shape, dtype]")
        slot = _int(e[0], f"{w} spec slot", 0, hi)
        specs[slot] = TensorSpec(_str(e[1], w), _shape(e[2], f"{w} spec"), _str(e[3], w))
    steps = []
    for j, st in enumerate(_list(s["steps"], w)):
        step = _step(st, f"{w} op {j}")
        where = f"{w} op {j} ({step.op})"
        _need(step.op.startswith("onnx.") or has_kernel(step.op),
              f"{where}: the CPU backend has no kernel for it")  # fmt: skip
        for v in (*step.inputs, *step.outputs):
            _need(isinstance(v, int) and -1 <= v <= hi, f"{where}: slot {v!r} out of range")
        _need(len(step.outputs) == len(step.out_specs), f"{where}: outputs and specs differ")
        check_step_fields(step, where)
        steps.append(step)
    return CpuSegment(inputs, outputs, slots, arg_slots, out_slots, tuple(constants), specs,
                      tuple(steps))  # fmt: skip


def _step(st: Any, where: str) -> Step:
    """A CPU op with fields of the types the oracle relies on (its region's too)."""
    step = decode_step(_map(st, where, ()))
    for f in ("op", "node", "backend", "reason"):
        _str(getattr(step, f), f"{where} {f}")
    _need(isinstance(step.attrs, dict), f"{where}: attrs are not a map")
    _need(all(isinstance(t, TensorSpec) for t in step.out_specs), f"{where}: bad output specs")
    if step.region is not None:
        for k, r in enumerate(_list(st["region"], f"{where} region")):
            _step(r, f"{where} region op {k}")
    return step


def _io(v: Any, where: str, values: int) -> IO:
    v = _map(v, where, ("name", "shape", "dtype", "value"))
    return IO(_str(v["name"], where), _shape(v["shape"], where), _dtype(v["dtype"], where),
              _int(v["value"], f"{where} value", 0, max(0, values - 1)))  # fmt: skip


def _bucket(b: Any, i: int, kernels: tuple[Kernel, ...], weights: tuple[bytes, ...],
            arrays: tuple[np.ndarray, ...]) -> Bucket:  # fmt: skip
    w = f"bucket {i}"
    b = _map(b, w, ("name", "inputs", "outputs", "values", "segments", "nodes"))
    values = _int(b["values"], f"{w} values", 0, MAX_VALUES)
    inputs = tuple(_io(v, f"{w} input", values) for v in _list(b["inputs"], w))
    outputs = tuple(_io(v, f"{w} output", values) for v in _list(b["outputs"], w))
    segments: list[Segment] = []
    defined = {io.value for io in inputs}
    for j, s in enumerate(_list(b["segments"], w)):
        sw = f"{w} segment {j}"
        kind = _map(s, sw, ("kind",))["kind"]
        if kind == "vulkan":
            seg: Segment = _vulkan(s, sw, kernels, weights)
        elif kind == "cpu":
            seg = _cpu(s, sw, arrays)
        elif kind == "const":
            s = _map(s, sw, ("value", "array"))
            seg = ConstSegment(_int(s["value"], sw, 0, values - 1),
                               _int(s["array"], sw, 0, len(arrays) - 1))  # fmt: skip
            defined.add(seg.value)
            segments.append(seg)
            continue
        else:
            raise ProgramError(f"{sw}: unknown segment kind {kind!r}")
        for v in seg.inputs:
            _need(v in defined, f"{sw}: reads host value {v} before anything defines it")
        for v in seg.outputs:
            _need(v < values and v not in defined, f"{sw}: defines host value {v} twice")
            defined.add(v)
        segments.append(seg)
    for io in outputs:
        _need(io.value in defined, f"{w}: output {io.name} is never computed")
    nodes = []
    for n in _list(b["nodes"], w):
        n = _list(n, w, 3)
        _need(len(n) == 3 and all(isinstance(x, str) for x in n), f"{w}: a node entry is 3 strings")
        nodes.append((n[0], n[1], n[2]))
    return Bucket(_str(b["name"], w), inputs, outputs, values, tuple(segments), tuple(nodes))


def check_step_fields(step: Step, where: str, depth: int = 0) -> None:
    """The types of a CPU step's fields, and of its region's steps (a fused
    body, whose slots are local to it): strings, slot ints, tensor specs of
    known dtypes and bounded shapes, a map of attributes."""
    _need(depth <= 4, f"{where}: regions nested too deeply")
    for f in ("op", "node", "backend", "reason"):
        _str(getattr(step, f), f"{where} {f}")
    for v in (*step.inputs, *step.outputs):
        _int(v, f"{where} slot", -1, MAX_VALUES)
    _list(step.out_specs, f"{where} out_specs", 1 << 12)
    for spec in step.out_specs:
        _need(isinstance(spec, TensorSpec), f"{where}: an output spec is not a tensor spec")
        _str(spec.name, f"{where} spec name")
        _shape(list(spec.shape), f"{where} spec shape")
        _dtype(spec.dtype, f"{where} spec")
    _need(isinstance(step.attrs, dict), f"{where}: attributes are not a map")
    if step.region is not None:
        for j, sub in enumerate(_list(step.region, f"{where} region", 1 << 12)):
            _need(isinstance(sub, Step), f"{where}: region entry {j} is not a step")
            check_step_fields(sub, f"{where} region op {j}", depth + 1)


# -- synchronization -------------------------------------------------------------

_Access = tuple[int, int, int, int, int]
"""(arena, first byte, end byte, stage bit, pass) of one read or write."""


def _accesses(c: Command, kernels: tuple[Kernel, ...], p: int) -> tuple[list[_Access], ...]:
    if isinstance(c, CopyCmd):
        src, dst = c.src, c.dst
        return ([(src.arena, src.offset, src.offset + src.size, STAGE_TRANSFER, p)],
                [(dst.arena, dst.offset, dst.offset + dst.size, STAGE_TRANSFER, p)])  # fmt: skip
    assert isinstance(c, DispatchCmd)
    reads, writes = [], []
    for b, w in zip(c.bindings, kernels[c.kernel].writes, strict=True):
        (writes if w else reads).append((b.arena, b.offset, b.offset + b.size, STAGE_COMPUTE, p))
    return reads, writes


def _overlap(a: _Access, pending: list[_Access]) -> bool:
    return any(q[0] == a[0] and q[1] < a[2] and a[1] < q[2] and q[4] != a[4] for q in pending)


def _covered(a: _Access, c: BarrierCmd) -> bool:
    """Whether barrier `c` makes write `a` available (a global barrier, or a
    listed range holding all of it)."""
    return not c.buffers or any(
        r.arena == a[0] and r.offset <= a[1] and a[2] <= r.offset + r.size for r in c.buffers
    )


def check_barriers(seg: VulkanSegment, kernels: tuple[Kernel, ...], where: str) -> None:
    """ProgramError unless the segment's barriers order every hazard, as
    `insert-barriers` placed them: a command that reads or writes bytes an
    earlier command wrote, or writes bytes one read, needs a barrier between
    them from the earlier command's stage, to the compute and transfer
    stages, listing the written range (or none: a global barrier); device
    writes a download reads need a barrier to the host stage. Without them
    the device may overlap the commands (races, wrong results). Consecutive
    dispatches with the same label and nodes are one op's pass (disjoint
    bytes by construction) and are not ordered against each other."""
    writes: list[_Access] = []  # since the barrier that last covered them
    reads: list[_Access] = []
    host: list[_Access] = []  # device writes not yet made visible to the host
    pass_id, last = 0, None
    for j, c in enumerate(seg.commands):
        if isinstance(c, BarrierCmd):
            if c.dst & (STAGE_COMPUTE | STAGE_TRANSFER) == STAGE_COMPUTE | STAGE_TRANSFER:
                writes = [a for a in writes if not (a[3] & c.src and _covered(a, c))]
                reads = [a for a in reads if not a[3] & c.src]
            if c.dst & STAGE_HOST:
                host = [a for a in host if not (a[3] & c.src and _covered(a, c))]
            last = None
            continue
        key = (c.label, c.nodes) if isinstance(c, DispatchCmd) else None
        if key is None or key != last:
            pass_id += 1
        last = key
        op_reads, op_writes = _accesses(c, kernels, pass_id)
        hazard = any(_overlap(a, writes) for a in (*op_reads, *op_writes)) or any(
            _overlap(a, reads) for a in op_writes
        )
        _need(not hazard, f"{where} command {j}: no barrier orders it after an earlier "
              "command that touches the same bytes")  # fmt: skip
        writes += op_writes
        reads += op_reads
        host += op_writes
    for d in seg.downloads:
        a = (d.arena, d.offset, d.offset + d.nbytes, STAGE_HOST, -1)
        _need(not _overlap(a, host), f"{where}: a download reads device writes that no "
              "barrier made visible to the host")  # fmt: skip


# -- device limits and specialization constants ------------------------------------

SPEC_INT_MAX = 1 << 16
"""The largest integer specialization constant a kernel takes. VKNN's kernels
use them for tile sizes, kinds, ranks and bit widths, all small and never
negative; a tile of -1 or 2^31 makes the driver size shared memory or loops
from garbage (lavapipe crashes), so anything else is refused."""


def check_kernel_limits(kernels: tuple[Kernel, ...], target: Target) -> None:
    """Each kernel's workgroup size and push constants within the limits of
    the program's target (which the device is checked against), and its
    specialization constants within what kernels take (SPEC_INT_MAX; that
    each is declared by the module with the same kind is `spirv_check`'s)."""
    for i, k in enumerate(kernels):
        w = f"kernel {i} ({k.name})"
        for axis, (n, lim) in enumerate(zip(k.local_size, target.max_compute_work_group_size,
                                            strict=True)):  # fmt: skip
            _need(n <= lim, f"{w}: workgroup size {n} on axis {axis} is over the limit {lim}")
        total = math.prod(k.local_size)
        lim = target.max_compute_work_group_invocations
        _need(total <= lim, f"{w}: {total} invocations per workgroup is over the limit {lim}")
        _need(k.push_size <= target.max_push_constants_size,
              f"{w}: {k.push_size} bytes of push constants is over the limit "
              f"{target.max_push_constants_size}")  # fmt: skip
        ids = [cid for cid, _, _ in k.spec]
        _need(len(set(ids)) == len(ids), f"{w}: a specialization constant is given twice")
        for cid, kind, value in k.spec:
            if kind == "i":
                _need(0 <= int(value) <= SPEC_INT_MAX,
                      f"{w}: specialization constant {cid} = {value} is outside "
                      f"[0, {SPEC_INT_MAX}]")  # fmt: skip
            else:
                _need(math.isfinite(float(value)),
                      f"{w}: specialization constant {cid} = {value} is not finite")  # fmt: skip


def check_dispatch_limits(buckets: tuple[Bucket, ...], target: Target) -> None:
    """Group counts and binding sizes within the target's limits."""
    for b in buckets:
        for j, seg in enumerate(b.segments):
            if not isinstance(seg, VulkanSegment):
                continue
            for n, c in enumerate(seg.commands):
                if not isinstance(c, DispatchCmd):
                    continue
                w = f"bucket {b.name} segment {j} command {n}"
                for g, lim in zip(c.groups, target.max_compute_work_group_count, strict=True):
                    _need(g <= lim, f"{w}: {g} workgroups is over the limit {lim}")
                for r in c.bindings:
                    _need(r.size <= target.max_storage_buffer_range,
                          f"{w}: a binding of {r.size} bytes is over maxStorageBufferRange "
                          f"{target.max_storage_buffer_range}")  # fmt: skip
