"""lower-conv only marks convs for the implicit-GEMM kernel: the CPU oracle
gives the same outputs, and K x K convs of a real CNN are marked."""

from __future__ import annotations

import vknn
from tests.unit.models import model_inputs, torch_model
from tests.unit.passes_common import BASE, before_after
from tests.unit.program_steps import cpu_steps


def test_resnet18_before_after() -> None:
    model = torch_model("resnet18")
    before_after(model, "lower-conv{enabled=true}")
    sess = vknn.Session(
        model, vknn.Config(backends=("cpu",), pipeline=f"{BASE},lower-conv{{enabled=true}}")
    )
    marked = [s for s in cpu_steps(sess) if s.attrs.get("vx.conv_algorithm") == "implicit_gemm"]
    convs = [s for s in cpu_steps(sess) if s.op == "vx.conv"]
    # the 3x3 convs and the 7x7 stem (3 * 49 = 147 >= min-reduction) are
    # marked; the 1x1 downsample convs are not
    assert 0 < len(marked) < len(convs)
    assert sess.run(model_inputs(model, {}))


def test_disabled_by_default() -> None:
    model = torch_model("resnet18")
    sess = vknn.Session(model, vknn.Config(backends=("cpu",), pipeline=f"{BASE},lower-conv"))
    assert not [s for s in cpu_steps(sess) if "vx.conv_algorithm" in s.attrs]
