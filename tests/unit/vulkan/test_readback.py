"""The `rebar` memory model (a discrete GPU whose device memory the host maps
directly): inputs are written in place, outputs are copied at the end of the
command buffer into host-cached `readback` memory and read from there, never
from the mapped device arena. Checked on the program compiled for such a
target, and run on the test device (lavapipe maps its memory too), replayed
with new inputs: the numbers of numpy. And the `staging` model's host-side
buffers: every upload is written before the submit, so no two share bytes."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from tests.unit.vulkan.harness import graph, lowered, node
from vknn.runtime.program import CopyCmd, DispatchCmd, Program, VulkanSegment
from vknn.runtime.target import from_caps

M, K, N = 128, 1024, 256  # BERT's linear2: a split-K matmul with scratch


def _model_and_weight():  # type: ignore[no-untyped-def]
    b = (np.random.default_rng(7).standard_normal((K, N)) / np.sqrt(K)).astype(np.float32)
    nodes = [node("MatMul", ["a", "b"], ["y"]), node("Relu", ["y"], ["r"])]
    return graph(nodes, {"a": ((M, K), "float32")}, ["y", "r"], {"b": b}), b


def _program(target) -> Program:  # type: ignore[no-untyped-def]
    from vknn.serialize import module_to_program

    model, _ = _model_and_weight()
    return Program.decode(module_to_program(lowered(model, target, allow_cpu_fallback=False)))


def _segment(program: Program) -> VulkanSegment:
    (seg,) = program.buckets[0].segments
    assert isinstance(seg, VulkanSegment)
    return seg


@pytest.mark.parametrize("memory", ["rebar", "unified"])
def test_rebar_outputs_are_copied_to_readback_memory(memory: str) -> None:
    from vknn.kernels.targets import target

    seg = _segment(_program(target("lavapipe").with_(memory=memory)))
    kinds = [m for m, _ in seg.arenas]
    assert "staging" not in kinds  # inputs are written in place either way
    assert all(kinds[u.arena] == "device" for u in seg.uploads)
    copies = [c for c in seg.commands if isinstance(c, CopyCmd)]
    if memory == "unified":
        assert "readback" not in kinds and not copies
        assert all(kinds[d.arena] == "device" for d in seg.downloads)
        return
    # One copy per output, after the last dispatch, from device to readback
    # memory; each download reads its copy's destination.
    assert len(seg.downloads) == 2 and len(copies) == 2
    last_dispatch = max(i for i, c in enumerate(seg.commands) if isinstance(c, DispatchCmd))
    assert all(seg.commands.index(c) > last_dispatch for c in copies)
    for c, d in zip(copies, seg.downloads, strict=True):
        assert kinds[c.src.arena] == "device" and kinds[c.dst.arena] == "readback"
        assert (d.arena, d.offset, d.nbytes) == (c.dst.arena, c.dst.offset, c.dst.size)


def test_rebar_program_runs_and_replays(session_device) -> None:  # type: ignore[no-untyped-def]
    from vknn.runtime.executable import Executable
    from vknn.runtime.vulkan.context import shared_device

    caps = session_device.caps
    assert caps.has_device_local_host_visible  # direct mapping, as on ReBAR GPUs
    program = _program(from_caps(caps).with_(memory="rebar"))
    assert any(m == "readback" for m, _ in _segment(program).arenas)
    _, b = _model_and_weight()
    _, pipelines, _ = shared_device()
    exe = Executable(program, session_device, pipelines)
    try:
        for rep in range(2):
            a = np.random.default_rng(rep).standard_normal((M, K)).astype(np.float32)
            got = exe.run(0, {"a": a})
            want = a.astype(np.float64) @ b.astype(np.float64)
            for name, ref in (("y", want), ("r", np.maximum(want, 0))):
                err = float(np.max(np.abs(got[name] - ref)))
                assert err <= 1e-4 * float(np.max(np.abs(ref))), (rep, name, err)
    finally:
        exe.close()


def test_staging_buffers_of_several_inputs_never_share_bytes(session_device) -> None:  # type: ignore[no-untyped-def]
    """Two inputs through staging: the host writes both staging buffers before
    the submit, so they must not overlap even though the first one's copy
    comes before the second one's upload among the commands (plan-memory once
    gave both offset 0: the second upload overwrote the first input)."""
    from tests.unit.vulkan.harness import run_for_target

    a = np.random.default_rng(0).standard_normal((3, 400)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((4,)).astype(np.float32)
    nodes = [node("Relu", ["a"], ["ra"]), node("Neg", ["b"], ["nb"])]
    model = graph(nodes, {"a": (a.shape, "float32"), "b": (b.shape, "float32")}, ["ra", "nb"])
    target = from_caps(session_device.caps).with_(memory="staging")
    out, program = run_for_target(model, target, {"a": a, "b": b}, allow_cpu_fallback=False)
    seg = _segment(program)
    kinds = [m for m, _ in seg.arenas]
    for side in (seg.uploads, seg.downloads):
        spans = sorted((t.offset, t.offset + t.nbytes) for t in side)
        assert len({t.arena for t in side}) == 1 and kinds[side[0].arena] != "device"
        assert all(end <= start for (_, end), (start, _) in pairwise(spans)), spans
    np.testing.assert_array_equal(out["ra"], np.maximum(a, 0))
    np.testing.assert_array_equal(out["nb"], -b)
