"""ONNX's node conformance suite through `vknn.backend` on the CPU oracle.

Every case must pass except those listed, each with its reason, in
`conformance_expected_failures.txt`. A new failure fails this test; so does a
listed case that now passes (remove it from the list: the list is reviewed).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vknn.tools.conformance import run_suite

EXPECTED = Path(__file__).with_name("conformance_expected_failures.txt")
MIN_PASSED = 1555


def expected_failures() -> dict[str, str]:
    out: dict[str, str] = {}
    for line in EXPECTED.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, reason = line.partition("#")
        out[name.strip()] = reason.strip()
    return out


@pytest.mark.slow
def test_onnx_node_conformance_cpu() -> None:
    results = run_suite("CPU", jobs=max(1, min(4, os.cpu_count() or 1)))
    passed = [r for r in results if r.passed]
    failed = {r.name: r.error for r in results if not r.passed}
    expected = expected_failures()
    print(f"\nONNX node conformance (CPU): {len(passed)} of {len(results)} cases pass")
    new = {n: e for n, e in failed.items() if n not in expected}
    fixed = sorted(n for n in expected if n not in failed and any(r.name == n for r in results))
    assert not new, "new conformance failures:\n" + "\n".join(
        f"{n}: {e}" for n, e in sorted(new.items())
    )
    assert not fixed, "now passing, remove from the expected-failure list:\n" + "\n".join(fixed)
    assert len(passed) >= MIN_PASSED
