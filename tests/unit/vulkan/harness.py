"""How the Vulkan tests drive the engine: small ONNX graphs (onnx.helper)
through the real front door (import, graph passes, lowering, program,
runtime) on the test device, compared with the CPU oracle; and the final
`vkd` module for structural checks (which kernels, how many dispatches,
which conversions) without a device.

`vk_vs_cpu` runs with `allow_cpu_fallback=False`, so a kernel test fails if
its op does not run on Vulkan. `run_for_target` compiles for a given target
(e.g. lavapipe with a shrunk maxStorageBufferRange) and runs the program on
the device, which must satisfy it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

import vknn
from vknn.runtime.target import Target

ONNX_TYPES = {
    "float32": TensorProto.FLOAT,
    "float16": TensorProto.FLOAT16,
    "float64": TensorProto.DOUBLE,
    "int64": TensorProto.INT64,
    "int32": TensorProto.INT32,
    "int8": TensorProto.INT8,
    "uint8": TensorProto.UINT8,
    "bool": TensorProto.BOOL,
}


def graph(
    nodes: Sequence[onnx.NodeProto],
    inputs: dict[str, tuple[tuple[int, ...], str]],
    outputs: Sequence[str],
    inits: dict[str, np.ndarray] | None = None,
    opset: int = 17,
) -> onnx.ModelProto:
    """A model of `nodes`; inputs by name -> (shape, dtype); outputs by name
    with their types left to inference."""
    ins = [helper.make_tensor_value_info(n, ONNX_TYPES[d], list(s)) for n, (s, d) in inputs.items()]
    outs = [helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None) for n in outputs]
    inits_p = [numpy_helper.from_array(np.asarray(v), k) for k, v in (inits or {}).items()]
    g = helper.make_graph(list(nodes), "g", ins, outs, inits_p)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)


def node(op: str, inputs: Sequence[str], outputs: Sequence[str], **attrs: Any) -> onnx.NodeProto:
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


def ort_run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime's outputs of `model` (the reference of the dtype tests)."""
    import onnxruntime as ort

    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(names, feeds), strict=True))


def on_vulkan_vs_ort(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], atol: float = 0.0, **config: Any
) -> Any:
    """Run `model` on Vulkan (no CPU fallback), compare every output with
    onnxruntime (dtype, shape, then exactly or within `atol`; NaN where it
    has NaN), check that every node ran on Vulkan; returns the session."""
    sess = vk_session(model, **config)
    got = sess.run(feeds)
    for name, w in ort_run(model, feeds).items():
        g = got[name]
        assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, w.dtype, g.shape)
        if atol:
            np.testing.assert_allclose(g, w, rtol=0, atol=atol, err_msg=name)
        else:
            np.testing.assert_array_equal(g, w, err_msg=name)
    off = {n: b for n, b in sess.node_backends().items() if b != "vulkan"}
    assert not off, (off, sess.fallback_reasons())
    return sess


def cpu(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    sess = vknn.Session(model.SerializeToString(), vknn.Config(backends=("cpu",)))
    return sess.run(feeds)


def vk_session(model: onnx.ModelProto, **config: Any) -> Any:
    config.setdefault("allow_cpu_fallback", False)
    return vknn.Session(model.SerializeToString(), vknn.Config(**config))


def vk_vs_cpu(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], **config: Any
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], Any]:
    """(Vulkan outputs, CPU oracle outputs, the Vulkan session)."""
    sess = vk_session(model, **config)
    return sess.run(feeds), cpu(model, feeds), sess


def check(got: np.ndarray, want: np.ndarray, fp16: bool) -> None:
    """fp32: max abs error <= 1e-4 * max|ref|; fp16 storage: cosine >= 0.999, finite."""
    assert got.shape == want.shape, (got.shape, want.shape)
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    if fp16:
        assert np.isfinite(got64).all()
        cos = float(np.dot(got64.ravel(), want64.ravel())) / (
            np.linalg.norm(got64) * np.linalg.norm(want64) + 1e-30
        )
        assert cos >= 0.999, cos
    else:
        err = float(np.max(np.abs(got64 - want64))) if got64.size else 0.0
        assert err <= 1e-4 * max(float(np.max(np.abs(want64))) if want64.size else 0.0, 1e-30), err


def lowered(
    model: onnx.ModelProto,
    target: str | Target = "lavapipe",
    shapes: dict[str, tuple[int, ...]] | None = None,
    pipeline: str = "standard",
    **options: Any,
) -> Any:
    """The final `vkd` module of `model` for `target` (no device needed
    unless the target is from-device), through the named graph `pipeline`
    (`lower`: no graph optimization, each ONNX op its own `vx` op).
    `options`: `LoweringOptions` fields."""
    from vknn.compiler import LoweringOptions, graph_pipeline, import_any, lower
    from vknn.kernels.targets import target as named

    module = graph_pipeline(import_any(model), pipeline, shapes)
    t = named(target) if isinstance(target, str) else target
    return lower(module, LoweringOptions(**options), t)


def lowered_target(name: str = "lavapipe", **changes: Any) -> Target:
    from vknn.kernels.targets import target

    return replace(target(name), **changes)


def run_for_target(
    model: onnx.ModelProto, target: Target, feeds: dict[str, np.ndarray], **options: Any
) -> tuple[dict[str, np.ndarray], Any]:
    """Compile for `target`, run on the test device (which must satisfy it):
    (outputs, the program). `options`: those of `lowered`."""
    from vknn.runtime.executable import Executable
    from vknn.runtime.program import Program
    from vknn.runtime.vulkan.context import shared_device
    from vknn.serialize import module_to_program

    program = Program.decode(module_to_program(lowered(model, target, **options)))
    device, pipelines, why = shared_device()
    assert device is not None, why
    exe = Executable(program, device, pipelines)
    try:
        return exe.run(0, feeds), program
    finally:
        exe.close()


def dispatches(module: Any) -> list[Any]:
    """Every `vkd.dispatch` of a lowered module, in order."""
    from vknn.dialects.vkd import DispatchOp

    return [op for op in module.walk() if isinstance(op, DispatchOp)]


def shaders(module: Any) -> list[str]:
    """The shader family of each dispatch, in order (`conv`, `pool`, ...)."""
    from vknn.dialects.vkd import KernelOp

    kernels = {op.sym_name.data: op for op in module.ops if isinstance(op, KernelOp)}
    return [kernels[d.kernel.root_reference.data].shader.data for d in dispatches(module)]


def labels(module: Any) -> list[str]:
    return [d.label.data for d in dispatches(module)]
