"""`vknn cache list|clear`: see and remove what VKNN caches on disk.

Two kinds of cache: a model cache (`<model>.vkcache` next to each model, or
`Config.cache_file`; compiled programs per configuration) and the per-user
folder (`~/.cache/vknn` or $VKNN_CACHE_DIR: compiled SPIR-V, the record of
validated SPIR-V). `list` shows each model cache with its size and
variants, and the user folder's parts; `clear` removes model caches (only
files that are VKNN model caches) and, with `--user`, the user folder's
SPIR-V caches. The per-user secret stays: removing it would only make
every remaining cache untrusted.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from vknn.errors import VknnError
from vknn.model_cache import SUFFIX, describe, is_cache_file
from vknn.runtime.user_cache import user_cache_dir

USER_PARTS = ("spirv", "spirv-validated")
"""What `clear --user` removes from the user folder (not the secret)."""


def model_caches(paths: list[Path]) -> list[Path]:
    """The model caches of `paths`: a model's `<model>.vkcache`, a cache file
    itself, or every `*.vkcache` under a folder."""
    found: list[Path] = []
    for p in paths:
        if p.is_dir():
            found += sorted(q for q in p.rglob(f"*{SUFFIX}") if is_cache_file(q))
        elif p.suffix == SUFFIX or is_cache_file(p):
            if not p.exists():
                raise VknnError(f"{p}: no such file")
            if not is_cache_file(p):
                raise VknnError(f"{p}: not a VKNN model cache; left alone")
            found.append(p)
        else:
            if not p.exists():
                raise VknnError(f"{p}: no such model or folder")
            cache = p.with_name(p.name + SUFFIX)
            if is_cache_file(cache):
                found.append(cache)
    return list(dict.fromkeys(found))


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(q.stat().st_size for q in path.rglob("*") if q.is_file())


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n / 1e3:.1f} kB"


def list_caches(paths: list[Path]) -> int:
    total = 0
    for cache in model_caches(paths):
        d = describe(cache)
        total += d["bytes"]
        state = "" if d["authentic"] else "  (not authentic: will be rebuilt)"
        print(f"model    {cache}  {_mb(d['bytes'])}, {len(d['variants'])} variant(s){state}")
        for v in d["variants"]:
            print(f"           {v['buckets']} bucket(s)  {v['key']}")
    user = user_cache_dir()
    for part in USER_PARTS:
        p = user / part
        if p.exists():
            n = _size(p)
            total += n
            print(f"user     {p}  {_mb(n)}")
    print(f"total    {_mb(total)}")
    return 0


def clear_caches(paths: list[Path], user: bool) -> int:
    if not paths and not user:
        raise VknnError("cache clear: name models, cache files or folders, or --user")
    freed = 0
    for cache in model_caches(paths):
        freed += cache.stat().st_size
        cache.unlink()
        print(f"removed  {cache}")
    if user:
        for part in USER_PARTS:
            p = user_cache_dir() / part
            if p.exists():
                freed += _size(p)
                if p.is_dir():
                    shutil.rmtree(p)
                else:
                    p.unlink()
                print(f"removed  {p}")
    print(f"freed    {_mb(freed)}")
    return 0
