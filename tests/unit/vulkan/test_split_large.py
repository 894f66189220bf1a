"""split-large-gemms: a GEMM whose constant weight is past the target's
maxStorageBufferRange becomes column blocks joined by a concat: the `vx`
shape right after the pass, every device binding of the final module under
the limit, and the same numbers as the CPU oracle when the program compiled
for a shrunk range runs on the device (validation layer on)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.unit.vulkan.harness import cpu, graph, labels, lowered, node, run_for_target
from vknn.runtime.target import Target, from_caps

K, N = 96, 1000
LIMIT = 64 * 4 * K * 3  # 192-column blocks: six of them for N = 1000
BIAS_SHAPES = [None, (1000,), (1, 1000), (2, 1000), (1,)]


def _gemm_model(trans_b: int, bias_shape: tuple[int, ...] | None, batch: int = 2):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    inits = {"w": rng.standard_normal((N, K) if trans_b else (K, N)).astype(np.float32)}
    inputs = ["x", "w"]
    if bias_shape is not None:
        inits["c"] = rng.standard_normal(bias_shape).astype(np.float32)
        inputs.append("c")
    gemm = node("Gemm", inputs, ["y"], transB=trans_b, alpha=0.5, beta=2.0)
    return graph([gemm], {"x": ((batch, K), "float32")}, ["y"], inits)


def _split_vx(model, target: Target):  # type: ignore[no-untyped-def]
    """The `vx` module right after split-large-gemms for `target`."""
    from xdsl.passes import PassPipeline

    from vknn.compiler import graph_pipeline, import_any
    from vknn.dialects import make_context
    from vknn.dialects.vkd import TARGET_ATTR
    from vknn.transforms.registry import available_passes
    from vknn.transforms.target_option import target_attr

    module = graph_pipeline(import_any(model), "standard")
    module.attributes[TARGET_ATTR] = target_attr(target)
    PassPipeline.parse_spec(available_passes(), "split-large-gemms").apply(make_context(), module)
    return module


@pytest.mark.parametrize("trans_b", [0, 1])
def test_split_gemm_vx_shape(trans_b: int) -> None:
    """Column blocks of at most LIMIT bytes, each a gemm of the input, then one
    concat along N; a weight that fits is left alone."""
    from vknn.transforms.segment_steps import CONSTANT_OPS, constant_value

    model = _gemm_model(trans_b, (1000,))
    small = Target().with_(max_storage_buffer_range=LIMIT)
    module = _split_vx(model, small)
    ops = [op for op in module.walk() if op.name.startswith("vx.")]
    gemms = [op for op in ops if op.name == "vx.gemm"]
    assert len(gemms) == 6 and ops[-1].name == "vx.concat"
    assert [g.results[0].type.get_shape() for g in gemms] == [(2, 192)] * 5 + [(2, 40)]
    consts = [
        constant_value(op)
        for op in module.walk()
        if op.name in CONSTANT_OPS and op.results[0].uses.get_length()
    ]  # the original weight, now unread, goes at the next dce
    assert all(c.nbytes <= LIMIT for c in consts)
    weights = [c for c in consts if c.ndim == 2]
    assert len(weights) == 6 and sum(w.shape[0 if trans_b else 1] for w in weights) == N
    # The default range holds the weight: nothing is split.
    module = _split_vx(model, Target())
    assert [op.name for op in module.walk() if op.name.startswith("vx.")].count("vx.gemm") == 1


@pytest.mark.parametrize("batch", [1, 2])
def test_split_gemm_final_module_binds_under_the_limit(batch: int) -> None:
    """After the whole lowering: one dispatch per block (named after the node),
    no binding of any dispatch past the limit; at batch 1 each block writes
    its slice of the result in place (the concat records nothing)."""
    from vknn.dialects.vkd import DispatchOp

    target = Target().with_(max_storage_buffer_range=LIMIT)
    module = lowered(_gemm_model(1, (1, 1000), batch), target)
    names = labels(module)
    assert sum(name.startswith("Gemm_0#") for name in names) == 6, names
    assert any("(Concat)" in name for name in names) == (batch > 1), names
    for d in (op for op in module.walk() if isinstance(op, DispatchOp)):
        sizes = d.ranges.get_values()[1::2]  # type: ignore[attr-defined]
        assert all(s <= LIMIT for s in sizes), (d.label.data, sizes)


@pytest.mark.parametrize("trans_b", [0, 1])
@pytest.mark.parametrize("bias_shape", BIAS_SHAPES)
def test_split_gemm_matches(session_device, trans_b: int, bias_shape) -> None:  # type: ignore[no-untyped-def]
    model = _gemm_model(trans_b, bias_shape)
    x = np.random.default_rng(1).standard_normal((2, K)).astype(np.float32)
    want = cpu(model, {"x": x})["y"]
    target = from_caps(session_device.caps).with_(max_storage_buffer_range=LIMIT)
    out, program = run_for_target(model, target, {"x": x}, allow_cpu_fallback=False)
    seg = program.buckets[0].segments[0]
    assert sum(c.label.startswith("Gemm_0#") for c in seg.commands if hasattr(c, "label")) == 6
    np.testing.assert_allclose(out["y"], want, rtol=1e-5, atol=1e-5)
