"""A fixed-seed sample of the fuzzer (tests/fuzz/fuzz_inputs.py, docs/security.md):
200 mutated models, external data, .vxm files, caches and CLI options on the
CPU backend, each in its own child process with memory and time limits;
none may end in a traceback, a crash, a hang, a MemoryError or a wrong answer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parents[1] / "fuzz" / "fuzz_inputs.py"


@pytest.mark.slow
def test_fuzz_sample_has_no_defects(tmp_path: Path) -> None:
    log = tmp_path / "cases.jsonl"
    r = subprocess.run(
        [sys.executable, str(FUZZ), "--cases", "200", "--seed", "20261202", "--backends", "cpu",
         "--log", str(log)],
        capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert len(log.read_text().splitlines()) == 200, r.stdout[-3000:] + r.stderr[-3000:]
    assert r.returncode == 0, r.stdout[-4000:]
    assert "| total | 200 |" in r.stdout
