"""The weight store: where the bytes behind `dense_resource<handle>` live.

The IR names weights by handle and never holds their bytes, so printing a
ResNet-50 prints no weights. Entries are numpy arrays or loaders (called on
first use, so an unused initializer is never decoded); splats from
ConstantOfShape are `np.broadcast_to` views that cost no memory.

The store is process-wide because xDSL resolves resource handles globally
(the builtin dialect's resource table is global too). Handles are made unique
at `add` time; whoever imported a model releases its handles when done.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable

import numpy as np

Loader = Callable[[], np.ndarray]

_BARE_ID = re.compile(r"[^A-Za-z0-9_.$]")


def sanitize_handle(name: str) -> str:
    """A resource handle (an MLIR bare identifier) derived from a tensor name."""
    handle = _BARE_ID.sub("_", name) or "w"
    if not (handle[0].isalpha() or handle[0] == "_"):
        handle = "_" + handle
    return handle


class WeightStore:
    def __init__(self) -> None:
        self._entries: dict[str, np.ndarray | Loader] = {}
        self._lock = threading.Lock()

    def add(self, name: str, value: np.ndarray | Loader) -> str:
        """Store `value` under a fresh handle derived from `name`; return it."""
        base = sanitize_handle(name)
        with self._lock:
            handle, n = base, 0
            while handle in self._entries:
                n += 1
                handle = f"{base}_{n}"
            self._entries[handle] = value
        return handle

    def get(self, handle: str) -> np.ndarray | None:
        entry = self._entries.get(handle)
        if entry is None or isinstance(entry, np.ndarray):
            return entry
        array = entry()
        self._entries[handle] = array
        return array

    def __contains__(self, handle: str) -> bool:
        return handle in self._entries

    def release(self, handles: Iterable[str]) -> None:
        with self._lock:
            for h in handles:
                self._entries.pop(h, None)

    def __len__(self) -> int:
        return len(self._entries)


WEIGHTS = WeightStore()
