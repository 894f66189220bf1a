"""The interval memory planner `plan-memory` uses: offsets in one arena for
tensors with live ranges over command order (as ARM's ML emulation layer
does). Pure Python: no device, no xDSL."""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Hashable, Sequence


def align_up(n: int, alignment: int) -> int:
    return (n + alignment - 1) // alignment * alignment


def plan_arena(
    tensors: Sequence[tuple[Hashable, int, int, int]], alignment: int = 16
) -> tuple[dict[Hashable, int], int]:
    """Offsets in one arena for `tensors` = [(id, size_bytes, first_use, last_use)].

    A tensor occupies its block from step `first_use` through step `last_use`
    inclusive: a step's inputs and outputs are live together, so an output can
    never alias an input of its own step. Allocation walks steps in order;
    at each step the blocks of tensors whose last use has passed return to a
    free list (coalesced with their neighbours), then the step's new tensors,
    largest first, take the best-fitting (smallest sufficient) free block, or
    grow the arena at its end. Returns ({id: offset}, arena_size); offsets are
    multiples of `alignment`, and the size is at most the aligned sum.
    """
    if alignment <= 0 or alignment & (alignment - 1):
        raise ValueError(f"alignment must be a power of two, got {alignment}")
    for tid, size, first, last in tensors:
        if size < 0 or last < first:
            raise ValueError(f"tensor {tid!r}: bad size/live range ({size}, {first}..{last})")
    by_start: dict[int, list[tuple[Hashable, int, int]]] = {}
    for tid, size, first, last in tensors:
        by_start.setdefault(first, []).append((tid, align_up(max(size, 1), alignment), last))

    free: list[tuple[int, int]] = []  # sorted (offset, size), never adjacent (coalesced)
    live: list[tuple[int, int, int]] = []  # (last_use, offset, size), a min-heap by last_use
    offsets: dict[Hashable, int] = {}
    end = 0

    def release(off: int, size: int) -> None:
        i = bisect.bisect_left(free, (off, 0))
        if i > 0 and free[i - 1][0] + free[i - 1][1] == off:  # merge with the left block
            i -= 1
            off, size = free[i][0], free[i][1] + size
            del free[i]
        if i < len(free) and off + size == free[i][0]:  # merge with the right block
            size += free[i][1]
            del free[i]
        free.insert(i, (off, size))

    peak = 0
    for step in sorted(by_start):
        while live and live[0][0] < step:
            _, off, size = heapq.heappop(live)
            release(off, size)
        for tid, size, last in sorted(by_start[step], key=lambda t: -t[1]):
            best = -1
            for j, (_, fsize) in enumerate(free):
                if fsize >= size and (best < 0 or fsize < free[best][1]):
                    best = j
            if best >= 0:
                off, fsize = free[best]
                if fsize == size:
                    del free[best]
                else:
                    free[best] = (off + size, fsize - size)
            elif free and free[-1][0] + free[-1][1] == end:
                # Nothing fits: grow the free tail block rather than leave a hole.
                off = free.pop()[0]
                end = off + size
            else:
                off = end
                end += size
            peak = max(peak, end)
            offsets[tid] = off
            heapq.heappush(live, (last, off, size))
    return offsets, peak
