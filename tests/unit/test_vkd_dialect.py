"""The `vkd` dialect: tensor sizes, builders, verifiers, that effectful ops
survive DCE, and fallback reasons from the IR to the program."""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import (
    DenseArrayBase,
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
from xdsl.dialects.func import FuncOp, ReturnOp
from xdsl.ir import Block, Operation, Region
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.transforms.dead_code_elimination import is_trivially_dead
from xdsl.utils.exceptions import VerifyException

from vknn.dialects import make_context
from vknn.dialects.vkd import (
    NAME_ATTR,
    REASON_ATTR,
    Access,
    AllocOp,
    ArenaOp,
    BarrierOp,
    CopyOp,
    DispatchOp,
    DownloadOp,
    KernelOp,
    Layout,
    Memory,
    Precision,
    SegmentOp,
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


# --- a module built from Python ---------------------------------------------


def _module() -> tuple[ModuleOp, dict[str, Operation]]:
    """host x -> upload -> relu dispatch -> copy -> barrier -> download ->
    a CPU segment -> return; a kernel symbol; a weight in a const arena."""
    host = TensorType(f32, [1, 4, 2, 2])
    dev = T([1, 4, 2, 2], Layout.FLAT, storage=f16)
    kernel = KernelOp(
        "relu_f16",
        "unary",
        Precision.FP16,
        local_size=[64, 1, 1],
        bindings=[Access.READ, Access.WRITE],
        push_size=8,
        spec=[(1, 4)],
    )
    seg_block = Block(arg_types=[host])
    arena = ArenaOp(Memory.DEVICE, 256)
    consts = ArenaOp(Memory.CONST, 64)
    a = AllocOp(Memory.DEVICE, 32, dev, arena.result, 0)
    b = AllocOp(Memory.DEVICE, 32, dev, arena.result, 128)
    w = WeightOp(
        DenseResourceAttr.from_params("vkd_unit_w", TensorType(f16, [16])),
        T([16], Layout.FLAT, f16),
        arena=consts.result,
        offset=0,
    )
    dispatch = DispatchOp(
        "relu_f16", [a.result, b.result], ranges=[0, 32, 0, 32], push=[16, 0.5],
        groups=[1, 1, 1], step=0, label="relu0 (Relu)",
        attributes={NAME_ATTR: StringAttr("relu0")},
    )  # fmt: skip
    down = DownloadOp(b.result, host)
    seg_block.add_ops(
        [
            arena,
            consts,
            a,
            b,
            w,
            UploadOp(seg_block.args[0], a.result),
            dispatch,
            CopyOp(b.result, a.result, 16, src_offset=0, dst_offset=16),
            BarrierOp([Stage.COMPUTE, Stage.TRANSFER], [Stage.HOST], [b.result], [0, 32]),
            down,
            YieldOp(down.result),
        ]
    )
    fn = FuncOp("b0", ([host], [host]))
    x = fn.body.block.args[0]
    gpu = VulkanSegmentOp([x], [host], Region(seg_block))
    cpu_block = Block(arg_types=[host])
    cpu_block.add_op(YieldOp(cpu_block.args[0]))
    cpu = SegmentOp("cpu", [gpu.results[0]], [host], Region(cpu_block))
    fn.body.block.add_ops([gpu, cpu, ReturnOp(cpu.results[0])])
    module = ModuleOp([kernel, fn])
    ops = {"kernel": kernel, "dispatch": dispatch, "alloc": a, "weight": w, "cpu": cpu}
    return module, ops


def test_built_module_verifies_and_round_trips() -> None:
    module, _ = _module()
    module.verify()
    text = str(module)
    reparsed = Parser(make_context(), text).parse_module()
    reparsed.verify()
    assert str(reparsed) == text
    assert "push [16, 5.000000e-01] groups [1, 1, 1] step 0" in text
    assert "spec [1] = [4]" in text


def test_effectful_ops_are_not_dead() -> None:
    module, _ = _module()
    seg = next(op for op in module.walk() if isinstance(op, VulkanSegmentOp))
    for op in seg.body.block.ops:
        assert not is_trivially_dead(op), op.name


def test_dispatch_binding_count() -> None:
    module, ops = _module()
    dispatch = ops["dispatch"]
    assert isinstance(dispatch, DispatchOp)
    dispatch.operands = [dispatch.operands[0]]
    dispatch.properties["ranges"] = DenseArrayBase.from_list(i64, [0, 32])
    with pytest.raises(VerifyException, match="1 buffers for a kernel with 2 bindings"):
        module.verify()


def test_dispatch_push_size() -> None:
    module, ops = _module()
    kernel = ops["kernel"]
    assert isinstance(kernel, KernelOp)
    kernel.properties["push_size"] = IntegerAttr(12, i32)
    with pytest.raises(
        VerifyException,
        match="8 push-constant bytes for a kernel declaring 12",
    ):
        module.verify()


def test_dispatch_binding_range() -> None:
    module, ops = _module()
    dispatch = ops["dispatch"]
    assert isinstance(dispatch, DispatchOp)
    dispatch.properties["ranges"] = DenseArrayBase.from_list(i64, [0, 32, 16, 32])
    with pytest.raises(VerifyException, match=r"binding bytes \[16, 48\) are outside its 32"):
        module.verify()


def test_alloc_bounds() -> None:
    module, ops = _module()
    alloc = ops["alloc"]
    assert isinstance(alloc, AllocOp)
    alloc.properties["offset"] = IntegerAttr(240, i64)
    with pytest.raises(VerifyException, match=r"bytes \[240, 272\) are past the arena's 256"):
        module.verify()


def test_weight_needs_a_const_arena() -> None:
    module, ops = _module()
    weight = ops["weight"]
    assert isinstance(weight, WeightOp)
    arena = next(op for op in module.walk() if isinstance(op, ArenaOp))
    weight.operands = [arena.result]
    with pytest.raises(VerifyException, match="weights live in a const arena"):
        module.verify()


def test_printer_prints_enum_keywords() -> None:
    module, _ = _module()
    out = []

    class Sink:
        def write(self, s: str) -> None:
            out.append(s)

    Printer(stream=Sink()).print_op(module)
    text = "".join(out)
    assert "bindings [read, write]" in text
    assert "vkd.arena device size 256 align 16" in text
    assert "vkd.barrier [compute, transfer] to [host](%" in text
    assert 'shader "unary" fp16' in text


def test_fallback_reason_is_in_the_ir_and_the_program() -> None:
    """Why an op is not on the GPU is a `vkd.reason` on it inside its
    `vkd.segment "cpu"` (partition), and the program reports it per node."""
    from tests.unit.vulkan.harness import graph, lowered, node
    from vknn.serialize import module_to_program

    m = graph(
        [node("Softmax", ["x"], ["s"], name="sm", axis=-1), node("MatMul", ["s", "x"], ["y"])],
        {"x": ((8, 8), "float32")},
        ["y"],
    )
    module = lowered(m, "lavapipe", disable_vk_ops="Softmax", fold_gpu_islands=0)
    cpu = [op for op in module.walk() if isinstance(op, SegmentOp) and op.backend.data == "cpu"]
    reasons = [
        op.attributes[REASON_ATTR].data
        for seg in cpu
        for op in seg.body.block.ops
        if REASON_ATTR in op.attributes
    ]
    assert any("disable_vk_ops" in r for r in reasons), reasons
    nodes = {n: (b, r) for n, b, r in module_to_program(module)["buckets"][0]["nodes"]}
    assert nodes["sm"] == ("cpu", "Softmax: disabled by Config.disable_vk_ops")
    assert [b for n, (b, _) in nodes.items() if n != "sm"] == ["vulkan"]
