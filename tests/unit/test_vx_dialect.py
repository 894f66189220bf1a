"""The `vx` dialect: shape rules, descriptors, and ops built from Python."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, TensorType, f32, i1, i64
from xdsl.utils.exceptions import VerifyException

from vknn.dialects import vx
from vknn.ir.constants import from_numpy
from vknn.transforms.convert_onnx_to_vx import normalize_slice

ALL_OPS = list(vx.VX.operations)


@pytest.mark.parametrize("op", ALL_OPS, ids=lambda c: c.name)
def test_every_op_has_a_descriptor(op: type) -> None:
    assert op.LAYOUT_CLASS in ("nc4hw4", "flat", "any")
    assert isinstance(op.POINTWISE, bool)
    assert isinstance(op.HOSTS_EPILOGUE, bool)


def test_descriptor_roles() -> None:
    hosts = {op.name for op in ALL_OPS if op.HOSTS_EPILOGUE}
    assert {"vx.conv", "vx.matmul", "vx.gemm", "vx.pool", "vx.reduce"} <= hosts
    pointwise = {op.name for op in ALL_OPS if op.POINTWISE}
    assert {"vx.unary", "vx.binary", "vx.select", "vx.cast"} <= pointwise
    assert not hosts & pointwise
    assert vx.ConvOp.LAYOUT_CLASS == "nc4hw4"
    assert vx.SoftmaxOp.LAYOUT_CLASS == "flat"
    assert vx.UnaryOp.LAYOUT_CLASS == "any"


def test_graph_ops_are_all_but_the_terminator() -> None:
    assert set(ALL_OPS) == {*vx.GRAPH_OPS, vx.YieldOp}


def test_conv_shape_rule() -> None:
    # ResNet stem: 7x7 stride 2 pad 3 on 224 -> 112.
    stem = vx.ConvOp.infer_shape((1, 3, 224, 224), (64, 3, 7, 7), (2, 2), (3, 3, 3, 3), (1, 1))
    assert stem == (1, 64, 112, 112)
    # Dilation widens the window; asymmetric pads count separately.
    assert vx.ConvOp.infer_shape((1, 1, 10), (2, 1, 3), (1,), (0, 1), (2,)) == (1, 2, 7)
    # A dynamic batch stays dynamic, the rest is decided.
    assert vx.ConvOp.infer_shape(
        (vx.DYNAMIC, 3, 8, 8), (4, 3, 3, 3), (1, 1), (0, 0, 0, 0), (1, 1)
    ) == (vx.DYNAMIC, 4, 6, 6)


def test_conv_transpose_shape_rule() -> None:
    shape = vx.ConvTransposeOp.infer_shape(
        (1, 8, 4, 4), (8, 2, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), (1, 1), 2
    )
    assert shape == (1, 4, 8, 8)


@pytest.mark.parametrize(
    ("size", "kernel", "stride", "pads", "ceil", "expected"),
    [
        (112, 3, 2, (1, 1), False, 56),
        (112, 3, 2, (0, 0), True, 56),  # 55.5 rounds up
        (2, 2, 2, (0, 1), True, 1),  # no window may start in the end padding
        (7, 7, 1, (0, 0), False, 1),
    ],
)
def test_pool_shape_rule(size, kernel, stride, pads, ceil, expected) -> None:
    shape = vx.PoolOp.infer_shape((1, 1, size), (kernel,), (stride,), pads, (1,), ceil)
    assert shape == (1, 1, expected)


def test_matmul_and_gemm_shape_rules() -> None:
    assert vx.MatMulOp.infer_shape((2, 1, 4, 8), (3, 8, 5)) == (2, 3, 4, 5)
    with pytest.raises(ValueError, match="contracting"):
        vx.MatMulOp.infer_shape((4, 8), (7, 5))
    assert vx.GemmOp.infer_shape((8, 4), (6, 8), True, True) == (4, 6)


def test_broadcasting() -> None:
    assert vx.broadcast_shapes((2, 1, 3), (4, 1), ()) == (2, 4, 3)
    assert vx.broadcast_shapes((vx.DYNAMIC, 3), (1, 3)) == (vx.DYNAMIC, 3)
    assert vx.broadcast_shapes((vx.DYNAMIC, 3), (5, 3)) == (5, 3)
    with pytest.raises(ValueError, match="do not broadcast"):
        vx.broadcast_shapes((2, 3), (4, 3))
    assert vx.broadcasts_to((3, 1), (2, 3, 4))
    assert not vx.broadcasts_to((2, 3, 4), (3, 4))


def test_data_movement_shape_rules() -> None:
    assert vx.TransposeOp.infer_shape((2, 3, 4), (2, 0, 1)) == (4, 2, 3)
    assert vx.ConcatOp.infer_shape([(1, 2, 3), (1, 5, 3)], 1) == (1, 7, 3)
    assert vx.GatherOp.infer_shape((5, 6, 7), (2, 3), 1) == (5, 2, 3, 7)
    assert vx.ReduceOp.infer_shape((2, 3, 4), (0, 2), False) == (3,)
    assert vx.ReduceOp.infer_shape((2, 3, 4), (0, 2), True) == (1, 3, 1)
    assert vx.PadOp.infer_shape((2, 3), (0, 1, 1, -1)) == (3, 3)
    # Scales derived from sizes (7/3 in f32) still give the size.
    third = float(np.float32(7 / 3))
    assert vx.ResizeOp.infer_shape((1, 1, 3, 3), (1.0, 1.0, third, 2.0)) == (1, 1, 7, 6)


@pytest.mark.parametrize(
    ("start", "end", "step"),
    list(itertools.product([-7, -3, -1, 0, 2, 5, 9], [-9, -4, -1, 0, 3, 5, 2**62], [-3, -1, 1, 2])),
)
def test_slice_rule_matches_numpy(start: int, end: int, step: int) -> None:
    data = np.arange(5 * 2).reshape(5, 2)
    if step < 0 and start < -len(data):
        pytest.skip("ONNX clamps this start to 0 where numpy gives empty (see below)")
    starts, ends, steps = normalize_slice(data.shape, [start], [end], [0], [step])
    got = vx.SliceOp.infer_shape(data.shape, starts, ends, steps)
    assert got == data[start:end:step].shape
    # The normalized form reproduces the same elements.
    s, e, st = starts[0], ends[0], steps[0]
    idx = list(range(s, e, st))
    assert data[idx].tolist() == data[start:end:step].tolist()


def test_slice_negative_step_clamps_start_like_onnxruntime() -> None:
    # ONNX (and onnxruntime) clamp a negative-step start into [0, dim - 1]:
    # x[-7:-9:-1] on 5 rows is row 0, where numpy slicing is empty.
    starts, ends, steps = normalize_slice((5, 2), [-7], [-9], [0], [-1])
    assert (starts[0], ends[0], steps[0]) == (0, -1, -1)
    assert vx.SliceOp.infer_shape((5, 2), starts, ends, steps) == (1, 2)


def _i64s(*v: int) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, v)


def test_ops_built_in_python_verify() -> None:
    w = vx.ConstantOp(from_numpy(np.ones((4, 3, 3, 3), np.float32), "w"))
    x = vx.ConstantOp(from_numpy(np.ones((1, 3, 8, 8), np.float32), "x"))
    conv = vx.ConvOp.create(
        operands=[x.output, w.output],
        result_types=[TensorType(f32, [1, 4, 8, 8])],
        properties={
            "strides": _i64s(1, 1),
            "pads": _i64s(1, 1, 1, 1),
            "dilations": _i64s(1, 1),
            "group": IntegerAttr(1, i64),
        },
    )
    for op in (w, x, conv):
        op.verify()
    relu = vx.UnaryOp.create(
        operands=[conv.results[0]],
        result_types=[conv.results[0].type],
        properties={"kind": vx.UnaryKindAttr(vx.UnaryKind.RELU)},
    )
    relu.verify()
    bad = vx.ConvOp.create(
        operands=[x.output, w.output],
        result_types=[TensorType(f32, [1, 4, 6, 6])],
        properties=dict(conv.properties),
    )
    with pytest.raises(VerifyException, match="does not match the shape rule"):
        bad.verify()


def test_comparison_gives_i1() -> None:
    a = vx.ConstantOp(from_numpy(np.zeros((2, 3), np.float32), "a"))
    cmp = vx.BinaryOp.create(
        operands=[a.output, a.output],
        result_types=[TensorType(i1, [2, 3])],
        properties={"kind": vx.BinaryKindAttr(vx.BinaryKind.LESS)},
    )
    cmp.verify()


def test_unary_params_table_covers_parameterized_kinds() -> None:
    for kind, names in vx.UNARY_PARAMS.items():
        assert kind in vx.UnaryKind and names
