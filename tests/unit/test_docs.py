"""Generated docs stay true: docs/ops.md is what the generator prints now."""

from pathlib import Path

from vknn.tools.ops_table import render

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_ops_table_is_current() -> None:
    assert (DOCS / "ops.md").read_text() == render(), (
        "docs/ops.md is stale: run `python -m vknn.tools.ops_table > docs/ops.md`"
    )
