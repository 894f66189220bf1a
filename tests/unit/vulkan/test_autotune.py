"""On-device autotuning (`Config.autotune`, vknn/tuning.py): candidate sets
(pure), every candidate config of conv and matmul/gemm ops computes the right
numbers (each config given through the session's autotune table, so the
compiler records it: asserted on the program's dispatch labels; run on the
device under the validation layer, compared with numpy / the CPU oracle),
tuning a module compiled for a staging target, and whole sessions: `fast`
fills the table and keeps the outputs, a pre-filled table measures nothing,
`off` leaves the table empty."""

from __future__ import annotations

import io
import math
from dataclasses import replace
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from tests.unit.vulkan import vkd_checks as V
from tests.unit.vulkan.harness import check, cpu, graph, node
from vknn import tuning as autotune
from vknn.kernels import KERNELS, RecordContext, TuningSpace
from vknn.kernels.conv import (
    BK,
    GEMM_SHARED_BYTES,
    _gemm_tile,
    _geometry,
    split_cap,
)
from vknn.kernels.matmul import _tiles
from vknn.kernels.targets import target
from vknn.runtime.plan import Step, TensorSpec
from vknn.runtime.target import Target as DeviceCaps

F32 = "float32"
CAPS = {
    "lavapipe": target("lavapipe"),
    "h200": target("nvidia"),
    "minimum": DeviceCaps(),  # 128 invocations, 16 KiB shared memory
}


def _out_conv(x: tuple[int, ...], w: tuple[int, ...], s, p, d) -> tuple[int, ...]:  # type: ignore[no-untyped-def]
    n = len(x) - 2
    return (
        x[0],
        w[0],
        *(((x[2 + i] + p[i] + p[n + i] - d[i] * (w[2 + i] - 1) - 1) // s[i] + 1) for i in range(n)),
    )


def conv_step(
    x: tuple[int, ...], w: tuple[int, ...], *, stride=1, pad=0, group=1
) -> tuple[Step, dict[int, np.ndarray]]:  # type: ignore[no-untyped-def]
    """A `vx.conv` step with bias (slots x 0, w 1, b 2 -> y 3) and its arrays."""
    n = len(x) - 2
    s = (stride,) * n if isinstance(stride, int) else tuple(stride)
    p = (pad,) * (2 * n) if isinstance(pad, int) else tuple(pad)
    d = (1,) * n
    y = _out_conv(x, w, s, p, d)
    step = Step(
        "vx.conv", "conv", [0, 1, 2], [3], [TensorSpec("y", y, F32)],
        {"strides": s, "pads": p, "dilations": d, "group": group},
    )  # fmt: skip
    rng = np.random.default_rng(sum(x) + sum(w) + group)
    arrays = {
        0: rng.standard_normal(x).astype(F32),
        1: (rng.standard_normal(w) / np.sqrt(int(np.prod(w[1:])))).astype(F32),
        2: (rng.standard_normal(w[0]) * 0.1).astype(F32),
    }
    return step, arrays


def _specs(arrays: dict[int, np.ndarray]) -> dict[int, TensorSpec]:
    return {k: TensorSpec(f"t{k}", a.shape, a.dtype.name) for k, a in arrays.items()}


def _space(step: Step, caps: DeviceCaps, specs: dict[int, TensorSpec], variant: str = "fp32"):  # type: ignore[no-untyped-def]
    space = autotune.tuning_space(step, caps, specs, variant)
    assert space is not None
    return space


def _mm_step(a: tuple[int, ...], b: tuple[int, ...]) -> Step:
    out = np.broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])
    return Step("vx.matmul", "mm", [0, 1], [2], [TensorSpec("y", out, F32)])


def _gemm_step(m: int, n: int, k: int, ta: bool, tb: bool, c: tuple[int, ...] | None) -> Step:
    attrs = {"alpha": 0.5, "beta": 2.0 if c is not None else 0.0, "trans_a": ta, "trans_b": tb}
    ins = [0, 1, 2] if c is not None else [0, 1]
    return Step("vx.gemm", "gemm", ins, [3], [TensorSpec("y", (m, n), F32)], attrs)


# ---------------------------------------------------------------------------
# Candidate sets (pure)
# ---------------------------------------------------------------------------

CONV_GEOMETRIES = [
    # (x, w, kwargs)
    ((1, 64, 56, 56), (64, 64, 3, 3), {"pad": 1}),
    ((1, 512, 7, 7), (512, 512, 3, 3), {"pad": 1}),
    ((1, 1024, 14, 14), (256, 1024, 1, 1), {}),
    ((1, 16, 10, 10), (24, 16, 3, 3), {"pad": 1}),
    ((1, 32, 12, 12), (32, 1, 3, 3), {"pad": 1, "group": 32}),  # depthwise
    ((1, 16, 9, 9), (16, 4, 3, 3), {"group": 4}),  # Mg = 4: direct, GEMM a candidate
    ((2, 8, 30), (12, 8, 5), {"stride": 2}),  # 1-D
]


def _check_conv_config(
    cfg: dict, step: Step, specs: dict[int, TensorSpec], caps: DeviceCaps
) -> None:
    g = _geometry(step, specs[0].shape, specs[1].shape, step.out_specs[0].shape)
    if cfg["algo"] == "direct":
        assert set(cfg) == {"algo", "ls"}
        assert cfg["ls"] <= min(
            caps.max_compute_work_group_invocations, caps.max_compute_work_group_size[0]
        )
        return
    assert set(cfg) == {"algo", "tx", "ty", "splits"}
    tx, ty, s = cfg["tx"], cfg["ty"], cfg["splits"]
    assert tx in (8, 16) and ty in (8, 16)
    assert tx * ty <= caps.max_compute_work_group_invocations
    assert GEMM_SHARED_BYTES <= caps.max_compute_shared_memory_size
    groups = (-(-g["OH"] * g["OW"] // (4 * tx)), -(-g["Mg"] // (4 * ty)), g["N"] * g["G"])
    assert all(n <= lim for n, lim in zip(groups, caps.max_compute_work_group_count, strict=True))
    k = g["Cg"] * g["KH"] * g["KW"]
    total = math.prod(step.out_specs[0].shape)
    assert 1 <= s <= split_cap(caps, k, groups, total)
    if s > 1:  # every slice holds whole BK steps and none is empty
        steps = math.ceil(k / BK)
        chunk = math.ceil(steps / s)
        assert (s - 1) * chunk < steps
        assert groups[2] * s <= caps.max_compute_work_group_count[2]


def _check_space(space: TuningSpace) -> None:
    assert space.fast[0] == space.default == space.thorough[0]
    assert all(c in space.thorough for c in space.fast)
    for cands in (space.fast, space.thorough):
        assert len({tuple(sorted(c.items())) for c in cands}) == len(cands)
    assert len(space.fast) <= 6


@pytest.mark.parametrize("caps_name", list(CAPS))
@pytest.mark.parametrize(("x", "w", "kw"), CONV_GEOMETRIES)
def test_conv_candidates(caps_name: str, x, w, kw) -> None:  # type: ignore[no-untyped-def]
    caps = CAPS[caps_name]
    step, arrays = conv_step(x, w, **kw)
    specs = _specs(arrays)
    space = _space(step, caps, specs)
    _check_space(space)
    for cfg in space.thorough:
        _check_conv_config(cfg, step, specs, caps)
    # The heuristic stays the default: the tile `_gemm_tile` picks (or direct).
    g = _geometry(step, x, w, step.out_specs[0].shape)
    if g["Mg"] >= 8:
        assert (space.default["tx"], space.default["ty"]) == _gemm_tile(caps, g)
    else:
        assert space.default["algo"] == "direct"
    # Pure and independent of the node's name; fp16 is its own key.
    renamed = Step(step.op, "other", step.inputs, step.outputs, step.out_specs, step.attrs)
    assert _space(renamed, caps, specs) == space
    assert _space(step, caps, specs, "fp16").key != space.key
    assert len(_space(step, caps, specs).candidates("thorough")) >= len(space.fast)


MATMUL_GEOMETRIES = [
    ((1, 128, 256), (256, 768)),
    ((4, 128, 64), (4, 64, 128)),
    ((1, 4096), (4096, 1000)),
    ((70, 33), (33, 65)),
    ((3, 5, 7), (7, 9)),
]


@pytest.mark.parametrize("caps_name", list(CAPS))
@pytest.mark.parametrize(("sa", "sb"), MATMUL_GEOMETRIES)
def test_matmul_candidates(caps_name: str, sa, sb) -> None:  # type: ignore[no-untyped-def]
    caps = CAPS[caps_name]
    step = _mm_step(sa, sb)
    specs = {0: TensorSpec("a", sa, F32), 1: TensorSpec("b", sb, F32)}
    space = _space(step, caps, specs)
    _check_space(space)
    most = min(caps.max_compute_work_group_invocations, caps.max_compute_work_group_size[0])
    for cfg in space.thorough:
        assert set(cfg) == {"bm", "bn", "splits"}
        assert cfg["bm"] in (32, 64, 128) and cfg["bn"] in (32, 64, 128)
        assert (cfg["bm"] // 4) * (cfg["bn"] // 4) <= most
        assert 4 * BK * (cfg["bm"] + cfg["bn"]) <= caps.max_compute_shared_memory_size
        assert 1 <= cfg["splits"] <= -(-sa[-1] // BK)
    m, n = space.default["bm"], space.default["bn"]
    assert (m, n) == _tiles(*_folded(sa, sb), caps)
    gemm = _gemm_step(70, 65, 33, True, True, (65,))
    gspecs = {0: TensorSpec("a", (33, 70), F32), 1: TensorSpec("b", (65, 33), F32),
              2: TensorSpec("c", (65,), F32)}  # fmt: skip
    gspace = _space(gemm, caps, gspecs)
    _check_space(gspace)
    assert gspace.key.startswith("vx.gemm|") and "|t11|" in gspace.key


def _folded(sa: tuple[int, ...], sb: tuple[int, ...]) -> tuple[int, int, int]:
    """(M, N, batch) as matmul.py records the product (batch folded into M
    when B is shared)."""
    batch = math.prod(np.broadcast_shapes(sa[:-2], sb[:-2]))
    if len(sb) == 2:
        return sa[-2] * batch, sb[-1], 1
    return sa[-2], sb[-1], batch


def test_choose_ignores_invalid_table_entries() -> None:
    caps = CAPS["lavapipe"]
    step, arrays = conv_step((1, 16, 10, 10), (24, 16, 3, 3), pad=1)
    space = _space(step, caps, _specs(arrays))
    ctx = RecordContext(caps, "fp32", tuning={space.key: {"algo": "gemm", "tx": 32}})
    assert space.choose(ctx) == space.default
    other = space.thorough[-1]
    ctx.tuning = {space.key: other}
    assert space.choose(ctx) == other
    ctx.config = {"algo": "gemm", "tx": 4, "ty": 4, "splits": 1}
    with pytest.raises(ValueError, match="not a candidate"):
        space.choose(ctx)


def test_pick_is_deterministic_and_prefers_the_heuristic() -> None:
    cands = [{"c": 0}, {"c": 1}, {"c": 2}]
    assert autotune.pick(cands, [100.0, 50.0, 80.0]) == {"c": 1}
    assert autotune.pick(cands, [100.0, 99.0, 98.0]) == {"c": 0}  # within the margin
    assert autotune.pick(cands, [100.0, 50.0, 50.0]) == {"c": 1}  # tie: the earlier
    assert autotune.pick(cands, [100.0, 100.0, 100.0]) == {"c": 0}


def test_plan_jobs_dedupes_keys_and_skips_the_table() -> None:
    caps = CAPS["lavapipe"]
    s1, arrays = conv_step((1, 16, 10, 10), (24, 16, 3, 3), pad=1)
    s2 = Step(s1.op, "twin", [3, 1, 2], [4], s1.out_specs, s1.attrs)
    specs = _specs(arrays) | {3: TensorSpec("x2", (1, 16, 10, 10), F32)}
    jobs, reused = autotune.plan_jobs([s1, s2], ["fp32"] * 2, caps, specs, "fast", {})
    assert len(jobs) == 1 and reused == 0 and jobs[0].candidates == jobs[0].space.fast
    table = {jobs[0].space.key: dict(jobs[0].space.thorough[-1])}
    assert autotune.plan_jobs([s1, s2], ["fp32"] * 2, caps, specs, "thorough", table) == ([], 1)
    assert autotune.plan_jobs([s1], ["fp32"], caps, specs, "off", {}) == ([], 0)
    with pytest.raises(Exception, match="autotune must be one of"):
        autotune.plan_jobs([s1], ["fp32"], caps, specs, "always", {})


def test_progress_bar_only_on_a_terminal() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    tty, pipe = Tty(), io.StringIO()
    for stream in (tty, pipe):
        bar = autotune._Progress(stream, 4)
        bar.update(1, "Conv 8x16x16 3x3/1 -> 32x16x16 [2/4]")
        bar.done("vknn autotune (fast): 1 kernels, 4 candidates, 0.1 s, 0 changed")
    # A terminal gets a bar (tqdm when installed: vknn.progress) redrawn with
    # "\r", then the summary; a pipe gets the summary line alone.
    summary = "vknn autotune (fast): 1 kernels, 4 candidates, 0.1 s, 0 changed\n"
    assert "\r" in tty.getvalue() and "/4" in tty.getvalue() and tty.getvalue().endswith(summary)
    assert pipe.getvalue() == summary


# ---------------------------------------------------------------------------
# Every candidate computes the right numbers (on the device)
# ---------------------------------------------------------------------------


def _device_target() -> DeviceCaps:
    from vknn.runtime.target import from_caps
    from vknn.runtime.vulkan.context import shared_device

    device, _, why = shared_device()
    assert device is not None, why
    return from_caps(device.caps)


def _spaces(model: onnx.ModelProto, precision: str = "high") -> list[tuple[Step, TuningSpace]]:
    """(step, tuning space) of each tunable op of the model as the session
    on this device compiles it (after assign-storage, as `tune_module`)."""
    from vknn.dialects import vkd
    from vknn.transforms import segment_steps

    caps = _device_target()
    module = V.storage_module(model, caps, precision=precision, allow_cpu_fallback=False)
    out = []
    for seg in module.walk():
        if isinstance(seg, vkd.SegmentOp) and seg.backend.data == "vulkan":
            view = segment_steps.build(seg.body.block)
            for st in view.steps:
                v = st.attrs.get("vkd.variant")
                space = autotune.tuning_space(
                    st, caps, view.specs, v if isinstance(v, str) else "fp32"
                )
                if space is not None:
                    out.append((st, space))
    return out


def _labels(sess: Any) -> list[str]:
    from vknn.runtime.program import DispatchCmd

    return [
        c.label
        for seg in sess.program.buckets[0].segments
        for c in getattr(seg, "commands", ())
        if isinstance(c, DispatchCmd)
    ]


def _run_with(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], table: dict, precision: str = "high"
) -> tuple[dict[str, np.ndarray], list[str]]:  # type: ignore[type-arg]
    """Run `model` compiled with `table`'s configs (autotune on: an entry
    valid here is used as it is, nothing is measured): (outputs, labels)."""
    import vknn

    cfg = vknn.Config(precision=precision, autotune="fast", allow_cpu_fallback=False,
                      cache_file="off")  # fmt: skip
    sess = vknn.Session(model, cfg, autotune_table=table)
    report = sess.autotune_report
    assert report is not None and report.candidates == 0 and report.reused == len(table)
    return sess.run(feeds), _labels(sess)


def _conv_model(
    x: tuple[int, ...], w: tuple[int, ...], epilogue: bool = False, **kw: Any
) -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """A conv with bias (`kw`: pads, strides, group as ONNX attributes);
    `epilogue`: then a residual scaled per channel and a ReLU (merged into
    the conv: moved into the split-K sum when split)."""
    rng = np.random.default_rng(sum(x) + sum(w))
    inits = {
        "w": (rng.standard_normal(w) / np.sqrt(int(np.prod(w[1:])))).astype(F32),
        "b": (rng.standard_normal(w[0]) * 0.1).astype(F32),
    }
    nodes = [node("Conv", ["x", "w", "b"], ["y" if not epilogue else "c"], **kw)]
    inputs = {"x": (x, F32)}
    feeds = {"x": rng.standard_normal(x).astype(F32)}
    if epilogue:
        y = _out_conv(x, w, kw.get("strides", (1, 1)), kw.get("pads", (0,) * 4), (1, 1))
        inits["s"] = rng.standard_normal((1, w[0], 1, 1)).astype(F32)
        inputs["r"] = (y, F32)
        feeds["r"] = rng.standard_normal(y).astype(F32)
        nodes += [
            node("Mul", ["r", "s"], ["rs"]),
            node("Add", ["c", "rs"], ["a"]),
            node("Relu", ["a"], ["y"]),
        ]
    return graph(nodes, inputs, ["y"], inits), feeds


def _conv_cases() -> list[tuple[onnx.ModelProto, dict[str, np.ndarray]]]:
    """A 3x3 conv with bias, a grouped conv (Mg = 4: direct by default, GEMM
    a candidate) and a conv with a fused residual + ReLU epilogue."""
    return [
        _conv_model((1, 16, 10, 10), (24, 16, 3, 3), pads=[1, 1, 1, 1]),
        _conv_model((1, 16, 9, 9), (16, 4, 3, 3), group=4, strides=[1, 2]),
        _conv_model((1, 8, 9, 9), (16, 8, 3, 3), epilogue=True, pads=[1, 1, 1, 1]),
    ]


def _check_conv_candidates(mode: str) -> None:
    kinds = set()
    for i, (model, feeds) in enumerate(_conv_cases()):
        want = cpu(model, feeds)["y"]
        ((step, space),) = _spaces(model)
        if i == 2:  # the epilogue is merged into the conv
            module = V.lowered(model, _device_target(), allow_cpu_fallback=False)
            assert {d.kind for d in V.dispatches(module)} == {"Conv"}
        assert len(space.candidates(mode)) > 1
        for cfg in space.candidates(mode):
            got, labels = _run_with(model, feeds, {space.key: cfg})
            check(got["y"], want, False)
            # The config was recorded, not the heuristic's.
            if cfg["algo"] == "direct":
                assert any("Conv direct" in lb for lb in labels), (cfg, labels)
            elif cfg["splits"] > 1:
                assert any(f"split-K x{cfg['splits']}" in lb for lb in labels), (cfg, labels)
            else:
                assert any("Conv gemm" in lb and "split" not in lb for lb in labels), labels
            kinds.add((cfg["algo"], cfg.get("splits", 1) > 1))
    assert len(kinds) == 3, kinds  # direct, GEMM, split-K GEMM all ran


def _matmul_cases() -> list[tuple[onnx.ModelProto, dict[str, np.ndarray], np.ndarray]]:
    rng = np.random.default_rng(3)
    # A batch of rows x a weight (batch folded into M), K = 96: splits 1, 2, 3.
    a, b = rng.standard_normal((2, 35, 96)), rng.standard_normal((96, 50)) / 10
    # Gemm, A and B transposed, C per column, alpha and beta.
    at, bt = rng.standard_normal((40, 70)), rng.standard_normal((65, 40))
    c = rng.standard_normal(65)
    mm = graph([node("MatMul", ["a", "b"], ["y"])], {"a": (a.shape, F32)}, ["y"],
               {"b": b.astype(F32)})  # fmt: skip
    gemm = graph(
        [node("Gemm", ["a", "b", "c"], ["y"], transA=1, transB=1, alpha=0.5, beta=2.0)],
        {"a": (at.shape, F32)}, ["y"], {"b": bt.astype(F32), "c": c.astype(F32)},
    )  # fmt: skip
    return [
        (mm, {"a": a.astype(F32)}, a @ b),
        (gemm, {"a": at.astype(F32)}, 0.5 * at.T @ bt.T + 2 * c),
    ]


def _check_matmul_candidates(mode: str) -> None:
    for model, feeds, want in _matmul_cases():
        ((_, space),) = _spaces(model)
        if mode == "thorough":
            assert len({(c["bm"], c["bn"]) for c in space.thorough}) == 9
        assert max(c["splits"] for c in space.candidates(mode)) > 1
        for cfg in space.candidates(mode):
            got, labels = _run_with(model, feeds, {space.key: cfg})
            check(got["y"], want.astype(np.float32), False)
            split = any("split-K" in lb for lb in labels)
            assert split == (cfg["splits"] > 1), (cfg, labels)


def test_fast_conv_candidates_are_correct(session_device) -> None:  # type: ignore[no-untyped-def]
    _check_conv_candidates("fast")


def test_fast_matmul_candidates_are_correct(session_device) -> None:  # type: ignore[no-untyped-def]
    _check_matmul_candidates("fast")


@pytest.mark.slow
def test_every_conv_candidate_is_correct(session_device) -> None:  # type: ignore[no-untyped-def]
    """The whole thorough grid (a cold lavapipe compiles ~20 pipelines)."""
    _check_conv_candidates("thorough")


@pytest.mark.slow
def test_every_matmul_candidate_is_correct(session_device) -> None:  # type: ignore[no-untyped-def]
    """The whole thorough grid: 9 tiles x split-K, MatMul and Gemm."""
    _check_matmul_candidates("thorough")


@pytest.mark.parametrize("kind", ["conv", "matmul"])
def test_fast_candidates_in_fp16(session_device, kind: str) -> None:  # type: ignore[no-untyped-def]
    if kind == "conv":
        model, feeds = _conv_cases()[0]
        want = cpu(model, feeds)["y"]
    else:
        rng = np.random.default_rng(5)
        a, b = rng.standard_normal((70, 96)), rng.standard_normal((96, 50)) / 10
        model = graph([node("MatMul", ["a", "b"], ["y"])], {"a": (a.shape, F32)}, ["y"],
                      {"b": b.astype(F32)})  # fmt: skip
        feeds, want = {"a": a.astype(F32)}, a @ b
    ((_, space),) = _spaces(model, "low")
    fp16 = session_device.caps.has_fp16_storage
    assert ("fp16" in space.key) == fp16, space.key
    for cfg in space.fast[:2]:  # the heuristic's and a split-K neighbour
        got, _ = _run_with(model, feeds, {space.key: cfg}, precision="low")
        check(got["y"], want, True)


def test_split_k_measurement_orders_partials_and_sum(session_device) -> None:  # type: ignore[no-untyped-def]
    """A split-K candidate is timed as partials, a barrier over the ranges
    they wrote (a barrier listing none is an execution dependency only: the
    sum could read partials not yet visible), then the sum."""
    from vknn.runtime.program import BarrierCmd, DispatchCmd
    from vknn.runtime.vulkan.context import shared_device
    from vknn.runtime.vulkan.dtypes import storage_dtype

    device, pipelines, _ = shared_device()
    caps = _device_target()
    step = _mm_step((70, 96), (96, 50))
    specs = {0: TensorSpec("a", (70, 96), F32), 1: TensorSpec("b", (96, 50), F32)}
    space = _space(step, caps, specs)
    cfg = next(c for c in space.fast if c["splits"] > 1)
    scratch = autotune._Scratch(device, caps, seed=0)
    try:
        f32 = np.dtype(np.float32)
        ins = [scratch.tensor(specs[i], storage_dtype(F32, f32)) for i in (0, 1)]
        outs = [scratch.tensor(step.out_specs[0], storage_dtype(F32, f32))]
        ctx = RecordContext(caps, "fp32", table=scratch.table, scratch=scratch.scratch, config=cfg)
        ops = KERNELS[step.op].record(step, ctx, ins, outs)
        commands, _, _ = autotune._commands(ops, pipelines, caps)
        kinds = [type(c).__name__ for c in commands]
        assert kinds == ["DispatchCmd", "BarrierCmd", "DispatchCmd"], kinds
        part, barrier, _ = commands
        assert isinstance(part, DispatchCmd) and isinstance(barrier, BarrierCmd)
        written = {b for b, w in zip(part.bindings, ops[0].bindings, strict=True) if w.write}
        assert written and set(barrier.buffers) == written
        ns = autotune.time_dispatches(device, pipelines, caps, ops, 1, 2)
        assert ns > 0
    finally:
        scratch.close()


def test_tuning_through_staging(session_device) -> None:  # type: ignore[no-untyped-def]
    """A target without host-visible device memory: the tuner fills its
    scratch tensors through staging copies; the tuned program is still
    right."""
    from vknn.compiler import LoweringOptions, graph_pipeline, import_any, lower
    from vknn.runtime.executable import Executable
    from vknn.runtime.program import Program
    from vknn.runtime.vulkan.context import shared_device
    from vknn.serialize import module_to_program

    staging = replace(_device_target(), memory="staging")
    assert not staging.has_device_local_host_visible
    model, feeds = _conv_cases()[0]
    device, pipelines, _ = shared_device()
    table: dict = {}  # type: ignore[type-arg]
    reports = []

    def tune(module: Any) -> None:
        reports.append(autotune.tune_module(module, device, pipelines, "fast", table))

    module = lower(graph_pipeline(import_any(model)), LoweringOptions(allow_cpu_fallback=False),
                   staging, before_convert=tune)  # fmt: skip
    ((report,),) = [reports]
    assert report.kernels == 1 and len(table) == 1
    program = Program.decode(module_to_program(module))
    memories = {m for seg in program.buckets[0].segments for m, _ in getattr(seg, "arenas", ())}
    assert "staging" in memories, memories
    exe = Executable(program, device, pipelines)
    try:
        got = exe.run(0, feeds)
    finally:
        exe.close()
    check(got["y"], cpu(model, feeds)["y"], False)


# ---------------------------------------------------------------------------
# Sessions
# ---------------------------------------------------------------------------


def _two_layer_net() -> tuple[onnx.ModelProto, dict[str, np.ndarray]]:
    """conv 3x3 + ReLU, conv 1x1, the same 1x1 conv again (a shared key),
    then a projection MatMul."""
    rng = np.random.default_rng(0)

    def init(name: str, shape: tuple[int, ...], scale: float) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(F32), name)

    inits = [
        init("w1", (32, 8, 3, 3), 0.2), init("b1", (32,), 0.1), init("w2", (32, 32, 1, 1), 0.2),
        init("w3", (32, 32, 1, 1), 0.2), init("wf", (32 * 8 * 8, 10), 0.02),
        numpy_helper.from_array(np.array([1, -1], np.int64), "shape"),
    ]  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"]),
        helper.make_node("Conv", ["c2", "w3"], ["c3"]),
        helper.make_node("Reshape", ["c3", "shape"], ["f"]),
        helper.make_node("MatMul", ["f", "wf"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return model, {"x": rng.standard_normal((1, 8, 8, 8)).astype(F32)}


def test_session_autotune(session_device, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import vknn

    model, feeds = _two_layer_net()
    calls = []
    timer = autotune.time_dispatches

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        return timer(*args, **kwargs)

    monkeypatch.setattr(autotune, "time_dispatches", counting)

    off = vknn.Session(model)
    assert off.autotune_table == {}
    assert calls == [] and off.autotune_report is None
    want = off.run(feeds)["y"]

    tuned = vknn.Session(model, vknn.Config(autotune="fast"))
    report = tuned.autotune_report
    table = tuned.autotune_table
    # Three distinct keys: two conv geometries (the twin 1x1 convs share one)
    # and the MatMul; each measured once, over its fast candidates.
    assert sorted(k.split("|")[0] for k in table) == ["vx.conv", "vx.conv", "vx.matmul"], table
    assert report.kernels == 3 and len(calls) == report.candidates >= 6
    assert all(isinstance(v, dict) and v for v in table.values())
    np.testing.assert_allclose(
        tuned.run(feeds)["y"], want, rtol=1e-4, atol=1e-4 * np.abs(want).max()
    )
    err = capsys.readouterr().err
    assert "vknn autotune (fast): 3 kernels" in err and "\r" not in err

    # A warm session: the table settles every key, nothing is measured.
    calls.clear()
    warm = vknn.Session(model, vknn.Config(autotune="fast"), autotune_table=dict(table))
    assert calls == [] and warm.autotune_table == table
    assert warm.autotune_report.reused == 3 and warm.autotune_report.kernels == 0
    np.testing.assert_allclose(warm.run(feeds)["y"], tuned.run(feeds)["y"], rtol=1e-6, atol=1e-6)

    # off ignores a given table and measures nothing.
    given = {k: dict(v) for k, v in table.items()}
    vknn.Session(model, vknn.Config(autotune="off"), autotune_table=given)
    assert calls == [] and given == table


def test_autotune_modes_are_checked() -> None:
    import vknn
    from vknn.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="autotune"):
        vknn.Config(autotune="sometimes")
    assert all(KERNELS[op].tuning is not None for op in ("vx.conv", "vx.matmul", "vx.gemm"))
