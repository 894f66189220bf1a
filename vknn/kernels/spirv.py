"""SPIR-V post-processing at the word level: fast-math defaults and fp16 RTE.

glslang cannot express SPV_KHR_float_controls2's per-type fast-math defaults
or the RoundingModeRTE execution mode from GLSL, so VKNN adds them to the
compiled module before `vkCreateShaderModule`:

- `inject_fastmath`: `OpCapability FloatControls2`, `OpExtension
  "SPV_KHR_float_controls2"`, a 32-bit integer constant holding the flags and
  one `OpExecutionModeId %entry FPFastMathDefault %float_type %flags` per entry
  point and float type (default AllowContract|AllowReassoc|AllowTransform).
  Once any FPFastMathDefault is set, a float type without one gets no
  fast-math at all, so every float type the caller names gets one.
- `inject_rte_fp16`: `OpCapability RoundingModeRTE` (plus `OpExtension
  "SPV_KHR_float_controls"` below SPIR-V 1.4) and `OpExecutionMode %entry
  RoundingModeRTE 16`: fp32 -> fp16 conversions round to nearest even.

Everything works on the module's words (header + `(opcode, operands)`
instructions), never on disassembled text: no spirv-dis/spirv-as round trip
(which would renumber nothing but cost two subprocesses per shader and tie us
to the tools' text syntax), and the result is byte-deterministic. New
instructions go where SPIR-V's logical layout puts them (capabilities,
extensions, imports, memory model, entry points, execution modes, debug,
annotations, types/constants, functions); new ids are taken from the header's
bound. Both patches are idempotent: applying one twice gives the bytes of
applying it once.

This module must not touch a Vulkan device; it only rewrites bytes.
"""

from __future__ import annotations

import struct
import warnings
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vknn.runtime.target import Target as DeviceCaps

MAGIC = 0x07230203

# Opcodes (SPIR-V 1.6 unified spec, section 3.52).
OP_SOURCE_CONTINUED = 2
OP_SOURCE = 3
OP_SOURCE_EXTENSION = 4
OP_NAME = 5
OP_MEMBER_NAME = 6
OP_STRING = 7
OP_EXTENSION = 10
OP_EXT_INST_IMPORT = 11
OP_MEMORY_MODEL = 14
OP_ENTRY_POINT = 15
OP_EXECUTION_MODE = 16
OP_CAPABILITY = 17
OP_TYPE_INT = 21
OP_TYPE_FLOAT = 22
OP_CONSTANT = 43
OP_DECORATE = 71
OP_MEMBER_DECORATE = 72
OP_DECORATION_GROUP = 73
OP_GROUP_DECORATE = 74
OP_GROUP_MEMBER_DECORATE = 75
OP_MODULE_PROCESSED = 330
OP_EXECUTION_MODE_ID = 331
OP_DECORATE_ID = 332
OP_DECORATE_STRING = 5632
OP_MEMBER_DECORATE_STRING = 5633

# Capabilities, execution modes, decorations.
CAP_ROUNDING_MODE_RTE = 4467
CAP_FLOAT_CONTROLS2 = 6029
MODE_CONTRACTION_OFF = 31
MODE_SIGNED_ZERO_INF_NAN_PRESERVE = 4461
MODE_ROUNDING_MODE_RTE = 4462
MODE_ROUNDING_MODE_RTZ = 4463
MODE_FP_FAST_MATH_DEFAULT = 6028
DEC_FP_FAST_MATH_MODE = 40
DEC_NO_CONTRACTION = 42

# FP Fast Math Mode bits.
NOT_NAN = 0x1
NOT_INF = 0x2
NSZ = 0x4
ALLOW_RECIP = 0x8
FAST = 0x10
ALLOW_CONTRACT = 0x10000
ALLOW_REASSOC = 0x20000
ALLOW_TRANSFORM = 0x40000
VALID_FLAGS = NOT_NAN | NOT_INF | NSZ | ALLOW_RECIP | FAST | ALLOW_CONTRACT
VALID_FLAGS |= ALLOW_REASSOC | ALLOW_TRANSFORM
DEFAULT_FASTMATH = ALLOW_CONTRACT | ALLOW_REASSOC | ALLOW_TRANSFORM
"""0x70000: contraction (FMA), reassociation and real-number transforms; NaN,
inf and signed zeros stay significant (softmax masks rely on -inf)."""

EXT_FLOAT_CONTROLS = "SPV_KHR_float_controls"
EXT_FLOAT_CONTROLS2 = "SPV_KHR_float_controls2"
FLOAT_WIDTHS = {"f16": 16, "f32": 32, "f64": 64}

# Everything that precedes the types/constants section, in layout order.
_PREAMBLE = {
    OP_CAPABILITY,
    OP_EXTENSION,
    OP_EXT_INST_IMPORT,
    OP_MEMORY_MODEL,
    OP_ENTRY_POINT,
    OP_EXECUTION_MODE,
    OP_EXECUTION_MODE_ID,
    OP_SOURCE_CONTINUED,
    OP_SOURCE,
    OP_SOURCE_EXTENSION,
    OP_NAME,
    OP_MEMBER_NAME,
    OP_STRING,
    OP_MODULE_PROCESSED,
    OP_DECORATE,
    OP_MEMBER_DECORATE,
    OP_DECORATION_GROUP,
    OP_GROUP_DECORATE,
    OP_GROUP_MEMBER_DECORATE,
    OP_DECORATE_ID,
    OP_DECORATE_STRING,
    OP_MEMBER_DECORATE_STRING,
}

Instruction = tuple[int, tuple[int, ...]]
"""(opcode, operand words): the instruction without its leading count word."""


class SpirvError(ValueError):
    """The words are not a SPIR-V module this module can patch."""


class FastMathRefused(SpirvError):
    """The flags, or the module, are ones SPV_KHR_float_controls2 forbids
    combining with FPFastMathDefault."""


class RoundingRefused(SpirvError):
    """The module already asks for another fp16 rounding mode."""


# -- words <-> instructions ---------------------------------------------------


def words_of(spirv: bytes) -> list[int]:
    """The module's 32-bit words (either byte order, by the magic number)."""
    if len(spirv) % 4 or len(spirv) < 20:
        raise SpirvError(f"a SPIR-V module is a whole number of words, >= 5; got {len(spirv)} B")
    n = len(spirv) // 4
    for order in "<>":
        words = list(struct.unpack(f"{order}{n}I", spirv))
        if words[0] == MAGIC:
            return words
    raise SpirvError(f"not SPIR-V: magic 0x{int.from_bytes(spirv[:4], 'little'):08x}")


def bytes_of(words: Sequence[int]) -> bytes:
    """Little-endian bytes (vkCreateShaderModule wants host order; every
    Vulkan host VKNN runs on is little-endian)."""
    return struct.pack(f"<{len(words)}I", *words)


def parse(words: Sequence[int]) -> tuple[list[int], list[Instruction]]:
    """(5 header words, instructions) of a module."""
    if len(words) < 5 or words[0] != MAGIC:
        raise SpirvError("not a SPIR-V module (bad magic or no header)")
    header = list(words[:5])
    insts: list[Instruction] = []
    i = 5
    while i < len(words):
        count, opcode = words[i] >> 16, words[i] & 0xFFFF
        if count == 0 or i + count > len(words):
            raise SpirvError(f"truncated instruction (opcode {opcode}) at word {i}")
        insts.append((opcode, tuple(words[i + 1 : i + count])))
        i += count
    return header, insts


def assemble(header: Sequence[int], insts: Iterable[Instruction]) -> list[int]:
    """The words of `header` + `insts` (the inverse of `parse`)."""
    out = list(header)
    for opcode, ops in insts:
        out.append(((len(ops) + 1) << 16) | opcode)
        out.extend(ops)
    return out


def encode_string(s: str) -> tuple[int, ...]:
    """A literal string operand: UTF-8, NUL-terminated, zero-padded to words."""
    raw = s.encode() + b"\0"
    raw += b"\0" * (-len(raw) % 4)
    return struct.unpack(f"<{len(raw) // 4}I", raw)


def decode_string(ops: Sequence[int]) -> str:
    raw = struct.pack(f"<{len(ops)}I", *ops)
    return raw[: raw.index(b"\0")].decode()


def version(header: Sequence[int]) -> tuple[int, int]:
    return (header[1] >> 16) & 0xFF, (header[1] >> 8) & 0xFF


# -- queries --------------------------------------------------------------------


def capabilities(insts: Iterable[Instruction]) -> set[int]:
    return {ops[0] for op, ops in insts if op == OP_CAPABILITY}


def extensions(insts: Iterable[Instruction]) -> set[str]:
    return {decode_string(ops) for op, ops in insts if op == OP_EXTENSION}


def entry_points(insts: Iterable[Instruction]) -> list[int]:
    return [ops[1] for op, ops in insts if op == OP_ENTRY_POINT]


def declared_float_types(insts: Iterable[Instruction]) -> dict[int, int]:
    """Bit width -> id of each plain IEEE OpTypeFloat (one with an encoding
    operand, e.g. bfloat16, is left out)."""
    return {ops[1]: ops[0] for op, ops in insts if op == OP_TYPE_FLOAT and len(ops) == 2}


def _last(insts: Sequence[Instruction], opcodes: set[int]) -> int:
    """Index of the last instruction with one of `opcodes`, or -1."""
    for i in range(len(insts) - 1, -1, -1):
        if insts[i][0] in opcodes:
            return i
    return -1


def _first_global(insts: Sequence[Instruction]) -> int:
    """Index where the types/constants section starts."""
    for i, (op, _) in enumerate(insts):
        if op not in _PREAMBLE:
            return i
    return len(insts)


def _insert(insts: list[Instruction], adds: list[tuple[int, Instruction]]) -> list[Instruction]:
    """`insts` with each (index, inst) of `adds` placed before insts[index];
    adds at the same index keep their order in `adds`."""
    at: dict[int, list[Instruction]] = {}
    for pos, inst in adds:
        at.setdefault(pos, []).append(inst)
    out: list[Instruction] = []
    for i, inst in enumerate(insts):
        out.extend(at.pop(i, ()))
        out.append(inst)
    out.extend(at.pop(len(insts), ()))
    return out


def _add_capability_and_extension(
    insts: Sequence[Instruction], cap: int, ext: str | None, adds: list[tuple[int, Instruction]]
) -> None:
    last_cap = _last(insts, {OP_CAPABILITY})
    if last_cap < 0:
        raise SpirvError("the module declares no capability (not a shader module)")
    if cap not in capabilities(insts):
        adds.append((last_cap + 1, (OP_CAPABILITY, (cap,))))
    if ext is not None and ext not in extensions(insts):
        last_ext = _last(insts, {OP_EXTENSION})
        adds.append(
            ((last_ext if last_ext >= 0 else last_cap) + 1, (OP_EXTENSION, encode_string(ext)))
        )


def _mode_position(insts: Sequence[Instruction]) -> int:
    last = _last(insts, {OP_EXECUTION_MODE, OP_EXECUTION_MODE_ID})
    if last < 0:
        last = _last(insts, {OP_ENTRY_POINT})
    if last < 0:
        raise SpirvError("the module has no entry point")
    return last + 1


# -- fast math --------------------------------------------------------------------


def check_fastmath_flags(flags: int) -> None:
    """Raise FastMathRefused for a flag set FPFastMathDefault may not carry."""
    if flags & ~VALID_FLAGS:
        raise FastMathRefused(
            f"fast-math flags 0x{flags:x}: unknown bits 0x{flags & ~VALID_FLAGS:x}"
        )
    if flags & FAST:
        raise FastMathRefused(
            f"fast-math flags 0x{flags:x}: the deprecated Fast bit (0x10) is not allowed with "
            "FPFastMathDefault; set the individual bits instead"
        )
    both = ALLOW_CONTRACT | ALLOW_REASSOC
    if flags & ALLOW_TRANSFORM and flags & both != both:
        raise FastMathRefused(
            f"fast-math flags 0x{flags:x}: AllowTransform (0x40000) requires AllowContract "
            "(0x10000) and AllowReassoc (0x20000)"
        )


def _check_fastmath_module(insts: Sequence[Instruction]) -> None:
    """SPV_KHR_float_controls2's universal rules for an entry point with
    FPFastMathDefault (our modules have one entry point, so module-wide)."""
    for op, ops in insts:
        if op == OP_EXECUTION_MODE and ops[1] == MODE_CONTRACTION_OFF:
            raise FastMathRefused("the module uses execution mode ContractionOff")
        if op == OP_EXECUTION_MODE and ops[1] == MODE_SIGNED_ZERO_INF_NAN_PRESERVE:
            raise FastMathRefused("the module uses execution mode SignedZeroInfNanPreserve")
        if op == OP_DECORATE and ops[1] == DEC_NO_CONTRACTION:
            raise FastMathRefused(f"the module decorates %{ops[0]} NoContraction (GLSL `precise`)")
        if op == OP_DECORATE and ops[1] == DEC_FP_FAST_MATH_MODE and ops[2] & FAST:
            raise FastMathRefused(f"the module decorates %{ops[0]} FPFastMathMode with Fast")


def inject_fastmath(
    words: Sequence[int],
    flags: int = DEFAULT_FASTMATH,
    float_types: Sequence[str] = ("f32", "f16"),
) -> list[int]:
    """`words` with FPFastMathDefault `flags` for each float type of
    `float_types` ("f16", "f32", "f64") that the module declares, on every
    entry point. A module declaring none of them comes back unchanged."""
    check_fastmath_flags(flags)
    unknown = [t for t in float_types if t not in FLOAT_WIDTHS]
    if unknown:
        raise SpirvError(f"unknown float type(s) {unknown}; known: {list(FLOAT_WIDTHS)}")
    header, insts = parse(words)
    _check_fastmath_module(insts)
    declared = declared_float_types(insts)
    targets = [declared[FLOAT_WIDTHS[t]] for t in float_types if FLOAT_WIDTHS[t] in declared]
    entries = entry_points(insts)
    if not entries:
        raise SpirvError("the module has no entry point")
    if not targets:
        return list(words)

    consts = {ops[1]: (ops[0], ops[2:]) for op, ops in insts if op == OP_CONSTANT}
    have: dict[tuple[int, int], int] = {}
    for op, ops in insts:
        if op == OP_EXECUTION_MODE_ID and ops[1] == MODE_FP_FAST_MATH_DEFAULT:
            have[(ops[0], ops[2])] = ops[3]
            _, value = consts.get(ops[3], (0, ()))
            if value != (flags,):
                raise FastMathRefused(
                    f"the module already sets FPFastMathDefault %{ops[2]} to %{ops[3]} "
                    f"(value {list(value)}), not 0x{flags:x}"
                )
    missing = [(e, t) for e in entries for t in targets if (e, t) not in have]

    adds: list[tuple[int, Instruction]] = []
    _add_capability_and_extension(insts, CAP_FLOAT_CONTROLS2, EXT_FLOAT_CONTROLS2, adds)
    if missing:
        bound = header[3]
        uint_at = next(
            (i for i, (op, ops) in enumerate(insts) if op == OP_TYPE_INT and ops[1:] == (32, 0)),
            None,
        )
        if uint_at is None:
            uint_id, bound = bound, bound + 1
            const_pos = _first_global(insts)
            adds.append((const_pos, (OP_TYPE_INT, (uint_id, 32, 0))))
        else:
            uint_id, const_pos = insts[uint_at][1][0], uint_at + 1
        const_id = next(
            (cid for cid, (ty, v) in consts.items() if ty == uint_id and v == (flags,)), None
        )
        if const_id is None:
            const_id, bound = bound, bound + 1
            adds.append((const_pos, (OP_CONSTANT, (uint_id, const_id, flags))))
        header[3] = bound
        pos = _mode_position(insts)
        for entry, ty in missing:
            mode = (entry, MODE_FP_FAST_MATH_DEFAULT, ty, const_id)
            adds.append((pos, (OP_EXECUTION_MODE_ID, mode)))
    if not adds:
        return list(words)
    return assemble(header, _insert(insts, adds))


# -- fp16 rounding ------------------------------------------------------------------


def inject_rte_fp16(words: Sequence[int]) -> list[int]:
    """`words` with `RoundingModeRTE 16` on every entry point (and the
    capability, plus SPV_KHR_float_controls below SPIR-V 1.4)."""
    header, insts = parse(words)
    entries = entry_points(insts)
    if not entries:
        raise SpirvError("the module has no entry point")
    have = set()
    for op, ops in insts:
        if op == OP_EXECUTION_MODE and ops[1] == MODE_ROUNDING_MODE_RTZ and ops[2:] == (16,):
            raise RoundingRefused("the module already sets RoundingModeRTZ for 16-bit floats")
        if op == OP_EXECUTION_MODE and ops[1] == MODE_ROUNDING_MODE_RTE and ops[2:] == (16,):
            have.add(ops[0])
    adds: list[tuple[int, Instruction]] = []
    # SPV_KHR_float_controls is core from SPIR-V 1.4.
    ext = EXT_FLOAT_CONTROLS if version(header) < (1, 4) else None
    _add_capability_and_extension(insts, CAP_ROUNDING_MODE_RTE, ext, adds)
    pos = _mode_position(insts)
    for entry in entries:
        if entry not in have:
            adds.append((pos, (OP_EXECUTION_MODE, (entry, MODE_ROUNDING_MODE_RTE, 16))))
    if not adds:
        return list(words)
    return assemble(header, _insert(insts, adds))


# -- entry point and policy ------------------------------------------------------------


def postprocess(
    spirv: bytes,
    *,
    fastmath: bool,
    rte_fp16: bool,
    fastmath_flags: int = DEFAULT_FASTMATH,
    fastmath_types: Sequence[str] = ("f32", "f16"),
) -> bytes:
    """`spirv` with the requested patches (unchanged bytes when none applies)."""
    if not (fastmath or rte_fp16):
        return spirv
    words = words_of(spirv)
    if rte_fp16:
        words = inject_rte_fp16(words)
    if fastmath:
        words = inject_fastmath(words, fastmath_flags, fastmath_types)
    return bytes_of(words)


def fastmath_enabled(mode: str, caps: DeviceCaps) -> bool:
    """Whether kernels get FPFastMathDefault, for `Config.fastmath` `mode`.

    "auto" and "on" need the device's VK_KHR_shader_float_controls2 feature
    (enabled by `Device`; left off under a validation layer that predates it)
    and shaderSignedZeroInfNanPreserveFloat32: Vulkan requires an f32
    FPFastMathDefault without that property to include NotNaN|NotInf|NSZ
    (VUID-RuntimeSpirv-shaderSignedZeroInfNanPreserveFloat32-09561), a promise
    our kernels cannot make (masked softmax computes with -inf). "on" on such a
    device runs without fast math, with a one-line note."""
    if mode == "off":
        return False
    if mode not in ("auto", "on"):
        raise ValueError(f"fastmath must be auto, on or off, got {mode!r}")
    ok = caps.has_float_controls2 and caps.signed_zero_inf_nan_preserve_fp32
    if not ok and mode == "on":
        why = (
            "VK_KHR_shader_float_controls2 is not enabled (the driver lacks it, or the "
            "validation layer predates it)"
            if not caps.has_float_controls2
            else "the device cannot preserve fp32 inf/NaN/signed zero"
        )
        warnings.warn(f"vknn: fastmath='on' ignored on {caps.name}: {why}", stacklevel=2)
    return ok


def fastmath_float_types(caps: DeviceCaps) -> tuple[str, ...]:
    """The float types that get a fast-math default on this device: f16 only
    where shaderSignedZeroInfNanPreserveFloat16 holds (the f16 twin of the rule
    in `fastmath_enabled`); without it f16 operations (our kernels only convert
    to and from f16) keep strict semantics."""
    return ("f32", "f16") if caps.signed_zero_inf_nan_preserve_fp16 else ("f32",)
