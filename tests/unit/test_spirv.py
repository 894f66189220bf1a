"""SPIR-V post-processing (`vknn.kernels.spirv`) at the word level: the exact
instructions each patch adds, idempotence, the refusals SPV_KHR_float_controls2
demands, spirv-val on every shader family x variant after patching, and the
policy (`fastmath_enabled`, `shaders.kernel_spirv`) from plain targets; the
compiled program carries exactly the patched bytes its target allows.

Fixture modules come from glslangValidator (as VKNN's own shaders) or, where
GLSL cannot produce the shape wanted (no uint type at all), from spirv-as;
modules the spec forbids to patch are also made by adding one instruction to
a valid module's words.
"""

from __future__ import annotations

import subprocess
import tempfile
import warnings
from dataclasses import replace
from pathlib import Path

import pytest

from tests.unit.vulkan.harness import graph, lowered, node
from vknn.kernels import spirv as S
from vknn.kernels.shaders import (
    VARIANTS,
    compile_shader,
    glslang,
    kernel_spirv,
    shader_names,
    spirv_val,
    validate,
)
from vknn.kernels.targets import target
from vknn.runtime.target import Target
from vknn.serialize import module_to_program

ENTRY_OPS = (S.OP_EXECUTION_MODE, S.OP_EXECUTION_MODE_ID)


def compile_glsl(src: str, target: str = "vulkan1.1") -> list[int]:
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "t.comp", Path(tmp) / "t.spv"
        path.write_text(src)
        res = subprocess.run(
            [glslang(), "-V", "--target-env", target, "-o", str(out), str(path)],
            capture_output=True,
            text=True,
        )
        assert res.returncode == 0, res.stdout + res.stderr
        return S.words_of(out.read_bytes())


def assemble_text(text: str) -> list[int]:
    spirv_as = str(Path(spirv_val()).with_name("spirv-as"))
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / "t.spvasm", Path(tmp) / "t.spv"
        path.write_text(text)
        res = subprocess.run(
            [spirv_as, "--target-env", "vulkan1.1", str(path), "-o", str(out)],
            capture_output=True,
            text=True,
        )
        assert res.returncode == 0, res.stderr
        return S.words_of(out.read_bytes())


def spirv_val_env(words: list[int], env: str) -> None:
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(S.bytes_of(words))
        f.flush()
        res = subprocess.run([spirv_val(), "--target-env", env, f.name], capture_output=True)
    assert res.returncode == 0, res.stderr.decode()


HALF_GLSL = """#version 450
#extension GL_EXT_shader_16bit_storage : require
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer H { float16_t h[]; };
layout(std430, binding = 1) buffer F { float f[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    h[i] = float16_t(f[i] * f[i + 1u] + 3.0);
}
"""

PRECISE_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer B { float x[]; };
void main() { precise float y = x[1] * x[2] + x[3]; x[0] = y; }
"""

# glslang has no GLSL spelling for SignedZeroInfNanPreserve but the
# spirv_intrinsics escape hatch.
SZINP_GLSL = """#version 450
#extension GL_EXT_spirv_intrinsics : require
spirv_execution_mode(extensions = ["SPV_KHR_float_controls"], capabilities = [4466], 4461, 32);
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer B { float x[]; };
void main() { x[0] = x[1] * x[2] + x[3]; }
"""

INT_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(std430, binding = 0) buffer B { int x[]; };
void main() { x[0] = x[1] * x[2] + x[3]; }
"""

# Every GLSL compute shader declares uint (gl_WorkGroupSize), so a module
# without one is written in assembly.
NO_UINT_ASM = """OpCapability Shader
OpMemoryModel Logical GLSL450
OpEntryPoint GLCompute %main "main"
OpExecutionMode %main LocalSize 1 1 1
OpName %main "main"
%void = OpTypeVoid
%fn = OpTypeFunction %void
%float = OpTypeFloat 32
%two = OpConstant %float 2
%main = OpFunction %void None %fn
%label = OpLabel
%sq = OpFMul %float %two %two
OpReturn
OpFunctionEnd
"""


@pytest.fixture(scope="module")
def half() -> list[int]:
    return compile_glsl(HALF_GLSL)


GLOBAL = 10
"""The rank of types, constants, variables and functions (after annotations)."""


def _rank(op: int) -> int:
    """SPIR-V logical layout section of an opcode (2.4 of the spec)."""
    order = [
        {S.OP_CAPABILITY},
        {S.OP_EXTENSION},
        {S.OP_EXT_INST_IMPORT},
        {S.OP_MEMORY_MODEL},
        {S.OP_ENTRY_POINT},
        {S.OP_EXECUTION_MODE, S.OP_EXECUTION_MODE_ID},
        {S.OP_SOURCE_CONTINUED, S.OP_SOURCE, S.OP_SOURCE_EXTENSION, S.OP_STRING},
        {S.OP_NAME, S.OP_MEMBER_NAME},
        {S.OP_MODULE_PROCESSED},
        {S.OP_DECORATE, S.OP_MEMBER_DECORATE, S.OP_DECORATE_ID, S.OP_DECORATE_STRING},
    ]
    assert len(order) == GLOBAL
    return next((i for i, ops in enumerate(order) if op in ops), GLOBAL)


def assert_layout(words: list[int]) -> None:
    """Sections in order, and nothing of an earlier section among the globals."""
    ranks = [_rank(op) for op, _ in S.parse(words)[1]]
    first_global = ranks.index(GLOBAL)
    assert ranks[:first_global] == sorted(ranks[:first_global]), ranks[:first_global]
    assert set(ranks[first_global:]) == {GLOBAL}


def assert_ids_below_bound(words: list[int]) -> None:
    """Every result id of the module is below the header's bound."""
    header, insts = S.parse(words)
    result_first = {S.OP_EXT_INST_IMPORT, S.OP_TYPE_INT, S.OP_TYPE_FLOAT}
    for op, ops in insts:
        if op in result_first:
            assert ops[0] < header[3]
        if op == S.OP_CONSTANT:
            assert ops[1] < header[3]


# -- parsing ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["matmul", "softmax", "conv", "quant"])
def test_parse_assemble_round_trip(name: str) -> None:
    for variant in VARIANTS:
        data = compile_shader(name, variant)
        words = S.words_of(data)
        header, insts = S.parse(words)
        assert header[0] == S.MAGIC and S.version(header) == (1, 3)
        assert S.assemble(header, insts) == words
        assert S.bytes_of(words) == data


def test_string_operands() -> None:
    for s in ["", "abc", "SPV_KHR_float_controls2", "x" * 7, "x" * 8]:
        enc = S.encode_string(s)
        assert len(enc) == len(s) // 4 + 1  # NUL always fits, padded to a word
        assert S.decode_string(enc) == s


def test_bad_input_is_a_spirv_error() -> None:
    with pytest.raises(S.SpirvError, match="whole number of words"):
        S.words_of(b"\x03\x02\x23")
    with pytest.raises(S.SpirvError, match="not SPIR-V"):
        S.words_of(bytes(20))
    with pytest.raises(S.SpirvError, match="truncated"):
        S.parse([S.MAGIC, 0x10300, 0, 10, 0, (5 << 16) | S.OP_CAPABILITY, 1])


# -- fast math ------------------------------------------------------------------


def test_fastmath_adds_exactly_the_instructions(half: list[int]) -> None:
    header, insts = S.parse(half)
    out = S.inject_fastmath(half)
    new_header, new_insts = S.parse(out)

    entry = S.entry_points(insts)[0]
    floats = S.declared_float_types(insts)
    uint = next(ops[0] for op, ops in insts if op == S.OP_TYPE_INT and ops[1:] == (32, 0))
    const_id = header[3]  # the one new id: the uint type already exists
    assert new_header[3] == header[3] + 1
    assert new_header[:3] == header[:3] and new_header[4] == header[4]

    added = list(new_insts)
    for inst in insts:
        added.remove(inst)
    assert added == [
        (S.OP_CAPABILITY, (S.CAP_FLOAT_CONTROLS2,)),
        (S.OP_EXTENSION, S.encode_string("SPV_KHR_float_controls2")),
        (S.OP_EXECUTION_MODE_ID, (entry, S.MODE_FP_FAST_MATH_DEFAULT, floats[32], const_id)),
        (S.OP_EXECUTION_MODE_ID, (entry, S.MODE_FP_FAST_MATH_DEFAULT, floats[16], const_id)),
        (S.OP_CONSTANT, (uint, const_id, 0x70000)),
    ]
    # The constant sits right after its type; every mode after LocalSize.
    at = new_insts.index((S.OP_TYPE_INT, (uint, 32, 0)))
    assert new_insts[at + 1] == (S.OP_CONSTANT, (uint, const_id, 0x70000))
    assert S.extensions(new_insts) == {"SPV_KHR_float_controls2"}
    assert_layout(out)
    assert_ids_below_bound(out)
    validate(S.bytes_of(out), "half.comp + fastmath")


def test_fastmath_declares_a_uint_type_when_missing() -> None:
    words = assemble_text(NO_UINT_ASM)
    header, insts = S.parse(words)
    assert not any(op == S.OP_TYPE_INT for op, _ in insts)
    out = S.inject_fastmath(words)
    new_header, new_insts = S.parse(out)
    uint_id, const_id = header[3], header[3] + 1
    assert new_header[3] == header[3] + 2
    ints = [(i, inst) for i, inst in enumerate(new_insts) if inst[0] == S.OP_TYPE_INT]
    assert [inst for _, inst in ints] == [(S.OP_TYPE_INT, (uint_id, 32, 0))]
    i = ints[0][0]
    assert new_insts[i + 1] == (S.OP_CONSTANT, (uint_id, const_id, S.DEFAULT_FASTMATH))
    # Only f32 is declared: one mode, though f16 was asked for too.
    modes = [ops for op, ops in new_insts if op == S.OP_EXECUTION_MODE_ID]
    f32 = S.declared_float_types(insts)[32]
    assert modes == [(S.entry_points(insts)[0], S.MODE_FP_FAST_MATH_DEFAULT, f32, const_id)]
    assert_layout(out)
    validate(S.bytes_of(out), "no-uint module + fastmath")


def test_fastmath_without_a_matching_float_type_is_a_no_op(half: list[int]) -> None:
    ints = compile_glsl(INT_GLSL)
    assert S.inject_fastmath(ints) == ints
    assert S.inject_fastmath(assemble_text(NO_UINT_ASM), float_types=("f16",)) == assemble_text(
        NO_UINT_ASM
    )
    only32 = S.inject_fastmath(half, float_types=("f32",))
    modes = [ops for op, ops in S.parse(only32)[1] if op == S.OP_EXECUTION_MODE_ID]
    assert [m[2] for m in modes] == [S.declared_float_types(S.parse(half)[1])[32]]


@pytest.mark.parametrize("flags", [0x70000, 0x30000, 0x10000, 0x70007, 0x7000F, 0])
def test_fastmath_flags_are_the_constant(half: list[int], flags: int) -> None:
    out = S.inject_fastmath(half, flags)
    _, insts = S.parse(out)
    (mode, _) = [ops for op, ops in insts if op == S.OP_EXECUTION_MODE_ID]
    const = next(ops for op, ops in insts if op == S.OP_CONSTANT and ops[1] == mode[3])
    assert const[2:] == (flags,)
    validate(S.bytes_of(out), f"flags 0x{flags:x}")


def test_fastmath_reuses_an_equal_constant(half: list[int]) -> None:
    once = S.inject_fastmath(half, float_types=("f32",))
    twice = S.inject_fastmath(once, float_types=("f32", "f16"))
    # The f16 mode reuses the f32 mode's constant: one constant, two modes.
    _, insts = S.parse(twice)
    modes = [ops for op, ops in insts if op == S.OP_EXECUTION_MODE_ID]
    assert len(modes) == 2 and modes[0][3] == modes[1][3]
    assert S.parse(twice)[0][3] == S.parse(once)[0][3]


@pytest.mark.parametrize(
    ("flags", "why"),
    [
        (0x10, "Fast bit"),
        (0x70010, "Fast bit"),
        (0x40000, "requires AllowContract"),
        (0x50000, "requires AllowContract"),
        (0x60000, "requires AllowContract"),
        (0x100, "unknown bits"),
        (0x80000, "unknown bits"),
    ],
)
def test_forbidden_flags_are_refused(half: list[int], flags: int, why: str) -> None:
    with pytest.raises(S.FastMathRefused, match=why) as err:
        S.inject_fastmath(half, flags)
    assert isinstance(err.value, ValueError)


def _with(words: list[int], inst: S.Instruction, after: int) -> list[int]:
    """`words` with `inst` added after the last instruction of opcode `after`."""
    header, insts = S.parse(words)
    i = max(i for i, (op, _) in enumerate(insts) if op == after)
    return S.assemble(header, [*insts[: i + 1], inst, *insts[i + 1 :]])


def test_modules_the_spec_forbids_are_refused(half: list[int]) -> None:
    with pytest.raises(S.FastMathRefused, match="NoContraction"):
        S.inject_fastmath(compile_glsl(PRECISE_GLSL))
    with pytest.raises(S.FastMathRefused, match="SignedZeroInfNanPreserve"):
        S.inject_fastmath(compile_glsl(SZINP_GLSL))
    # ContractionOff is a Kernel-model mode (no GLSL spelling): add it by hand.
    entry = S.entry_points(S.parse(half)[1])[0]
    off = _with(half, (S.OP_EXECUTION_MODE, (entry, S.MODE_CONTRACTION_OFF)), S.OP_EXECUTION_MODE)
    with pytest.raises(S.FastMathRefused, match="ContractionOff"):
        S.inject_fastmath(off)
    fast = _with(half, (S.OP_DECORATE, (entry, S.DEC_FP_FAST_MATH_MODE, S.FAST)), S.OP_DECORATE)
    with pytest.raises(S.FastMathRefused, match="FPFastMathMode with Fast"):
        S.inject_fastmath(fast)
    # Already patched with other flags: not silently changed.
    with pytest.raises(S.FastMathRefused, match="already sets FPFastMathDefault"):
        S.inject_fastmath(S.inject_fastmath(half, 0x30000))


# -- fp16 rounding ---------------------------------------------------------------


def test_rte_fp16_adds_exactly_the_instructions(half: list[int]) -> None:
    header, insts = S.parse(half)
    out = S.inject_rte_fp16(half)
    new_header, new_insts = S.parse(out)
    assert new_header == header  # no new ids
    added = list(new_insts)
    for inst in insts:
        added.remove(inst)
    entry = S.entry_points(insts)[0]
    assert added == [
        (S.OP_CAPABILITY, (S.CAP_ROUNDING_MODE_RTE,)),
        (S.OP_EXTENSION, S.encode_string("SPV_KHR_float_controls")),  # SPIR-V 1.3
        (S.OP_EXECUTION_MODE, (entry, S.MODE_ROUNDING_MODE_RTE, 16)),
    ]
    assert_layout(out)
    validate(S.bytes_of(out), "half.comp + RTE")


def test_rte_fp16_needs_no_extension_from_spirv_1_4() -> None:
    words = compile_glsl(HALF_GLSL, target="spirv1.4")
    assert S.version(S.parse(words)[0]) == (1, 4)
    out = S.inject_rte_fp16(words)
    _, insts = S.parse(out)
    assert S.CAP_ROUNDING_MODE_RTE in S.capabilities(insts)
    assert not S.extensions(insts)
    spirv_val_env(out, "vulkan1.1spv1.4")


def test_rte_fp16_refuses_rtz(half: list[int]) -> None:
    entry = S.entry_points(S.parse(half)[1])[0]
    rtz = _with(half, (S.OP_EXECUTION_MODE, (entry, S.MODE_ROUNDING_MODE_RTZ, 16)), 16)
    with pytest.raises(S.RoundingRefused, match="RTZ"):
        S.inject_rte_fp16(rtz)


# -- idempotence and postprocess ---------------------------------------------------


@pytest.mark.parametrize("name", ["matmul", "softmax", "layernorm", "conv"])
def test_idempotent(name: str) -> None:
    for variant in VARIANTS:
        data = compile_shader(name, variant)
        words = S.words_of(data)
        for patch in (S.inject_fastmath, S.inject_rte_fp16):
            once = patch(words)
            assert once != words
            assert patch(once) == once
        both = S.postprocess(data, fastmath=True, rte_fp16=True)
        assert S.postprocess(both, fastmath=True, rte_fp16=True) == both
        # Either order of the two patches gives a valid module.
        validate(both, f"{name} ({variant}) both")


def test_postprocess_without_patches_returns_the_input() -> None:
    data = compile_shader("matmul", "fp32")
    assert S.postprocess(data, fastmath=False, rte_fp16=False) is data


FAMILIES = [(n, v) for n in shader_names() for v in sorted(VARIANTS)]


@pytest.mark.slow  # ~90 spirv-val runs: ~15 s idle, ~50 s on a loaded 2-core runner
@pytest.mark.parametrize(("name", "variant"), FAMILIES, ids=[f"{n}-{v}" for n, v in FAMILIES])
def test_every_family_patched_passes_spirv_val(name: str, variant: str) -> None:
    data = compile_shader(name, variant)
    _, insts = S.parse(S.words_of(data))
    precise = any(op == S.OP_DECORATE and ops[1] == S.DEC_NO_CONTRACTION for op, ops in insts)
    rte = variant.startswith("fp16")
    if precise:  # e.g. quant's `precise` division: fast math refused, RTE still fine
        with pytest.raises(S.FastMathRefused):
            S.postprocess(data, fastmath=True, rte_fp16=rte)
        out = S.postprocess(data, fastmath=False, rte_fp16=True)
    else:
        out = S.postprocess(data, fastmath=True, rte_fp16=rte)
        caps = S.capabilities(S.parse(S.words_of(out))[1])
        # A family without float types (copy moves raw words) is left alone.
        assert (S.CAP_FLOAT_CONTROLS2 in caps) == bool(S.declared_float_types(insts))
    validate(out, f"{name} ({variant}) post-processed")
    if variant == "fp16rte":
        return  # kernel_spirv builds it for an fp16 kernel with RTE
    # What a program compiled for an H200-like target carries (the same
    # bytes, unless the family refuses fast math or RTE rebuilt it).
    h200 = target("nvidia")
    piped = kernel_spirv(
        name, variant, True, variant == "fp16" and h200.rte_fp16, S.fastmath_float_types(h200)
    )
    if piped != out:
        validate(piped, f"{name} ({variant}) as a kernel of the nvidia target")


# -- policy -------------------------------------------------------------------------

NO_FC2 = replace(target("lavapipe"), has_float_controls2=False, rte_fp16=False)
"""Lavapipe as the validated suite sees it (the layer predates float_controls2)."""


def test_fastmath_enabled_policy() -> None:
    h200, lvp = target("nvidia"), NO_FC2
    assert S.fastmath_enabled("auto", h200) and S.fastmath_enabled("on", h200)
    assert not S.fastmath_enabled("off", h200)
    assert not S.fastmath_enabled("auto", lvp)  # no float_controls2
    assert not S.fastmath_enabled("auto", Target())  # generic: nothing promised
    no_preserve = replace(h200, signed_zero_inf_nan_preserve_fp32=False)
    assert not S.fastmath_enabled("auto", no_preserve)
    with pytest.warns(UserWarning, match="fastmath='on' ignored"):
        assert not S.fastmath_enabled("on", lvp)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not S.fastmath_enabled("auto", lvp)  # auto is silent
    with pytest.raises(ValueError):
        S.fastmath_enabled("fast", h200)
    assert S.fastmath_float_types(h200) == ("f32", "f16")
    no16 = replace(h200, signed_zero_inf_nan_preserve_fp16=False)
    assert S.fastmath_float_types(no16) == ("f32",)


def _modes(data: bytes) -> list[tuple[int, ...]]:
    return [ops for op, ops in S.parse(S.words_of(data))[1] if op in ENTRY_OPS]


def _fast(data: bytes) -> list[tuple[int, ...]]:
    return [m for m in _modes(data) if m[1] == S.MODE_FP_FAST_MATH_DEFAULT]


def _rte(data: bytes) -> list[tuple[int, ...]]:
    return [m for m in _modes(data) if m[1] == S.MODE_ROUNDING_MODE_RTE]


def test_kernel_spirv_policy() -> None:
    # fp16 kernels with RTE are built from the fp16rte variant: the hardware
    # conversion rounds, so the integer rounding code is gone.
    assert len(compile_shader("softmax", "fp16rte")) < len(compile_shader("softmax", "fp16"))
    both = ("f32", "f16")
    for variant in ("fp32", "fp16"):
        plain = compile_shader("softmax", variant)
        # No fast math, no RTE: the compiled bytes as they are.
        assert kernel_spirv("softmax", variant, False, False, both) == plain
        got = kernel_spirv("softmax", variant, True, True, both)
        assert len(_fast(got)) == (2 if variant == "fp16" else 1)
        assert len(_rte(got)) == (1 if variant == "fp16" else 0)
        # Fast math off: RTE only.
        off = kernel_spirv("softmax", variant, False, True, both)
        assert not _fast(off) and len(_rte(off)) == len(_rte(got))
        # Cached: the same object for the same (shader, variant, patches).
        assert kernel_spirv("softmax", variant, True, True, both) is got
    # A kernel with `precise` keeps strict math but still gets RTE.
    quant = kernel_spirv("quant", "fp16", True, True, both)
    assert S.CAP_FLOAT_CONTROLS2 not in S.capabilities(S.parse(S.words_of(quant))[1])
    assert len(_rte(quant)) == 1
    # Without fp16 preserve, f16 gets no default (it could not be 0x70000).
    assert len(_fast(kernel_spirv("softmax", "fp16", True, True, ("f32",)))) == 1


def _softmax_program(t: Target) -> dict:  # type: ignore[type-arg]
    m = graph([node("Softmax", ["x"], ["y"], axis=-1)], {"x": ((4, 64), "float32")}, ["y"])
    return module_to_program(lowered(m, t, precision="low", allow_cpu_fallback=False))


def test_the_program_carries_what_its_target_allows() -> None:
    """The compiler applies the policy: a program for an H200-like target
    carries fast-math and RTE modules, one for a device without
    float_controls2 and RTE the plain compiled bytes (no device needed)."""
    nv = _softmax_program(target("nvidia"))
    plain = _softmax_program(NO_FC2)
    for program, patched in ((nv, True), (plain, False)):
        assert program["kernels"]
        for k in program["kernels"]:
            spirv = k["spirv"]
            validate(spirv, f"{k['name']} in a program")
            float_types = S.declared_float_types(S.parse(S.words_of(spirv))[1])
            assert bool(_fast(spirv)) == (patched and bool(float_types)), k["name"]
            assert bool(_rte(spirv)) == (patched and k["variant"] == "fp16"), k["name"]
            caps = S.capabilities(S.parse(S.words_of(spirv))[1])
            if not patched:
                assert not caps & {S.CAP_FLOAT_CONTROLS2, S.CAP_ROUNDING_MODE_RTE}, k["name"]
    assert any(k["variant"] == "fp16" for k in nv["kernels"])
