"""The `vkd` dialect: what the runtime executes, one Vulkan dispatch at a time.

`vkd` is the last IR before serialization. A module holds `vkd.kernel`
declarations (one per compiled shader variant, shared by all plans) and one
`vkd.plan` per plan bucket. A plan lists, in execution order:

    vkd.input / vkd.output      graph boundary tensors, host NCHW, by name
    vkd.arena                   one block of memory (device or host), sized by the planner
    vkd.alloc                   a tensor at a byte offset in an arena
    vkd.weight                  a constant tensor, prepacked bytes in a dense_resource
    vkd.vulkan_segment          uploads, dispatches, barriers, copies, downloads:
                                recorded once into one command buffer
    vkd.cpu_segment             graph ops (`vx.*`, `onnx.*`) run by the CPU backend on
                                host NCHW tensors, each carrying its fallback reason

Tensors are buffers, not values: a dispatch writes into one of its binding
operands, so order inside a segment is meaningful and these ops have effects.
None of the effectful ops is `Pure` (the greedy rewriter would erase them).

Every number the runtime needs is an attribute (offsets, sizes, push-constant
words, specialization constants, group counts, query slots), so a serializer
can walk this IR into plain data; the runtime never imports xDSL.

This module only defines IR and checks it; it does not lower, plan or
serialize anything, and it must not depend on the runtime.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from enum import StrEnum
from typing import cast

from xdsl.dialects.builtin import (
    I32,
    I64,
    AnyFloat,
    ArrayAttr,
    DenseArrayBase,
    DenseResourceAttr,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    FloatAttr,
    IntAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    f32,
    i32,
    i64,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    AttrSizedOperandSegments,
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    param_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    irdl_custom_directive,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    ConstantLike,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    Pure,
    SymbolOpInterface,
    SymbolTable,
)
from xdsl.utils.exceptions import VerifyException

REASON_ATTR = "vkd.reason"
"""Op attribute on each op of a `vkd.cpu_segment`: why it is not on the GPU."""
NAME_ATTR = "onnx.name"
"""Op attribute on a `vkd.dispatch`: the ONNX node(s) it computes, for the profiler."""

MAX_RANK_NC4HW4 = 4
MAX_RANK_FLAT = 8
MIN_ALIGNMENT = 16
"""Arena offsets are at least this aligned: vec4 loads of fp32 need 16 bytes."""


# ---------------------------------------------------------------------------
# Enumerations
# ---------------------------------------------------------------------------


class Layout(StrEnum):
    """How a tensor's elements are arranged in its buffer."""

    NC4HW4 = "nc4hw4"
    """Device: channels packed in blocks of 4 (the channel axis padded to 4)."""
    FLAT = "flat"
    """Device: plain row-major, any rank up to 8."""
    NCHW = "nchw"
    """Host: plain row-major in the logical element type, the hand-off format
    between segments, the CPU backend and the user."""

    @property
    def is_host(self) -> bool:
        return self is Layout.NCHW


class Precision(StrEnum):
    """A kernel variant's storage type for float buffers (arithmetic is fp32)."""

    FP32 = "fp32"
    FP16 = "fp16"


class Access(StrEnum):
    """How a kernel uses one of its buffer bindings."""

    READ = "read"
    WRITE = "write"
    READ_WRITE = "read_write"

    @property
    def writes(self) -> bool:
        return self is not Access.READ


class Stage(StrEnum):
    """One side of a `vkd.barrier`: who wrote (source) or who will read (destination)."""

    COMPUTE = "compute"
    TRANSFER = "transfer"
    HOST = "host"


class Memory(StrEnum):
    """Where an arena lives."""

    DEVICE = "device"
    HOST = "host"


@irdl_attr_definition
class LayoutAttr(EnumAttribute[Layout], SpacedOpaqueSyntaxAttribute):
    name = "vkd.layout"


@irdl_attr_definition
class PrecisionAttr(EnumAttribute[Precision], SpacedOpaqueSyntaxAttribute):
    name = "vkd.precision"


@irdl_attr_definition
class AccessAttr(EnumAttribute[Access], SpacedOpaqueSyntaxAttribute):
    name = "vkd.access"


@irdl_attr_definition
class StageAttr(EnumAttribute[Stage], SpacedOpaqueSyntaxAttribute):
    name = "vkd.stage"


@irdl_attr_definition
class MemoryAttr(EnumAttribute[Memory], SpacedOpaqueSyntaxAttribute):
    name = "vkd.memory"


# ---------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------

_DEVICE_FLOAT_STORAGE = (Float32Type, Float16Type)


def _element_bytes(t: Attribute) -> int:
    if isinstance(t, IntegerType):
        return max(1, t.width.data // 8)  # i1 is stored as one byte
    if isinstance(t, AnyFloat):
        return t.bitwidth // 8
    raise VerifyException(f"vkd.tensor: no storage size for element type {t}")


@irdl_attr_definition
class TensorBufferType(ParametrizedAttribute, TypeAttribute):
    """A tensor in a buffer: `!vkd.tensor<1x64x56x56xf32, nc4hw4>`.

    The shape and element type are the logical (ONNX) ones; the layout says how
    the elements sit in memory; `storage` is the element type in memory when it
    differs from the logical one (`!vkd.tensor<1x64x56x56xf32, nc4hw4, f16>`:
    fp16 storage of an fp32 tensor; an i64 tensor stored as i32 on the device).

    For nc4hw4 the channel axis is axis 1 (axis 0 for rank 1) and is padded up
    to a multiple of 4: that is what `byte_size` counts and what an arena holds.
    """

    name = "vkd.tensor"

    shape: ArrayAttr[IntAttr] = param_def(ArrayAttr[IntAttr])
    element_type: Attribute = param_def(Attribute)
    layout: LayoutAttr = param_def(LayoutAttr)
    storage: Attribute = param_def(Attribute)

    def __init__(
        self,
        shape: Sequence[int],
        element_type: Attribute,
        layout: Layout | LayoutAttr,
        storage: Attribute | None = None,
    ):
        super().__init__(
            ArrayAttr([IntAttr(d) for d in shape]),
            element_type,
            layout if isinstance(layout, LayoutAttr) else LayoutAttr(layout),
            storage if storage is not None else element_type,
        )

    # The shape prints like a builtin tensor's; storage only when it differs.
    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            if self.shape.data:
                printer.print_dimension_list(self.get_shape())
                printer.print_string("x")
            printer.print_attribute(self.element_type)
            printer.print_string(f", {self.layout.data.value}")
            if self.storage != self.element_type:
                printer.print_string(", ")
                printer.print_attribute(self.storage)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            dims, element = parser.parse_ranked_shape()
            parser.parse_punctuation(",")
            layout = LayoutAttr(parser.parse_str_enum(Layout))
            storage = parser.parse_type() if parser.parse_optional_punctuation(",") else element
        return (ArrayAttr([IntAttr(d) for d in dims]), element, layout, storage)

    def get_shape(self) -> tuple[int, ...]:
        return tuple(d.data for d in self.shape.data)

    @property
    def rank(self) -> int:
        return len(self.shape.data)

    @property
    def is_host(self) -> bool:
        return self.layout.data.is_host

    def packed_shape(self) -> tuple[int, ...]:
        """The shape as laid out in memory (nc4hw4 pads the channel axis to 4)."""
        shape = list(self.get_shape())
        if self.layout.data is Layout.NC4HW4 and shape:
            axis = 1 if len(shape) >= 2 else 0
            shape[axis] = (shape[axis] + 3) // 4 * 4
        return tuple(shape)

    def byte_size(self) -> int:
        return math.prod(self.packed_shape()) * _element_bytes(self.storage)

    def verify(self) -> None:
        shape = self.get_shape()
        layout = self.layout.data
        if any(d < 0 for d in shape):
            dims = ", ".join("?" if d < 0 else str(d) for d in shape)
            raise VerifyException(
                f"vkd.tensor shape [{dims}] must be static: dynamic shapes are "
                "resolved per plan bucket before lowering to vkd"
            )
        if layout is Layout.NC4HW4 and not 1 <= len(shape) <= MAX_RANK_NC4HW4:
            raise VerifyException(
                f"vkd.tensor layout nc4hw4 needs rank 1..{MAX_RANK_NC4HW4}, got rank "
                f"{len(shape)} (use flat for other ranks)"
            )
        if layout is Layout.FLAT and len(shape) > MAX_RANK_FLAT:
            raise VerifyException(
                f"vkd.tensor layout flat supports rank up to {MAX_RANK_FLAT}, got {len(shape)}"
            )
        elem, storage = self.element_type, self.storage
        _element_bytes(elem)
        _element_bytes(storage)
        if storage == elem:
            return
        if layout.is_host:
            # Host tensors are what the CPU backend and the user read: no narrowing.
            raise VerifyException(
                f"vkd.tensor host layout nchw stores the logical type {elem}, not {storage}"
            )
        if isinstance(elem, AnyFloat) and isinstance(storage, _DEVICE_FLOAT_STORAGE):
            return
        if elem == i64 and storage == i32:
            return  # indices: GPUs without int64 keep them as i32
        raise VerifyException(f"vkd.tensor cannot store {elem} elements as {storage}")


@irdl_attr_definition
class ArenaType(ParametrizedAttribute, TypeAttribute):
    """The type of a `vkd.arena`: one block of memory that allocations live in."""

    name = "vkd.arena"


def _tensor(value: SSAValue) -> TensorBufferType:
    assert isinstance(value.type, TensorBufferType)
    return value.type


# ---------------------------------------------------------------------------
# Custom directives
# ---------------------------------------------------------------------------


def _parse_word(parser: Parser) -> Attribute:
    """One 32-bit push/specialization word: `7` (i32), `0.5` (f32), or an
    explicit `0x7fc00000 : f32` (how non-finite floats print)."""
    value = parser.parse_number()
    if parser.parse_optional_punctuation(":") is None:
        return FloatAttr(value, f32) if isinstance(value, float) else IntegerAttr(value, i32)
    typ = parser.parse_type()
    if typ == f32:
        if isinstance(value, int):
            (value,) = struct.unpack("<f", struct.pack("<I", value & 0xFFFFFFFF))
        return FloatAttr(value, f32)
    if typ == i32 and isinstance(value, int):
        return IntegerAttr(value, i32)
    parser.raise_error(f"a push or specialization word is i32 or f32, got {typ}")


def _print_word(printer: Printer, word: Attribute) -> None:
    if isinstance(word, IntegerAttr):
        printer.print_int(word.value.data)
    elif isinstance(word, FloatAttr):
        value = word.value.data
        if math.isfinite(value):
            printer.print_float(value, f32)
        else:
            printer.print_string(f"0x{struct.unpack('<I', struct.pack('<f', value))[0]:08x} : f32")
    else:
        printer.print_attribute(word)


@irdl_custom_directive
class Words(CustomDirective):
    """`[64, 56, 1.000000e-05]`: an array of 32-bit words, i32 unless written as a float."""

    words: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        words = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: _parse_word(parser)
        )
        self.words.set(state, ArrayAttr(words))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        words = self.words.get(op)
        assert isinstance(words, ArrayAttr)
        with printer.in_square_brackets():
            printer.print_list(words.data, lambda w: _print_word(printer, w))


@irdl_custom_directive
class AccessList(CustomDirective):
    """`[read, read, write]`: one access per buffer binding of a kernel."""

    accesses: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        items = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: AccessAttr(parser.parse_str_enum(Access))
        )
        self.accesses.set(state, ArrayAttr(items))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        items = self.accesses.get(op)
        assert isinstance(items, ArrayAttr)
        with printer.in_square_brackets():
            printer.print_list(items.data, lambda a: printer.print_string(a.data.value))


WordAttr = IntegerAttr[I32] | FloatAttr[Float32Type]


def words(values: Sequence[int | float]) -> ArrayAttr:
    """Push-constant or specialization words: ints as i32, floats as f32."""
    return ArrayAttr(
        [FloatAttr(v, f32) if isinstance(v, float) else IntegerAttr(v, i32) for v in values]
    )


def _i32s(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i32, values)


def _check_words(op: Operation, what: str, words: ArrayAttr) -> None:
    for w in words.data:
        if isinstance(w, IntegerAttr) and not -(2**31) <= w.value.data < 2**32:
            raise VerifyException(f"{op.name}: {what} value {w.value.data} does not fit 32 bits")


# ---------------------------------------------------------------------------
# Module level: kernels and plans
# ---------------------------------------------------------------------------


@irdl_op_definition
class KernelOp(IRDLOperation):
    """One compiled shader variant: what the runtime needs to build its pipeline.

    `shader` names the GLSL source (`shaders/<shader>.comp`); `precision` picks
    the storage macros; `epilogue`, when present, keys the generated pointwise
    epilogue spliced into its store. Dispatches supply the push-constant words
    and the values of `spec_ids`."""

    name = "vkd.kernel"

    sym_name = prop_def(SymbolNameConstraint())
    shader = prop_def(StringAttr)
    precision = prop_def(PrecisionAttr)
    epilogue = opt_prop_def(StringAttr)
    local_size = prop_def(DenseArrayBase[I32])
    bindings = prop_def(ArrayAttr[AccessAttr])
    push_size = prop_def(IntegerAttr[I32])
    spec_ids = prop_def(DenseArrayBase[I32])

    traits = traits_def(SymbolOpInterface(), HasParent(ModuleOp))
    custom_directives = (AccessList,)
    assembly_format = (
        "$sym_name `shader` $shader $precision (`epilogue` $epilogue^)? "
        "`local_size` $local_size `bindings` custom<AccessList>($bindings) "
        "`push` $push_size `spec` $spec_ids attr-dict"
    )

    def __init__(
        self,
        sym_name: str,
        shader: str,
        precision: Precision,
        *,
        local_size: Sequence[int],
        bindings: Sequence[Access],
        push_size: int,
        spec_ids: Sequence[int] = (),
        epilogue: str | None = None,
    ):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "shader": StringAttr(shader),
                "precision": PrecisionAttr(precision),
                "epilogue": StringAttr(epilogue) if epilogue is not None else None,
                "local_size": _i32s(local_size),
                "bindings": ArrayAttr([AccessAttr(a) for a in bindings]),
                "push_size": IntegerAttr(push_size, i32),
                "spec_ids": _i32s(spec_ids),
            }
        )

    @property
    def binding_count(self) -> int:
        return len(self.bindings.data)

    def verify_(self) -> None:
        where = f"vkd.kernel @{self.sym_name.data}"
        local = self.local_size.get_values()
        if len(local) != 3 or any(v <= 0 for v in local):
            raise VerifyException(
                f"{where}: local_size must be 3 positive values, got {list(local)}"
            )
        if not self.bindings.data:
            raise VerifyException(f"{where}: a kernel needs at least one buffer binding")
        push = self.push_size.value.data
        if push < 0 or push % 4:
            raise VerifyException(
                f"{where}: push constant size {push} must be a non-negative multiple of 4 bytes"
            )
        ids = self.spec_ids.get_values()
        if any(i < 0 for i in ids) or len(set(ids)) != len(ids):
            raise VerifyException(f"{where}: spec ids must be distinct and >= 0, got {list(ids)}")


@irdl_op_definition
class PlanOp(IRDLOperation):
    """One plan bucket: everything needed to run the graph for one input-shape
    set, with its segments in execution order."""

    name = "vkd.plan"

    sym_name = prop_def(SymbolNameConstraint())
    inputs = prop_def(DictionaryAttr)
    """Graph input name -> `array<i64: ...>` static shape: the bucket key."""
    body = region_def("single_block")

    traits = traits_def(SymbolOpInterface(), NoTerminator(), HasParent(ModuleOp))
    assembly_format = "$sym_name `inputs` $inputs attr-dict-with-keyword $body"

    def __init__(self, sym_name: str, inputs: dict[str, Sequence[int]], body: Region | None = None):
        shapes = {k: DenseArrayBase.from_list(i64, v) for k, v in inputs.items()}
        super().__init__(
            properties={"sym_name": StringAttr(sym_name), "inputs": DictionaryAttr(shapes)},
            regions=[body if body is not None else Region(Block())],
        )

    def input_shapes(self) -> dict[str, tuple[int, ...]]:
        shapes: dict[str, tuple[int, ...]] = {}
        for name, shape in self.inputs.data.items():
            if not isinstance(shape, DenseArrayBase) or shape.elt_type != i64:
                raise VerifyException(
                    f"vkd.plan @{self.sym_name.data}: input '{name}' shape must be an "
                    f"array<i64: ...>, got {shape}"
                )
            shapes[name] = tuple(cast(Sequence[int], shape.get_values()))
        return shapes

    def verify_(self) -> None:
        where = f"vkd.plan @{self.sym_name.data}"
        shapes = self.input_shapes()
        for name, shape in shapes.items():
            if any(d < 0 for d in shape):
                raise VerifyException(
                    f"{where}: input '{name}' shape {list(shape)} is not static; "
                    "a plan bucket serves exactly one shape per input"
                )
        declared: dict[str, tuple[int, ...]] = {}
        outputs: set[str] = set()
        for op in self.body.block.ops:
            if not isinstance(op, _PLAN_MEMBERS):
                raise VerifyException(
                    f"{where}: '{op.name}' cannot appear in a plan (expected tensors, "
                    "arenas or segments)"
                )
            if isinstance(op, InputOp):
                if op.io_name.data in declared:
                    raise VerifyException(f"{where}: input '{op.io_name.data}' declared twice")
                declared[op.io_name.data] = _tensor(op.result).get_shape()
            elif isinstance(op, OutputOp):
                if op.io_name.data in outputs:
                    raise VerifyException(f"{where}: output '{op.io_name.data}' declared twice")
                outputs.add(op.io_name.data)
        if declared != shapes:
            raise VerifyException(
                f"{where}: inputs {_fmt_shapes(shapes)} do not match its vkd.input "
                f"tensors {_fmt_shapes(declared)}"
            )
        # Buckets are selected by exact shape match, so two plans with one key
        # would make selection ambiguous.
        module = self.parent_op()
        if module is not None:
            for other in module.regions[0].block.ops:
                if other is not self and isinstance(other, PlanOp):
                    if other.inputs == self.inputs:
                        raise VerifyException(
                            f"{where}: serves the same input shapes as @{other.sym_name.data}"
                        )


def _fmt_shapes(shapes: dict[str, tuple[int, ...]]) -> str:
    return "{" + ", ".join(f"{k}: {list(v)}" for k, v in shapes.items()) + "}"


# ---------------------------------------------------------------------------
# Segments
# ---------------------------------------------------------------------------


@irdl_op_definition
class VulkanSegmentOp(IRDLOperation):
    """A run of GPU work recorded once into one command buffer and replayed per
    run. Uploads come before the first dispatch or copy, downloads after the
    last, so the runtime may do them on the host around the submit.

    `queries` is the size of the segment's timestamp query pool (absent: no
    profiling); each profiled dispatch names the first of its two slots."""

    name = "vkd.vulkan_segment"

    queries = opt_prop_def(IntegerAttr[I32])
    body = region_def("single_block")

    traits = traits_def(NoTerminator(), HasParent(PlanOp))
    assembly_format = "(`queries` $queries^)? attr-dict-with-keyword $body"

    def __init__(self, body: Region | None = None, *, queries: int | None = None):
        super().__init__(
            properties={"queries": IntegerAttr(queries, i32) if queries is not None else None},
            regions=[body if body is not None else Region(Block())],
        )

    def verify_(self) -> None:
        where = "vkd.vulkan_segment"
        ops = list(self.body.block.ops)
        for op in ops:
            if not isinstance(op, _VULKAN_MEMBERS):
                raise VerifyException(
                    f"{where}: '{op.name}' cannot run in a Vulkan segment (it records only "
                    "uploads, dispatches, barriers, copies and downloads)"
                )
        work = [i for i, op in enumerate(ops) if isinstance(op, DispatchOp | CopyOp)]
        if work:
            for i, op in enumerate(ops):
                if isinstance(op, UploadOp) and i > work[0]:
                    raise VerifyException(f"{where}: vkd.upload after the first dispatch or copy")
                if isinstance(op, DownloadOp) and i < work[-1]:
                    raise VerifyException(f"{where}: vkd.download before the last dispatch or copy")
        pool = self.queries.value.data if self.queries is not None else 0
        if pool < 0 or pool % 2:
            raise VerifyException(f"{where}: queries must be an even count >= 0, got {pool}")
        used: set[int] = set()
        for op in ops:
            if isinstance(op, DispatchOp) and op.query is not None:
                slot = op.query.value.data
                if slot < 0 or slot + 1 >= pool:
                    raise VerifyException(
                        f"{where}: dispatch query slots {slot}, {slot + 1} are outside the "
                        f"pool of {pool} queries"
                    )
                if slot in used or slot + 1 in used:
                    raise VerifyException(f"{where}: query slot {slot} used by two dispatches")
                used.update((slot, slot + 1))


@irdl_op_definition
class CpuSegmentOp(IRDLOperation):
    """A run of graph ops executed by the CPU backend on host NCHW tensors.

    `ins` are read and `outs` written by the runtime; inside, the region's
    arguments are builtin tensors of the `ins` and its `vkd.yield` gives the
    values for the `outs`. Each op carries `vkd.reason`, the reason it fell
    back, for `Session.fallback_reasons()`."""

    name = "vkd.cpu_segment"

    ins = var_operand_def(TensorBufferType)
    outs = var_operand_def(TensorBufferType)
    body = region_def("single_block")

    irdl_options = (AttrSizedOperandSegments(as_property=True),)
    traits = traits_def(IsolatedFromAbove(), HasParent(PlanOp))
    assembly_format = (
        "`ins` `(` ($ins^ `:` type($ins))? `)` `outs` `(` ($outs^ `:` type($outs))? `)` "
        "attr-dict-with-keyword $body"
    )

    def __init__(self, ins: Sequence[SSAValue], outs: Sequence[SSAValue], body: Region):
        super().__init__(operands=[ins, outs], regions=[body])

    def verify_(self) -> None:
        where = "vkd.cpu_segment"
        for kind, values in (("in", self.ins), ("out", self.outs)):
            for v in values:
                if not _tensor(v).is_host:
                    raise VerifyException(
                        f"{where}: {kind} tensor {v.type} is not a host (nchw) tensor; "
                        "download it first"
                    )
        block = self.body.block
        if len(block.args) != len(self.ins):
            raise VerifyException(
                f"{where}: {len(block.args)} block arguments for {len(self.ins)} ins"
            )
        for arg, v in zip(block.args, self.ins, strict=True):
            if not _same_tensor(arg.type, _tensor(v)):
                raise VerifyException(
                    f"{where}: block argument type {arg.type} does not match in tensor {v.type}"
                )
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException(f"{where}: the body must end with vkd.yield")
        if len(last.values) != len(self.outs):
            raise VerifyException(
                f"{where}: vkd.yield gives {len(last.values)} values for {len(self.outs)} outs"
            )
        for y, v in zip(last.values, self.outs, strict=True):
            if not _same_tensor(y.type, _tensor(v)):
                raise VerifyException(
                    f"{where}: yielded type {y.type} does not match out tensor {v.type}"
                )
        for op in block.ops:
            if op is last:
                continue
            if op.name.startswith("vkd."):
                raise VerifyException(
                    f"{where}: '{op.name}' cannot appear in a CPU segment (it holds graph ops)"
                )
            if op.has_trait(ConstantLike):
                continue
            if not isinstance(op.attributes.get(REASON_ATTR), StringAttr):
                raise VerifyException(
                    f"{where}: '{op.name}' has no '{REASON_ATTR}' string saying why it runs on "
                    "the CPU"
                )


def _same_tensor(t: Attribute, buf: TensorBufferType) -> bool:
    return (
        isinstance(t, TensorType)
        and t.get_shape() == buf.get_shape()
        and t.element_type == buf.element_type
    )


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a CPU segment: the values written to its `outs`, in order."""

    name = "vkd.yield"

    values = var_operand_def()

    traits = traits_def(IsTerminator(), HasParent(CpuSegmentOp))
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


# ---------------------------------------------------------------------------
# Tensors and memory
# ---------------------------------------------------------------------------


@irdl_op_definition
class InputOp(IRDLOperation):
    """A graph input, written by the user before each run (host NCHW)."""

    name = "vkd.input"

    io_name = prop_def(StringAttr, prop_name="name")
    result = result_def(TensorBufferType)

    traits = traits_def(HasParent(PlanOp))
    assembly_format = "$name attr-dict `:` type($result)"

    def __init__(self, name: str, type: TensorBufferType):
        super().__init__(properties={"name": StringAttr(name)}, result_types=[type])

    def verify_(self) -> None:
        if not _tensor(self.result).is_host:
            raise VerifyException(
                f"vkd.input '{self.io_name.data}': graph inputs are host nchw tensors, got "
                f"{self.result.type}"
            )


@irdl_op_definition
class OutputOp(IRDLOperation):
    """A graph output, read by the user after each run (host NCHW); a download
    or a CPU segment writes it."""

    name = "vkd.output"

    io_name = prop_def(StringAttr, prop_name="name")
    result = result_def(TensorBufferType)

    traits = traits_def(HasParent(PlanOp))
    assembly_format = "$name attr-dict `:` type($result)"

    def __init__(self, name: str, type: TensorBufferType):
        super().__init__(properties={"name": StringAttr(name)}, result_types=[type])

    def verify_(self) -> None:
        if not _tensor(self.result).is_host:
            raise VerifyException(
                f"vkd.output '{self.io_name.data}': graph outputs are host nchw tensors, got "
                f"{self.result.type}"
            )


@irdl_op_definition
class ArenaOp(IRDLOperation):
    """One block of memory for a plan's intermediates, sized by the interval
    planner: tensors with disjoint live ranges share bytes. Not `Pure`: two
    arenas of equal size are still two blocks of memory."""

    name = "vkd.arena"

    memory = prop_def(MemoryAttr)
    size = prop_def(IntegerAttr[I64])
    alignment = prop_def(IntegerAttr[I64])
    result = result_def(ArenaType())

    traits = traits_def(HasParent(PlanOp))
    assembly_format = "$memory `size` $size `align` $alignment attr-dict"

    def __init__(self, memory: Memory, size: int, alignment: int = MIN_ALIGNMENT):
        super().__init__(
            properties={
                "memory": MemoryAttr(memory),
                "size": IntegerAttr(size, i64),
                "alignment": IntegerAttr(alignment, i64),
            },
            result_types=[ArenaType()],
        )

    def verify_(self) -> None:
        align = self.alignment.value.data
        if align < MIN_ALIGNMENT or align & (align - 1):
            raise VerifyException(
                f"vkd.arena: alignment {align} must be a power of two >= {MIN_ALIGNMENT}"
            )
        if self.size.value.data < 0:
            raise VerifyException(f"vkd.arena: size {self.size.value.data} is negative")


@irdl_op_definition
class AllocOp(IRDLOperation):
    """A tensor at a fixed byte offset in an arena. Several allocations may
    overlap: the planner only overlaps tensors that are never live together."""

    name = "vkd.alloc"

    arena = operand_def(ArenaType)
    offset = prop_def(IntegerAttr[I64])
    size = prop_def(IntegerAttr[I64])
    result = result_def(TensorBufferType)

    # Pure: it only names bytes; a dead one may go, two equal ones are one.
    traits = traits_def(Pure(), HasParent(PlanOp))
    assembly_format = "$arena `[` $offset `]` `size` $size attr-dict `:` type($result)"

    def __init__(
        self, arena: SSAValue, offset: int, type: TensorBufferType, size: int | None = None
    ):
        super().__init__(
            operands=[arena],
            properties={
                "offset": IntegerAttr(offset, i64),
                "size": IntegerAttr(size if size is not None else type.byte_size(), i64),
            },
            result_types=[type],
        )

    def verify_(self) -> None:
        offset, size = self.offset.value.data, self.size.value.data
        t = _tensor(self.result)
        where = f"vkd.alloc at offset {offset}"
        if offset < 0 or offset % MIN_ALIGNMENT:
            raise VerifyException(f"{where}: offset must be a multiple of {MIN_ALIGNMENT} bytes")
        if size < t.byte_size():
            raise VerifyException(
                f"{where}: size {size} is smaller than {t} ({t.byte_size()} bytes)"
            )
        arena = self.arena.owner
        if isinstance(arena, ArenaOp):
            if offset % arena.alignment.value.data:
                raise VerifyException(
                    f"{where}: offset is not a multiple of the arena alignment "
                    f"{arena.alignment.value.data}"
                )
            if offset + size > arena.size.value.data:
                raise VerifyException(
                    f"{where}: [{offset}, {offset + size}) overruns the arena of "
                    f"{arena.size.value.data} bytes"
                )
            if (arena.memory.data is Memory.HOST) != t.is_host:
                raise VerifyException(
                    f"{where}: a {t.layout.data.value} tensor cannot live in a "
                    f"{arena.memory.data.value} arena"
                )


@irdl_op_definition
class WeightOp(IRDLOperation):
    """A constant device tensor. Its bytes, already prepacked into the layout
    and storage type the kernels read, are a weight-store blob named by the
    `dense_resource` handle; `packing` names the arrangement (e.g. `oihw4i4o`)
    for diagnostics and the weight cache. Plans sharing a handle share bytes."""

    name = "vkd.weight"

    data = prop_def(DenseResourceAttr)
    packing = opt_prop_def(StringAttr)
    result = result_def(TensorBufferType)

    traits = traits_def(Pure(), HasParent(PlanOp))
    assembly_format = "$data (`packing` $packing^)? attr-dict `:` type($result)"

    def __init__(self, data: DenseResourceAttr, type: TensorBufferType, packing: str | None = None):
        super().__init__(
            properties={
                "data": data,
                "packing": StringAttr(packing) if packing is not None else None,
            },
            result_types=[type],
        )

    def verify_(self) -> None:
        t = _tensor(self.result)
        blob = self.data.type
        where = f"vkd.weight {self.data.resource_handle.data}"
        if t.is_host:
            raise VerifyException(f"{where}: weights are device tensors, not nchw host tensors")
        if not isinstance(blob, TensorType):
            raise VerifyException(f"{where}: the resource must be a ranked tensor")
        if blob.element_type != t.storage:
            raise VerifyException(
                f"{where}: the blob holds {blob.element_type} but the tensor stores {t.storage}"
            )
        nbytes = math.prod(blob.get_shape()) * _element_bytes(blob.element_type)
        if nbytes != t.byte_size():
            raise VerifyException(
                f"{where}: the blob has {nbytes} bytes but {t} needs {t.byte_size()}"
            )


# ---------------------------------------------------------------------------
# Vulkan segment contents
# ---------------------------------------------------------------------------


def _require_device(op: Operation, value: SSAValue, role: str) -> None:
    if _tensor(value).is_host:
        raise VerifyException(
            f"{op.name}: {role} {value.type} is a host tensor; GPU work uses device tensors"
        )


@irdl_op_definition
class UploadOp(IRDLOperation):
    """Host NCHW -> device layout (pack, narrow to the storage type)."""

    name = "vkd.upload"

    source = operand_def(TensorBufferType)
    dest = operand_def(TensorBufferType)

    traits = traits_def(HasParent(VulkanSegmentOp))
    assembly_format = "$source `to` $dest attr-dict `:` type($source) `to` type($dest)"

    def __init__(self, source: SSAValue, dest: SSAValue):
        super().__init__(operands=[source, dest])

    def verify_(self) -> None:
        _verify_transfer(self, self.source, self.dest, host_side=self.source)


@irdl_op_definition
class DownloadOp(IRDLOperation):
    """Device layout -> host NCHW (unpack, widen to the logical type)."""

    name = "vkd.download"

    source = operand_def(TensorBufferType)
    dest = operand_def(TensorBufferType)

    traits = traits_def(HasParent(VulkanSegmentOp))
    assembly_format = "$source `to` $dest attr-dict `:` type($source) `to` type($dest)"

    def __init__(self, source: SSAValue, dest: SSAValue):
        super().__init__(operands=[source, dest])

    def verify_(self) -> None:
        _verify_transfer(self, self.source, self.dest, host_side=self.dest)


def _verify_transfer(op: Operation, src: SSAValue, dst: SSAValue, host_side: SSAValue) -> None:
    device_side = dst if host_side is src else src
    h, d = _tensor(host_side), _tensor(device_side)
    if not h.is_host:
        raise VerifyException(f"{op.name}: {h} must be a host nchw tensor")
    if d.is_host:
        raise VerifyException(f"{op.name}: {d} must be a device tensor")
    if h.get_shape() != d.get_shape() or h.element_type != d.element_type:
        raise VerifyException(f"{op.name}: {h} and {d} are not the same logical tensor")


@irdl_op_definition
class DispatchOp(IRDLOperation):
    """One `vkCmdDispatch(Base)` of a kernel: its buffers (in binding order),
    its push-constant words, its specialization-constant values (one per
    kernel spec id), its group counts and, for split dispatches, its base
    group. `query` (optional) is the first of two timestamp slots."""

    name = "vkd.dispatch"

    kernel = prop_def(SymbolRefAttr)
    buffers = var_operand_def(TensorBufferType)
    push = prop_def(ArrayAttr[WordAttr])
    spec = prop_def(ArrayAttr[WordAttr])
    groups = prop_def(DenseArrayBase[I32])
    base = opt_prop_def(DenseArrayBase[I32])
    query = opt_prop_def(IntegerAttr[I32])

    traits = traits_def(HasParent(VulkanSegmentOp))
    custom_directives = (Words,)
    assembly_format = (
        "$kernel `(` $buffers `)` `push` custom<Words>($push) `spec` custom<Words>($spec) "
        "`groups` $groups (`base` $base^)? (`query` $query^)? attr-dict `:` type($buffers)"
    )

    def __init__(
        self,
        kernel: str | SymbolRefAttr,
        buffers: Sequence[SSAValue],
        *,
        push: Sequence[int | float] = (),
        spec: Sequence[int | float] = (),
        groups: Sequence[int],
        base: Sequence[int] | None = None,
        query: int | None = None,
        node_name: str | None = None,
    ):
        super().__init__(
            operands=[buffers],
            properties={
                "kernel": SymbolRefAttr(kernel) if isinstance(kernel, str) else kernel,
                "push": words(push),
                "spec": words(spec),
                "groups": _i32s(groups),
                "base": _i32s(base) if base is not None else None,
                "query": IntegerAttr(query, i32) if query is not None else None,
            },
            attributes={NAME_ATTR: StringAttr(node_name) if node_name is not None else None},
        )

    def verify_(self) -> None:
        where = f"vkd.dispatch @{self.kernel.string_value()}"
        groups = self.groups.get_values()
        if len(groups) != 3 or any(g <= 0 for g in groups):
            raise VerifyException(f"{where}: groups must be 3 positive counts, got {list(groups)}")
        if self.base is not None:
            base = self.base.get_values()
            if len(base) != 3 or any(b < 0 for b in base):
                raise VerifyException(f"{where}: base must be 3 counts >= 0, got {list(base)}")
        _check_words(self, "push", self.push)
        _check_words(self, "spec", self.spec)
        for v in self.buffers:
            _require_device(self, v, "buffer")
        try:
            kernel = SymbolTable.lookup_symbol(self, self.kernel)
        except ValueError:  # detached: no enclosing module to look in
            kernel = None
        if not isinstance(kernel, KernelOp):
            raise VerifyException(f"{where}: no vkd.kernel named @{self.kernel.string_value()}")
        if len(self.buffers) != kernel.binding_count:
            raise VerifyException(
                f"{where}: passes {len(self.buffers)} buffers but the kernel has "
                f"{kernel.binding_count} bindings"
            )
        push_bytes = 4 * len(self.push.data)
        if push_bytes != kernel.push_size.value.data:
            raise VerifyException(
                f"{where}: pushes {push_bytes} bytes but the kernel's push constants are "
                f"{kernel.push_size.value.data} bytes"
            )
        if len(self.spec.data) != len(kernel.spec_ids.get_values()):
            raise VerifyException(
                f"{where}: gives {len(self.spec.data)} specialization constants but the "
                f"kernel declares {len(kernel.spec_ids.get_values())}"
            )
        for i, (v, access) in enumerate(zip(self.buffers, kernel.bindings.data, strict=True)):
            if access.data.writes and isinstance(v.owner, WeightOp):
                raise VerifyException(
                    f"{where}: binding {i} is written but holds a constant vkd.weight"
                )


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """A memory barrier: writes by `src` are made visible to reads by `dst`.
    With buffers it is a buffer memory barrier on each; without, a global one."""

    name = "vkd.barrier"

    src = prop_def(StageAttr)
    dst = prop_def(StageAttr)
    buffers = var_operand_def(TensorBufferType)

    traits = traits_def(HasParent(VulkanSegmentOp))
    assembly_format = "$src `to` $dst ($buffers^ `:` type($buffers))? attr-dict"

    def __init__(self, src: Stage, dst: Stage, buffers: Sequence[SSAValue] = ()):
        super().__init__(
            operands=[buffers], properties={"src": StageAttr(src), "dst": StageAttr(dst)}
        )

    def verify_(self) -> None:
        for v in self.buffers:
            _require_device(self, v, "buffer")


@irdl_op_definition
class CopyOp(IRDLOperation):
    """`vkCmdCopyBuffer` of `size` bytes between two device tensors."""

    name = "vkd.copy"

    source = operand_def(TensorBufferType)
    dest = operand_def(TensorBufferType)
    size = prop_def(IntegerAttr[I64])
    src_offset = opt_prop_def(IntegerAttr[I64])
    dst_offset = opt_prop_def(IntegerAttr[I64])

    traits = traits_def(HasParent(VulkanSegmentOp))
    assembly_format = (
        "$source (`[` $src_offset^ `]`)? `to` $dest (`[` $dst_offset^ `]`)? `size` $size "
        "attr-dict `:` type($source) `to` type($dest)"
    )

    def __init__(
        self,
        source: SSAValue,
        dest: SSAValue,
        size: int,
        *,
        src_offset: int | None = None,
        dst_offset: int | None = None,
    ):
        def opt(v: int | None) -> IntegerAttr | None:
            return IntegerAttr(v, i64) if v is not None else None

        super().__init__(
            operands=[source, dest],
            properties={
                "size": IntegerAttr(size, i64),
                "src_offset": opt(src_offset),
                "dst_offset": opt(dst_offset),
            },
        )

    def verify_(self) -> None:
        _require_device(self, self.source, "source")
        _require_device(self, self.dest, "dest")
        if isinstance(self.dest.owner, WeightOp):
            raise VerifyException("vkd.copy: the destination is a constant vkd.weight")
        size = self.size.value.data
        if size <= 0:
            raise VerifyException(f"vkd.copy: size {size} must be positive")
        for role, value, off in (
            ("source", self.source, self.src_offset),
            ("dest", self.dest, self.dst_offset),
        ):
            start = off.value.data if off is not None else 0
            limit = _tensor(value).byte_size()
            if start < 0 or start + size > limit:
                raise VerifyException(
                    f"vkd.copy: {role} bytes [{start}, {start + size}) are outside its "
                    f"{limit} bytes"
                )


_PLAN_MEMBERS: tuple[type[Operation], ...] = (
    InputOp,
    OutputOp,
    ArenaOp,
    AllocOp,
    WeightOp,
    VulkanSegmentOp,
    CpuSegmentOp,
)
_VULKAN_MEMBERS: tuple[type[Operation], ...] = (
    UploadOp,
    DownloadOp,
    DispatchOp,
    BarrierOp,
    CopyOp,
)

VKD = Dialect(
    "vkd",
    [
        KernelOp,
        PlanOp,
        VulkanSegmentOp,
        CpuSegmentOp,
        YieldOp,
        InputOp,
        OutputOp,
        ArenaOp,
        AllocOp,
        WeightOp,
        UploadOp,
        DownloadOp,
        DispatchOp,
        BarrierOp,
        CopyOp,
    ],
    [
        LayoutAttr,
        PrecisionAttr,
        AccessAttr,
        StageAttr,
        MemoryAttr,
        TensorBufferType,
        ArenaType,
    ],
)
