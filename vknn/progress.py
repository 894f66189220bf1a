"""Progress bars for long work (compile, autotune, the conformance runner):
on a terminal only, so logs and pipes get nothing extra. tqdm draws them
when installed (`pip install vknn[progress]`); without it, one line
rewritten in place. `VKNN_PROGRESS=0` turns them off.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from typing import Any, TextIO


def on_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and os.environ.get("VKNN_PROGRESS", "1") != "0"


class Bar:
    """`update(n, label)` advances by n; `close()` clears the line."""

    def __init__(self, total: int, desc: str, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.total, self.desc, self.done = total, desc, 0
        self.t0 = time.perf_counter()
        self._tqdm: Any = None
        self.active = on_terminal(self.stream)
        if self.active:
            try:
                from tqdm import tqdm

                self._tqdm = tqdm(total=total, desc=desc, file=self.stream, leave=False,
                                  dynamic_ncols=True)  # fmt: skip
            except ImportError:
                pass

    def update(self, n: int = 1, label: str = "") -> None:
        self.done += n
        if self._tqdm is not None:
            self._tqdm.set_postfix_str(label, refresh=False)
            self._tqdm.update(n)
        elif self.active:
            width = shutil.get_terminal_size((80, 20)).columns
            frac = self.done / max(1, self.total)
            fill = int(20 * frac)
            line = (f"{self.desc} [{'#' * fill}{'-' * (20 - fill)}] {self.done}/{self.total} "
                    f"{time.perf_counter() - self.t0:5.1f}s  {label}")  # fmt: skip
            self.stream.write("\r" + line[: width - 1].ljust(width - 1))
            self.stream.flush()

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
        elif self.active:
            width = shutil.get_terminal_size((80, 20)).columns
            self.stream.write("\r" + " " * (width - 1) + "\r")
            self.stream.flush()
        self.active = False

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
