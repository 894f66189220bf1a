"""The `vkd` dialect: the Vulkan-dispatch IR, the contract between the compiler
and the runtime.

Two levels, one dialect (the passes lower from the first to the second):

Graph level (tensors are SSA values of builtin tensor types):

    vkd.segment "vulkan"|"cpu"  a maximal run of ops on one backend (`partition`);
                                isolated: its inputs are operands and block
                                arguments, its results come from `vkd.yield`
    vkd.with_epilogue           a host op (conv, matmul, pool, ...) and the fused
                                pointwise epilogue it applies before storing
                                (`merge-epilogues`)
    vkd.view / vkd.alias        a strided view of another tensor's memory that a
                                kernel reads in place, and the same bytes under
                                another shape (`fold-views`)
    vkd.convert                 a storage conversion between forms
                                ("f16:nc4hw4", "f32:flat", ...) (`assign-storage`)

Buffer level (what the runtime replays, `convert-vx-to-vkd` onwards):

    vkd.kernel                  one pipeline: shader variant, local size,
                                bindings, push size, specialization constants
    vkd.vulkan_segment          host tensors in, host tensors out; its body is
                                recorded once into one command buffer:
      vkd.arena                   one block of memory (planned by `plan-memory`)
      vkd.alloc / vkd.subview     a tensor at a byte offset of an arena / of a tensor
      vkd.weight                  a constant (weights, kernel tables) in its
                                  device form, bytes by dense_resource handle
      vkd.upload / vkd.download   host <-> device at the segment's edges
      vkd.dispatch                one vkCmdDispatch: buffers with byte ranges,
                                  push-constant words, group counts
      vkd.barrier                 one vkCmdPipelineBarrier (`insert-barriers`)
      vkd.copy                    one vkCmdCopyBuffer

Tensors at the buffer level are buffers, not values: a dispatch writes into
one of its binding operands, so order inside a segment is meaningful and those
ops have effects; none of them is `Pure` (the greedy rewriter would erase them).
Every number the runtime needs is an attribute (offsets, sizes, push words,
specialization constants, group counts), so `vknn.program` walks the module
into plain data and the runtime never imports xDSL.

This module only defines IR and checks it; it does not lower, plan or
serialize anything, and it must not depend on the runtime.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from enum import StrEnum

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
    UnitAttr,
    f32,
    i32,
    i64,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import (
    Attribute,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SpacedOpaqueSyntaxAttribute,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_operand_def,
    opt_prop_def,
    param_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
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
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    SymbolOpInterface,
)
from xdsl.utils.exceptions import VerifyException

REASON_ATTR = "vkd.reason"
"""Op attribute in a `vkd.segment "cpu"`: why the op is not on the GPU."""
BACKEND_ATTR = "vkd.backend"
"""Op attribute set by `partition`: the backend that runs the op."""
NAME_ATTR = "onnx.name"
"""Op attribute on a `vkd.dispatch`: the ONNX node(s) it computes, for the profiler."""
STORAGE_ATTR = "vkd.storage"
"""Op attribute set by `assign-storage`: per result, its device storage form."""
ARG_STORAGE_ATTR = "vkd.arg_storage"
"""`vkd.segment` attribute set by `assign-storage`: per block argument, its form."""

MAX_RANK_NC4HW4 = 4
MAX_RANK_FLAT = 8
MIN_ALIGNMENT = 16
"""Arena offsets are at least this aligned: vec4 loads of fp32 need 16 bytes."""
SEGMENT_BACKENDS = ("vulkan", "cpu")


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
    """Where an arena lives (its buffer's memory type and role)."""

    DEVICE = "device"
    """Intermediates and segment tensors: device-local (and host-visible when
    the target's memory model writes inputs in place)."""
    CONST = "const"
    """Weights and tables, written once when the program is loaded."""
    STAGING = "staging"
    """Host-visible memory inputs are written to and copied from (target
    memory model `staging`)."""
    READBACK = "readback"
    """Host-visible, host-cached memory outputs are copied to and read from."""


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
        if isinstance(elem, IntegerType) and storage in (i32, i64):
            return  # integers and bools are stored as 32-bit words (int64 as i64 or i32)
        raise VerifyException(f"vkd.tensor cannot store {elem} elements as {storage}")


@irdl_attr_definition
class ArenaType(ParametrizedAttribute, TypeAttribute):
    """The type of a `vkd.arena`: one block of memory that allocations live in."""

    name = "vkd.arena"


@irdl_attr_definition
class TargetAttr(ParametrizedAttribute):
    """`#vkd.target<{name = "lavapipe", max_storage_buffer_range = ..., ...}>`:
    what the compiler may rely on about the device (`vknn.runtime.target.Target`
    as a dictionary). Set on the module by the first pass that needs it;
    every decision after that reads it from there."""

    name = "vkd.target"

    fields: DictionaryAttr = param_def(DictionaryAttr)

    def __init__(self, fields: DictionaryAttr):
        super().__init__(fields)


TARGET_ATTR = "vkd.target"
"""Module attribute holding the `#vkd.target` every lowering decision used."""


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


@irdl_custom_directive
class StageList(CustomDirective):
    """`[compute, transfer]`: the pipeline stages one side of a barrier names."""

    stages: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        items = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: StageAttr(parser.parse_str_enum(Stage))
        )
        self.stages.set(state, ArrayAttr(items))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        items = self.stages.get(op)
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
# Storage forms
# ---------------------------------------------------------------------------


def parse_form(form: str) -> tuple[str, str]:
    """("f16"|"f32", "flat"|"nc4hw4") of a storage form string "f16:nc4hw4"."""
    width, _, layout = form.partition(":")
    if width not in ("f16", "f32") or layout not in ("flat", "nc4hw4"):
        raise VerifyException(
            f'storage form {form!r}: expected <f16|f32>:<flat|nc4hw4>, e.g. "f16:nc4hw4"'
        )
    return width, layout


# ---------------------------------------------------------------------------
# Graph level
# ---------------------------------------------------------------------------


def _check_yield(op: Operation, body: Region, results: Sequence[SSAValue]) -> None:
    last = body.block.last_op
    if not isinstance(last, YieldOp):
        raise VerifyException(f"{op.name}: the body must end with vkd.yield")
    got = [v.type for v in last.values]
    want = [r.type for r in results]
    if got != want:
        raise VerifyException(f"{op.name}: vkd.yield gives {got}, the op returns {want}")


def _check_args(op: Operation, body: Region, inputs: Sequence[SSAValue]) -> None:
    args = [a.type for a in body.block.args]
    want = [v.type for v in inputs]
    if args != want:
        raise VerifyException(f"{op.name}: block arguments {args} do not match the operands {want}")


@irdl_op_definition
class SegmentOp(IRDLOperation):
    """A maximal run of graph ops on one backend, in execution order (the
    `partition` pass). Isolated: what it reads from outside are its operands
    (block arguments inside); constants it reads are cloned in; its results
    are the values later segments or the function's return read."""

    name = "vkd.segment"

    backend = prop_def(StringAttr)
    inputs = var_operand_def()
    outputs = var_result_def()
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove())
    assembly_format = (
        "$backend `(` $inputs `)` attr-dict-with-keyword `:` "
        "functional-type($inputs, $outputs) $body"
    )

    def __init__(
        self,
        backend: str,
        inputs: Sequence[SSAValue],
        result_types: Sequence[Attribute],
        body: Region,
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_types],
            properties={"backend": StringAttr(backend)},
            regions=[body],
        )

    def verify_(self) -> None:
        if self.backend.data not in SEGMENT_BACKENDS:
            raise VerifyException(
                f"vkd.segment: backend {self.backend.data!r} is not one of {SEGMENT_BACKENDS}"
            )
        _check_args(self, self.body, self.inputs)
        _check_yield(self, self.body, self.outputs)


@irdl_op_definition
class WithEpilogueOp(IRDLOperation):
    """A host op and the pointwise epilogue it applies before it stores
    (`merge-epilogues`): the body holds the host op (reading the first block
    arguments), then a `vx.fused_pointwise` whose operand 0 is the host's
    result and whose other operands are the remaining block arguments, then
    `vkd.yield` of the epilogue's result. One kernel runs both."""

    name = "vkd.with_epilogue"

    inputs = var_operand_def()
    output = result_def()
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove())
    assembly_format = (
        "`(` $inputs `)` attr-dict-with-keyword `:` functional-type($inputs, $output) $body"
    )

    def __init__(self, inputs: Sequence[SSAValue], result_type: Attribute, body: Region):
        super().__init__(operands=[inputs], result_types=[result_type], regions=[body])

    @property
    def host(self) -> Operation:
        op = self.body.block.first_op
        assert op is not None
        return op

    @property
    def epilogue(self) -> Operation:
        host = self.host
        assert host.next_op is not None
        return host.next_op

    def verify_(self) -> None:
        _check_args(self, self.body, self.inputs)
        _check_yield(self, self.body, [self.output])
        ops = list(self.body.block.ops)
        if len(ops) != 3 or ops[1].name != "vx.fused_pointwise":
            raise VerifyException(
                "vkd.with_epilogue: the body is a host op, a vx.fused_pointwise and vkd.yield"
            )
        host, epi = ops[0], ops[1]
        if len(host.results) != 1 or not epi.operands or epi.operands[0] is not host.results[0]:
            raise VerifyException(
                "vkd.with_epilogue: the epilogue's first operand must be the host's one result"
            )
        if host.results[0].uses.get_length() != 1:
            raise VerifyException("vkd.with_epilogue: only the epilogue may read the host result")
        n_host = len(host.operands)
        args = list(self.body.block.args)
        if list(host.operands) != args[:n_host] or list(epi.operands[1:]) != args[n_host:]:
            raise VerifyException(
                "vkd.with_epilogue: the host reads the first block arguments in order and "
                "the epilogue the rest"
            )


def _numel(t: Attribute) -> int:
    if isinstance(t, TensorType):
        return math.prod(t.get_shape())
    if isinstance(t, TensorBufferType):
        return math.prod(t.get_shape())
    raise VerifyException(f"expected a tensor type, got {t}")


@irdl_op_definition
class ViewOp(IRDLOperation):
    """A strided view of `source`'s memory: element i of the result is element
    `offset + sum(i_d * strides[d])` of the source in row-major order. No
    data moves: the reading kernel addresses the source this way
    (`fold-views`). The result's shape is its type's."""

    name = "vkd.view"

    source = operand_def()
    offset = prop_def(IntegerAttr[I64])
    strides = prop_def(DenseArrayBase[I64])
    result = result_def()

    assembly_format = (
        "$source `offset` $offset `strides` $strides attr-dict `:` type($source) `->` type($result)"
    )

    def __init__(self, source: SSAValue, offset: int, strides: Sequence[int], result: Attribute):
        super().__init__(
            operands=[source],
            result_types=[result],
            properties={
                "offset": IntegerAttr(offset, i64),
                "strides": DenseArrayBase.from_list(i64, list(strides)),
            },
        )

    def verify_(self) -> None:
        if not isinstance(self.result.type, TensorType):
            raise VerifyException("vkd.view: the result must be a tensor")
        shape = self.result.type.get_shape()
        strides = self.strides.get_values()
        if len(strides) != len(shape):
            raise VerifyException(
                f"vkd.view: {len(strides)} strides for a rank-{len(shape)} result"
            )
        off = self.offset.value.data
        last = off + sum((d - 1) * s for d, s in zip(shape, strides, strict=True) if d > 0)
        first = off + sum((d - 1) * s for d, s in zip(shape, strides, strict=True) if s < 0)
        if min(off, first) < 0 or last >= max(1, _numel(self.source.type)):
            raise VerifyException(
                f"vkd.view: offset {off} and strides {list(strides)} reach outside the "
                f"{_numel(self.source.type)} elements of the source"
            )


@irdl_op_definition
class AliasOp(IRDLOperation):
    """The same bytes as `source` under another type: a reshape of a flat
    tensor, or the row-major end of a chain a kernel wrote through a view
    (`vkd.out_view` on the producer). No data moves."""

    name = "vkd.alias"

    source = operand_def()
    result = result_def()

    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, result: Attribute):
        super().__init__(operands=[source], result_types=[result])

    def verify_(self) -> None:
        if _numel(self.source.type) != _numel(self.result.type):
            raise VerifyException(
                f"vkd.alias: {self.source.type} and {self.result.type} differ in element count"
            )


@irdl_op_definition
class ConvertOp(IRDLOperation):
    """A storage conversion (`assign-storage`): the same logical tensor, from
    one device form to another (fp16/fp32 words, flat/NC4HW4 layout). Of a
    constant it is done once, when the weights are packed; otherwise it is a
    dispatch of the conversion kernel."""

    name = "vkd.convert"

    source = operand_def(TensorType)
    from_form = prop_def(StringAttr, prop_name="from")
    to_form = prop_def(StringAttr, prop_name="to")
    result = result_def(TensorType)

    assembly_format = "$source `from` $from `to` $to attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, from_form: str, to_form: str):
        super().__init__(
            operands=[source],
            result_types=[source.type],
            properties={"from": StringAttr(from_form), "to": StringAttr(to_form)},
        )

    def verify_(self) -> None:
        if self.source.type != self.result.type:
            raise VerifyException("vkd.convert: the result has the source's tensor type")
        parse_form(self.from_form.data)
        parse_form(self.to_form.data)
        if self.from_form == self.to_form:
            raise VerifyException(f"vkd.convert: from and to are both {self.to_form.data!r}")


# ---------------------------------------------------------------------------
# Buffer level: kernels
# ---------------------------------------------------------------------------


def _string_dict(d: dict[str, str]) -> DictionaryAttr:
    return DictionaryAttr({k: StringAttr(v) for k, v in sorted(d.items())})


@irdl_op_definition
class KernelOp(IRDLOperation):
    """One pipeline: shader family (`glsl/<shader>.comp`) built as `variant`
    (fp32 / fp16 storage) with `defines` and the generated include files in
    `sources` (a fused pointwise body), patched with fast math when
    `fastmath`; `local_size`, one storage-buffer binding per `bindings`
    entry, a push-constant block of `push` bytes, and the specialization
    constants `spec_ids` = `spec` (constant 0 is the local size x)."""

    name = "vkd.kernel"

    sym_name = prop_def(SymbolNameConstraint())
    shader = prop_def(StringAttr)
    precision = prop_def(PrecisionAttr)
    local_size = prop_def(DenseArrayBase[I32])
    bindings = prop_def(ArrayAttr[AccessAttr])
    push_size = prop_def(IntegerAttr[I32])
    spec_ids = prop_def(DenseArrayBase[I32])
    spec = prop_def(ArrayAttr)
    defines = prop_def(DictionaryAttr)
    sources = prop_def(DictionaryAttr)
    fastmath = opt_prop_def(UnitAttr)

    traits = traits_def(SymbolOpInterface(), HasParent(ModuleOp))
    custom_directives = (AccessList, Words)
    assembly_format = (
        "$sym_name `shader` $shader $precision `local_size` $local_size "
        "`bindings` custom<AccessList>($bindings) `push` $push_size "
        "`spec` $spec_ids `=` custom<Words>($spec) (`fastmath` $fastmath^)? "
        "`defines` $defines `sources` $sources attr-dict"
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
        spec: Sequence[tuple[int, int | float]] = (),
        defines: dict[str, str] | None = None,
        sources: dict[str, str] | None = None,
        fastmath: bool = False,
    ):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "shader": StringAttr(shader),
                "precision": PrecisionAttr(precision),
                "local_size": _i32s(local_size),
                "bindings": ArrayAttr([AccessAttr(a) for a in bindings]),
                "push_size": IntegerAttr(push_size, i32),
                "spec_ids": _i32s([i for i, _ in spec]),
                "spec": words([v for _, v in spec]),
                "defines": _string_dict(defines or {}),
                "sources": _string_dict(sources or {}),
                "fastmath": UnitAttr() if fastmath else None,
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
        if any(i <= 0 for i in ids) or len(set(ids)) != len(ids):
            raise VerifyException(
                f"{where}: spec ids must be distinct and > 0 (0 is the local size), got {list(ids)}"
            )
        if len(ids) != len(self.spec.data):
            raise VerifyException(f"{where}: {len(ids)} spec ids for {len(self.spec.data)} values")
        _check_words(self, "spec", self.spec)
        for what, d in (("defines", self.defines), ("sources", self.sources)):
            if not all(isinstance(v, StringAttr) for v in d.data.values()):
                raise VerifyException(f"{where}: {what} map names to strings")


# ---------------------------------------------------------------------------
# Buffer level: segments and memory
# ---------------------------------------------------------------------------


@irdl_op_definition
class VulkanSegmentOp(IRDLOperation):
    """GPU work recorded once into one command buffer and replayed per run.
    Host tensors in (operands, block arguments), host tensors out (results,
    from `vkd.yield` of `vkd.download`s). Its body declares its memory
    (arenas, allocs, weights), then runs in order: uploads (host writes
    before the submit), the recorded commands (dispatches, barriers,
    copies), downloads (host reads after the fence)."""

    name = "vkd.vulkan_segment"

    inputs = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")

    traits = traits_def(IsolatedFromAbove())
    assembly_format = (
        "`(` $inputs `)` attr-dict-with-keyword `:` functional-type($inputs, $outputs) $body"
    )

    def __init__(self, inputs: Sequence[SSAValue], result_types: Sequence[Attribute], body: Region):
        super().__init__(operands=[inputs], result_types=[result_types], regions=[body])

    def verify_(self) -> None:
        where = "vkd.vulkan_segment"
        _check_args(self, self.body, self.inputs)
        _check_yield(self, self.body, self.outputs)
        phase = 0  # 0: uploads, 1: commands, 2: downloads
        for op in self.body.block.ops:
            if isinstance(op, (*DECLARATIONS, YieldOp)):
                continue
            if not isinstance(op, COMMANDS):
                raise VerifyException(
                    f"{where}: '{op.name}' cannot run in a Vulkan segment (it declares memory, "
                    "then uploads, dispatches, barriers, copies and downloads)"
                )
            now = 0 if isinstance(op, UploadOp) else 2 if isinstance(op, DownloadOp) else 1
            if now < phase:
                raise VerifyException(
                    f"{where}: {op.name} after the "
                    + ("first command" if phase == 1 else "first download")
                )
            phase = now


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a segment or an epilogue group: the values it returns, in order."""

    name = "vkd.yield"

    values = var_operand_def()

    traits = traits_def(IsTerminator())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, *values: SSAValue):
        super().__init__(operands=[values])


@irdl_op_definition
class ArenaOp(IRDLOperation):
    """One buffer that allocations live in, sized by `plan-memory`."""

    name = "vkd.arena"

    memory = prop_def(MemoryAttr)
    size = prop_def(IntegerAttr[I64])
    alignment = prop_def(IntegerAttr[I64])
    result = result_def(ArenaType)

    traits = traits_def(HasParent(VulkanSegmentOp))
    assembly_format = "$memory `size` $size `align` $alignment attr-dict"

    def __init__(self, memory: Memory, size: int, alignment: int = MIN_ALIGNMENT):
        super().__init__(
            result_types=[ArenaType()],
            properties={
                "memory": MemoryAttr(memory),
                "size": IntegerAttr(size, i64),
                "alignment": IntegerAttr(alignment, i64),
            },
        )

    def verify_(self) -> None:
        size, align = self.size.value.data, self.alignment.value.data
        if size < 0:
            raise VerifyException(f"vkd.arena: size {size} is negative")
        if align < MIN_ALIGNMENT or align & (align - 1):
            raise VerifyException(
                f"vkd.arena: alignment {align} must be a power of two >= {MIN_ALIGNMENT}"
            )


def _placement(
    op: Operation, arena: SSAValue | None, offset: IntegerAttr | None, size: int
) -> None:
    """An op placed in `arena` at `offset` (both or neither) fits it, aligned."""
    if (arena is None) != (offset is None):
        raise VerifyException(f"{op.name}: an arena and an offset go together")
    if arena is None or offset is None:
        return
    owner = arena.owner
    assert isinstance(owner, ArenaOp)
    off, align = offset.value.data, owner.alignment.value.data
    if off < 0 or off % align:
        raise VerifyException(f"{op.name}: offset {off} is not a multiple of the arena's {align}")
    if off + size > owner.size.value.data:
        raise VerifyException(
            f"{op.name}: bytes [{off}, {off + size}) are past the arena's {owner.size.value.data}"
        )


@irdl_op_definition
class AllocOp(IRDLOperation):
    """Memory for one device tensor: `size` bytes (its storage with the
    layout's padding, or more when something is placed in it); placed at
    `offset` in `arena` by `plan-memory`, unplaced before."""

    name = "vkd.alloc"

    memory = prop_def(MemoryAttr)
    arena = opt_operand_def(ArenaType)
    offset = opt_prop_def(IntegerAttr[I64])
    size = prop_def(IntegerAttr[I64])
    result = result_def(TensorBufferType)

    traits = traits_def(HasParent(VulkanSegmentOp))
    assembly_format = "$memory ($arena^ `[` $offset `]`)? `size` $size attr-dict `:` type($result)"

    def __init__(
        self,
        memory: Memory,
        size: int,
        type: TensorBufferType,
        arena: SSAValue | None = None,
        offset: int | None = None,
    ):
        super().__init__(
            operands=[[arena] if arena is not None else []],
            result_types=[type],
            properties={
                "memory": MemoryAttr(memory),
                "size": IntegerAttr(size, i64),
                "offset": IntegerAttr(offset, i64) if offset is not None else None,
            },
        )

    def verify_(self) -> None:
        t = _tensor(self.result)
        size = self.size.value.data
        if t.is_host:
            raise VerifyException("vkd.alloc: device tensors only (host tensors are SSA values)")
        if size < t.byte_size():
            raise VerifyException(
                f"vkd.alloc: size {size} is smaller than the tensor's {t.byte_size()} bytes"
            )
        if self.arena is not None:
            owner = self.arena.owner
            assert isinstance(owner, ArenaOp)
            if owner.memory != self.memory:
                raise VerifyException(
                    f"vkd.alloc: a {self.memory.data.value} tensor in a "
                    f"{owner.memory.data.value} arena"
                )
        _placement(self, self.arena, self.offset, size)


@irdl_op_definition
class SubviewOp(IRDLOperation):
    """A device tensor inside another's memory, `offset` bytes in: a reshape
    alias, a concat input its producer writes straight into the concat's
    result, a kernel table's part."""

    name = "vkd.subview"

    source = operand_def(TensorBufferType)
    offset = prop_def(IntegerAttr[I64])
    result = result_def(TensorBufferType)

    traits = traits_def(HasParent(VulkanSegmentOp))
    assembly_format = "$source `[` $offset `]` attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, offset: int, type: TensorBufferType):
        super().__init__(
            operands=[source], result_types=[type], properties={"offset": IntegerAttr(offset, i64)}
        )

    def verify_(self) -> None:
        off = self.offset.value.data
        size = _tensor(self.result).byte_size()
        limit = buffer_bytes(self.source)
        if off < 0 or off + size > limit:
            raise VerifyException(
                f"vkd.subview: bytes [{off}, {off + size}) are outside the source's {limit}"
            )


@irdl_op_definition
class WeightOp(IRDLOperation):
    """A constant in its device form: `data` (the model's values, by resource
    handle) through `transform` (e.g. "ohwi": a conv weight reordered for a
    packed kernel), stored as the result type says (fp16 words, NC4HW4...).
    Written once when the program is loaded; placed in a const arena by
    `plan-memory`."""

    name = "vkd.weight"

    data = prop_def(DenseResourceAttr)
    transform = opt_prop_def(StringAttr)
    arena = opt_operand_def(ArenaType)
    offset = opt_prop_def(IntegerAttr[I64])
    result = result_def(TensorBufferType)

    traits = traits_def(HasParent(VulkanSegmentOp))
    assembly_format = (
        "$data (`transform` $transform^)? (`in` $arena^ `[` $offset `]`)? attr-dict "
        "`:` type($result)"
    )

    def __init__(
        self,
        data: DenseResourceAttr,
        type: TensorBufferType,
        transform: str | None = None,
        arena: SSAValue | None = None,
        offset: int | None = None,
    ):
        super().__init__(
            operands=[[arena] if arena is not None else []],
            result_types=[type],
            properties={
                "data": data,
                "transform": StringAttr(transform) if transform else None,
                "offset": IntegerAttr(offset, i64) if offset is not None else None,
            },
        )

    def verify_(self) -> None:
        t = _tensor(self.result)
        if t.is_host:
            raise VerifyException("vkd.weight: a weight is a device tensor")
        data_type = self.data.type
        if not isinstance(data_type, TensorType):
            raise VerifyException("vkd.weight: the data must be a ranked tensor")
        if math.prod(data_type.get_shape()) != math.prod(t.get_shape()):
            raise VerifyException(
                f"vkd.weight: data {data_type} and tensor {t} differ in element count"
            )
        if self.arena is not None:
            owner = self.arena.owner
            assert isinstance(owner, ArenaOp)
            if owner.memory.data is not Memory.CONST:
                raise VerifyException("vkd.weight: weights live in a const arena")
        _placement(self, self.arena, self.offset, t.byte_size())


def buffer_bytes(value: SSAValue) -> int:
    """The bytes a device tensor value may be bound over (its alloc's size)."""
    owner = value.owner
    if isinstance(owner, AllocOp):
        return owner.size.value.data
    return _tensor(value).byte_size()


def _require_device(op: Operation, value: SSAValue, role: str) -> None:
    if _tensor(value).is_host:
        raise VerifyException(f"{op.name}: {role} must be a device tensor, got {value.type}")


def _logical_match(host: Attribute, dev: TensorBufferType) -> bool:
    return (
        isinstance(host, TensorType)
        and host.get_shape() == dev.get_shape()
        and host.element_type == dev.element_type
    )


@irdl_op_definition
class UploadOp(IRDLOperation):
    """Host writes a segment input into a device tensor (converting the
    model's dtype to the tensor's storage) before the submit. The tensor is
    in host-visible memory: a device arena of a `unified`/`rebar` target,
    else a staging arena followed by a `vkd.copy`."""

    name = "vkd.upload"

    source = operand_def(TensorType)
    dest = operand_def(TensorBufferType)

    traits = traits_def(HasParent(VulkanSegmentOp))
    assembly_format = "$source `to` $dest attr-dict `:` type($source) `to` type($dest)"

    def __init__(self, source: SSAValue, dest: SSAValue):
        super().__init__(operands=[source, dest])

    def verify_(self) -> None:
        _require_device(self, self.dest, "dest")
        if not _logical_match(self.source.type, _tensor(self.dest)):
            raise VerifyException(f"vkd.upload: {self.source.type} does not fill {self.dest.type}")
        if _tensor(self.dest).layout.data is not Layout.FLAT:
            raise VerifyException("vkd.upload: the host writes flat tensors only")


@irdl_op_definition
class DownloadOp(IRDLOperation):
    """Host reads a segment output from a device tensor after the fence."""

    name = "vkd.download"

    source = operand_def(TensorBufferType)
    result = result_def(TensorType)

    traits = traits_def(HasParent(VulkanSegmentOp))
    assembly_format = "$source attr-dict `:` type($source) `->` type($result)"

    def __init__(self, source: SSAValue, result: Attribute):
        super().__init__(operands=[source], result_types=[result])

    def verify_(self) -> None:
        _require_device(self, self.source, "source")
        if not _logical_match(self.result.type, _tensor(self.source)):
            raise VerifyException(
                f"vkd.download: {self.source.type} does not give {self.result.type}"
            )
        if _tensor(self.source).layout.data is not Layout.FLAT:
            raise VerifyException("vkd.download: the host reads flat tensors only")


# ---------------------------------------------------------------------------
# Buffer level: commands
# ---------------------------------------------------------------------------


@irdl_op_definition
class DispatchOp(IRDLOperation):
    """One `vkCmdDispatch` of `kernel`: binding i is `ranges[2i + 1]` bytes
    of `buffers[i]` from byte `ranges[2i]` on; push-constant words
    (little-endian 32-bit, as the kernel's block lays them out); `groups`
    workgroups. `label` names it in profiles; `onnx.name` lists its nodes."""

    name = "vkd.dispatch"

    kernel = prop_def(SymbolRefAttr)
    buffers = var_operand_def(TensorBufferType)
    ranges = prop_def(DenseArrayBase[I64])
    push = prop_def(ArrayAttr)
    groups = prop_def(DenseArrayBase[I32])
    step = prop_def(IntegerAttr[I64])
    """Dispatches with one `step` number are parts of one pass of one op
    (a dispatch split at maxComputeWorkGroupCount, element ranges): they
    touch disjoint memory, so `insert-barriers` never separates them."""
    label = prop_def(StringAttr)

    traits = traits_def(HasParent(VulkanSegmentOp))
    custom_directives = (Words,)
    assembly_format = (
        "$kernel `(` $buffers `)` `ranges` $ranges `push` custom<Words>($push) "
        "`groups` $groups `step` $step `label` $label attr-dict `:` type($buffers)"
    )

    def __init__(
        self,
        kernel: str,
        buffers: Sequence[SSAValue],
        ranges: Sequence[int],
        push: Sequence[int],
        groups: Sequence[int],
        step: int = 0,
        label: str = "",
        attributes: dict[str, Attribute] | None = None,
    ):
        super().__init__(
            operands=[buffers],
            properties={
                "kernel": SymbolRefAttr(kernel),
                "ranges": DenseArrayBase.from_list(i64, list(ranges)),
                "push": words(list(push)),
                "groups": _i32s(groups),
                "step": IntegerAttr(step, i64),
                "label": StringAttr(label),
            },
            attributes=attributes or {},
        )

    def kernel_op(self) -> KernelOp | None:
        module = self.parent_op()
        while module is not None and not isinstance(module, ModuleOp):
            module = module.parent_op()
        if module is None:
            return None
        for op in module.ops:
            if isinstance(op, KernelOp) and op.sym_name.data == self.kernel.root_reference.data:
                return op
        return None

    def binding_ranges(self) -> list[tuple[int, int]]:
        r = self.ranges.get_values()
        return [(r[2 * i], r[2 * i + 1]) for i in range(len(r) // 2)]

    def verify_(self) -> None:
        name = self.kernel.root_reference.data
        where = f"vkd.dispatch @{name}"
        groups = self.groups.get_values()
        if len(groups) != 3 or any(g <= 0 for g in groups):
            raise VerifyException(f"{where}: groups must be 3 positive counts, got {list(groups)}")
        _check_words(self, "push", self.push)
        ranges = self.binding_ranges()
        if len(ranges) * 2 != len(self.ranges.get_values()) or len(ranges) != len(self.buffers):
            raise VerifyException(
                f"{where}: {len(self.ranges.get_values())} range values for "
                f"{len(self.buffers)} buffers (2 each: offset, size)"
            )
        for v, (off, size) in zip(self.buffers, ranges, strict=True):
            _require_device(self, v, "buffer")
            limit = buffer_bytes(v)
            if off < 0 or size <= 0 or off + size > limit:
                raise VerifyException(
                    f"{where}: binding bytes [{off}, {off + size}) are outside its {limit}"
                )
        kernel = self.kernel_op()
        if kernel is None:
            # Dispatches are verified before the module when nested; the
            # module-level check below re-runs once kernels are in scope.
            return
        if kernel.binding_count != len(self.buffers):
            raise VerifyException(
                f"{where}: {len(self.buffers)} buffers for a kernel with "
                f"{kernel.binding_count} bindings"
            )
        if 4 * len(self.push.data) != kernel.push_size.value.data:
            raise VerifyException(
                f"{where}: {4 * len(self.push.data)} push-constant bytes for a kernel "
                f"declaring {kernel.push_size.value.data}"
            )


@irdl_op_definition
class BarrierOp(IRDLOperation):
    """One `vkCmdPipelineBarrier`: commands of the `src` stages before it
    finish (and their writes to the listed byte ranges become visible) before
    commands of the `dst` stages after it start. No buffers: an execution
    dependency only (a write-after-read hazard)."""

    name = "vkd.barrier"

    src = prop_def(ArrayAttr[StageAttr])
    dst = prop_def(ArrayAttr[StageAttr])
    buffers = var_operand_def(TensorBufferType)
    ranges = prop_def(DenseArrayBase[I64])

    traits = traits_def(HasParent(VulkanSegmentOp))
    custom_directives = (StageList,)
    assembly_format = (
        "custom<StageList>($src) `to` custom<StageList>($dst) "
        "`(` ($buffers^ `:` type($buffers))? `)` `ranges` $ranges attr-dict"
    )

    def __init__(
        self,
        src: Sequence[Stage],
        dst: Sequence[Stage],
        buffers: Sequence[SSAValue] = (),
        ranges: Sequence[int] = (),
    ):
        super().__init__(
            operands=[buffers],
            properties={
                "src": ArrayAttr([StageAttr(s) for s in src]),
                "dst": ArrayAttr([StageAttr(s) for s in dst]),
                "ranges": DenseArrayBase.from_list(i64, list(ranges)),
            },
        )

    def verify_(self) -> None:
        if not self.src.data or not self.dst.data:
            raise VerifyException("vkd.barrier: src and dst name at least one stage each")
        r = self.ranges.get_values()
        if len(r) != 2 * len(self.buffers):
            raise VerifyException(
                f"vkd.barrier: {len(r)} range values for {len(self.buffers)} buffers"
            )
        for i, v in enumerate(self.buffers):
            _require_device(self, v, "buffer")
            off, size = r[2 * i], r[2 * i + 1]
            if off < 0 or size <= 0 or off + size > buffer_bytes(v):
                raise VerifyException(
                    f"vkd.barrier: bytes [{off}, {off + size}) are outside {v.type}"
                )


@irdl_op_definition
class CopyOp(IRDLOperation):
    """`vkCmdCopyBuffer` of `size` bytes between two device tensors."""

    name = "vkd.copy"

    source = operand_def(TensorBufferType)
    dest = operand_def(TensorBufferType)
    size = prop_def(IntegerAttr[I64])
    src_offset = prop_def(IntegerAttr[I64])
    dst_offset = prop_def(IntegerAttr[I64])

    traits = traits_def(HasParent(VulkanSegmentOp))
    assembly_format = (
        "$source `[` $src_offset `]` `to` $dest `[` $dst_offset `]` `size` $size "
        "attr-dict `:` type($source) `to` type($dest)"
    )

    def __init__(
        self, source: SSAValue, dest: SSAValue, size: int, src_offset: int = 0, dst_offset: int = 0
    ):
        super().__init__(
            operands=[source, dest],
            properties={
                "size": IntegerAttr(size, i64),
                "src_offset": IntegerAttr(src_offset, i64),
                "dst_offset": IntegerAttr(dst_offset, i64),
            },
        )

    def verify_(self) -> None:
        _require_device(self, self.source, "source")
        _require_device(self, self.dest, "dest")
        size = self.size.value.data
        if size <= 0:
            raise VerifyException(f"vkd.copy: size {size} must be positive")
        for role, value, off in (
            ("source", self.source, self.src_offset),
            ("dest", self.dest, self.dst_offset),
        ):
            start = off.value.data
            limit = buffer_bytes(value)
            if start < 0 or start + size > limit:
                raise VerifyException(
                    f"vkd.copy: {role} bytes [{start}, {start + size}) are outside its "
                    f"{limit} bytes"
                )


DECLARATIONS: tuple[type[Operation], ...] = (ArenaOp, AllocOp, SubviewOp, WeightOp)
"""Ops of a Vulkan segment that declare memory (no effect when run)."""
COMMANDS: tuple[type[Operation], ...] = (UploadOp, DownloadOp, DispatchOp, BarrierOp, CopyOp)
"""Ops of a Vulkan segment that run, in order."""

VKD = Dialect(
    "vkd",
    [
        SegmentOp,
        WithEpilogueOp,
        ViewOp,
        AliasOp,
        ConvertOp,
        KernelOp,
        VulkanSegmentOp,
        YieldOp,
        ArenaOp,
        AllocOp,
        SubviewOp,
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
        TargetAttr,
    ],
)
