"""CPU kernels of If, Loop and Scan: their bodies run node by node on our own
`onnx.*` kernels (no onnx.reference). A body is read from the step's one-node
ONNX model; element types of body values come from ONNX shape inference.
The compile-time check refuses a body holding an op with no kernel of ours,
and sequence-valued loops (tensors only)."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from vknn.errors import VknnError
from vknn.oracle.registry import check, kernel_for, refusal, register
from vknn.runtime.plan import NO_VALUE, Step, TensorSpec

Array = np.ndarray
_FLOW = ("If", "Loop", "Scan")


@cache
def _parse(blob: bytes) -> tuple[Any, dict[str, str], list[str]]:
    """The node, the element type (numpy name) of every value it and its
    bodies define by value name, and the model's input names."""
    import onnx
    from onnx import helper

    model = onnx.shape_inference.infer_shapes(onnx.load_model_from_string(blob))
    types: dict[str, str] = {}

    def visit(g: Any) -> None:
        for vi in [*g.input, *g.output, *g.value_info]:
            t = vi.type.tensor_type
            if vi.type.HasField("tensor_type") and t.elem_type:
                types[vi.name] = helper.tensor_dtype_to_np_dtype(t.elem_type).name
        for n in g.node:
            for a in n.attribute:
                for sub in [a.g] if a.HasField("g") else list(a.graphs):
                    visit(sub)

    visit(model.graph)
    return model.graph.node[0], types, [i.name for i in model.graph.input]


def _attrs(node: Any) -> dict[str, Any]:
    from onnx import AttributeProto, helper, numpy_helper

    out: dict[str, Any] = {"onnx_op_type": node.op_type}
    for a in node.attribute:
        if a.type == AttributeProto.TENSOR:
            out[a.name] = numpy_helper.to_array(a.t)
        else:
            v = helper.get_attribute_value(a)
            if isinstance(v, bytes):
                v = v.decode()
            elif isinstance(v, list) and v and isinstance(v[0], bytes):
                v = [s.decode() for s in v]
            out[a.name] = v
    return out


def _body_refusal(graph: Any) -> str | None:
    for n in graph.node:
        if n.domain not in ("", "ai.onnx"):
            return f"body op {n.domain}.{n.op_type} has no CPU kernel"
        if n.op_type in _FLOW:
            for a in n.attribute:
                if a.HasField("g"):
                    why = _body_refusal(a.g)
                    if why:
                        return why
            continue
        if n.op_type == "Constant":
            continue
        if kernel_for(f"onnx.{n.op_type}") is None:
            return f"body op {n.op_type} has no CPU kernel"
        step = Step(f"onnx.{n.op_type}", n.name, [], [], [], _attrs(n))
        why = refusal(step)
        if why:
            return f"body op {n.op_type}: {why}"
    return None


@check("onnx.If", "onnx.Loop", "onnx.Scan")
def _check(step: Step) -> str | None:
    try:
        node, _, _ = _parse(step.attrs["onnx_model"])
    except Exception as e:  # an ill-formed body: said in one line
        return f"cannot read the body: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
    for a in node.attribute:
        if a.HasField("g"):
            if node.op_type == "Scan" and len(node.input) > len(a.g.input):
                return "Scan-8 (batch axis, sequence_lens) is not implemented"
            why = _body_refusal(a.g)
            if why:
                return why
    return None


class _Graph:
    """Runs an ONNX graph on our kernels, with the outer scope's values."""

    def __init__(self, types: dict[str, str]):
        self.types = types

    def run(self, g: Any, env: dict[str, Array | None]) -> list[Array | None]:
        from onnx import numpy_helper

        env = dict(env)
        for t in g.initializer:
            env[t.name] = numpy_helper.to_array(t)
        for n in g.node:
            ins = [env[name] if name else None for name in n.input]
            outs = self.node(n, ins, env)
            for name, v in zip(n.output, outs, strict=False):
                if name:
                    env[name] = v
        return [env[o.name] for o in g.output]

    def node(self, n: Any, ins: list[Array | None], env: dict[str, Any]) -> list[Any]:
        attrs = _attrs(n)
        if n.op_type == "Constant":
            return [next(np.asarray(v) for k, v in attrs.items() if k.startswith("value"))]
        if n.op_type in _FLOW:
            run = {"If": self.if_, "Loop": self.loop, "Scan": self.scan}[n.op_type]
            return run(attrs, ins, env)
        first = next((x for x in ins if x is not None), None)
        specs = [
            TensorSpec(
                o, (), self.types.get(o, first.dtype.name if first is not None else "float32")
            )
            for o in n.output
        ]
        step = Step(f"onnx.{n.op_type}", n.name, [], [], specs, attrs)
        kernel = kernel_for(step.op)
        if kernel is None:
            raise VknnError(f"no CPU kernel for {n.op_type} in a body")
        return kernel(step, ins)

    def if_(self, attrs: dict[str, Any], ins: list[Any], env: dict[str, Any]) -> list[Any]:
        branch = (
            attrs["then_branch"]
            if bool(np.asarray(ins[0]).reshape(-1)[0])
            else attrs["else_branch"]
        )
        return self.run(branch, env)

    def loop(self, attrs: dict[str, Any], ins: list[Any], env: dict[str, Any]) -> list[Any]:
        body = attrs["body"]
        trips = ins[0] if ins and ins[0] is not None else None
        cond = ins[1] if len(ins) > 1 and ins[1] is not None else None
        state = list(ins[2:])
        names = [i.name for i in body.input]
        n_state = len(state)
        scans: list[list[Array]] = [[] for _ in range(len(body.output) - 1 - n_state)]
        limit = int(np.asarray(trips).reshape(-1)[0]) if trips is not None else None
        go = bool(np.asarray(cond).reshape(-1)[0]) if cond is not None else True
        i = 0
        while go and (limit is None or i < limit):
            local = {**env, names[0]: np.array(i, np.int64)}
            local[names[1]] = np.array(go)
            local.update(zip(names[2:], state, strict=True))
            outs = self.run(body, local)
            go = bool(np.asarray(outs[0]).reshape(-1)[0]) if cond is not None else True
            state = outs[1 : 1 + n_state]
            for acc, v in zip(scans, outs[1 + n_state :], strict=True):
                acc.append(np.asarray(v))
            i += 1
        stacked = [np.stack(acc) if acc else np.zeros((0,), np.float32) for acc in scans]
        return [*state, *stacked]

    def scan(self, attrs: dict[str, Any], ins: list[Any], env: dict[str, Any]) -> list[Any]:
        body = attrs["body"]
        m = int(attrs["num_scan_inputs"])
        state, xs = list(ins[: len(ins) - m]), list(ins[len(ins) - m :])
        in_axes = list(attrs.get("scan_input_axes", [0] * m))
        in_dirs = list(attrs.get("scan_input_directions", [0] * m))
        xs = [np.moveaxis(x, a % x.ndim, 0) for x, a in zip(xs, in_axes, strict=True)]
        xs = [x[::-1] if d else x for x, d in zip(xs, in_dirs, strict=True)]
        names = [i.name for i in body.input]
        k = len(body.output) - len(state)
        scans: list[list[Array]] = [[] for _ in range(k)]
        for t in range(xs[0].shape[0] if xs else 0):
            local = {**env, **dict(zip(names, [*state, *(x[t] for x in xs)], strict=True))}
            outs = self.run(body, local)
            state = outs[: len(state)]
            for acc, v in zip(scans, outs[len(state) :], strict=True):
                acc.append(np.asarray(v))
        out_axes = list(attrs.get("scan_output_axes", [0] * k))
        out_dirs = list(attrs.get("scan_output_directions", [0] * k))
        stacked = []
        for acc, a, d in zip(scans, out_axes, out_dirs, strict=True):
            y = np.stack(acc[::-1] if d else acc)
            stacked.append(np.moveaxis(y, 0, a % y.ndim))
        return [*state, *stacked]


@register("onnx.If", "onnx.Loop", "onnx.Scan")
def control_flow(step: Step, inputs: list[Array | None]) -> list[Array]:
    node, types, names = _parse(step.attrs["onnx_model"])
    present = [x for s, x in zip(step.inputs, inputs, strict=True) if s != NO_VALUE]
    env: dict[str, Any] = dict(zip(names, present, strict=True))
    ins = [env[name] if name else None for name in node.input]
    outs = _Graph(types).node(node, ins, env)
    return [
        np.asarray(o).astype(spec.np_dtype, copy=False)
        for o, spec in zip(outs, step.out_specs, strict=False)
    ]
