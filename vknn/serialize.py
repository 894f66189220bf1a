"""A final `vkd` module -> the program the runtime replays (plain data).

`module_to_program(module)` walks what the lowering pipeline produced (after
`insert-barriers`) into the schema of `vknn.runtime.program` (ADR 0008): the
kernel table with each kernel's SPIR-V (compiled and post-processed here,
so the runtime needs no shader compiler), the weights in their device bytes
(deduplicated by content), the host arrays of CPU segments, and per bucket
(one per function) its inputs, outputs and segments: a Vulkan segment's
arenas, weight placements, uploads, commands (dispatch, copy, barrier, in
order, every number as the module says) and downloads; a CPU segment's ops
as `Step`s for the numpy oracle. Also the target requirements the program
actually relies on, so a module compiled for one device runs on any device
that satisfies them, and the per-node backend report.

The runtime decodes and validates this; it never sees xDSL.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import replace
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, FloatAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Operation, SSAValue

from vknn.dialects import vkd
from vknn.dialects.onnx import NAME_ATTR
from vknn.errors import VknnError
from vknn.ir.constants import to_numpy
from vknn.kernels.layouts import CONST_TRANSFORMS, pack
from vknn.kernels.shaders import kernel_spirv, register_variant
from vknn.kernels.spirv import fastmath_float_types
from vknn.runtime.codec import encode_array, encode_step
from vknn.runtime.program import FORMAT_VERSION
from vknn.runtime.target import Target
from vknn.runtime.vulkan.dtypes import to_device
from vknn.transforms import segment_steps
from vknn.transforms.target_option import target_from_attr
from vknn.transforms.vx_graph import node_name, nodes_of

STAGE_BITS = {"compute": 1, "transfer": 2, "host": 4}


class _Tables:
    def __init__(self) -> None:
        self.weights: list[bytes | dict[str, Any]] = []
        self._weights: dict[bytes, int] = {}
        self.arrays: list[dict[str, Any]] = []
        self._arrays: dict[str, int] = {}

    def weight(self, data: bytes | dict[str, Any]) -> int:
        if isinstance(data, dict):
            key = hashlib.sha256(data["splat"] + str(data["size"]).encode()).digest()
        else:
            key = hashlib.sha256(data).digest()
        if key not in self._weights:
            self._weights[key] = len(self.weights)
            self.weights.append(data)
        return self._weights[key]

    def array(self, a: np.ndarray) -> int:
        enc = encode_array(a)
        key = hashlib.sha256(repr(sorted((k, v) for k, v in enc.items())).encode()).hexdigest()
        if key not in self._arrays:
            self._arrays[key] = len(self.arrays)
            self.arrays.append(enc)
        return self._arrays[key]


def _storage_dtype(t: vkd.TensorBufferType) -> np.dtype:
    from vknn.ir.types import numpy_dtype

    return numpy_dtype(t.storage)


def _model_dtype(t: Any) -> str:
    from vknn.ir.types import numpy_dtype

    return numpy_dtype(t.element_type).name


def weight_data(op: vkd.WeightOp) -> bytes | dict[str, Any]:
    """A weight as the program stores it: its device bytes, or for a weight
    whose elements are all one value (a ConstantOfShape splat, zeroed
    counters) that element's bytes and the total size, which the runtime
    fills in (a model that generates its weights in-graph stays small)."""
    t = op.result.type
    assert isinstance(t, vkd.TensorBufferType)
    array = np.asarray(to_numpy(op.data))
    if array.size > 1 and t.layout.data is vkd.Layout.FLAT and _uniform(array):
        one = to_device(array.reshape(-1)[:1], _model_dtype(t), _storage_dtype(t), "weight")
        return {"splat": np.ascontiguousarray(one).tobytes(), "size": max(4, t.byte_size())}
    return weight_bytes(op)


def _uniform(a: np.ndarray) -> bool:
    if all(s == 0 for s in a.strides):
        return True
    if a.dtype.kind not in "biuf" or a.size < 1024:
        return False
    flat = a.reshape(-1)
    return bool(np.all(flat == flat[0]))


def weight_bytes(op: vkd.WeightOp) -> bytes:
    """The device bytes of a weight: its data through its transform, in its
    tensor type's storage and layout."""
    t = op.result.type
    assert isinstance(t, vkd.TensorBufferType)
    array = np.asarray(to_numpy(op.data))
    if op.transform is not None:
        name = op.transform.data
        if name not in CONST_TRANSFORMS:
            raise VknnError(f"vkd.weight: unknown transform {name!r}")
        array = CONST_TRANSFORMS[name](array)
    dtype = _model_dtype(t)
    if t.layout.data is vkd.Layout.NC4HW4:
        array = pack(array)
    data = to_device(np.asarray(array, dtype=array.dtype), dtype, _storage_dtype(t), "weight")
    raw = np.ascontiguousarray(data).tobytes()
    size = max(4, t.byte_size())
    return raw + bytes(max(0, size - len(raw)))


def _root(value: SSAValue) -> tuple[vkd.ArenaOp, int]:
    off = 0
    while isinstance(value.owner, vkd.SubviewOp):
        off += value.owner.offset.value.data
        value = value.owner.source
    owner = value.owner
    if not isinstance(owner, vkd.AllocOp | vkd.WeightOp) or owner.arena is None:
        raise VknnError("serialize: run plan-memory first (a tensor has no arena offset)")
    arena = owner.arena.owner
    assert isinstance(arena, vkd.ArenaOp)
    return arena, owner.offset.value.data + off  # type: ignore[union-attr]


def _nodes_of(op: Operation) -> list[str]:
    return nodes_of(op)


class _Program:
    def __init__(self, module: ModuleOp) -> None:
        self.module = module
        attr = module.attributes.get(vkd.TARGET_ATTR)
        self.target = target_from_attr(attr) if isinstance(attr, vkd.TargetAttr) else Target()
        self.tables = _Tables()
        self.kernels: list[dict[str, Any]] = []
        self.kernel_index: dict[str, int] = {}
        self.uses = {"fp16": False, "fastmath": False, "rte": False, "int64": False}
        self.limits = {"range": 0, "push": 0, "groups": [1, 1, 1], "local": 1}

    # -- kernels -----------------------------------------------------------

    def kernel(self, name: str) -> int:
        if name in self.kernel_index:
            return self.kernel_index[name]
        op = next(
            (o for o in self.module.ops if isinstance(o, vkd.KernelOp) and o.sym_name.data == name),
            None,
        )
        if op is None:
            raise VknnError(f"serialize: vkd.dispatch names an undeclared kernel @{name}")
        defines = {k: v.data for k, v in op.defines.data.items()}  # type: ignore[attr-defined]
        sources = {k: v.data for k, v in op.sources.data.items()}  # type: ignore[attr-defined]
        shader = op.shader.data
        if defines or sources:
            shader = register_variant(shader, defines, sources)
        variant = op.precision.data.value
        fast = op.fastmath is not None and self.target.has_float_controls2
        rte = variant == "fp16" and self.target.rte_fp16
        types = fastmath_float_types(self.target)
        spirv = kernel_spirv(shader, variant, fast, rte, types)
        self.uses["fp16"] |= variant == "fp16"
        self.uses["fastmath"] |= fast
        self.uses["rte"] |= rte
        self.uses["int64"] |= defines.get("VKNN_INT64") == "1"  # 64-bit arithmetic
        spec = []
        for i, w in zip(op.spec_ids.get_values(), op.spec.data, strict=True):
            if isinstance(w, FloatAttr):
                spec.append([int(i), "f", float(w.value.data)])
            else:
                assert isinstance(w, IntegerAttr)
                spec.append([int(i), "i", int(w.value.data)])
        local = list(op.local_size.get_values())
        self.limits["local"] = max(self.limits["local"], local[0] * local[1] * local[2])
        self.limits["push"] = max(self.limits["push"], op.push_size.value.data)
        self.kernel_index[name] = len(self.kernels)
        self.kernels.append(
            {
                "name": name,
                "shader": op.shader.data,
                "variant": variant,
                "local_size": local,
                "writes": [a.data.writes for a in op.bindings.data],
                "push_size": op.push_size.value.data,
                "spec": spec,
                "spirv": spirv,
            }
        )
        return self.kernel_index[name]

    # -- segments ------------------------------------------------------------

    def vulkan(self, seg: vkd.VulkanSegmentOp, host: dict[SSAValue, int]) -> dict[str, Any]:
        block = seg.body.block
        arenas: dict[vkd.ArenaOp, int] = {}
        out: dict[str, Any] = {
            "kind": "vulkan",
            "inputs": [host[v] for v in seg.inputs],
            "arenas": [],
            "weights": [],
            "uploads": [],
            "commands": [],
            "downloads": [],
        }
        args = {a: i for i, a in enumerate(block.args)}
        for op in block.ops:
            if isinstance(op, vkd.ArenaOp):
                arenas[op] = len(out["arenas"])
                out["arenas"].append({"memory": op.memory.data.value, "size": op.size.value.data})

        def where(value: SSAValue, offset: int = 0, size: int | None = None) -> list[int]:
            arena, off = _root(value)
            n = vkd.buffer_bytes(value) if size is None else size
            self.limits["range"] = max(self.limits["range"], n)
            return [arenas[arena], off + offset, n]

        def tensor(value: SSAValue) -> dict[str, Any]:
            t = value.type
            assert isinstance(t, vkd.TensorBufferType)
            return {
                "shape": list(t.get_shape()),
                "dtype": _model_dtype(t),
                "storage": _storage_dtype(t).name,
            }

        for op in block.ops:
            if isinstance(op, vkd.WeightOp):
                arena, off = _root(op.result)
                out["weights"].append([arenas[arena], off, self.tables.weight(weight_data(op))])
            elif isinstance(op, vkd.UploadOp):
                a, off, n = where(op.dest)
                out["uploads"].append(
                    {
                        "input": args[op.source],
                        "arena": a,
                        "offset": off,
                        "nbytes": n,
                        **tensor(op.dest),
                    }  # fmt: skip
                )
            elif isinstance(op, vkd.DownloadOp):
                a, off, n = where(op.source)
                out["downloads"].append(
                    {"arena": a, "offset": off, "nbytes": n, **tensor(op.source)}
                )
            elif isinstance(op, vkd.DispatchOp):
                k = self.kernel(op.kernel.root_reference.data)
                binds = [
                    where(v, o, n)
                    for v, (o, n) in zip(op.buffers, op.binding_ranges(), strict=True)
                ]
                groups = [int(g) for g in op.groups.get_values()]
                self.limits["groups"] = [
                    max(a, b) for a, b in zip(self.limits["groups"], groups, strict=True)
                ]
                push = struct.pack(
                    f"<{len(op.push.data)}I",
                    *[_word(w) for w in op.push.data],
                )
                nodes = op.attributes.get(NAME_ATTR)
                kind = op.attributes.get("vkd.kind")
                out["commands"].append(
                    ["dispatch", k, binds, push, groups, op.label.data,
                     nodes.data if isinstance(nodes, StringAttr) else "",
                     kind.data if isinstance(kind, StringAttr) else ""]
                )  # fmt: skip
            elif isinstance(op, vkd.CopyOp):
                n = op.size.value.data
                src = where(op.source, op.src_offset.value.data, n)[:2]
                dst = where(op.dest, op.dst_offset.value.data, n)[:2]
                out["commands"].append(["copy", src, dst, n])
            elif isinstance(op, vkd.BarrierOp):
                ranges = op.ranges.get_values()
                bufs = [
                    where(v, ranges[2 * i], ranges[2 * i + 1]) for i, v in enumerate(op.buffers)
                ]
                out["commands"].append(["barrier", _stages(op.src), _stages(op.dst), bufs])
        yield_op = block.last_op
        assert isinstance(yield_op, vkd.YieldOp)
        return out

    def cpu(self, seg: vkd.SegmentOp, host: dict[SSAValue, int]) -> dict[str, Any]:
        view = segment_steps.build(seg.body.block)
        steps = []
        for st in view.steps:
            attrs = {k: v for k, v in st.attrs.items() if k != segment_steps.OP_KEY}
            steps.append(encode_step(replace(st, attrs=attrs)))
        return {
            "kind": "cpu",
            "inputs": [host[v] for v in seg.inputs],
            "slots": len(view.values),
            "arg_slots": list(view.inputs),
            "out_slots": list(view.outputs),
            "constants": [[s, self.tables.array(a)] for s, a in view.constants.items()],
            "specs": [
                [s, view.specs[s].name, list(view.specs[s].shape), view.specs[s].dtype]
                for s in range(len(view.values))
            ],  # fmt: skip
            "steps": steps,
        }

    def bucket(self, func: FuncOp) -> dict[str, Any]:
        from vknn.ir.to_plan import tensor_spec

        block = func.body.block
        host: dict[SSAValue, int] = {}
        inputs = []
        for i, arg in enumerate(block.args):
            name = f"arg{i}"
            if func.arg_attrs is not None:
                d = func.arg_attrs.data[i]
                n = d.data.get(NAME_ATTR)  # type: ignore[attr-defined]
                if isinstance(n, StringAttr):
                    name = n.data
            host[arg] = len(host)
            spec = tensor_spec(name, arg.type)
            inputs.append(
                {"name": name, "shape": list(spec.shape), "dtype": spec.dtype, "value": host[arg]}
            )
        segments: list[dict[str, Any]] = []
        report: list[list[str]] = []
        outputs: list[dict[str, Any]] = []
        for op in block.ops:
            if isinstance(op, vkd.VulkanSegmentOp):
                segments.append(self.vulkan(op, host))
            elif isinstance(op, vkd.SegmentOp):
                segments.append(self.cpu(op, host))
            elif isinstance(op, ReturnOp):
                names_attr = func.attributes.get("onnx.output_names")
                names = (
                    [a.data for a in names_attr.data] if isinstance(names_attr, ArrayAttr) else []
                )  # type: ignore[attr-defined]
                for i, v in enumerate(op.operands):
                    spec = tensor_spec(names[i] if i < len(names) else f"output{i}", v.type)
                    if v not in host:  # a constant or input returned as it is
                        host[v] = len(host)
                        if (
                            isinstance(v.owner, Operation)
                            and v.owner.name in segment_steps.CONSTANT_OPS
                        ):
                            array = self.tables.array(segment_steps.constant_value(v.owner))
                            segments.append({"kind": "const", "value": host[v], "array": array})
                    outputs.append(
                        {
                            "name": spec.name,
                            "shape": list(spec.shape),
                            "dtype": spec.dtype,
                            "value": host[v],
                        }
                    )
                continue
            elif op.name in segment_steps.CONSTANT_OPS or op.name == "onnx.NoValue":
                continue
            else:
                raise VknnError(f"serialize: {op.name} outside a segment (run partition first)")
            segments[-1]["outputs"] = []
            for r in op.results:
                host[r] = len(host)
                segments[-1]["outputs"].append(host[r])
            report += _report(op)
        report += _not_run(func, report)
        return {
            "name": func.sym_name.data,
            "inputs": inputs,
            "outputs": outputs,
            "values": len(host),
            "segments": segments,
            "nodes": report,
        }

    def requirements(self) -> dict[str, Any]:
        """The target as far as the program relies on it (module docstring)."""
        t = self.target
        need = Target(
            name=t.name,
            api_version=t.api_version,
            max_compute_work_group_count=tuple(self.limits["groups"]),  # type: ignore[arg-type]
            max_compute_work_group_size=(self.limits["local"], 1, 1),
            max_compute_work_group_invocations=self.limits["local"],
            max_compute_shared_memory_size=min(t.max_compute_shared_memory_size, 16384),
            max_storage_buffer_range=self.limits["range"],
            max_push_constants_size=self.limits["push"],
            min_storage_buffer_offset_alignment=t.min_storage_buffer_offset_alignment,
            subgroup_size=t.subgroup_size,
            subgroup_arithmetic=t.subgroup_arithmetic,
            has_fp16_storage=self.uses["fp16"],
            has_int64=self.uses["int64"],
            has_float_controls2=self.uses["fastmath"],
            rte_fp16=self.uses["rte"],
            signed_zero_inf_nan_preserve_fp32=self.uses["fastmath"],
            signed_zero_inf_nan_preserve_fp16=self.uses["fastmath"]
            and t.signed_zero_inf_nan_preserve_fp16,
            memory=t.memory,
        )
        return need.to_dict()


def _word(w: Any) -> int:
    if isinstance(w, IntegerAttr):
        return int(w.value.data) & 0xFFFFFFFF
    assert isinstance(w, FloatAttr)
    return struct.unpack("<I", struct.pack("<f", w.value.data))[0]


def _stages(attr: ArrayAttr) -> int:
    bits = 0
    for s in attr.data:
        bits |= STAGE_BITS[s.data.value]  # type: ignore[attr-defined]
    return bits


def _report(seg: Operation) -> list[list[str]]:
    """[node, backend, reason] for each ONNX node a segment computes."""
    out: list[list[str]] = []
    if isinstance(seg, vkd.VulkanSegmentOp):
        seen: set[str] = set()
        for op in seg.body.block.ops:
            if isinstance(op, vkd.DispatchOp):
                a = op.attributes.get(NAME_ATTR)
                for n in a.data.split(",") if isinstance(a, StringAttr) else []:
                    if n and n not in seen:
                        seen.add(n)
                        out.append([n, "vulkan", ""])
        for n in seg.attributes.get("vkd.silent_nodes", ArrayAttr([])).data:  # type: ignore[union-attr]
            if n.data not in seen:
                seen.add(n.data)
                out.append([n.data, "vulkan", ""])
        return out
    for op in seg.regions[0].block.ops:
        if op.name in segment_steps.CONSTANT_OPS or isinstance(op, vkd.YieldOp):
            continue
        b = op.attributes.get(vkd.BACKEND_ATTR)
        r = op.attributes.get(vkd.REASON_ATTR)
        for n in _nodes_of(op):
            out.append([n, b.data if isinstance(b, StringAttr) else "cpu",
                        r.data if isinstance(r, StringAttr) else ""])  # fmt: skip
    return out


def _not_run(func: FuncOp, report: list[list[str]]) -> list[list[str]]:
    """[node, "folded" | "eliminated", ""] for each node of the ONNX graph
    (`onnx.nodes`, recorded at import) that no segment runs: computed at
    compile time into a constant, or removed (identities, dead code, views)."""
    graph = func.attributes.get("onnx.nodes")
    if not isinstance(graph, ArrayAttr):
        return []
    seen = {row[0] for row in report}
    constants = {node_name(op) for op in func.walk() if op.name in segment_steps.CONSTANT_OPS}
    out = []
    for a in graph.data:
        name = a.data  # type: ignore[attr-defined]
        if name not in seen:
            seen.add(name)
            out.append([name, "folded" if name in constants else "eliminated", ""])
    return out


def module_to_program(module: ModuleOp, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """The program of a fully lowered module (module docstring)."""
    p = _Program(module)
    funcs = [op for op in module.ops if isinstance(op, FuncOp)]
    if not funcs:
        raise VknnError("serialize: the module has no function")
    buckets = [p.bucket(f) for f in funcs]
    prec = module.attributes.get("vkd.precision")
    return {
        "format": FORMAT_VERSION,
        "target": p.requirements(),
        "compiled_for": p.target.to_dict(),
        "precision": prec.data if isinstance(prec, StringAttr) else "high",
        "kernels": p.kernels,
        "weights": p.tables.weights,
        "arrays": p.tables.arrays,
        "buckets": buckets,
        "metadata": dict(metadata or {}),
    }
