"""Cooperative-matrix (tensor core) kernels: when a target may use them, their
tile configurations, and the recorders' shared parts.

A coopmat kernel is chosen (by the matmul / gemm / conv specs, through their
tuning spaces, so `Config.autotune` can measure it against the scalar
kernels) when

- the target lists the 16 x 16 x 16 fp16 x fp16 -> fp32 subgroup shape
  (`Target.cooperative_matrix`; VK_KHR_cooperative_matrix on the device),
  has 16-bit storage and shaderFloat16, and subgroups of >= 8 lanes;
- the step runs its fp16-storage variant (precision `low`, or `normal`
  where no fp32-kept tensor touches it): `high` stays fp32 end to end;
- the product is at least one 16 x 16 x 16 block (a GEMV wastes 15/16 of
  every matrix op; the scalar kernels keep those).

Tiles: BM x BN in {32, 64, 128}^2 (glsl/coopmat_common.glsl: 4 subgroups of
`Target.subgroup_size` lanes, double-buffered BK = 32 fp16 shared tiles plus
a 16 x 16 fp32 staging block per subgroup). The heuristic takes the largest
tile whose grid still has `FILL_GROUPS` workgroups (about one per SM of a
big GPU), else the smallest.

Kernel families carry `coopmat` in their names (`matmul_coopmat`,
`conv_coopmat`), so a printed `vkd` module shows which dispatches use tensor
cores. This module must not import xDSL or touch a device.
"""

from __future__ import annotations

from vknn.runtime.target import Target

SHAPE = (16, 16, 16, "f16", "f16", "f32", "f32", "subgroup")
"""The one cooperative-matrix shape the kernels use (fp16 A/B, fp32 C)."""
BK = 32
PAD = 8
SUBGROUPS = 4
TILES = ((128, 128), (128, 64), (64, 128), (64, 64), (64, 32), (32, 64), (32, 32))
"""(BM, BN) the kernels build with, largest first."""
FILL_GROUPS = 128
MAX_CHUNKS = 8
"""The shaders' per-invocation chunk registers per tile (MAX_CHUNKS)."""
"""Workgroups a grid should have before the heuristic takes a bigger tile."""


def usable(caps: Target, variant: str) -> bool:
    """Whether `caps` runs coopmat kernels and the step's storage is fp16."""
    return (
        variant == "fp16"
        and SHAPE in tuple(tuple(s) for s in getattr(caps, "cooperative_matrix", ()))
        and caps.has_fp16_storage
        and caps.has_fp16_arith
        and caps.subgroup_size >= 8
        and local_size(caps) <= caps.max_compute_work_group_invocations
        and local_size(caps) <= caps.max_compute_work_group_size[0]
    )


def local_size(caps: Target) -> int:
    return SUBGROUPS * caps.subgroup_size


def shared_bytes(bm: int, bn: int) -> int:
    """Double-buffered fp16 A and B tiles plus the fp32 staging blocks."""
    return 2 * 2 * (bm + bn) * (BK + PAD) + SUBGROUPS * 16 * 16 * 4


def tiles(caps: Target, m: int, n: int, batch: int) -> list[tuple[int, int]]:
    """Every (BM, BN) valid on `caps` for an M x N product of `batch` entries."""
    cnt = caps.max_compute_work_group_count
    wg = local_size(caps)
    out = []
    for bm, bn in TILES:
        if shared_bytes(bm, bn) > caps.max_compute_shared_memory_size:
            continue
        # Each invocation loads 1..MAX_CHUNKS 4-element chunks of each tile.
        if any(side * BK // 4 % wg or not 1 <= side * BK // 4 // wg <= MAX_CHUNKS
               for side in (bm, bn)):  # fmt: skip
            continue
        if -(-n // bn) > cnt[0] or -(-m // bm) > cnt[1] or batch > cnt[2]:
            continue
        out.append((bm, bn))
    return out


def heuristic_tile(options: list[tuple[int, int]], m: int, n: int, batch: int) -> tuple[int, int]:
    """The largest tile (fewest loads per MMA) whose grid fills the GPU, else
    the one with the most workgroups."""

    def groups(t: tuple[int, int]) -> int:
        return -(-m // t[0]) * -(-n // t[1]) * batch

    for t in options:
        # A tile much larger than the product only adds padding.
        if groups(t) >= FILL_GROUPS and t[0] <= _ceil16(m) * 2 and t[1] <= _ceil16(n) * 2:
            return t
    return max(options, key=lambda t: (groups(t), -t[0] * t[1]))


def _ceil16(x: int) -> int:
    return -(-x // 16) * 16


def worth_it(m: int, n: int, k: int) -> bool:
    """At least one 16 x 16 x 16 block of work per matrix op."""
    return m >= 16 and n >= 16 and k >= 16


def space(
    caps: Target, variant: str, splitk: bool, m: int, n: int, k: int, batch: int, total: int
) -> tuple[dict[str, int | str], list[dict[str, int | str]], list[dict[str, int | str]]] | None:
    """(heuristic config, fast extras, every config) of the coopmat kernel for
    an M x N x K product of `batch` entries (`total` outputs), None when it
    does not apply. A config is {"algo": "coopmat", "bm", "bn", "splits"}:
    split-K as the scalar GEMMs do it (`conv.heuristic_splits`), so batch-1
    layers with few tiles and a long K still fill the GPU."""
    from vknn.kernels.conv import heuristic_splits, split_neighbours, split_options

    if not usable(caps, variant) or not worth_it(m, n, k):
        return None
    options = tiles(caps, m, n, batch)
    if not options:
        return None

    def groups(t: tuple[int, int]) -> tuple[int, int, int]:
        return (-(-n // t[1]), -(-m // t[0]), batch)

    def cfg(t: tuple[int, int], splits: int) -> dict[str, int | str]:
        return {"algo": "coopmat", "bm": t[0], "bn": t[1], "splits": splits}

    every = [
        cfg(t, s) for t in options for s in split_options(caps, splitk, k, groups(t), total)
    ]  # fmt: skip
    best = heuristic_tile(options, m, n, batch)
    splits = heuristic_splits(caps, splitk, k, groups(best), total)
    default = cfg(best, splits)
    neighbours = split_neighbours(split_options(caps, splitk, k, groups(best), total), splits)
    fast = [cfg(best, s) for s in neighbours[1:]]
    for t in options[-2:]:  # the smaller tiles, at their own split counts
        if t != best:
            fast.append(cfg(t, heuristic_splits(caps, splitk, k, groups(t), total)))
    return default, fast, every


def vec_ok(contig_extent: int, strides: list[int], offset: int) -> bool:
    """4-element chunks along an operand's contiguous dim are aligned and wholly
    in or out: the extent along it, every other stride and the offset are
    multiples of 4."""
    return contig_extent % 4 == 0 and offset % 4 == 0 and all(s % 4 == 0 for s in strides)
