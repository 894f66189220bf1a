"""The per-user cache folder and the secret that authenticates what VKNN
writes there (model caches, the SPIR-V disk cache, the record of validated
SPIR-V): a file there is trusted only when its HMAC under this secret
matches, i.e. when this user's VKNN wrote it."""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path


def user_cache_dir() -> Path:
    base = os.environ.get("VKNN_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "vknn"


@functools.cache
def secret() -> bytes:
    """32 random bytes in `<cache dir>/secret` (mode 0600, made on first use;
    a file of another owner, mode or size is replaced). Unwritable folder:
    a key for this process only, so its caches are never trusted later."""
    path = user_cache_dir() / "secret"
    try:
        st = os.stat(path, follow_symlinks=False)
        ok = (
            stat.S_ISREG(st.st_mode)
            and st.st_mode & 0o077 == 0
            and st.st_uid == os.getuid()
            and st.st_size == 32
        )
        if ok:
            with open(path, "rb") as f:
                return f.read()
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError:
        return secrets.token_bytes(32)
    key = secrets.token_bytes(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
    except FileExistsError:  # another process made it first
        secret.cache_clear()
        return secret()
    except OSError:
        pass
    return key


def mac(payload: bytes) -> bytes:
    """HMAC-SHA256 of `payload` under the user's secret."""
    return hmac.new(secret(), payload, hashlib.sha256).digest()


def read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of `path` when it is a regular file (symlinks not followed)
    of at most `limit` bytes, else None: a FIFO, a device or a link out of
    the folder is never opened for reading."""
    try:
        st = os.stat(path, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as f:
            return f.read(limit + 1)[:limit]
    except OSError:
        return None


def write_atomic(path: Path, data: bytes) -> None:
    """Write-then-rename, so readers never see a torn file (errors ignored:
    a cache that cannot be written is only slower next time)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink()
        except OSError:
            pass
