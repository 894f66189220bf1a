"""The `vkd` dialect: tensor sizes, builders, verifiers, and that effectful ops survive DCE."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DenseResourceAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    TensorType,
    f16,
    f32,
    i32,
    i64,
)
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.transforms.dead_code_elimination import is_trivially_dead
from xdsl.utils.exceptions import VerifyException

from vknn.dialects import make_context
from vknn.dialects.vkd import (
    REASON_ATTR,
    Access,
    AllocOp,
    ArenaOp,
    BarrierOp,
    CopyOp,
    CpuSegmentOp,
    DispatchOp,
    DownloadOp,
    InputOp,
    KernelOp,
    Layout,
    Memory,
    OutputOp,
    PlanOp,
    Precision,
    Stage,
    TensorBufferType,
    UploadOp,
    VulkanSegmentOp,
    WeightOp,
    YieldOp,
)


def T(shape, layout, element=f32, storage=None) -> TensorBufferType:  # noqa: N802
    return TensorBufferType(shape, element, layout, storage)


# --- the tensor type -------------------------------------------------------


@pytest.mark.parametrize(
    ("typ", "packed", "nbytes"),
    [
        (T([1, 3, 8, 8], Layout.NC4HW4), (1, 4, 8, 8), 1024),
        (T([1, 3, 8, 8], Layout.NC4HW4, storage=f16), (1, 4, 8, 8), 512),
        (T([2, 5], Layout.NC4HW4), (2, 8), 64),
        (T([5], Layout.NC4HW4), (8,), 32),  # rank 1: the only axis is the channel
        (T([2, 3, 5], Layout.FLAT), (2, 3, 5), 120),
        (T([], Layout.FLAT), (), 4),
        (T([1, 3], Layout.NCHW), (1, 3), 12),
        (T([7], Layout.FLAT, i64, i32), (7,), 28),
    ],
)
def test_tensor_sizes(typ: TensorBufferType, packed: tuple[int, ...], nbytes: int) -> None:
    assert typ.packed_shape() == packed
    assert typ.byte_size() == nbytes


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: T([1, 2, 3, 4, 5], Layout.NC4HW4), "nc4hw4 needs rank 1..4"),
        (lambda: T([], Layout.NC4HW4), "nc4hw4 needs rank 1..4"),
        (lambda: T([1] * 9, Layout.FLAT), "rank up to 8"),
        (lambda: T([-1, 3], Layout.FLAT), "must be static"),
        (lambda: T([4], Layout.NCHW, storage=f16), "host layout nchw"),
        (lambda: T([4], Layout.FLAT, i32, f16), "cannot store i32"),
    ],
)
def test_tensor_type_rejects(make, message: str) -> None:
    with pytest.raises(VerifyException, match=message):
        make()


def test_tensor_type_text_round_trip() -> None:
    ctx = make_context()
    for text in (
        "!vkd.tensor<1x64x56x56xf32, nc4hw4>",
        "!vkd.tensor<1x64x56x56xf32, nc4hw4, f16>",
        "!vkd.tensor<f32, flat>",
        "!vkd.tensor<3xi64, flat, i32>",
    ):
        typ = Parser(ctx, text).parse_type()
        assert isinstance(typ, TensorBufferType)
        assert str(typ) == text


# --- a plan built from Python ---------------------------------------------


def _plan() -> tuple[ModuleOp, dict[str, object]]:
    """input -> upload -> relu dispatch -> download -> cpu op -> output."""
    host = T([1, 4, 2, 2], Layout.NCHW)
    dev = T([1, 4, 2, 2], Layout.NC4HW4, storage=f16)
    kernel = KernelOp(
        "relu_f16",
        "unary",
        Precision.FP16,
        local_size=[64, 1, 1],
        bindings=[Access.READ, Access.WRITE],
        push_size=8,
        spec_ids=[0],
    )
    x = InputOp("x", host)
    y = OutputOp("y", host)
    arena = ArenaOp(Memory.DEVICE, 256)
    harena = ArenaOp(Memory.HOST, 64)
    a = AllocOp(arena.result, 0, dev)
    b = AllocOp(arena.result, 128, dev)
    h = AllocOp(harena.result, 0, host)
    w = WeightOp(
        DenseResourceAttr.from_params("vkd_unit_w", TensorType(f16, [16])),
        T([16], Layout.FLAT, f16),
        packing="flat",
    )
    dispatch = DispatchOp(
        "relu_f16", [a.result, b.result], push=[16, 0.5], spec=[4], groups=[1, 1, 1],
        query=0, node_name="relu0",
    )  # fmt: skip
    gpu = VulkanSegmentOp(
        Region(
            Block(
                [
                    UploadOp(x.result, a.result),
                    BarrierOp(Stage.HOST, Stage.COMPUTE),
                    dispatch,
                    CopyOp(b.result, a.result, 16, src_offset=0, dst_offset=16),
                    BarrierOp(Stage.COMPUTE, Stage.HOST, [b.result]),
                    DownloadOp(b.result, h.result),
                ]
            )
        ),
        queries=2,
    )
    body = Block(arg_types=[TensorType(f32, [1, 4, 2, 2])])
    body.add_op(YieldOp(body.args[0]))
    cpu = CpuSegmentOp([h.result], [y.result], Region(body))
    plan = PlanOp(
        "b0",
        {"x": [1, 4, 2, 2]},
        Region(Block([x, y, arena, harena, a, b, h, w, gpu, cpu])),
    )
    module = ModuleOp([kernel, plan])
    return module, {"kernel": kernel, "dispatch": dispatch, "alloc": a, "weight": w, "cpu": cpu}


def test_built_plan_verifies_and_round_trips() -> None:
    module, _ = _plan()
    module.verify()
    text = str(module)
    reparsed = Parser(make_context(), text).parse_module()
    reparsed.verify()
    assert str(reparsed) == text
    assert "push [16, 5.000000e-01] spec [4] groups [1, 1, 1] query 0" in text


def test_effectful_ops_are_not_dead() -> None:
    module, ops = _plan()
    seg = next(op for op in module.walk() if isinstance(op, VulkanSegmentOp))
    for op in seg.body.block.ops:
        assert not is_trivially_dead(op), op.name
    # A weight or an allocation nobody uses is only a name for bytes: DCE may drop it.
    assert is_trivially_dead(ops["weight"])


def test_dispatch_binding_count() -> None:
    module, ops = _plan()
    dispatch = ops["dispatch"]
    assert isinstance(dispatch, DispatchOp)
    dispatch.operands = [dispatch.operands[0]]
    with pytest.raises(VerifyException, match="passes 1 buffers but the kernel has 2 bindings"):
        module.verify()


def test_dispatch_push_size() -> None:
    module, ops = _plan()
    kernel = ops["kernel"]
    assert isinstance(kernel, KernelOp)
    kernel.properties["push_size"] = IntegerAttr(12, i32)
    with pytest.raises(
        VerifyException,
        match="pushes 8 bytes but the kernel's push constants are 12 bytes",
    ):
        module.verify()


def test_cpu_segment_needs_reasons() -> None:
    module, ops = _plan()
    cpu = ops["cpu"]
    assert isinstance(cpu, CpuSegmentOp)
    block = cpu.body.block
    relu = arith.MaximumfOp(block.args[0], block.args[0])
    block.insert_op_before(relu, block.first_op)
    with pytest.raises(VerifyException, match="'arith.maximumf' has no 'vkd.reason' string"):
        module.verify()
    relu.attributes[REASON_ATTR] = StringAttr("disabled by Config.disable_vk_ops")
    module.verify()


def test_alloc_bounds() -> None:
    module, ops = _plan()
    alloc = ops["alloc"]
    assert isinstance(alloc, AllocOp)
    alloc.properties["offset"] = IntegerAttr(240, i64)
    with pytest.raises(VerifyException, match=r"\[240, 272\) overruns the arena of 256 bytes"):
        module.verify()


def test_printer_prints_enum_keywords() -> None:
    module, _ = _plan()
    out = []

    class Sink:
        def write(self, s: str) -> None:
            out.append(s)

    Printer(stream=Sink()).print_op(module)
    text = "".join(out)
    assert "bindings [read, write]" in text
    assert "vkd.arena device size 256 align 16" in text
    assert "vkd.barrier compute to host %" in text
