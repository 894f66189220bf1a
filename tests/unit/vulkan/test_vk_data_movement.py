"""Vulkan data-movement, cast/select, quantization and integer kernels, and the
executor's dtype-aware storage and aliasing, against the CPU oracle on a real
driver (lavapipe here) with the validation layer on and zero messages
allowed. Data movement is exact in every dtype and precision (fp16 storage
is compared with the oracle run on fp16-rounded inputs); linear resize is
within fp32 (fp16: 1e-3)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vknn.errors import InvalidArgument
from vknn.kernels import gate
from vknn.kernels.cast_select import collapse_n
from vknn.kernels.data_movement import collapse_copy
from vknn.runtime.cpu.registry import kernel_for
from vknn.runtime.plan import NO_VALUE, Step, TensorSpec
from vknn.runtime.vulkan.caps import DeviceCaps

PRECISIONS = ["high", "low"]


# ---------------------------------------------------------------------------
# Harness
# ---------------------------------------------------------------------------


def _step(op: str, inputs: list[int], out: int, shape, dtype: str, **attrs) -> Step:  # type: ignore[no-untyped-def]
    return Step(op, f"n{out}", inputs, [out], [TensorSpec(f"t{out}", tuple(shape), dtype)], attrs)


def _fp16_view(x: np.ndarray, precision: str) -> np.ndarray:
    """What the device holds of a host float tensor (fp16 storage rounds)."""
    if precision == "low" and x.dtype.kind == "f":
        return np.clip(x, -65504, 65504).astype(np.float16).astype(x.dtype)
    return x


def _cpu(steps: list[Step], inputs: dict[int, np.ndarray], consts: dict[int, np.ndarray]):  # type: ignore[no-untyped-def]
    values: dict[int, np.ndarray] = {**inputs, **consts}
    for st in steps:
        kernel = kernel_for(st.op)
        assert kernel is not None
        outs = kernel(st, [values[s] if s != NO_VALUE else None for s in st.inputs])
        values.update(zip(st.outputs, outs, strict=True))
    return values


def check(  # type: ignore[no-untyped-def]
    dev,
    steps: list[Step],
    inputs: dict[int, np.ndarray],
    consts: dict[int, np.ndarray] | None = None,
    precision: str = "high",
    atol: float = 0.0,
    outputs: list[int] | None = None,
):
    """Run `steps` on Vulkan and on the CPU (inputs/constants rounded as the
    device stores them) and compare every output; returns the executor stats."""
    from vknn.runtime.vulkan.executor import VulkanExecutor

    consts = consts or {}
    outputs = outputs or [steps[-1].outputs[0]]
    specs = {s: TensorSpec(f"in{s}", a.shape, a.dtype.name) for s, a in inputs.items()}
    for st in steps:
        assert gate(st, dev.caps, None) is None, gate(st, dev.caps, None)
    with VulkanExecutor(dev, steps, specs, outputs, consts, precision=precision) as ex:
        got = ex.run(inputs)
        stats = ex.stats
    ref = _cpu(
        steps,
        {s: _fp16_view(a, precision) for s, a in inputs.items()},
        {s: _fp16_view(a, precision) for s, a in consts.items()},
    )
    for s in outputs:
        want = _fp16_view(ref[s], precision)
        assert got[s].dtype == want.dtype and got[s].shape == want.shape, (got[s].dtype, want.dtype)
        if atol:
            np.testing.assert_allclose(got[s].astype(np.float64), want, rtol=atol, atol=atol)
        else:
            np.testing.assert_array_equal(got[s], want)
    return stats


def _rand(shape, dtype: str, seed: int = 0) -> np.ndarray:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(np.dtype(dtype))
        lo, hi = max(info.min, -1000), min(info.max, 1000)
        return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    return (rng.standard_normal(shape) * 3).astype(dtype)


DTYPES = ["float32", "float16", "int64", "int32", "int8", "uint8", "bool"]


# ---------------------------------------------------------------------------
# Pure parts
# ---------------------------------------------------------------------------


def test_collapse_copy_and_broadcast() -> None:
    assert collapse_copy([2, 3, 4], [12, 4, 1], [12, 4, 1]) == ([], [], [])
    # A transpose (0, 2, 1) of [2, 3, 4]: the leading dim merges nowhere.
    assert collapse_copy([2, 4, 3], [12, 1, 4], [12, 3, 1]) == ([2, 4, 3], [12, 1, 4], [12, 3, 1])
    assert collapse_copy([1, 5, 1], [5, 1, 1], [5, 1, 1]) == ([], [], [])
    dims, st = collapse_n((2, 3, 4), [(2, 3, 4), (3, 1), ()])
    assert dims == [2, 3, 4] and st == [[12, 4, 1], [0, 1, 0], [0, 0, 0]]
    assert collapse_n((2, 3), [(2, 3), (2, 3)]) == ([], [[], []])


def test_gates_refuse_with_reasons() -> None:
    caps = DeviceCaps.lavapipe_like()
    big = _step("vx.transpose", [0], 1, (8, 1 << 20), "float32", perm=(1, 0))
    spec = TensorSpec("x", (1 << 20, 8), "float32")
    why = gate(big, caps.with_(max_storage_buffer_range=1 << 20), [spec])
    assert why is not None and "maxStorageBufferRange" in why and why.startswith("Transpose: ")
    why = gate(_step("vx.transpose", [0], 1, (2, 2), "float64", perm=(1, 0)), caps)
    assert why is not None and "float64" in why
    cubic = _step(
        "vx.resize", [0], 1, (1, 1, 4, 4), "float32", mode="cubic", scales=(1, 1, 2, 2),
        coordinate_mode="half_pixel", nearest_mode="floor", cubic_coeff_a=-0.75,
        exclude_outside=False,
    )  # fmt: skip
    assert "cubic" in (gate(cubic, caps) or "")
    assert gate(_step("vx.unary", [0], 1, (4,), "int32", kind="exp"), caps, [
        TensorSpec("x", (4,), "int32")
    ]) is not None  # fmt: skip
    assert gate(_step("vx.reshape", [0], 1, (4,), "uint32"), caps) is not None


# ---------------------------------------------------------------------------
# Data movement
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_transpose(clean, dtype: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    cases = [
        ((5,), (0,)),
        ((3, 4), (1, 0)),
        ((2, 3, 4), (2, 0, 1)),
        ((1, 8, 2, 5), (0, 2, 3, 1)),
        ((2, 3, 1, 4, 2), (4, 3, 2, 1, 0)),
        ((2, 1, 3, 2, 2, 3), (0, 1, 4, 2, 5, 3)),  # depth-to-space's permutation
    ]
    for i, (shape, perm) in enumerate(cases):
        out = tuple(shape[p] for p in perm)
        st = _step("vx.transpose", [0], 1, out, dtype, perm=perm)
        check(clean, [st], {0: _rand(shape, dtype, i)}, precision=precision)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_slice_with_negative_steps(clean, dtype: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    x = _rand((4, 6, 5), dtype)
    cases = [
        ((0, 1, 0), (4, 5, 5), (1, 2, 1)),
        ((3, 5, 4), (-1, -1, -1), (-1, -2, -1)),  # full reverse (end -1: through 0)
        ((2, 0, 1), (0, 6, 5), (-1, 3, 2)),
        ((1, 2, 3), (2, 3, 4), (1, 1, 1)),
    ]
    for starts, ends, steps in cases:
        shape = tuple(-(-(e - s) // k) for s, e, k in zip(starts, ends, steps, strict=True))
        st = _step("vx.slice", [0], 1, shape, dtype, starts=starts, ends=ends, steps=steps)
        check(clean, [st], {0: x}, precision=precision)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_concat_copy_and_in_place(clean, dtype: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    # Interleaved parts (axis 2 of batch 2): copies.
    a, b = _rand((2, 3, 4), dtype, 1), _rand((2, 3, 2), dtype, 2)
    st = _step("vx.concat", [0, 1], 2, (2, 3, 6), dtype, axis=2)
    check(clean, [st], {0: a, 1: b}, precision=precision)
    # Axis 0 and a constant part.
    st = _step("vx.concat", [0, 5], 2, (4, 3, 4), dtype, axis=0)
    check(clean, [st], {0: a}, {5: _rand((2, 3, 4), dtype, 3)}, precision=precision)
    # Batch-1 channel concat of values the segment computes: they are placed.
    x = _rand((1, 4, 2, 2), dtype, 4)
    kind = "identity" if dtype != "bool" else "not"
    steps = [
        _step("vx.unary", [0], 1, (1, 4, 2, 2), dtype, kind=kind),
        _step("vx.unary", [0], 2, (1, 4, 2, 2), dtype, kind=kind),
        _step("vx.concat", [1, 0, 2], 3, (1, 12, 2, 2), dtype, axis=1),
    ]
    if dtype in ("float32", "float16"):
        steps[1].attrs["kind"] = "neg"
    stats = check(clean, steps, {0: x}, precision=precision)
    assert stats.aliased == 2  # slots 1 and 2; the graph input 0 is copied


@pytest.mark.parametrize("precision", PRECISIONS)
def test_concat_in_place_chain_and_shared_input(clean, precision: str) -> None:  # type: ignore[no-untyped-def]
    """DenseNet's pattern: every layer's output feeds every later concat; each
    value is placed in its first concat and copied into the later ones."""
    shape = (1, 2, 2, 2)  # 32-byte parts: every offset may start a binding
    x = _rand(shape, "float32")
    steps = [_step("vx.unary", [0], 1, shape, "float32", kind="relu")]
    feats, slot, c = [1], 2, 2
    for layer in range(3):
        cat = (1, 2 * len(feats), 2, 2)
        steps.append(_step("vx.concat", list(feats), slot, cat, "float32", axis=1))
        steps.append(_step("vx.unary", [slot], slot + 1, cat, "float32", kind="tanh"))
        steps.append(
            _step("vx.slice", [slot + 1], slot + 2, shape, "float32",
                  starts=(0, layer % 2, 0, 0), ends=(1, layer % 2 + 2, 2, 2), steps=(1, 1, 1, 1))
        )  # fmt: skip
        feats.append(slot + 2)
        slot += 3
        c += 2
    steps.append(
        _step("vx.concat", list(feats), slot, (1, 2 * len(feats), 2, 2), "float32", axis=1)
    )
    stats = check(
        clean, steps, {0: x}, precision=precision, atol=1e-6 if precision == "high" else 2e-3
    )
    assert stats.aliased == 4


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "uint8"])
@pytest.mark.parametrize("idx_dtype", ["int64", "int32"])
def test_gather_any_axis_negative_indices(
    clean, dtype: str, idx_dtype: str, precision: str
) -> None:  # type: ignore[no-untyped-def]
    x = _rand((3, 4, 5), dtype)
    for axis in range(3):
        dim = x.shape[axis]
        for ishape in [(), (2,), (2, 3)]:
            idx = np.random.default_rng(axis).integers(-dim, dim, ishape).astype(idx_dtype)
            out = x.shape[:axis] + ishape + x.shape[axis + 1 :]
            st = _step("vx.gather", [0, 1], 2, out, dtype, axis=axis)
            check(clean, [st], {0: x, 1: idx}, precision=precision)
    # Constant indices, the common case (embedding lookups, shape paths).
    st = _step("vx.gather", [0, 7], 2, (3, 2, 5), dtype, axis=1)
    check(clean, [st], {0: x}, {7: np.array([-1, 2], idx_dtype)}, precision=precision)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
def test_expand(clean, dtype: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    for shape, out in [((3, 1), (2, 3, 4)), ((1,), (5,)), ((2, 1, 3), (2, 4, 3)), ((), (2, 2))]:
        st = _step("vx.expand", [0], 1, out, dtype)
        check(clean, [st], {0: _rand(shape, dtype)}, precision=precision)


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("mode", ["constant", "reflect", "edge", "wrap"])
def test_pad(clean, mode: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    for dtype in ["float32", "int64"]:
        x = _rand((1, 2, 4, 5), dtype)
        for pads in [
            (0, 0, 1, 2, 0, 0, 2, 1),
            (0, 1, 5, 0, 0, 0, 0, 7),
            (0, 0, -1, 2, 0, 0, 1, -2),
        ]:
            out = tuple(d + pads[i] + pads[4 + i] for i, d in enumerate(x.shape))
            attrs = {"mode": mode, "pads": pads}
            if mode == "constant":
                attrs["value"] = 1.5 if dtype == "float32" else 7.0
            st = _step("vx.pad", [0], 1, out, dtype, **attrs)
            check(clean, [st], {0: x}, precision=precision)


RESIZE_COORDS = [
    "half_pixel",
    "pytorch_half_pixel",
    "align_corners",
    "asymmetric",
    "half_pixel_symmetric",
]


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("coord", RESIZE_COORDS)
def test_resize(clean, coord: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    x = _rand((1, 2, 5, 6), "float32")
    for scales in [(1.0, 1.0, 2.0, 2.0), (1.0, 1.0, 0.6, 1.5), (1.0, 1.0, 3.0, 0.5)]:
        out = tuple(int(np.floor(d * s + 1e-4)) for d, s in zip(x.shape, scales, strict=True))
        base = dict(
            scales=scales, coordinate_mode=coord, cubic_coeff_a=-0.75, exclude_outside=False
        )
        for nearest in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
            st = _step(
                "vx.resize", [0], 1, out, "float32", mode="nearest", nearest_mode=nearest, **base
            )
            check(clean, [st], {0: x}, precision=precision)
        st = _step("vx.resize", [0], 1, out, "float32", mode="linear", nearest_mode="floor", **base)
        check(clean, [st], {0: x}, precision=precision, atol=1e-5 if precision == "high" else 2e-3)
    # Nearest on integers: raw words.
    xi = _rand((1, 1, 3, 3), "int64")
    st = _step(
        "vx.resize", [0], 1, (1, 1, 6, 6), "int64", mode="nearest", nearest_mode="floor",
        scales=(1.0, 1.0, 2.0, 2.0), coordinate_mode=coord, cubic_coeff_a=-0.75,
        exclude_outside=False,
    )  # fmt: skip
    check(clean, [st], {0: xi}, precision=precision)


# ---------------------------------------------------------------------------
# Cast, select, integer ops, quantization
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("src", ["float32", "float16", "int64", "int32", "int8", "uint8", "bool"])
def test_cast_matrix(clean, src: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    x = _rand((3, 7), src, 5)
    if src.startswith("float"):
        x[0, :4] = np.array([0.0, -0.0, 2.5, -2.5], src)  # bool of zero, truncation
        x = np.clip(x, -100, 100).astype(src)
    for dst in ["float32", "float16", "int64", "int32", "int8", "uint8", "bool"]:
        if src.startswith("float") and dst in ("uint8",):
            x_in = np.abs(x)  # negative float -> unsigned is undefined in C
        else:
            x_in = x
        st = _step("vx.cast", [0], 1, x.shape, dst)
        check(clean, [st], {0: x_in}, precision=precision)


def test_cast_to_float16_in_fp32_storage_rounds_like_numpy(clean) -> None:  # type: ignore[no-untyped-def]
    # Ties to even, subnormals, and overflow to inf as numpy's astype.
    x = np.array(
        [1 + 2**-11, 1 + 3 * 2**-11, 65519.0, 65520.0, 1e6, -1e6, 2**-25, 3 * 2**-25, 1e-8, np.nan],
        np.float32,
    )
    st = _step("vx.cast", [0], 1, x.shape, "float16")
    check(clean, [st], {0: x}, precision="high")


@pytest.mark.parametrize("precision", PRECISIONS)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_select_broadcasts(clean, dtype: str, precision: str) -> None:  # type: ignore[no-untyped-def]
    for sc, sx, sy in [
        ((2, 3), (2, 3), (2, 3)),
        ((3, 1), (1, 4), ()),
        ((2, 1, 4), (3, 1), (2, 3, 4)),
    ]:
        out = np.broadcast_shapes(sc, sx, sy)
        st = _step("vx.select", [0, 1, 2], 3, out, dtype)
        inputs = {0: _rand(sc, "bool", 1), 1: _rand(sx, dtype, 2), 2: _rand(sy, dtype, 3)}
        check(clean, [st], inputs, precision=precision)


INT_KINDS = ["add", "sub", "mul", "div", "mod", "max", "min"]
CMP_KINDS = ["equal", "less", "less_equal", "greater", "greater_equal"]


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8"])
def test_integer_binary(clean, dtype: str) -> None:  # type: ignore[no-untyped-def]
    a, b = _rand((3, 4), dtype, 1), _rand((4,), dtype, 2)
    b[0] = 0  # div/mod by zero give 0
    if np.dtype(dtype).kind == "u":
        b[1] = 3
    for kind in INT_KINDS:
        st = _step("vx.binary", [0, 1], 2, (3, 4), dtype, kind=kind)
        check(clean, [st], {0: a, 1: b})
    for kind in CMP_KINDS:
        st = _step("vx.binary", [0, 1], 2, (3, 4), "bool", kind=kind)
        check(clean, [st], {0: a, 1: b})
    if dtype == "uint8":
        for kind in ["shift_left", "shift_right"]:
            sh = np.array([0, 1, 7, 9], np.uint8)
            st = _step("vx.binary", [0, 1], 2, (3, 4), dtype, kind=kind)
            check(clean, [st], {0: a, 1: sh})


@pytest.mark.parametrize("precision", PRECISIONS)
def test_float_comparisons_and_logic(clean, precision: str) -> None:  # type: ignore[no-untyped-def]
    a = _rand((2, 3, 4), "float32", 1)
    b = np.round(_rand((3, 1), "float32", 2))
    a[0, 0, :2] = [np.nan, b[0, 0]]
    for kind in CMP_KINDS:
        st = _step("vx.binary", [0, 1], 2, (2, 3, 4), "bool", kind=kind)
        check(clean, [st], {0: a, 1: b}, precision=precision)
    p, q = _rand((2, 3), "bool", 3), _rand((3,), "bool", 4)
    for kind in ["and", "or", "xor"]:
        st = _step("vx.binary", [0, 1], 2, (2, 3), "bool", kind=kind)
        check(clean, [st], {0: p, 1: q})
    check(clean, [_step("vx.unary", [0], 1, (2, 3), "bool", kind="not")], {0: p})
    x = _rand((9,), "int64", 5)
    for kind in ["abs", "neg", "relu", "sign", "identity"]:
        check(clean, [_step("vx.unary", [0], 1, (9,), "int64", kind=kind)], {0: x})


@pytest.mark.parametrize("qtype", ["int8", "uint8", "int32"])
@pytest.mark.parametrize("per_axis", [False, True])
@pytest.mark.parametrize("zp", [False, True])
def test_quantize_dequantize(clean, qtype: str, per_axis: bool, zp: bool) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((2, 3, 4)) * 40).astype(np.float32)
    scale = np.array([0.5, 0.25, 2.0], np.float32) if per_axis else np.array(0.5, np.float32)
    # Exact ties (k + 0.5) * scale: round half to even decides them.
    x[0, :, 0] = np.float32(2.5) * (scale if per_axis else np.full(3, scale))
    x[0, :, 1] = np.float32(-3.5) * (scale if per_axis else np.full(3, scale))
    x[1, 0, :] = [1e9, -1e9, 300.0, -300.0]  # saturation
    shape = scale.shape
    consts = {5: scale}
    ins = [0, 5]
    if zp:
        lo = 0 if qtype == "uint8" else -3
        consts[6] = np.full(shape, lo + 10, qtype)
        ins.append(6)
    else:
        ins.append(NO_VALUE)
    axis = 1
    q = _step("vx.quantize", ins, 1, x.shape, qtype, axis=axis)
    check(clean, [q], {0: x}, consts)
    xi = _rand(x.shape, qtype, 3)
    d = _step("vx.dequantize", [0, *ins[1:]], 1, x.shape, "float32", axis=axis)
    check(clean, [d], {0: xi}, consts)


# ---------------------------------------------------------------------------
# Executor: aliasing, dtype-aware storage
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("precision", PRECISIONS)
def test_reshape_aliases_and_extends_live_range(clean, precision: str) -> None:  # type: ignore[no-untyped-def]
    """reshape -> relu -> reshape -> convert_layout, plus a reshape of the input
    read last and one of a constant: no dispatch for the aliases, and the
    aliased memory stays valid until the alias's last reader."""
    x = _rand((2, 3, 4), "float32")
    c = _rand((6,), "float32", 9)
    steps = [
        _step("vx.reshape", [0], 1, (6, 4), "float32"),
        _step("vx.unary", [1], 2, (6, 4), "float32", kind="relu"),
        _step("vx.reshape", [2], 3, (24,), "float32"),
        _step("vx.convert_layout", [3], 4, (24,), "float32", **{"from": "flat", "to": "nc4hw4"}),
        _step("vx.unary", [4], 5, (24,), "float32", kind="neg"),
        _step("vx.unary", [5], 6, (24,), "float32", kind="tanh"),
        _step("vx.reshape", [20], 7, (6, 1), "float32"),
        _step("vx.binary", [1, 7], 8, (6, 4), "float32", kind="add"),
    ]
    stats = check(
        clean, steps, {0: x}, {20: c}, precision=precision, outputs=[3, 6, 8],
        atol=1e-6 if precision == "high" else 2e-3,
    )  # fmt: skip
    assert stats.aliased == 4 and stats.dispatches == 4


def test_int64_out_of_range_is_a_clear_error(clean) -> None:  # type: ignore[no-untyped-def]
    from vknn.runtime.vulkan.executor import VulkanExecutor

    st = _step("vx.transpose", [0], 1, (2, 1), "int64", perm=(1, 0))
    with VulkanExecutor(clean, [st], {0: TensorSpec("ids", (1, 2), "int64")}, [1]) as ex:
        with pytest.raises(InvalidArgument, match="input ids: int64 values outside the int32"):
            ex.run({0: np.array([[1, 1 << 40]], np.int64)})
        np.testing.assert_array_equal(ex.run({0: np.array([[-5, 7]])})[1], [[-5], [7]])


def test_mixed_dtypes_in_fp16_executor_and_staging(clean) -> None:  # type: ignore[no-untyped-def]
    """An fp16 executor holds int words next to fp16 floats; staging copies
    and split dispatches give the same bytes."""
    caps = dataclasses.replace(clean.caps, max_compute_work_group_count=(2, 65535, 65535))
    from vknn.runtime.vulkan.executor import VulkanExecutor

    x = _rand((3, 400), "float32")
    ids = np.array([2, -1, 0, 1], np.int64)
    steps = [
        _step("vx.gather", [0, 1], 2, (4, 400), "float32", axis=0),
        _step("vx.cast", [2], 3, (4, 400), "int32"),
        _step("vx.binary", [3, 10], 4, (4, 400), "bool", kind="greater"),
        _step("vx.select", [4, 2, 11], 5, (4, 400), "float32"),
    ]
    consts = {10: np.array(0, np.int32), 11: np.array(-1.0, np.float32)}
    specs = {0: TensorSpec("x", x.shape, "float32"), 1: TensorSpec("ids", (4,), "int64")}
    ref = _cpu(steps, {0: _fp16_view(x, "low"), 1: ids}, consts)
    for staging in (False, True):
        with VulkanExecutor(
            clean, steps, specs, [3, 5], consts, precision="low", caps=caps, staging=staging
        ) as ex:
            got = ex.run({0: x, 1: ids})
        np.testing.assert_array_equal(got[3], ref[3])
        np.testing.assert_array_equal(got[5], _fp16_view(ref[5], "low"))


@pytest.mark.parametrize("shape", [(1, 3, 4, 4), (2, 5)])
def test_every_movement_op_validates_clean_in_one_segment(clean, shape) -> None:  # type: ignore[no-untyped-def]
    """A chain of movement ops in one command buffer: barriers between them
    (synchronization validation is on) and an exact result."""
    x = _rand(shape, "float32")
    r = len(shape)
    perm = tuple(reversed(range(r)))
    t_shape = tuple(shape[p] for p in perm)
    steps = [
        _step("vx.transpose", [0], 1, t_shape, "float32", perm=perm),
        _step("vx.pad", [1], 2, tuple(d + 2 for d in t_shape), "float32",
              mode="reflect", pads=(1,) * (2 * r)),
        _step("vx.slice", [2], 3, t_shape, "float32", starts=(1,) * r,
              ends=tuple(d + 1 for d in t_shape), steps=(1,) * r),
        _step("vx.transpose", [3], 4, shape, "float32", perm=perm),
        _step("vx.binary", [4, 0], 5, shape, "float32", kind="sub"),
    ]  # fmt: skip
    check(clean, steps, {0: x}, outputs=[5])


# ---------------------------------------------------------------------------
# Whole light models through vknn.Session (precision high: with random
# weights ShuffleNet's activations reach 2.7e6, past fp16's range)
# ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["shufflenet", "inception_v1", "densenet121"])
def test_light_model_on_vulkan_matches_cpu(name: str) -> None:
    import vknn
    from tests.unit.models import cosine_and_error, light_model, model_inputs
    from vknn.runtime.vulkan.context import shared_device

    dev, _, why = shared_device()
    if dev is None:
        pytest.skip(f"no Vulkan device: {why}")
    start = len(dev.messages)
    model = light_model(f"light_{name}.onnx")
    feeds = model_inputs(model, {})
    want = vknn.Session(model, vknn.Config(backends=("cpu",))).run(feeds)
    sess = vknn.Session(model)
    got = sess.run(feeds)
    fallbacks = sess.fallback_reasons()
    print(f"{name}: {len(fallbacks)} node(s) on the CPU: {fallbacks}")
    for k, ref in want.items():
        cos, err, peak = cosine_and_error(ref, got[k])
        assert cos > 0.99999 and err <= 1e-4 * max(peak, 1.0), (k, cos, err, peak)
    assert not fallbacks
    # Every data-movement op of these models ran without a copy or a dispatch
    # where it could: reshapes and placed concat inputs share memory.
    aliased = sum(ex.stats.aliased for ex in sess._bucket.executors.values())  # type: ignore[union-attr]
    assert aliased > 0
    assert dev.messages[start:] == []
